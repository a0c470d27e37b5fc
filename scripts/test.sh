#!/usr/bin/env bash
# Every test: install, build, then CTest (unit, end-to-end, properties).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --packages
scripts/install-deps.sh --npm &  # the build needs none of it: ~30 s of download off the critical path
npm=$!
scripts/build.sh --no-data  # fixture.make, CTest's first test, generates the checkpoints
wait "$npm"
ctest --test-dir build --output-on-failure -j "$(nproc)"
