#!/usr/bin/env bash
# The main job on the bundled fixtures: install, build, then the release gate (scripts/gate.sh: verify,
# the mutation catalogue, the pre-registered audits), the same gate on the real trained BERTs
# (scripts/real-gate.sh), the runtime on two more checkpoints, then ONNX Runtime judged as a candidate.
# Reports go to reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --packages
scripts/build.sh
scripts/gate.sh reports
scripts/real-gate.sh reports/real   # the real trained BERTs of .deps/models/: inspect, verify, mutate, audit
# The runtime judged on the trained-statistics and BERT-base-depth checkpoints too (the gate's verify is bert-mini's).
for fixture in trained-mini bert-base-shape; do
  build/lenscheck verify --model build/fixtures/$fixture --threads 0 --report reports/verify-$fixture.md | tail -2
done
scripts/onnxruntime-report.sh   # reports/verify-onnxruntime.md: ONNX Runtime at fp32, fp16 and int8
scripts/onnx-file-report.sh     # reports/verify-onnx-file.md: graphs as shipped, judged with onnx:PATH
