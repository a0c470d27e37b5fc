#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang in build-fuzz/ and runs each for
# LENSCHECK_FUZZ_SECONDS seconds of a core (default 60), from the seed corpus in fixtures/fuzz/<target>/:
# all at once, for seconds × targets / cores of wall time (five targets on two cores: 150 s, where
# rounds of two took 180 s with one core idle in the last). Fails on any crash, leak, sanitizer report
# or hang (10 s of a core per input: 25 s of wall time with five targets on two cores); the input
# that did it is left in build-fuzz/artifacts/. Prints the executions per target.
# Needs clang and its compiler-rt runtime (scripts/install-deps.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${LENSCHECK_FUZZ_SECONDS:-60}
targets=(${LENSCHECK_FUZZ_TARGETS:-safetensors config vocab tokenizer yaml})
wall=$(((seconds * ${#targets[@]} + $(nproc) - 1) / $(nproc)))
hang=$(((10 * ${#targets[@]} + $(nproc) - 1) / $(nproc)))

# -O1 with line tables: libFuzzer's usual trade of speed, compile time and readable reports.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" \
      -DCMAKE_CXX_COMPILER=clang++ -DLENSCHECK_FUZZ=ON >/dev/null
# Only the fuzz targets: the rest of the tree (the torch oracle above all) is not built with clang.
cmake --build build-fuzz --target "${targets[@]/#/fuzz_}"

# The corpus that grows is build-fuzz/corpus/<target>; the committed seeds are only read. Artifacts of
# earlier runs stay until they are looked at and removed.
rm -rf build-fuzz/logs
mkdir -p build-fuzz/artifacts build-fuzz/logs
run_one() {
  local t=$1 dict=() rc=0
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  mkdir -p "build-fuzz/corpus/$t"
  "build-fuzz/fuzz/fuzz_$t" -max_total_time="$wall" -timeout="$hang" -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="build-fuzz/artifacts/$t-" "build-fuzz/corpus/$t" "fixtures/fuzz/$t" \
    >"build-fuzz/logs/$t.log" 2>&1 || rc=$?
  echo "$rc" >"build-fuzz/logs/$t.rc"
}

for t in "${targets[@]}"; do run_one "$t" & done
wait

failed=()
printf '%-12s %12s %8s  %s\n' target executions seconds result
for t in "${targets[@]}"; do
  rc=$(cat "build-fuzz/logs/$t.rc")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/logs/$t.log")
  time=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "build-fuzz/logs/$t.log")
  result=clean
  ((rc == 0)) || { result="FAILED (exit $rc)"; failed+=("$t"); }
  printf '%-12s %12s %8s  %s\n' "$t" "${runs:-?}" "${time:-?}" "$result"
done
for t in "${failed[@]}"; do
  echo "--- fuzz_$t: build-fuzz/logs/$t.log; the input is in build-fuzz/artifacts/"
  grep -v '^#' "build-fuzz/logs/$t.log" | tail -40
done
((${#failed[@]} == 0))
