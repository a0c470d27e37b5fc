#!/usr/bin/env bash
# The corpus-scale part of the gate on the real trained BERTs (not in CI: about 4 minutes a checkpoint
# here), from an existing build and scripts/build.sh's corpora: for every checkpoint folder in .deps/models/,
# the pre-registered real-bert-sink-austen audit (Emma and Persuasion) and `verify` on the first 1 000
# sentences of Northanger Abbey; then the index of scripts/real-gate.sh anew, with these beside its reports.
# Reports go to $1 (default reports/real/), one folder per checkpoint. Exits non-zero where verify fails or an
# audit gives no verdict, once every checkpoint has run.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-reports/real}"
start=$(date +%s.%N)
source scripts/gate-phases.sh
for config in .deps/models/*/config.json; do
  model=$(dirname "$config")
  name=$(basename "$model")
  mkdir -p "$out/$name"
  audit --plan fixtures/studies/real-bert-sink-austen.yaml --model "$model" \
    --out "$out/$name/real-bert-sink-austen"
  phase verify build/lenscheck verify --model "$model" --sentences build/fixtures/northanger-abbey.txt --limit 1000 \
    --tolerances fixtures/tolerances.yaml --plan fixtures/studies/norm-weighted-attention.yaml \
    --report "$out/$name/verify-northanger.md" --json "$out/$name/verify-northanger.json" || keep $?
done
python3 scripts/real-index.py "$out" || keep $?
awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "phase total   %.2f s\n", b - a }' >&2
[ "$status" -eq 0 ]
