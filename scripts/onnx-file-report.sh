#!/usr/bin/env bash
# reports/verify-onnx-file.md: graphs as users ship them judged with `verify --candidate onnx:PATH` on
# trained-mini and the 14 bundled sentences: PyTorch's torch.onnx export at opset 14 and the same graph as
# ONNX Runtime's extended optimizer saves it, the same model in other exporters' forms (F.layer_norm,
# LayerNorm by hand, TensorFlow-ONNX's folded scale, unfolded at opset 17; build/fixtures/onnx,
# scripts/make-onnx-fixtures.cmake), lenscheck's own exports without --trace at fp32, fp16 and int8, and
# two graphs of other models judged as trained-mini's: bert-mini's fp32 export, and the by-hand graph with
# one LayerNorm gain times 1.001. Per graph: its verdict, its weights against the
# checkpoint's, the tensor families judged, derived and those it cannot give, and why, and the display
# verdict. From an existing build (scripts/build.sh) and its fixtures. Exit 1 if a graph of trained-mini
# fails, or one of the other two passes.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/lenscheck out=reports/onnx-file graphs=build/onnx-files
rev=$(git describe --always --dirty)  # before this script rewrites the committed reports
mkdir -p "$out" "$graphs"
for variant in fp32 fp16 int8; do
  $cli export-onnx --model build/fixtures/trained-mini --variant $variant --out $graphs/trained-mini-$variant.onnx >/dev/null
done
$cli export-onnx --model build/fixtures/bert-mini --variant fp32 --out $graphs/bert-mini-fp32.onnx >/dev/null
cp build/fixtures/onnx/trained-mini-torch*.onnx $graphs/
forms=(functional manual manual-mul tf no-fold)
runs=(trained-mini-torch trained-mini-torch-ort "${forms[@]/#/trained-mini-torch-}" trained-mini-fp32 trained-mini-fp16
      trained-mini-int8 bert-mini-fp32 trained-mini-torch-manual-fault)
declare -A code
for run in "${runs[@]}"; do
  set +e
  $cli verify --model build/fixtures/trained-mini --candidate onnx:$graphs/$run.onnx --threads 0 \
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
  echo "Full reports: \`reports/onnx-file/<graph>.md\`."
  echo
  for run in "${runs[@]}"; do
    echo "## $run.onnx"
    echo
    echo "- exit ${code[$run]}: $(grep -m1 'vs oracle fp64' $out/$run.txt)"
    grep -E '^note: (candidate|weights|found in the graph|derived|no display verdict)' $out/$run.txt | sed 's/^note: /- /'
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
for run in "${runs[@]::10}"; do ((code[$run] == 0)) || exit 1; done
((code[bert-mini-fp32] == 1 && code[trained-mini-torch-manual-fault] == 1))
