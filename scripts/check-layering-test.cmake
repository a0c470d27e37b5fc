# The layering check (check-layering.cmake) on small trees written into WORK: it passes the
# includes the table allows and fails, naming the file, on each kind of wrong one.
if(NOT DEFINED WORK)
  message(FATAL_ERROR "check-layering-test.cmake needs -DWORK=...")
endif()
set(check "${CMAKE_CURRENT_LIST_DIR}/check-layering.cmake")
set(tree "${WORK}/tree")
set(failures)

# check(passes|fails WHAT NAMED [ROOMS_FILE]): the tree as written, checked against the real table or
# ROOMS_FILE; a failure must name NAMED (a regular expression).
function(check outcome what named)
  set(table)
  if(ARGC GREATER 3)
    set(table "-DROOMS_FILE=${ARGV3}")
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

# expect(passes|fails WHAT FILE CONTENT [ROOMS_FILE]): a tree holding only FILE, checked against the
# real table or ROOMS_FILE, which the failure names instead.
function(expect outcome what file content)
  file(REMOVE_RECURSE "${tree}")
  file(WRITE "${tree}/${file}" "${content}")
  if(ARGC GREATER 4)
    check(${outcome} "${what}" "${ARGV4}" "${ARGV4}")
  else()
    check(${outcome} "${what}" "${file}")
  endif()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

# expect_tree(passes|fails WHAT NAMED FILE CONTENT [FILE CONTENT ...]): a tree holding only these files.
function(expect_tree outcome what named)
  file(REMOVE_RECURSE "${tree}")
  set(files ${ARGN})
  while(files)
    list(POP_FRONT files file content)
    file(WRITE "${tree}/${file}" "${content}")
  endwhile()
  check(${outcome} "${what}" "${named}")
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

expect(passes "the gate including rooms below it" gate/judge.cpp
       "#include \"gate/verify.h\"\n#include \"common/parallel.h\"\n#include \"oracle/oracle.h\"\n#include <fmt/format.h>\n")
expect(passes "torch in oracle/*.cpp" oracle/forward.cpp "#include <torch/torch.h>\n")
expect(passes "a test including any room" tests/any_test.cpp "#include \"cli/arguments.h\"\n#include \"mutations/mutate.h\"\n")
expect(fails "the gate including the mutations" gate/judge.cpp "#include \"mutations/mutate.h\"\n")
expect(fails "the audit including the gate" audit/audit.cpp "#include \"gate/verify.h\"\n")
expect(fails "the gate including the audit's plans" gate/display.cpp "#include \"audit/study_plan.h\"\n")
expect(passes "the gate including the instrument" gate/display.cpp
       "#include \"instrument/rows.h\"\n")
expect(fails "the runtime including the oracle" runtime/encoder.h "#include \"oracle/oracle.h\"\n")
expect(fails "the runtime including torch" runtime/encoder.cpp "#include <torch/torch.h>\n")
expect(fails "torch in the oracle's header" oracle/oracle.h "  #  include <ATen/ATen.h>\n")
expect(fails "a header outside oracle/ including torch" runtime/kernels.h "#include <torch/torch.h>\n")

# torch in the oracle's private headers, which only oracle/ includes; the oracle's public header torch-free.
set(private_header oracle/torch_oracle.h "#include <torch/torch.h>\n#include \"oracle/oracle.h\"\n")
set(public_header oracle/oracle.h "#include \"model/trace.h\"\n")
set(oracle_cpp oracle/forward.cpp "#include \"oracle/oracle.h\"\n#include \"oracle/torch_oracle.h\"\n")
expect_tree(passes "torch in the oracle's private header, which oracle/*.cpp include" ""
            ${private_header} ${public_header} ${oracle_cpp}
            gate/verify.cpp "#include \"oracle/oracle.h\"\n" tests/oracle_test.cpp "#include \"oracle/oracle.h\"\n")
expect_tree(passes "a private header including another" ""
            ${private_header} ${public_header} oracle/pass.h "#include \"oracle/torch_oracle.h\"\n"
            oracle/simulated.cpp "#include \"oracle/pass.h\"\n")
expect_tree(passes "the oracle's headers including each other, reaching no torch" ""
            oracle/oracle.h "#include \"oracle/precision.h\"\n" oracle/precision.h "#include \"oracle/oracle.h\"\n"
            ${private_header} ${oracle_cpp})
expect_tree(fails "the oracle's public header including its private one" "oracle/oracle.h: reaches torch"
            ${private_header} ${oracle_cpp} oracle/oracle.h "#include \"oracle/torch_oracle.h\"\n")
expect_tree(fails "the oracle's public header reaching torch through two headers"
            "oracle/oracle.h: reaches torch \\(oracle/oracle.h → oracle/precision.h → oracle/torch_oracle.h → <torch/torch.h>\\)"
            ${private_header} ${oracle_cpp} oracle/oracle.h "#include \"oracle/precision.h\"\n"
            oracle/precision.h "#include <vector>\n#include \"model/trace.h\"\n#include \"oracle/torch_oracle.h\"\n")
expect_tree(fails "a room including the oracle's private header" "gate/verify.cpp: includes oracle/torch_oracle.h"
            ${private_header} ${public_header} gate/verify.cpp "#include \"oracle/torch_oracle.h\"\n")
expect_tree(fails "a test including the oracle's private header" "tests/oracle_test.cpp"
            ${private_header} ${public_header} tests/oracle_test.cpp "#include \"oracle/torch_oracle.h\"\n")
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
