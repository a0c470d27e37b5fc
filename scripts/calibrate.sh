#!/usr/bin/env bash
# reports/calibration.{md,json}: the gate measured as a classifier (README, "What the gate cannot see"):
# the runtime and ONNX Runtime at fp32, fp16-ort-cpu and int8, each under the scheme it declares, on a
# sweep of random models and on every bundled checkpoint and every real one in .deps/models/, from an
# existing build (scripts/build.sh) and its fixtures.
#   scripts/calibrate.sh [SWEEP_MODELS] [CHECKPOINT_DIR...]
# SWEEP_MODELS: random models per candidate (default 300, as before the real checkpoints: 52 minutes of
# the sweep alone for the four candidates on 2 cores); CHECKPOINT_DIRs: further checkpoints.
# Exit 1 on any false alarm.
set -euo pipefail
cd "$(dirname "$0")/.."
models="${1:-300}"
shift $(($# > 0 ? 1 : 0))
fixtures=()
for bundled in bert-mini trained-mini planted-sink bert-base-shape saturated-sink; do
  fixtures+=(--fixture "build/fixtures/$bundled")
done
for real in .deps/models/*/ "$@"; do
  fixtures+=(--fixture "${real%/}")
done
build/lenscheck --threads 0 calibrate --models "$models" "${fixtures[@]}" \
  --candidate runtime --candidate onnxruntime --candidate onnxruntime:fp16 --candidate onnxruntime:int8 \
  --report reports/calibration.md --json reports/calibration.json
