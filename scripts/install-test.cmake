# Installs the build into PREFIX and runs the installed lenscheck from a folder that holds none of its
# data, on its default tolerances, sentences and study plan; then breaks the install and expects exit
# code 2 with the path it tried. FIXTURES: the generated checkpoints (an install bundles none); PYTHON_ENV:
# the Python environment onnxruntime is installed in.
foreach(var BUILD_DIR PREFIX FIXTURES PYTHON_ENV)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install-test.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
set(elsewhere "${PREFIX}/elsewhere")
file(MAKE_DIRECTORY "${elsewhere}")
set(data "${PREFIX}/share/lenscheck")

# expect(CODE TEXT ARGS...): runs the installed lenscheck in `elsewhere` with ARGS; fails unless it
# exits with CODE and its output (stdout and stderr) contains TEXT.
function(expect code text)
  execute_process(COMMAND "${PREFIX}/bin/lenscheck" ${ARGN} WORKING_DIRECTORY "${elsewhere}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(FIND "${out}" "${text}" at)
  if(NOT rc EQUAL code OR at EQUAL -1)
    message(FATAL_ERROR "lenscheck ${ARGN}: exit ${rc}, expected ${code} and output containing "
                        "\"${text}\":\n${out}")
  endif()
  message(STATUS "lenscheck ${ARGN}: exit ${rc}, \"${text}\" as expected")
endfunction()

expect(0 "--tolerances TEXT=${data}/tolerances.yaml" verify --help)
expect(0 "verify: PASS" verify --model "${FIXTURES}/bert-mini")
# ABANDON is the bundled study's verdict on the planted sink; exit 3.
expect(3 "audit: ABANDON" audit --plan "${data}/studies/norm-weighted-attention.yaml"
       --model "${FIXTURES}/planted-sink" --out audit)
if(NOT EXISTS "${elsewhere}/audit/audit.md")
  message(FATAL_ERROR "the audit wrote no ${elsewhere}/audit/audit.md")
endif()
# The plan names a checkpoint in a build tree, which an install does not have.
expect(2 "study plan ${data}/studies/norm-weighted-attention.yaml names it as its model"
       audit --plan "${data}/studies/norm-weighted-attention.yaml")
expect(2 "an installed lenscheck bundles no checkpoint" mutate)
# ONNX Runtime from the installed adapter, in the Python environment --python-env names (an install knows
# none of its own), on one sentence.
file(WRITE "${elsewhere}/one.yaml" "sentences:\n  - id: nurse\n    text: The nurse handed the doctor the scissors.\n")
expect(0 "verify: PASS" verify --model "${FIXTURES}/bert-mini" --sentences one.yaml --candidate onnxruntime
       --python-env "${PYTHON_ENV}")
expect(2 "an installed lenscheck knows no Python environment with onnxruntime"
       verify --model "${FIXTURES}/bert-mini" --sentences one.yaml --candidate onnxruntime)
# The installed adapter is the one it runs: gone, the checkout's does not stand in.
file(REMOVE "${data}/ort-adapter.py")
expect(2 "the ONNX Runtime adapter script is missing"
       verify --model "${FIXTURES}/bert-mini" --sentences one.yaml --candidate onnxruntime
       --python-env "${PYTHON_ENV}")

# A broken install: a default file gone, then the whole data directory.
file(REMOVE "${data}/sentences.yaml")
expect(2 "${data}/sentences.yaml: lenscheck's default is missing: its data directory ${data} is incomplete"
       verify --model "${FIXTURES}/bert-mini")
file(REMOVE_RECURSE "${data}")
expect(2 "${data}/tolerances.yaml: lenscheck's default is missing: its data directory ${data} does not exist"
       verify --model "${FIXTURES}/bert-mini")
file(REMOVE_RECURSE "${PREFIX}")
