# The afp driver's extras, included from ../CMakeLists.txt after the targets:
# the capture vectors its tests read (a missing shared/ checkout fails the
# tests loudly), and the libFuzzer target on its decoders of server input,
# built only with clang (scripts/fuzz-afp.sh builds it in build-fuzz/ with
# sanitizers and runs it for a bounded time).
# A checkout elsewhere (a git worktree) names the folder with
# -DCP_AFP_VECTORS_DIR=/path/to/shared/vectors/afp.
set(CP_AFP_VECTORS_DIR "${PROJECT_SOURCE_DIR}/../shared/vectors/afp" CACHE PATH
    "the AFP capture vectors the transfer tests read")
if(TARGET transfer_test)
  target_compile_definitions(transfer_test PRIVATE AFP_VECTORS_DIR="${CP_AFP_VECTORS_DIR}")
endif()

if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_executable(afp_fuzz ${CMAKE_CURRENT_LIST_DIR}/afp_fuzz.cc)
  target_link_libraries(afp_fuzz PRIVATE cp_transfer)
  target_compile_options(afp_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(afp_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  # Writes the seed corpus: the captures' server replies.
  add_executable(afp_fuzz_seed ${CMAKE_CURRENT_LIST_DIR}/testing/afp_fuzz_seed.cc
                 ${CMAKE_CURRENT_LIST_DIR}/testing/afp_capture.cc testing/pcap.cc)
  target_link_libraries(afp_fuzz_seed PRIVATE cp_transfer)
  target_compile_definitions(afp_fuzz_seed PRIVATE AFP_VECTORS_DIR="${CP_AFP_VECTORS_DIR}")
endif()
