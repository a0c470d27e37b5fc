#!/usr/bin/env bash
# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (gcc), in build-asan/: builds
# every test CTest knows (not the benchmarks), generates the fixtures with the sanitized CLI and runs
# ctest. Any report fails: UBSan aborts on the first finding, LeakSanitizer is on.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# -Og -g1: line numbers in reports. -O1 doubles the compile time of the json-heavy files; -O0 compiles
# barely faster than -Og but runs the forward passes and weight conversions several times slower.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Asan \
      -DCMAKE_CXX_FLAGS_ASAN="-Og -g1 $sanitize" -DCMAKE_EXE_LINKER_FLAGS_ASAN="$sanitize" >/dev/null
# The test executables are named after their tests; `.long` twins reuse them, fixture.* are scripts.
mapfile -t tests < <(ctest --test-dir build-asan -N -C Long | sed -n 's/^ *Test *#[0-9]*: //p' |
                     grep -v '^fixture\.' | sed 's/\.long$//' | sort -u)
cmake --build build-asan --target "${tests[@]}"

export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1
# The properties look for code paths here, not for rare inputs: 25 cases each instead of 200.
export RC_PARAMS="${RC_PARAMS:-max_success=25}"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
