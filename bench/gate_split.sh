#!/usr/bin/env bash
# verify (derived rule, and --absolute for what the fp64 truth and the rounding probes cost) and mutate
# on the 14 bundled sentences, per checkpoint, wall clock of each process; mutate's own line splits
# its set-up (every oracle and runtime trace, once) from the cases. Usage:
#   bench/gate_split.sh [RUNS] [MODEL_DIR...]    (default 3 runs of build/fixtures/bert-mini and bert-base-shape)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
shift || true
models=("$@")
((${#models[@]})) || models=(build/fixtures/bert-mini build/fixtures/bert-base-shape)
seconds() {  # seconds COMMAND...: runs it, prints its wall time
  local t0
  t0=$(date +%s.%N)
  "$@" >/tmp/gate_split.out 2>&1 || { cat /tmp/gate_split.out >&2; return 1; }
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}
printf '%-28s %-22s %s\n' model phase "seconds (each run)"
for model in "${models[@]}"; do
  for phase in verify verify-absolute mutate; do
    times=()
    for ((i = 0; i < runs; ++i)); do
      case $phase in
        verify) times+=("$(seconds build/lenscheck verify --model "$model")") ;;
        verify-absolute) times+=("$(seconds build/lenscheck verify --model "$model" --absolute)") ;;
        mutate) times+=("$(seconds build/lenscheck mutate --model "$model")")
                split=$(grep '^mutation score' /tmp/gate_split.out) ;;
      esac
    done
    printf '%-28s %-22s %s\n' "$(basename "$model")" "$phase" "${times[*]}"
  done
  echo "  last mutate: $split"
done
