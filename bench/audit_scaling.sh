#!/usr/bin/env bash
# Audit time, rows per second and peak memory against corpus size: the norm-weighted-attention plan
# with its sentences replaced by a corpus of each size. `generated`: `lenscheck make-corpus`
# sentences on the planted-sink fixture. `english`: the sentences of Jane Austen's six novels
# (`make-corpus --from`, the texts scripts/install-deps.sh brings from Debian; 31 218 sentences, taken
# again from the start past that) on trained-mini, as the gate's corpus audit runs.
# Prints a Markdown table and the least-squares slope; progress of each audit goes to stderr.
#
#   bench/audit_scaling.sh [build dir, default build] [sizes, default "1000 3000 10000"] [generated|english]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
sizes=(${2:-1000 3000 10000})
corpus=${3:-generated}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case "$corpus" in
  generated)
    "$build/lenscheck" make-corpus --out "$work/corpus.txt" --sentences "${sizes[-1]}" >/dev/null
    model=$build/fixtures/planted-sink ;;
  english)
    "$build/lenscheck" make-corpus --from .deps/texts/austen/*.txt --out "$work/text.txt" >&2
    : > "$work/corpus.txt"
    while [ "$(wc -l < "$work/corpus.txt")" -lt "${sizes[-1]}" ]; do cat "$work/text.txt" >> "$work/corpus.txt"; done
    model=$build/fixtures/trained-mini ;;
  *) echo "corpus must be generated or english, not $corpus" >&2; exit 2 ;;
esac

echo "| sentences | rows | wall | rows per second | peak RSS |"
echo "|---:|---:|---:|---:|---:|"
points=()
for n in "${sizes[@]}"; do
  head -n "$n" "$work/corpus.txt" > "$work/corpus-$n.txt"
  # The registered plan, less its sentences, model and recorded numbers (they name fixture sentences).
  { grep -vE '^(sentences|model|recorded):' fixtures/studies/norm-weighted-attention.yaml
    echo "sentences: $work/corpus-$n.txt"
    echo "model: $model"; } > "$work/plan-$n.yaml"
  status=0
  /usr/bin/time -f "%e %M" -o "$work/time-$n" "$build/lenscheck" audit --plan "$work/plan-$n.yaml" \
    --out "$work/audit-$n" > /dev/null || status=$?
  [ "$status" -eq 0 ] || [ "$status" -eq 3 ]  # PROCEED or ABANDON: both are verdicts
  read -r wall rss < <(tail -n 1 "$work/time-$n")  # after "Command exited with non-zero status 3"
  rows=$(grep -o '"rows_total": [0-9]*' "$work/audit-$n/audit.json" | grep -o '[0-9]*$')
  awk -v n="$n" -v rows="$rows" -v w="$wall" -v m="$rss" \
    'BEGIN { printf "| %d | %d | %.2f s | %.0f | %.1f MiB |\n", n, rows, w, rows / w, m / 1024 }'
  points+=("$n $wall $rss")
done
printf '%s\n' "${points[@]}" | awk '
  { n[NR] = $1; t[NR] = $2; m[NR] = $3; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
  END {
    slope = (NR * sxy - sx * sy) / (NR * sxx - sx * sx); icpt = (sy - slope * sx) / NR
    worst = 0
    for (i = 1; i <= NR; ++i) { r = t[i] - (icpt + slope * n[i]); if (r < 0) r = -r; if (r / t[i] > worst) worst = r / t[i] }
    printf "\nleast squares: %.3f ms per sentence + %.2f s fixed; largest residual %.1f %% of a point'"'"'s time\n", 1000 * slope, icpt, 100 * worst
    printf "peak RSS: %.1f MiB at %d sentences, %.1f MiB at %d (%+.1f %%)\n", m[1] / 1024, n[1], m[NR] / 1024, n[NR], 100 * (m[NR] - m[1]) / m[1]
  }'
