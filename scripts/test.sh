#!/usr/bin/env bash
# Every test: install, build, then CTest (unit, end-to-end, properties).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --packages
scripts/build.sh --no-data  # fixture.make, CTest's first test, generates the checkpoints
ctest --test-dir build --output-on-failure -j "$(nproc)"
