#!/usr/bin/env bash
# The unit and end-to-end tests under AddressSanitizer + UndefinedBehaviorSanitizer (gcc), in
# build-asan/: builds the tests (not the benchmarks), generates the fixtures with the sanitized CLI and
# runs ctest. Any report fails: UBSan aborts on the first finding, LeakSanitizer is on.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# -Og -g1: line numbers in reports. -O1 doubles the compile time of the json-heavy files; -O0 compiles
# barely faster than -Og but runs the forward passes and weight conversions several times slower.
# The test harness leaves out UBSan's vptr check: lenscheck declares no polymorphic type (no virtual,
# no dynamic_cast), so in the harness it checked only GoogleTest's fixtures, at a third of the compile
# time of a test file (audit_test.cpp: 26.5 s with it, 17.0 without). The libraries keep it.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Asan \
      -DCMAKE_CXX_FLAGS_ASAN="-Og -g1 $sanitize" -DCMAKE_EXE_LINKER_FLAGS_ASAN="$sanitize" \
      -DLENSCHECK_HARNESS_OPTIONS=-fno-sanitize=vptr >/dev/null
# Tests labelled LENSCHECK_SANITIZE_EXCLUDE are left out; set it empty to sanitize them too. Default:
# properties, the randomised suite, whose targets are roughly a fifth of the sanitized build time;
# onnxruntime, whose nine runs of the candidate spend 370 s of sanitized CPU time mostly in Node and
# ONNX Runtime, not in lenscheck; install, which checks the installed layout and paths: 60 s sanitized,
# for a verify and an audit whose code verify_e2e_test and audit_test run sanitized, and an ONNX Runtime
# run, left out for the reason above (the unsanitized ctest of scripts/test.sh runs all three).
exclude=${LENSCHECK_SANITIZE_EXCLUDE-properties|onnxruntime|install}
select=()
[ -z "$exclude" ] || select=(-LE "$exclude")
# The CLI and the test binaries of the tests that run: lenscheck_tests, and lenscheck_properties and
# lenscheck_onnxruntime_tests unless their label is left out. The fixture, install and layering tests
# are CMake scripts.
binaries=(lenscheck lenscheck_tests)
[[ "|$exclude|" == *"|properties|"* ]] || binaries+=(lenscheck_properties)
[[ "|$exclude|" == *"|onnxruntime|"* ]] || binaries+=(lenscheck_onnxruntime_tests)
cmake --build build-asan --target "${binaries[@]}"

export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1
# When the properties run here, they look for code paths, not rare inputs: 25 cases instead of 200.
export RC_PARAMS="${RC_PARAMS:-max_success=25}"
# Likewise the end-to-end tests read six of the fourteen sentences, one per path they take (the file says
# which): the sanitized ctest took 457 s, mutate_test 221 s of it, on the fourteen.
export LENSCHECK_TEST_SENTENCES="${LENSCHECK_TEST_SENTENCES-$PWD/fixtures/sentences-sanitize.yaml}"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" "${select[@]}"
