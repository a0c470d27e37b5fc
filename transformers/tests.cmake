# Hugging Face transformers' BertModel as a candidate, end to end on trained-mini. No skip: scripts/install-deps.sh
# makes .deps/transformers (the pinned transformers on Debian's python3-torch 1.13), and a missing one fails these
# tests. Each run starts Python with torch and transformers: some 2-3 s before the first sentence.

set(hf_verify $<TARGET_FILE:lenscheck> verify --model ${LENSCHECK_FIXTURE_DIR}/trained-mini
              --python-env ${LENSCHECK_TRANSFORMERS_ENV})
# The clean candidate passes, every tensor of the schema and the display.
lenscheck_expect_test(transformers transformers.eager-fp32.trained-mini 0
  "eager attention, torch_dtype fp32 \\(CPU.*\\(derived rule\\): PASS.*display verdict: PASS: [0-9]+ of [0-9]+ rows print differently from fp64: [0-9]+ within fp32's error, 0 beyond it.*verify: PASS"
  ${hf_verify} --candidate transformers:eager --report ${CMAKE_BINARY_DIR}/transformers-eager-fp32.md)
# bf16 runs on Debian's torch too and passes under the bf16 scheme it declares, though its LayerNorm does not
# round once: the embeddings' local ratio is 13x against k 16 here (all-MiniLM-L6-v2 fails at 22x; README).
lenscheck_expect_test(transformers transformers.eager-bf16.trained-mini 0
  "torch_dtype bf16 \\(CPU.*\\(derived rule\\): PASS.*libtorch bf16 \\(simulated in fp64\\)'s error at most.*verify: PASS"
  ${hf_verify} --candidate transformers --torch-dtype bf16)

# (The expectation reads stdout, then stderr, where the notes are.)
# Faults stay caught, real ones: an op's output 0.1 % off, blamed on that op, and a checkpoint copy with one
# weight 0.1 % off (the output projection of layer 2), blamed on the span it enters.
lenscheck_expect_test(transformers transformers.linear-fault.trained-mini 1
  "op to blame: layer\\.1\\.attention\\.value .*verify: FAIL.*fault: encoder\\.layer\\.1\\.attention\\.self\\.value's output times 1 \\+ 0\\.001"
  ${hf_verify} --candidate transformers --fault-linear encoder.layer.1.attention.self.value:1e-3)
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

# What cannot run is exit 2, naming what is missing and how to install it: the pinned torch (Debian's 1.13)
# has no SDPA for transformers and no float16 CPU kernels; no environment; an environment without transformers.
lenscheck_expect_test(transformers transformers.sdpa-needs-torch-2 2
  "error: transformers:sdpa: transformers [0-9.]+ on torch 1\\.13[^\n]*torch>=2\\.1\\.1[^\n]*pip install 'torch>=2\\.1\\.1'"
  ${hf_verify} --candidate transformers:sdpa)
lenscheck_expect_test(transformers transformers.fp16-needs-kernels 2
  "error: transformers:eager: torch 1\\.13[^\n]*CPU kernels cannot run BertModel in fp16: [^\n]*not implemented for 'Half'[^\n]*pip install"
  ${hf_verify} --candidate transformers --torch-dtype fp16)
lenscheck_expect_test(transformers transformers.python-env-missing 2
  "error: /nonexistent: transformers:eager: no Python environment here[^\n]*scripts/install-deps.sh --data"
  $<TARGET_FILE:lenscheck> verify --model ${LENSCHECK_FIXTURE_DIR}/trained-mini --candidate transformers
  --python-env /nonexistent)
lenscheck_expect_test(transformers transformers.package-missing 2
  "error: /usr: transformers:eager: the Python package transformers is not installed in this environment"
  $<TARGET_FILE:lenscheck> verify --model ${LENSCHECK_FIXTURE_DIR}/trained-mini --candidate transformers
  --python-env /usr)
lenscheck_expect_test(transformers transformers.unknown-module 2
  "error: transformers:eager: [^\n]*--fault-linear: 'encoder\\.layer\\.9\\.attention\\.self\\.value' is no linear layer"
  ${hf_verify} --candidate transformers --fault-linear encoder.layer.9.attention.self.value:1e-3)
lenscheck_expect_test(transformers transformers.unknown-dtype 2 "--torch-dtype: \"fp8\" is not fp32, fp16 or bf16"
  ${hf_verify} --candidate transformers --torch-dtype fp8)
lenscheck_expect_test(transformers transformers.option-without-candidate 2
  "--torch-dtype: only a transformers candidate takes it, not runtime"
  ${hf_verify} --torch-dtype bf16)
