#!/usr/bin/env bash
# ONNX Runtime's cost per sentence, with the full trace and plain (last_hidden_state alone), and the
# export's time, for each variant of a checkpoint: bench/onnxruntime.sh MODEL_DIR [RUNS]
# One sentence ("The nurse handed the doctor the scissors.", tokenized by lenscheck) run RUNS times in
# one session, one intra-op thread, graph optimization all; the median of session.run after the first.
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1 runs=${2:-21}
cli=build/lenscheck
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$cli trace --model "$model" --text "The nurse handed the doctor the scissors." --out "$tmp/ids.safetensors" >/dev/null
ids=$(python3 bench/trace_ids.py "$tmp/ids.safetensors")
echo "| variant | export --trace | export plain | run with the full trace | run plain |"
echo "|---|---:|---:|---:|---:|"
for variant in fp32 fp16 int8; do
  row="| $variant"
  for mode in trace plain; do
    flag=""; [ $mode = trace ] && flag=--trace
    # export-onnx prints the export's own time (the checkpoint already loaded) last: "..., 0.31 s)"
    row+=" | $($cli export-onnx --model "$model" --variant $variant $flag --out "$tmp/$mode.onnx" |
               sed -E 's/.*, ([0-9.]+) s\)$/\1/') s"
  done
  for mode in trace plain; do
    sentences=$(python3 -c "import sys; print('[' + ','.join([sys.argv[1]] * int(sys.argv[2])) + ']')" "$ids" "$runs")
    plain=false; [ $mode = plain ] && plain=true
    mkdir -p "$tmp/out"
    printf '{"model":"%s","out_dir":"%s","intra_op_threads":1,"graph_optimization":"all","producer":"bench","precision":"%s","plain":%s,"sentences":%s}' \
      "$tmp/$mode.onnx" "$tmp/out" $variant $plain "$sentences" > "$tmp/request.json"
    ms=$(.deps/venv/bin/python3 -I onnx/ort-adapter.py "$tmp/request.json" 2>/dev/null |
         awk '$1 == "done" && $2 > 0 { print $3 }' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    row+=" | $ms ms"
  done
  echo "$row |"
done
