# Runs `EXE --generate WHAT` and writes its output to OUT (the man page and the
# bash completion, from the command table: see lib/app/generate.h).
execute_process(COMMAND ${EXE} --generate ${WHAT} OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --generate ${WHAT} failed (${rc})")
endif()
file(RENAME ${OUT}.tmp ${OUT})
