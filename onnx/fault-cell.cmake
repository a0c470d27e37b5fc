# One cell of the fault matrix (issue #44): a graph of MODEL (SOURCE: lenscheck's plain export at fp32, fp16
# or int8, no --trace, so that a tensor the extra node hides is judged as a span; or a .onnx file), copied by
# scripts/graph-fault.py with one extra node times 1 + DELTA at POSITION in layer 1, and judged by `verify
# --candidate onnx:` on the first LIMIT sentences. Then expect.cmake holds the run to EXPECTED and REGEX;
# REPORT_REGEX, if given, must match the Markdown report (the spans' ratios are printed there only).
foreach(var CLI PYTHON MODEL SOURCE POSITION DELTA LIMIT WORK EXPECTED REGEX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "fault-cell.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(graph ${SOURCE})
if(NOT SOURCE MATCHES "\\.onnx$")
  set(graph ${WORK}/${SOURCE}.onnx)
  execute_process(COMMAND ${CLI} export-onnx --model ${MODEL} --out ${graph} --variant ${SOURCE}
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "export-onnx --variant ${SOURCE} failed (${rc}):\n${err}")
  endif()
endif()
execute_process(COMMAND ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/../scripts/graph-fault.py ${graph} ${WORK}/copy.onnx
                        ${POSITION} 1 ${DELTA}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "graph-fault.py failed (${rc}):\n${err}")
endif()
message("${out}")
set(COMMAND ${CLI} verify --model ${MODEL} --candidate onnx:${WORK}/copy.onnx --limit ${LIMIT}
            --report ${WORK}/verify.md)
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/expect.cmake)
if(DEFINED REPORT_REGEX)
  file(READ ${WORK}/verify.md report)
  if(NOT report MATCHES "${REPORT_REGEX}")
    message(FATAL_ERROR "${WORK}/verify.md does not match: ${REPORT_REGEX}")
  endif()
endif()
file(REMOVE_RECURSE ${WORK})
