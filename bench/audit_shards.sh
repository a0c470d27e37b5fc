#!/usr/bin/env bash
# A sharded audit on this machine: the registered plan over a generated corpus, on the planted-sink
# fixture, as 1, 2 and 4 shards (all of a run's shards at once, one thread each, as a job array
# would place them on free cores), then audit-merge; and a partial's size against corpus length.
# Prints Markdown tables; checks that every merge gives the single run's audit.json.
#
#   bench/audit_shards.sh [build dir, default build] [sentences, default 100000] [shard counts, default "1 2 4"]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
sentences=${2:-100000}
counts=(${3:-1 2 4})
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/lenscheck" make-corpus --out "$work/corpus.txt" --sentences "$sentences" >/dev/null

plan() {  # the registered plan less its sentences, model and recorded numbers, over corpus $1
  { grep -vE '^(sentences|model|recorded):' fixtures/studies/norm-weighted-attention.yaml
    echo "sentences: $1"
    echo "model: $build/fixtures/planted-sink"; } > "$2"
}
plan "$work/corpus.txt" "$work/plan.yaml"

echo "load average before: $(cut -d ' ' -f 1-3 /proc/loadavg)"
echo
echo "| shards | all shards (wall) | slowest shard | CPU, all shards | peak RSS of a shard (largest) | partial (each) | merge (wall) | merge peak RSS | merged = single |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for n in "${counts[@]}"; do
  dir="$work/$n"
  mkdir -p "$dir"
  start=$(date +%s%N)
  for ((k = 0; k < n; ++k)); do
    /usr/bin/time -f "%e %M %U %S" -o "$dir/time-$k" "$build/lenscheck" audit --plan "$work/plan.yaml" \
      --shard "$k/$n" --partial "$dir/shard-$k.json" --threads 1 > /dev/null 2>&1 &
  done
  wait
  all=$(( $(date +%s%N) - start ))
  slowest=$(cut -d ' ' -f 1 "$dir"/time-[0-9]* | sort -g | tail -n 1)
  rss=$(cut -d " " -f 2 "$dir"/time-[0-9]* | sort -g | tail -n 1)
  cpu=$(awk '{ s += $3 + $4 } END { print s }' "$dir"/time-[0-9]*)
  sizes=$(stat -c %s "$dir"/shard-*.json | sort -g | awk '{ printf "%s%.0f", (NR > 1 ? ", " : ""), $1 / 1024 } END { print " KiB" }')
  status=0
  /usr/bin/time -f "%e %M" -o "$dir/time-merge" "$build/lenscheck" audit-merge --plan "$work/plan.yaml" \
    --out "$dir/report" "$dir"/shard-*.json > /dev/null || status=$?
  [ "$status" -eq 0 ] || [ "$status" -eq 3 ]  # PROCEED or ABANDON: both are verdicts
  read -r merge merge_rss < <(tail -n 1 "$dir/time-merge")
  if [ "$n" = "${counts[0]}" ]; then cp "$dir/report/audit.json" "$work/first.json"; fi
  same=$(cmp -s "$work/first.json" "$dir/report/audit.json" && echo "yes (audit.json byte for byte)" || echo "**no**")
  awk -v n="$n" -v all="$(awk -v ns="$all" 'BEGIN { print ns / 1e9 }')" -v s="$slowest" -v c="$cpu" -v r="$rss" -v sz="$sizes" -v m="$merge" -v mr="$merge_rss" -v same="$same" \
    'BEGIN { printf "| %d | %.1f s | %.1f s | %.1f s | %.1f MiB | %s | %.2f s | %.1f MiB | %s |\n", n, all, s, c, r / 1024, sz, m, mr / 1024, same }'
done

echo
echo "| corpus sentences | partial of one shard (1/1) | of shard 0/4 |"
echo "|---:|---:|---:|"
for size in 1000 10000; do
  head -n "$size" "$work/corpus.txt" > "$work/corpus-$size.txt"
  plan "$work/corpus-$size.txt" "$work/plan-$size.yaml"
  for shard in 0/1 0/4; do
    "$build/lenscheck" audit --plan "$work/plan-$size.yaml" --shard "$shard" --partial "$work/p-$size-${shard%/*}-${shard#*/}.json" >/dev/null 2>&1
  done
  echo "| $size | $(($(stat -c %s "$work/p-$size-0-1.json") / 1024)) KiB | $(($(stat -c %s "$work/p-$size-0-4.json") / 1024)) KiB |"
done
if [[ " ${counts[*]} " == *" 1 "* && " ${counts[*]} " == *" 4 "* ]]; then
  echo "| $sentences | $(($(stat -c %s "$work/1/shard-0.json") / 1024)) KiB | $(($(stat -c %s "$work/4/shard-0.json") / 1024)) KiB |"
fi
echo
echo "load average after: $(cut -d ' ' -f 1-3 /proc/loadavg)"
