#!/usr/bin/env bash
# The main job on the bundled fixtures: install, build, then the release gate (verify), the mutation
# catalogue (mutate) and the pre-registered audit. Reports go to reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/lenscheck verify --model build/fixtures/bert-mini --sentences fixtures/sentences.yaml \
  --tolerances fixtures/tolerances.yaml --truth \
  --report reports/verify.md --json reports/verify.json --junit reports/verify.junit.xml
build/lenscheck mutate --model build/fixtures/bert-mini --report reports/mutate.md --json reports/mutate.json
# The pre-registered audit: exit 0 PROCEED, 3 ABANDON — both are verdicts, not failures of this job.
status=0
build/lenscheck audit --plan fixtures/studies/norm-weighted-attention.yaml --out reports/norm-weighted-attention || status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 3 ]
