# Hugging Face transformers' BertModel as a candidate, end to end on trained-mini. No skip: scripts/install-deps.sh
# makes .deps/transformers (the pinned transformers on PyPI's torch 2.5.1), and a missing one fails these tests.
# Each run starts Python with torch and transformers: some 2 s before the first sentence.

set(hf_verify $<TARGET_FILE:lenscheck> verify --model ${LENSCHECK_FIXTURE_DIR}/trained-mini
              --python-env ${LENSCHECK_TRANSFORMERS_ENV})
# The clean candidate passes, every tensor of the schema and the display.
lenscheck_expect_test(transformers transformers.eager-fp32.trained-mini 0
  "eager attention, torch_dtype fp32 \\(CPU.*\\(derived rule\\): PASS.*display verdict: PASS: [0-9]+ of [0-9]+ rows print differently from fp64: [0-9]+ within fp32's error, 0 beyond it.*verify: PASS"
  ${hf_verify} --candidate transformers:eager --report ${CMAKE_BINARY_DIR}/transformers-eager-fp32.md)
# fp16 and bf16 pass under the schemes they declare (every op's output rounded once to the format).
lenscheck_expect_test(transformers transformers.eager-fp16.trained-mini 0
  "torch_dtype fp16 \\(CPU.*\\(derived rule\\): PASS.*libtorch fp16 \\(simulated in fp64\\)'s error at most.*display verdict: PASS.*verify: PASS"
  ${hf_verify} --candidate transformers --torch-dtype fp16)
lenscheck_expect_test(transformers transformers.eager-bf16.trained-mini 0
  "torch_dtype bf16 \\(CPU.*\\(derived rule\\): PASS.*libtorch bf16 \\(simulated in fp64\\)'s error at most.*verify: PASS"
  ${hf_verify} --candidate transformers --torch-dtype bf16)
# SDPA hides the scores and probabilities: the context is judged as the span from Q, K and V, whose spread
# holds torch's fused kernel keeping them in fp32 (oracle.h, attention_in_one_kernel; without it the clean
# fp16 context fails locally at 43x). The display, which shows the probabilities, cannot be judged.
lenscheck_expect_test(transformers transformers.sdpa-fp16.trained-mini 0
  "sdpa attention, torch_dtype fp16 .*\\(derived rule\\): PASS.*layer\\.\\*\\.attention\\.context [^\n]*pass.*verify: PASS.*no display verdict: the instrument shows layer\\.0\\.attention\\.probs"
  ${hf_verify} --candidate transformers:sdpa --torch-dtype fp16)

# (The expectation reads stdout, then stderr, where the notes are.)
# Faults stay caught, real ones: an op's output 0.1 % off, blamed on that op, and a checkpoint copy with one
# weight 0.1 % off (the output projection of layer 2), blamed on the span it enters.
lenscheck_expect_test(transformers transformers.linear-fault.trained-mini 1
  "op to blame: layer\\.1\\.attention\\.value .*verify: FAIL.*fault: encoder\\.layer\\.1\\.attention\\.self\\.value's output times 1 \\+ 0\\.001"
  ${hf_verify} --candidate transformers --fault-op encoder.layer.1.attention.self.value:1e-3)
# Inside SDPA's one kernel: its output 0.1 % off at fp32 fails the span; at fp16, whose step is 2^-11, 1 % does
# (0.1 % is 3x the span's spread there: reports/verify-transformers.md).
lenscheck_expect_test(transformers transformers.sdpa-fault.trained-mini 1
  "op to blame: span layer\\.1\\.attention\\.query \\+ layer\\.1\\.attention\\.key \\+ layer\\.1\\.attention\\.value → layer\\.1\\.attention\\.context .*verify: FAIL"
  ${hf_verify} --candidate transformers:sdpa --fault-op encoder.layer.1.attention.self:1e-3)
lenscheck_expect_test(transformers transformers.sdpa-fp16-fault.trained-mini 1
  "op to blame: span layer\\.1\\.attention\\.query \\+ layer\\.1\\.attention\\.key \\+ layer\\.1\\.attention\\.value → layer\\.1\\.attention\\.context .*verify: FAIL"
  ${hf_verify} --candidate transformers:sdpa --torch-dtype fp16 --fault-op encoder.layer.1.attention.self:1e-2)
set(scaled ${CMAKE_BINARY_DIR}/transformers-weight-fault/trained-mini)
add_test(NAME fixture.transformers-weight-fault
  COMMAND ${LENSCHECK_TORCH_PYTHON} ${CMAKE_SOURCE_DIR}/scripts/scale-weight.py ${LENSCHECK_FIXTURE_DIR}/trained-mini
          ${scaled} encoder.layer.2.attention.output.dense.weight 1.001)
set_tests_properties(fixture.transformers-weight-fault PROPERTIES FIXTURES_SETUP transformers_weight_fault
                                                                  FIXTURES_REQUIRED bert_mini LABELS transformers)
lenscheck_expect_test(transformers transformers.weight-fault.trained-mini 1
  "op to blame: layer\\.2\\.attention\\.pre_norm .*verify: FAIL.*loaded from [^\n]*transformers-weight-fault/trained-mini"
  ${hf_verify} --candidate transformers --candidate-model ${scaled})
set_tests_properties(transformers.weight-fault.trained-mini PROPERTIES FIXTURES_REQUIRED "bert_mini;transformers_weight_fault")

# What cannot run is exit 2, naming what is missing and how to install it: no environment; an environment
# without transformers (Debian's, whose python3-torch 1.13 is there).
lenscheck_expect_test(transformers transformers.python-env-missing 2
  "error: /nonexistent: transformers:eager: no Python environment here[^\n]*scripts/install-deps.sh --data"
  $<TARGET_FILE:lenscheck> verify --model ${LENSCHECK_FIXTURE_DIR}/trained-mini --candidate transformers
  --python-env /nonexistent)
lenscheck_expect_test(transformers transformers.package-missing 2
  "error: /usr: transformers:eager: the Python package transformers is not installed in this environment"
  $<TARGET_FILE:lenscheck> verify --model ${LENSCHECK_FIXTURE_DIR}/trained-mini --candidate transformers
  --python-env /usr)
lenscheck_expect_test(transformers transformers.unknown-module 2
  "error: transformers:eager: [^\n]*--fault-op: 'encoder\\.layer\\.9\\.attention\\.self\\.value' is no linear layer or attention\\.self"
  ${hf_verify} --candidate transformers --fault-op encoder.layer.9.attention.self.value:1e-3)
lenscheck_expect_test(transformers transformers.unknown-dtype 2 "--torch-dtype: \"fp8\" is not fp32, fp16 or bf16"
  ${hf_verify} --candidate transformers --torch-dtype fp8)
lenscheck_expect_test(transformers transformers.option-without-candidate 2
  "--torch-dtype: only a transformers candidate takes it, not runtime"
  ${hf_verify} --torch-dtype bf16)
