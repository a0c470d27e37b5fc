#!/usr/bin/env bash
# reports/verify-onnxruntime.md: ONNX Runtime judged as a candidate at fp32, fp16 and int8 on bert-mini
# and trained-mini, per tensor family, from an existing build (scripts/build.sh) and its fixtures.
# Exit 1 if fp32 fails on either fixture; fp16 and int8 are expected to fail the fp32 rule until the
# precision contract exists, and are shown by how much.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/lenscheck out=reports/onnxruntime
mkdir -p "$out"
fp32_pass=1
declare -A summary
for fixture in bert-mini trained-mini; do
  for variant in fp32 fp16 int8; do
    candidate=onnxruntime; [ $variant = fp32 ] || candidate=onnxruntime:$variant
    set +e
    $cli verify --model build/fixtures/$fixture --candidate $candidate --threads 0 \
      --report $out/$fixture-$variant.md --json $out/$fixture-$variant.json > $out/$fixture-$variant.txt 2>&1
    code=$?
    set -e
    [ $variant = fp32 ] && [ $code -ne 0 ] && fp32_pass=0
    summary[$fixture-$variant]=$code
  done
done
{
  echo "# ONNX Runtime as a candidate"
  echo
  echo "\`scripts/onnxruntime-report.sh\` on $(git describe --always --dirty): \`lenscheck verify --candidate"
  echo "onnxruntime[:fp16|:int8]\` on the 14 bundled sentences, onnxruntime-node $(node -p 'require("./.deps/npm/node_modules/onnxruntime-node/package.json").version')"
  echo "(CPU execution provider, 1 intra-op thread, graph optimization all), derived rule against libtorch fp64;"
  echo "each figure is the candidate's error as a multiple of libtorch's fp32 error, worst over sentences and"
  echo "layers (median in brackets); k = 16 fails a tensor. Full reports: \`reports/onnxruntime/<fixture>-<variant>.md\`."
  echo
  for fixture in bert-mini trained-mini; do
    echo "## $fixture"
    echo
    for variant in fp32 fp16 int8; do
      echo "- $variant: exit ${summary[$fixture-$variant]}, $(grep -m1 'vs oracle fp64' $out/$fixture-$variant.txt)"
    done
    echo
    echo "| family | fp32 | fp16 | int8 |"
    echo "|---|---:|---:|---:|"
    paste -d'\t' \
      <(grep -E '^  [a-z]' $out/$fixture-fp32.txt | awk '{ print $1 }') \
      <(grep -E '^  [a-z]' $out/$fixture-fp32.txt | sed -E 's/^ +[^ ]+ +([0-9.]+)x.*median ([0-9.]+)x.*/\1x (\2x)/') \
      <(grep -E '^  [a-z]' $out/$fixture-fp16.txt | sed -E 's/^ +[^ ]+ +([0-9.]+)x.*median ([0-9.]+)x.*/\1x (\2x)/') \
      <(grep -E '^  [a-z]' $out/$fixture-int8.txt | sed -E 's/^ +[^ ]+ +([0-9.]+)x.*median ([0-9.]+)x.*/\1x (\2x)/') |
      awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
    echo
  done
  cat reports/onnxruntime/precision.md
} > reports/verify-onnxruntime.md
echo "wrote reports/verify-onnxruntime.md"
[ $fp32_pass -eq 1 ]
