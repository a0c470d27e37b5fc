#!/usr/bin/env bash
# The main job on the bundled fixtures: install, build, then the release gate. Reports go to reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/lenscheck verify --model build/fixtures/bert-mini --sentences fixtures/sentences.yaml \
  --tolerances fixtures/tolerances.yaml --truth \
  --report reports/verify.md --json reports/verify.json --junit reports/verify.junit.xml
