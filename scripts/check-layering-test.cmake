# The layering check (check-layering.cmake) on small trees written into WORK: it passes the
# includes the table allows and fails, naming the file, on each kind of wrong one.
if(NOT DEFINED WORK)
  message(FATAL_ERROR "check-layering-test.cmake needs -DWORK=...")
endif()
set(check "${CMAKE_CURRENT_LIST_DIR}/check-layering.cmake")
set(tree "${WORK}/tree")
set(failures)

# expect(passes|fails WHAT FILE CONTENT [ROOMS_FILE]): a tree holding only FILE, checked against the
# real table or ROOMS_FILE.
function(expect outcome what file content)
  file(REMOVE_RECURSE "${tree}")
  file(WRITE "${tree}/${file}" "${content}")
  set(table)
  set(named "${file}")
  if(ARGC GREATER 4)  # a table of its own, which the failure names instead
    set(table "-DROOMS_FILE=${ARGV4}")
    set(named "${ARGV4}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${tree} ${table} -P ${check}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(outcome STREQUAL "passes" AND NOT rc EQUAL 0)
    list(APPEND failures "${what}: the check failed:\n${err}")
  elseif(outcome STREQUAL "fails" AND rc EQUAL 0)
    list(APPEND failures "${what}: the check passed")
  elseif(outcome STREQUAL "fails" AND NOT err MATCHES "layering: .*${named}")
    list(APPEND failures "${what}: the check failed without naming ${named}:\n${err}")
  endif()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

expect(passes "the gate including rooms below it" gate/judge.cpp
       "#include \"gate/verify.h\"\n#include \"common/parallel.h\"\n#include \"oracle/oracle.h\"\n#include <fmt/format.h>\n")
expect(passes "torch in oracle/*.cpp" oracle/oracle.cpp "#include <torch/torch.h>\n")
expect(passes "a test including any room" tests/any_test.cpp "#include \"cli/arguments.h\"\n#include \"mutations/mutate.h\"\n")
expect(fails "the gate including the mutations" gate/judge.cpp "#include \"mutations/mutate.h\"\n")
expect(fails "the audit including the gate" audit/audit.cpp "#include \"gate/verify.h\"\n")
expect(fails "the gate including the audit's plans" gate/display.cpp "#include \"audit/study_plan.h\"\n")
expect(passes "the gate including the instrument" gate/display.cpp
       "#include \"instrument/rows.h\"\n")
expect(fails "the runtime including the oracle" runtime/encoder.h "#include \"oracle/oracle.h\"\n")
expect(fails "the runtime including torch" runtime/encoder.cpp "#include <torch/torch.h>\n")
expect(fails "torch in the oracle's header" oracle/oracle.h "  #  include <ATen/ATen.h>\n")
expect(fails "a test including torch" tests/any_test.cpp "#include <c10/core/Device.h>\n")
expect(fails "a mutation case including the CLI" mutations/cases/case.cpp "#include \"cli/arguments.h\"\n")
expect(fails "a room including a test helper" model/vocab.cpp "#include \"tests/test_support.h\"\n")
expect(fails "a path around the check" gate/judge.cpp "#include \"../audit/audit.h\"\n")
expect(fails "a header without its room" gate/judge.cpp "#include \"audit.h\"\n")
expect(fails "a room by angle brackets" common/sentences.cpp "#include <synth/corpus.h>\n")
expect(passes "a README that lists what its room may include" audit/README.md
       "# audit/\n\nMay include: model/, runtime/, common/, instrument/ (cmake/rooms.cmake).\n")
expect(fails "a README that lists what its room may not include" audit/README.md
       "# audit/\n\nMay include: model/, runtime/, common/, instrument/, gate/ (cmake/rooms.cmake).\n")
file(WRITE "${WORK}/upward.cmake" "set(LENSCHECK_ROOMS model gate audit)\nset(LENSCHECK_USES_gate model audit)\nset(LENSCHECK_USES_audit model)\n")
expect(fails "a table whose arrow runs up" model/config.h "" "${WORK}/upward.cmake")

if(failures)
  list(JOIN failures "\n" text)
  message(FATAL_ERROR "${text}")
endif()
