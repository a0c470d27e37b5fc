#!/usr/bin/env bash
# The fault matrix (issue #44): for each checkpoint, each position scripts/graph-fault.py knows (Q, K, V,
# attention output, FFN in, FFN out: a linear layer's product; the attention block's LayerNorm output) in
# layer 1, and each of lenscheck's plain exports (fp32, fp16, int8; no --trace, so a tensor the extra node
# hides is judged as a span), `verify --candidate onnx:` on
#   - the clean copy (the node times exactly 1): its verdict and worst global, local and span ratios, the
#     calibration of the spans (a FAIL there is a false alarm);
#   - copies times 1 + δ on the decade ladder 1e-5 … 1e-1, searched upward to the first caught (exit 1).
# A δ the graph's dtype cannot hold (1 + δ rounds to 1 in float16) is skipped. With --before, a second
# binary (another commit's build) runs the same matrix at the same time, its graphs its own exports, for
# the report's "before" column (its ladder only: the clean copies' calibration is the new gate's). Results
# go to WORK/after.tsv and WORK/before.tsv, one row per run; scripts/fault-matrix-report.py writes the
# Markdown report from them.
#
# Usage: scripts/fault-matrix.sh [--cli BIN] [--before BIN] [--limit N] [--out FILE.md] [--work DIR] [MODEL_DIR...]
#   defaults: build/lenscheck, no before, 2 sentences of fixtures/sentences.yaml, reports/fault-matrix.md,
#   WORK build/fault-matrix, the bundled fixtures in build/fixtures and the real checkpoints in .deps/models.
set -euo pipefail
cd "$(dirname "$0")/.."
python=/usr/bin/python3  # Debian's, with numpy and onnx (scripts/install-deps.sh)
cli=build/lenscheck before="" limit=2 out=reports/fault-matrix.md work=build/fault-matrix
while [[ $# -gt 0 && $1 == --* ]]; do
  [[ $# -ge 2 ]] || { echo "error: $1 needs a value" >&2; exit 2; }
  case $1 in
    --cli) cli=$2 ;; --before) before=$2 ;; --limit) limit=$2 ;; --out) out=$2 ;; --work) work=$2 ;;
    *) echo "error: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
models=("$@")
if [[ ${#models[@]} -eq 0 ]]; then
  # trained-mini and the real checkpoints first, bert-base-shape last (a run takes it 14 s of CPU, the others 3 s)
  models=(build/fixtures/trained-mini .deps/models/*
          build/fixtures/{bert-mini,planted-sink,saturated-sink,saturated-peaks,bert-base-shape})
fi
for bin in "$cli" ${before:+"$before"}; do
  [[ -x $bin ]] || { echo "error: $bin: no such executable" >&2; exit 2; }
done
for model in "${models[@]}"; do
  [[ -f $model/config.json ]] || { echo "error: $model: not a checkpoint folder (no config.json)" >&2; exit 2; }
done
mkdir -p "$work"

positions=(query key value attention-output ffn-in ffn-out layernorm)
ladder=(1e-5 1e-4 1e-3 1e-2 1e-1)

# One run: the copy of GRAPH at POSITION times 1 + DELTA, judged; appends a row to TSV:
# model precision position delta stored_delta exit pass global local span blamed user_s.
# Returns verify's exit code, or 3 when graph-fault.py refused the δ (not representable).
judge() {
  local bin=$1 tsv=$2 model=$3 precision=$4 graph=$5 position=$6 delta=$7 dir=$8 note rc
  if ! note=$("$python" scripts/graph-fault.py "$graph" "$dir/copy.onnx" "$position" 1 "$delta" 2>&1); then
    [[ $note == *"rounds to 1"* ]] || { echo "error: graph-fault.py: $note" >&2; exit 2; }
    printf '%s\t%s\t%s\t%s\t-\t3\t\t\t\t\t\t\n' "$model" "$precision" "$position" "$delta" >>"$tsv"
    return 3
  fi
  local stored=${note##*δ = }
  rc=0
  /usr/bin/time -f %U -o "$dir/time" "$bin" verify --model "$model" --candidate "onnx:$dir/copy.onnx" \
    --limit "$limit" --json "$dir/verify.json" >"$dir/log" 2>&1 || rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then
    echo "error: $bin verify on $model $precision $position δ $delta: exit $rc (see $dir/log)" >&2
    exit 2
  fi
  "$python" - "$dir/verify.json" "$model" "$precision" "$position" "$delta" "${stored%)}" "$rc" \
    "$(tail -1 "$dir/time")" >>"$tsv" <<'EOF'
import json, sys
path, *row = sys.argv[1:]
d = json.load(open(path))
families = d["gate"]["families"]
span = max([s["max_local_ratio"] for s in d.get("spans", [])], default=None)  # absent before spans landed
# The op to blame (the first tensor failing locally), else the first failing one (only globally).
gates = [s["gate"] for s in d["sentences"]]
blamed = next((g["blamed"] for g in gates if g.get("blamed")), None) or \
    next(("first divergence " + g["first_divergence"] for g in gates if g.get("first_divergence")), "")
cells = [d["pass"], max(f["max_error_ratio"] for f in families), max(f.get("max_local_ratio", 0) for f in families),
         "" if span is None else span, blamed or ""]
print("\t".join(row[:-1] + [str(c) for c in cells] + row[-1:]))
EOF
  return "$rc"
}

# The whole matrix for one binary, into TSV (rewritten); the clean copies only where CLEAN is "clean".
matrix() {
  local bin=$1 tsv=$2 with_clean=$3 model precision position delta name dir
  : >"$tsv"
  for model in "${models[@]}"; do
    name=$(basename "$model")
    for precision in fp32 fp16 int8; do
      dir=$work/$(basename "$tsv" .tsv)/$name-$precision
      mkdir -p "$dir"
      "$bin" export-onnx --model "$model" --out "$dir/plain.onnx" --variant "$precision" >/dev/null
      for position in "${positions[@]}"; do
        if [[ $with_clean == clean ]]; then
          judge "$bin" "$tsv" "$model" "$precision" "$dir/plain.onnx" "$position" 0 "$dir" || true
        fi
        for delta in "${ladder[@]}"; do
          if judge "$bin" "$tsv" "$model" "$precision" "$dir/plain.onnx" "$position" "$delta" "$dir"; then
            continue
          else
            [[ $? -eq 3 ]] || break  # caught (exit 1): the smallest δ on the ladder
          fi
        done
      done
      rm -f "$dir"/*.onnx
      echo "$(basename "$tsv" .tsv): $name $precision done" >&2
    done
  done
}

started=$(date +%s)
matrix "$cli" "$work/after.tsv" clean &
after_job=$!
if [[ -n $before ]]; then
  matrix "$before" "$work/before.tsv" ladder-only &
  wait $! || exit 2
fi
wait $after_job || exit 2
"$python" scripts/fault-matrix-report.py --limit "$limit" --wall $(($(date +%s) - started)) \
  --after "$work/after.tsv" --after-build "$("$cli" --version 2>&1 | head -1)" \
  ${before:+--before "$work/before.tsv" --before-build "$("$before" --version 2>&1 | head -1)"} --out "$out"
echo "wrote $out" >&2
