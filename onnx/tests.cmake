# ONNX Runtime as a candidate, end to end on the generated fixtures. No skip: scripts/install-deps.sh
# installs node, libonnx-dev and onnxruntime-node, and a missing one fails these tests.
set(LENSCHECK_EXPECT ${CMAKE_SOURCE_DIR}/onnx/expect.cmake)
function(lenscheck_onnx_test name expected regex)
  string(REPLACE ";" "\\;" regex "${regex}")
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${ARGN}" -DEXPECTED=${expected} "-DREGEX=${regex}"
                                -P ${LENSCHECK_EXPECT})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED bert_mini LABELS onnxruntime)
endfunction()

set(cli $<TARGET_FILE:lenscheck>)
foreach(fixture bert-mini trained-mini)
  lenscheck_onnx_test(onnxruntime.fp32.${fixture} 0 "fp32 \\(CPU.*\\(derived rule\\): PASS.*verify: PASS"
                      ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/${fixture} --candidate onnxruntime)
  # Until the precision contract exists, fp16 and int8 run end to end and fail the fp32 rule: exit 1,
  # a verdict on every tensor family, not exit 2.
  foreach(variant fp16 int8)
    lenscheck_onnx_test(onnxruntime.${variant}.${fixture} 1 "layer\\.\\*\\.output [^\n]*FAIL.*verify: FAIL"
                        ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/${fixture} --candidate onnxruntime:${variant})
  endforeach()
endforeach()
# A candidate that cannot start is exit 2, naming it: node not on PATH.
lenscheck_onnx_test(onnxruntime.node-missing 2 "error: onnxruntime fp32 \\(CPU[^\n]*cannot run node"
                    ${CMAKE_COMMAND} -E env PATH=/nonexistent ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/bert-mini
                    --candidate onnxruntime)
# A sentence past its bound is killed, not waited for: exit 2 naming the sentence.
lenscheck_onnx_test(onnxruntime.sentence-timeout 2 "error: onnxruntime fp32 \\(CPU[^\n]*sentence 0 took longer than 1e-06 s"
                    ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/bert-mini --candidate onnxruntime --ort-timeout 0.000001)
lenscheck_onnx_test(onnxruntime.unknown-candidate 2 "--candidate: \"onnxruntime:bf16\" is not"
                    ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/bert-mini --candidate onnxruntime:bf16)
