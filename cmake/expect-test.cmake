# A test that runs a command (ARGN, generator expressions allowed) and holds it to an exit code and a regex
# over its output (cmake/expect.cmake): a candidate that must fail, or cannot start. LABEL groups the tests
# (ctest -L), and every such test needs the generated checkpoints.
function(lenscheck_expect_test label name expected regex)
  string(REPLACE ";" "\\;" regex "${regex}")
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${ARGN}" -DEXPECTED=${expected} "-DREGEX=${regex}"
                                -P ${CMAKE_SOURCE_DIR}/cmake/expect.cmake)
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED bert_mini LABELS ${label})
endfunction()
