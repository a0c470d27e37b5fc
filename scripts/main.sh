#!/usr/bin/env bash
# The main job on the bundled fixtures: install, build, then the release gate (scripts/gate.sh: verify,
# the mutation catalogue, the pre-registered audits), then ONNX Runtime judged as a candidate. Reports go to reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/gate.sh reports
scripts/onnxruntime-report.sh   # reports/verify-onnxruntime.md: ONNX Runtime at fp32, fp16 and int8
