# cp_library(NAME SOURCES ... DEPS ...): one layer of lib/.
function(cp_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_library(cp_${name} STATIC ${A_SOURCES})
  target_include_directories(cp_${name} PUBLIC ${PROJECT_SOURCE_DIR}/lib
                                                ${PROJECT_BINARY_DIR}/generated)
  target_link_libraries(cp_${name} PUBLIC ${A_DEPS})
endfunction()

# cp_tests(NAME SOURCES ... DEPS ...): unit tests beside the sources
# (foo.cc next to foo_test.cc), one gtest binary per layer.
function(cp_tests name)
  if(NOT CHOKEPOINT_TESTS)
    return()
  endif()
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name}_test ${A_SOURCES})
  target_link_libraries(${name}_test PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  gtest_discover_tests(${name}_test DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
endfunction()

# cp_embed(TARGET VAR FILE): compiles FILE's bytes into TARGET as
# `extern const std::string_view VAR;` (schemas, lab scripts).
function(cp_embed target var file)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/embed_${var}.cc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out} -DVAR=${var}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${file} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake)
  target_sources(${target} PRIVATE ${out})
endfunction()
