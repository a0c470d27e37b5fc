#!/usr/bin/env bash
# CI, after scripts/test.sh: a one-machine Slurm cluster (Debian's slurm-wlm and munge; the
# daemons' state, spool, logs and sockets in a temporary folder), a sharded corpus audit submitted
# by scripts/slurm-audit.sh as a job array and a dependent merge, compared with the single run.
# Every daemon started here is stopped on exit. Needs root and an existing build (build/lenscheck).
#
#   scripts/slurm-ci.sh [SENTENCES, default 2000] [SHARDS, default 4]
set -euo pipefail
cd "$(dirname "$0")/.."
sentences=${1:-2000}
shards=${2:-4}
lenscheck=$(realpath build/lenscheck)

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

work=$(mktemp -d /tmp/lenscheck-slurm.XXXXXX)
pids=()
stop() {
  local status=$?
  # Jobs first, while slurmd can still end their steps; then the daemons, newest first.
  if [ ${#pids[@]} -ge 3 ]; then
    scancel --quiet --user=root || true
    for _ in $(seq 100); do [ -z "$(squeue --noheader 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; --i)); do kill "${pids[i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    for log in "$work"/*.log "$work"/audit/logs/*.out; do
      [ -f "$log" ] && { echo "--- $log"; tail -n 20 "$log"; }
    done
  fi
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 143' TERM INT  # timeout's signal: exit, and so stop the daemons

# munge: a fresh key, its own socket; the daemons and the clients find it through slurm.conf.
mkdir -p "$work/munge" "$work/spool" "$work/state"
mungekey --create --keyfile="$work/munge/munge.key"
chmod 700 "$work/munge"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge/seed"
pids+=("$(cat "$work/munge/munged.pid")")

# This host as the controller and the one node: its CPUs and sockets as slurmd sees them, half
# its memory, allocated per CPU so that each shard takes one.
host=$(hostname -s)
node=$(slurmd -C | head -n 1 | sed -E 's/ RealMemory=[0-9]+//')
memory=$(awk '/MemAvailable/ { print int($2 / 1024 / 2) }' /proc/meminfo)
cat > "$work/slurm.conf" <<EOF
ClusterName=lenscheck-ci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
$node RealMemory=$memory NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld
for _ in $(seq 100); do [ -s "$work/slurmctld.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/slurmctld.pid")")
slurmd
for _ in $(seq 100); do [ -s "$work/slurmd.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/slurmd.pid")")
for _ in $(seq 300); do
  sinfo --noheader --states=idle --format=%n | grep -qx "$host" && break
  sleep 0.1
done
sinfo --noheader --states=idle --format=%n | grep -qx "$host" || { sinfo; echo "error: $host never became idle" >&2; exit 1; }
echo "slurm: $host idle ($(sinfo --noheader --format='%c CPUs, %m MB'))"

# The registered plan over a generated corpus, as bench/audit_scaling.sh does.
"$lenscheck" make-corpus --out "$work/corpus.txt" --sentences "$sentences" >/dev/null
{ grep -vE '^(sentences|model|recorded):' fixtures/studies/norm-weighted-attention.yaml
  echo "sentences: $work/corpus.txt"
  echo "model: $(realpath build/fixtures/planted-sink)"; } > "$work/plan.yaml"
single=0
"$lenscheck" audit --plan "$work/plan.yaml" --out "$work/single" --threads 1 > "$work/single.log" 2>&1 || single=$?
[ "$single" -eq 0 ] || [ "$single" -eq 3 ] || { cat "$work/single.log"; exit 1; }

merged=0
LENSCHECK=$lenscheck scripts/slurm-audit.sh --wait "$work/plan.yaml" "$shards" "$work/audit" || merged=$?
left=$(squeue --noheader | wc -l)  # nothing left queued or running
[ "$left" -eq 0 ] || { squeue; echo "error: jobs left in the queue" >&2; exit 1; }
for k in $(seq 0 $((shards - 1))); do
  grep -q "audit: shard $k/$shards" "$work/audit/logs/shard-$k.out" || { echo "error: shard $k did not report" >&2; exit 1; }
done
[ "$merged" -eq "$single" ] || { echo "error: merge exited $merged, the single run $single" >&2; exit 1; }
for file in audit.md audit.json sink-shares.svg; do
  cmp "$work/single/$file" "$work/audit/report/$file" || { echo "error: $file differs" >&2; exit 1; }
done
echo "slurm: $shards shards as a job array and the merge after them give the single run's reports" \
     "and exit code ($single, $(grep -oE 'audit: (PROCEED|ABANDON)' "$work/single.log"))"

# A shard that fails (sentence 1, shard 1, is too long for the model) leaves no partial, and the
# merge is cancelled rather than run on the others.
awk 'NR == 2 { for (i = 0; i < 600; ++i) printf "word "; print ""; next } { print }' "$work/corpus.txt" > "$work/broken.txt"
sed "s|^sentences: .*|sentences: $work/broken.txt|" "$work/plan.yaml" > "$work/broken.yaml"
echo "slurm: now with a shard that fails (the error below is expected)"
broken=0
LENSCHECK=$lenscheck scripts/slurm-audit.sh --wait "$work/broken.yaml" "$shards" "$work/broken" || broken=$?
[ "$broken" -ne 0 ] || { echo "error: the merge ran although shard 1 failed" >&2; exit 1; }
grep -q "broken.txt: line 2" "$work/broken/logs/shard-1.out" || { echo "error: shard 1 did not name the line" >&2; exit 1; }
[ ! -e "$work/broken/partials/shard-1.json" ] && [ -e "$work/broken/partials/shard-0.json" ] &&
  [ ! -e "$work/broken/report/audit.json" ] || { echo "error: a failed shard left a partial, or merge ran" >&2; exit 1; }
echo "slurm: a failed shard leaves no partial and the merge is cancelled (sbatch exit $broken)"
