#!/usr/bin/env bash
# reports/verify-onnxruntime.md: ONNX Runtime judged as a candidate at fp32, fp16 and int8 on bert-mini
# and trained-mini, each under the arithmetic it declares (and fp16, int8 also as if they declared fp32),
# per tensor family, both verdicts (global and local), with the display verdict of each, from an existing
# build (scripts/build.sh) and its
# fixtures. Exit 1 if a candidate fails under its declared arithmetic on either fixture.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/lenscheck out=reports/onnxruntime
mkdir -p "$out"
declared_pass=1
declare -A summary
runs=(fp32 fp16 int8 fp16-as-fp32 int8-as-fp32)
for fixture in bert-mini trained-mini; do
  for run in "${runs[@]}"; do
    variant=${run%%-as-*}
    candidate=onnxruntime; [ $variant = fp32 ] || candidate=onnxruntime:$variant
    precision=(); [ $run = $variant ] || precision=(--precision fp32)
    set +e
    $cli verify --model build/fixtures/$fixture --candidate $candidate "${precision[@]}" --threads 0 \
      --report $out/$fixture-$run.md --json $out/$fixture-$run.json > $out/$fixture-$run.txt 2>&1
    code=$?
    set -e
    [ $run = $variant ] && [ $code -ne 0 ] && declared_pass=0
    summary[$fixture-$run]=$code
  done
done
ratios() {  # "global worst (median) · local worst" per family, from verify's printed summary
  grep -E '^  [a-z]' "$1" |
    sed -E 's/^ +[^ ]+ +([0-9.e+]+)x.*median ([0-9.e+]+)x.*; local (global only|[0-9.e+]+x).*/\1× (\2×) · \3/; s/([0-9])x$/\1×/'
}
{
  echo "# ONNX Runtime as a candidate"
  echo
  echo "\`scripts/onnxruntime-report.sh\` on $(git describe --always --dirty): \`lenscheck verify --candidate"
  echo "onnxruntime[:fp16|:int8]\` on the 14 bundled sentences, ONNX Runtime $(.deps/venv/bin/python3 -I -c 'import onnxruntime; print(onnxruntime.__version__)') (PyPI)"
  echo "(CPU execution provider, 1 intra-op thread, graph optimization all), derived rule against libtorch fp64."
  echo "Each candidate is judged under the scheme it declares (fp32, fp16-ort-cpu, int8; README, \"Schemes\"),"
  echo "twice, with k = 16 for both: globally, its error against the fp64 truth as a multiple of libtorch's"
  echo "computing in the scheme (fp32 natively, the others simulated in fp64, oracle/oracle.h), worst over"
  echo "sentences and layers (median in brackets); and locally (after ·), each tensor's op recomputed in the"
  echo "scheme from the candidate's own inputs, its error as a multiple of the op's own rounding spread, worst."
  echo "The last two columns judge fp16 and int8 as if they declared fp32: how a lower precision fails the fp32"
  echo "contract. Full reports: \`reports/onnxruntime/<fixture>-<run>.md\`."
  echo
  for fixture in bert-mini trained-mini; do
    echo "## $fixture"
    echo
    for run in "${runs[@]}"; do
      echo "- $run: exit ${summary[$fixture-$run]}, $(grep -m1 'vs oracle fp64' $out/$fixture-$run.txt)"
    done
    echo
    echo "What the instrument shows (the display verdict: fixtures/studies/norm-weighted-attention.yaml's"
    echo "head rule and lenses, printed as norm-weighted-attention.display.yaml beside it says):"
    echo
    for run in fp32 fp16 int8; do
      echo "- $run: $(grep -m1 '^display verdict' $out/$fixture-$run.txt | sed 's/^display verdict: //')"
    done
    echo
    echo "| family | fp32 | fp16 | int8 | fp16 as fp32 | int8 as fp32 |"
    echo "|---|---:|---:|---:|---:|---:|"
    paste -d'\t' <(grep -E '^  [a-z]' $out/$fixture-fp32.txt | awk '{ print $1 }') \
      <(ratios $out/$fixture-fp32.txt) <(ratios $out/$fixture-fp16.txt) <(ratios $out/$fixture-int8.txt) \
      <(ratios $out/$fixture-fp16-as-fp32.txt) <(ratios $out/$fixture-int8-as-fp32.txt) |
      awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }'
    echo
  done
  cat reports/onnxruntime/precision.md
} > reports/verify-onnxruntime.md
echo "wrote reports/verify-onnxruntime.md"
[ $declared_pass -eq 1 ]
