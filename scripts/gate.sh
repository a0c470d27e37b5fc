#!/usr/bin/env bash
# The release gate on the bundled fixtures, from an existing build: verify, mutate, then the
# pre-registered audits, each a process of its own that loads its model. Reports go to $1 (default
# reports/); the wall time of each phase and of the whole goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-reports}"
start=$(date +%s.%N)
source scripts/gate-phases.sh
phase verify build/lenscheck verify --model build/fixtures/bert-mini --sentences fixtures/sentences.yaml \
  --tolerances fixtures/tolerances.yaml \
  --report "$out/verify.md" --json "$out/verify.json" --junit "$out/verify.junit.xml"
# The catalogue on every bundled checkpoint, one report: soft attention, trained statistics,
# BERT-base's shape, the planted sink and the saturated one.
phase mutate build/lenscheck mutate --model build/fixtures/bert-mini --model build/fixtures/trained-mini \
  --model build/fixtures/bert-base-shape --model build/fixtures/planted-sink --model build/fixtures/saturated-sink \
  --report "$out/mutate.md" --json "$out/mutate.json"
# Exit 0 PROCEED, 3 ABANDON: both are verdicts, not failures of the gate (audit, scripts/gate-phases.sh).
# The third audit runs the first study at corpus scale on real English (Pride and Prejudice, written by
# scripts/build.sh) on trained-mini.
for plan in norm-weighted-attention saturated-sink norm-weighted-attention-pride-and-prejudice; do
  audit --plan "fixtures/studies/$plan.yaml" --out "$out/$plan"
done
# The residual lens's study (Kobayashi et al. 2021) on every bundled checkpoint, the known answers first,
# and its index side by side.
residual=()
for model in planted-sink saturated-sink trained-mini bert-mini bert-base-shape; do
  audit --plan fixtures/studies/residual-layernorm-sink.yaml --model "build/fixtures/$model" \
    --out "$out/residual-layernorm-sink/$model"
  residual+=("$out/residual-layernorm-sink/$model")
done
python3 scripts/audit-index.py "$out/residual-layernorm-sink/README.md" "${residual[@]}" || keep $?
awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "phase total   %.2f s\n", b - a }' >&2
[ "$status" -eq 0 ]
