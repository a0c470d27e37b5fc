# scripts/install-deps.sh refuses a downloaded file whose SHA-256 is not the pinned one: a copy of the
# script in WORK, whose .deps/downloads holds a corrupt onnxruntime wheel (so nothing is downloaded), must
# exit non-zero naming the file and what to do, install nothing from it, and keep it as *.rejected.
foreach(var SOURCE_DIR WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install-deps-test.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SOURCE_DIR}/scripts/install-deps.sh" DESTINATION "${WORK}/scripts")
set(wheel onnxruntime-1.30.0-cp311-cp311-manylinux_2_28_x86_64.whl)
file(WRITE "${WORK}/.deps/downloads/${wheel}" "not the wheel\n")
execute_process(COMMAND bash "${WORK}/scripts/install-deps.sh" --data
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(FIND "${out}" "${wheel} (onnxruntime==1.30.0 from pypi) has SHA-256" named)
string(FIND "${out}" "Run ${WORK}/scripts/install-deps.sh again to download it anew" advised)
if(rc EQUAL 0 OR named EQUAL -1 OR advised EQUAL -1)
  message(FATAL_ERROR "install-deps.sh --data with a corrupt ${wheel}: exit ${rc}, expected non-zero and a "
                      "message naming the file and what to do:\n${out}")
endif()
if(EXISTS "${WORK}/.deps/downloads/${wheel}" OR NOT EXISTS "${WORK}/.deps/downloads/${wheel}.rejected")
  message(FATAL_ERROR "the corrupt ${wheel} was not set aside as ${wheel}.rejected")
endif()
if(EXISTS "${WORK}/.deps/venv/.pinned")
  message(FATAL_ERROR ".deps/venv is marked installed although its onnxruntime wheel was refused")
endif()
file(REMOVE_RECURSE "${WORK}")
