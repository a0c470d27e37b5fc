#!/usr/bin/env bash
# A corpus audit on a Slurm cluster: the shards as one job array, the merge as a job that starts
# when every shard has succeeded (afterok) and is cancelled if one fails.
#
#   scripts/slurm-audit.sh [--wait] PLAN N OUT [sbatch option...]
#
# OUT (on storage every node sees) receives partials/shard-K.json, logs/ and report/ (audit.md,
# audit.json, sink-shares.svg). The sbatch options go to every job: --partition, --time,
# --cpus-per-task (each shard then runs that many threads), --mem, --account. With --wait the
# script returns when the merge ends, with its exit code (0 PROCEED, 3 ABANDON, 1 recorded numbers
# moved, 2 bad input); a merge cancelled because a shard failed exits 1, naming the shard's log.
# LENSCHECK names the executable (default: build/lenscheck beside this script).
set -euo pipefail
wait=()
if [ "${1:-}" = "--wait" ]; then
  wait=(--wait)
  shift
fi
if [ $# -lt 3 ]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
plan=$(realpath "$1")
shards=$2
out=$(realpath -m "$3")
shift 3
lenscheck=$(realpath "${LENSCHECK:-$(dirname "$0")/../build/lenscheck}")
if ! [[ "$shards" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: N must be a whole number of shards, 1 or more (got \"$shards\")" >&2
  exit 2
fi
mkdir -p "$out/partials" "$out/logs"

array=$(sbatch --parsable --job-name=lenscheck-audit --array="0-$((shards - 1))" \
  --output="$out/logs/shard-%a.out" "$@" \
  --wrap="exec '$lenscheck' audit --plan '$plan' --shard \"\$SLURM_ARRAY_TASK_ID/$shards\" \
--partial '$out/partials/shard-'\"\$SLURM_ARRAY_TASK_ID\".json --threads \"\${SLURM_CPUS_PER_TASK:-1}\"")
array=${array%%;*}  # "id;cluster" on a federation
echo "shards: job array $array (0-$((shards - 1)))"

# Every expected partial by name: the merge names a missing one.
partials=""
for ((k = 0; k < shards; ++k)); do partials+=" '$out/partials/shard-$k.json'"; done
merge=$(sbatch --parsable "${wait[@]}" --job-name=lenscheck-audit-merge --dependency="afterok:$array" \
  --kill-on-invalid-dep=yes --output="$out/logs/merge.out" "$@" \
  --wrap="exec '$lenscheck' audit-merge --plan '$plan' --out '$out/report'$partials") || true
merge=${merge%%;*}
echo "merge: job $merge (runs once every shard has succeeded), report in $out/report"
[ ${#wait[@]} -gt 0 ] || exit 0
# sbatch --wait exits 0 for a job cancelled before it ran: the controller says what happened.
job=$(scontrol show job "$merge")
state=$(grep -o 'JobState=[A-Z_]*' <<< "$job" | cut -d= -f2)
if [ "$state" != COMPLETED ] && [ "$state" != FAILED ]; then
  failed=$(grep -L '^audit: shard' "$out"/logs/shard-*.out | xargs -r -n 1 basename | paste -sd ' ')
  echo "error: merge job $merge $state: a shard failed (${failed:-see $out/logs})" >&2
  exit 1
fi
exit "$(grep -oE '(^| )ExitCode=[0-9]+' <<< "$job" | cut -d= -f2)"
