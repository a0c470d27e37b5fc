#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang in build-fuzz/ and gives each LENSCHECK_FUZZ_SECONDS
# seconds of a core (default 60), from the seed corpus in fixtures/fuzz/<target>/: as many targets at
# once as there are cores, and the targets left over (the fifth of five on two cores) each as one
# process per core for its share of the seconds, on one corpus. No core idles and none is shared: the
# seven targets take four rounds on two cores, 240 s (five took 150 s, where rounds of two took 180 s,
# and all five at once for 150 s ran 14 % fewer inputs, in each other's way). Fails on any crash, leak,
# sanitizer report or hang (10 s per input); the input that did it is left in build-fuzz/artifacts/.
# Prints the executions per target.
# Needs clang and its compiler-rt runtime (scripts/install-deps.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${LENSCHECK_FUZZ_SECONDS:-60}
targets=(${LENSCHECK_FUZZ_TARGETS:-safetensors torch_archive config vocab tokenizer tokenizer_json yaml})
cores=$(nproc)

# -O1 with line tables: libFuzzer's usual trade of speed, compile time and readable reports.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" \
      -DCMAKE_CXX_COMPILER=clang++ -DLENSCHECK_FUZZ=ON >/dev/null
# Only the fuzz targets: the rest of the tree (the torch oracle above all) is not built with clang.
cmake --build build-fuzz --target "${targets[@]/#/fuzz_}"

# The corpus that grows is build-fuzz/corpus/<target>; the committed seeds are only read. Artifacts of
# earlier runs stay until they are looked at and removed.
rm -rf build-fuzz/logs
mkdir -p build-fuzz/artifacts build-fuzz/logs
# run_one TARGET PROCESS SECONDS: one libFuzzer process of TARGET, its log and exit code named by PROCESS.
run_one() {
  local t=$1 p=$2 secs=$3 dict=() rc=0
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  "build-fuzz/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="build-fuzz/artifacts/$t-" "build-fuzz/corpus/$t" "fixtures/fuzz/$t" \
    >"build-fuzz/logs/$t.$p.log" 2>&1 || rc=$?
  echo "$rc" >"build-fuzz/logs/$t.$p.rc"
}
for t in "${targets[@]}"; do mkdir -p "build-fuzz/corpus/$t"; done
whole=$((${#targets[@]} / cores * cores))
for ((i = 0; i < whole; i += cores)); do
  for t in "${targets[@]:i:cores}"; do run_one "$t" 0 "$seconds" & done
  wait
done
for t in "${targets[@]:whole}"; do
  for ((p = 0; p < cores; ++p)); do run_one "$t" "$p" $(((seconds + cores - 1) / cores)) & done
  wait
done

failed=()
printf '%-12s %12s %8s  %s\n' target executions seconds result
for t in "${targets[@]}"; do
  runs=0 time=0 result=clean
  for log in build-fuzz/logs/"$t".*.log; do
    rc=$(cat "${log%.log}.rc")
    runs=$((runs + $(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | grep . || echo 0)))
    time=$((time + $(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | grep . || echo 0)))
    ((rc == 0)) || { result="FAILED (exit $rc, $log)"; failed+=("$log"); }
  done
  printf '%-12s %12s %8s  %s\n' "$t" "$runs" "$time" "$result"
done
for log in "${failed[@]}"; do
  echo "--- $log; the input is in build-fuzz/artifacts/"
  grep -v '^#' "$log" | tail -40
done
((${#failed[@]} == 0))
