# CTest runs a test binary once per test file, filtered to that file's suites (lenscheck_test in
# CMakeLists.txt). Fails if BINARY holds a test that none of FILTERS (":"-separated) selects: one
# declared in a way the helper does not read would otherwise never run.
string(REGEX REPLACE "^:" "" FILTERS "${FILTERS}")
execute_process(COMMAND ${BINARY} --gtest_list_tests --gtest_filter=-${FILTERS}
                OUTPUT_VARIABLE unselected RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests exited with ${status}")
endif()
# --gtest_list_tests prints each suite, then its tests indented by two spaces.
string(REGEX MATCHALL "\n  [A-Za-z0-9_/]+" missed "${unselected}")
if(missed)
  message(FATAL_ERROR "${BINARY} holds tests that no CTest entry runs:\n${unselected}")
endif()
execute_process(COMMAND ${BINARY} --gtest_list_tests OUTPUT_VARIABLE all)
string(REGEX MATCHALL "\n  [A-Za-z0-9_/]+" tests "${all}")
list(LENGTH tests count)
if(count EQUAL 0)
  message(FATAL_ERROR "${BINARY} lists no test")
endif()
message(STATUS "${BINARY}: each of its ${count} tests is run by a CTest entry")
