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
  cp_test_binary(${name}_test LABEL unit ${ARGN})
endfunction()

# cp_test_binary(TARGET LABEL label SOURCES ... DEPS ... [PROPERTIES ...]):
# a gtest binary whose cases ctest runs under LABEL (unit; integration: real
# servers, labs, root), with the test PROPERTIES given (RUN_SERIAL TRUE when
# it brings a lab up, TIMEOUT).
function(cp_test_binary target)
  if(NOT CHOKEPOINT_TESTS)
    return()
  endif()
  cmake_parse_arguments(A "" "LABEL" "SOURCES;DEPS;PROPERTIES" ${ARGN})
  add_executable(${target} ${A_SOURCES})
  target_link_libraries(${target} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  cp_discover_tests(${target} LABEL ${A_LABEL} PROPERTIES ${A_PROPERTIES})
endfunction()

# cp_discover_tests(TARGET LABEL label [PROPERTIES ...]): registers TARGET's
# gtest cases with ctest under LABEL; cases of suites named Security* (the
# hostile-user and hostile-peer tests) are labelled LABEL-security instead
# (one label: gtest_discover_tests flattens a list of them), which
# `ctest -L LABEL` still matches (-L takes a regex) and `ctest -L security`
# selects alone.
function(cp_discover_tests target)
  cmake_parse_arguments(A "" "LABEL" "PROPERTIES" ${ARGN})
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 TEST_FILTER "-Security*"
    PROPERTIES LABELS ${A_LABEL} ${A_PROPERTIES})
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 TEST_FILTER "Security*"
    PROPERTIES LABELS ${A_LABEL}-security ${A_PROPERTIES})
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
