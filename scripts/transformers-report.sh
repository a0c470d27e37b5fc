#!/usr/bin/env bash
# reports/verify-transformers.md: Hugging Face transformers' BertModel judged as a candidate, eager and SDPA
# attention at fp32, fp16 and bf16, on trained-mini and all-MiniLM-L6-v2, each under the scheme it declares
# (fp32, fp16, bf16), per tensor family, both verdicts (global and local), with the display verdict; a cell
# the pinned torch cannot run says why (verify's exit 2). Then faults on trained-mini in every cell: an op's
# output (the value projection, the attention: SDPA's one kernel) or a weight (layer 2's W_O) off by 0.1 %
# and 1 %, each caught or not, with the local ratio of the tensor it reaches first. From an existing build
# (scripts/build.sh), its fixtures and .deps/transformers (scripts/install-deps.sh; LENSCHECK_TRANSFORMERS_ENV
# names another). Also measured: verify's wall and CPU time on all-MiniLM-L6-v2, and what torch's CPU
# kernels compute in fp16 and bf16 (scripts/torch-cpu-kernels.py). Exit 1 if a clean cell that runs fails.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/lenscheck out=reports/transformers
describe=$(git describe --always --dirty)  # before this run rewrites the committed reports
env=${LENSCHECK_TRANSFORMERS_ENV:-.deps/transformers}
mkdir -p "$out"
declare -A code
fixtures=(trained-mini all-MiniLM-L6-v2)
cells=(eager-fp32 eager-fp16 eager-bf16 sdpa-fp32 sdpa-fp16 sdpa-bf16)
model_of() { [ "$1" = all-MiniLM-L6-v2 ] && echo .deps/models/$1 || echo build/fixtures/$1; }
all_pass=1
for fixture in "${fixtures[@]}"; do
  for cell in "${cells[@]}"; do
    set +e
    /usr/bin/time -o $out/$fixture-$cell.time -f '%e %U %S' \
      $cli verify --model "$(model_of $fixture)" --candidate transformers:${cell%-*} --torch-dtype ${cell#*-} \
      --python-env "$env" --threads 0 --report $out/$fixture-$cell.md --json $out/$fixture-$cell.json \
      > $out/$fixture-$cell.txt 2>&1
    code[$fixture-$cell]=$?
    set -e
    case ${code[$fixture-$cell]} in
      0) ;;
      2) rm -f $out/$fixture-$cell.md $out/$fixture-$cell.json ;;  # cannot run: its .txt says why
      *) all_pass=0 ;;
    esac
  done
done
# Faults, on trained-mini: "name|verify's flags|the family it reaches first".
faults=(
  "value's output × 1.001|--fault-op encoder.layer.1.attention.self.value:1e-3|layer.*.attention.value"
  "attention's output × 1.001|--fault-op encoder.layer.1.attention.self:1e-3|layer.*.attention.context"
  "attention's output × 1.01|--fault-op encoder.layer.1.attention.self:1e-2|layer.*.attention.context"
  "layer 2's W_O × 1.001|--candidate-model $out/wo-1.001|layer.*.attention.pre_norm"
  "layer 2's W_O × 1.01|--candidate-model $out/wo-1.01|layer.*.attention.pre_norm"
)
for factor in 1.001 1.01; do
  /usr/bin/python3 scripts/scale-weight.py build/fixtures/trained-mini $out/wo-$factor \
    encoder.layer.2.attention.output.dense.weight $factor > /dev/null
done
declare -A caught
for i in "${!faults[@]}"; do
  IFS='|' read -r _ flags family <<<"${faults[$i]}"
  for cell in "${cells[@]}"; do
    set +e
    # shellcheck disable=SC2086  # flags: verify's options, split
    $cli verify --model build/fixtures/trained-mini --candidate transformers:${cell%-*} --torch-dtype ${cell#*-} \
      --python-env "$env" $flags > $out/fault.txt 2>&1
    rc=$?
    set -e
    # (|| true: a cell that cannot run, or judges the family globally only, prints no ratio)
    local_ratio=$(grep -F "  $family " $out/fault.txt | grep -o 'local [0-9.e+]*x' | sed 's/local //; s/x$/×/' || true)
    case $rc in
      1) caught[$i,$cell]="**FAIL** $local_ratio, blames $(grep -m1 -o 'op to blame: [^(]*' $out/fault.txt | sed -E 's/op to blame: //; s/ *$//; s/^span .* → ([^ ]*).*/span → \1/' || true)" ;;
      0) caught[$i,$cell]="pass $local_ratio" ;;
      *) caught[$i,$cell]="exit $rc: $(grep -m1 '^error' $out/fault.txt || true)" ;;
    esac
  done
done
rm -rf $out/fault.txt $out/wo-1.001 $out/wo-1.01
# The gate's own cost, for the speed line: the runtime candidate on the same checkpoint and sentences.
/usr/bin/time -o $out/all-MiniLM-L6-v2-runtime.time -f '%e %U %S' \
  $cli verify --model .deps/models/all-MiniLM-L6-v2 --threads 0 > /dev/null 2>&1
verdict() {  # one cell: its verdict and display verdict, or why it cannot run
  local f=$out/$1.txt
  case ${code[$1]} in
    2) echo "cannot run: $(grep -m1 '^error: ' $f | sed -E 's/^error: transformers:[a-z]+: //; s/: scripts\/install-deps.sh.*//')" ;;
    *) local display  # SDPA gives no probabilities: its note says why there is no display verdict
       display=$(grep -m1 '^display verdict' $f | sed 's/^display verdict: //' || grep -m1 -o 'no display verdict: .*' $f)
       echo "exit ${code[$1]}: $(grep -m1 'vs oracle fp64' $f | sed -E 's/.* vs oracle fp64 //')$(grep -m1 -o 'op to blame: [^ ]*' $f | sed 's/^/, /'); display $display" ;;
  esac
}
ratios() {  # "family|global worst (median) · local worst" per family, from verify's printed summary
  grep -E '^  [a-z]' "$1" |
    sed -E 's/^ +([^ ]+) +([0-9.e+]+)x.*median ([0-9.e+]+)x.*; local (global only|[0-9.e+]+x).*/\1|\2× (\3×) · \4/; s/([0-9])x$/\1×/'
}
read -r wall user sys < $out/all-MiniLM-L6-v2-eager-fp32.time
{
  echo "# transformers as a candidate"
  echo
  echo "\`scripts/transformers-report.sh\` on $describe: \`lenscheck verify --candidate"
  echo "transformers:<eager|sdpa> --torch-dtype <fp32|fp16|bf16>\` on the 14 bundled sentences:"
  echo "$(grep -m1 -o 'candidate: transformers [0-9.]* torch [^ ]*' $out/trained-mini-eager-fp32.txt | sed 's/^candidate: //') (CPU, 1 thread),"
  echo "the pinned set-up of scripts/install-deps.sh: transformers and torch from PyPI (transformers/README.md"
  echo "says why not Debian's python3-torch 1.13). Each cell is judged under the scheme its dtype"
  echo "declares (fp32, fp16, bf16: every op's output rounded to the format; README, \"Schemes\"), derived rule"
  echo "against libtorch fp64, k = 16: globally, the error against the truth as a multiple of libtorch's"
  echo "computing in the scheme, worst over sentences and layers (median in brackets); locally (after ·), each"
  echo "tensor's op recomputed in the scheme from the candidate's own inputs, its error as a multiple of the"
  echo "op's own rounding spread. Eager gives every trace tensor (the scores as its softmax's input); SDPA"
  echo "hides the scores, the probabilities and so the lenses and the display: the context is judged as the"
  echo "span from Q, K and V, its spread holding both ends of where a fused kernel may round (every op's"
  echo "output rounded, or the scores and probabilities kept in fp32 as torch's CPU kernel keeps them;"
  echo "oracle/oracle.h, attention_in_one_kernel). Full reports:"
  echo "\`reports/transformers/<fixture>-<attention>-<dtype>.md\`."
  echo
  read -r rwall ruser rsys < $out/all-MiniLM-L6-v2-runtime.time
  echo "Speed, verify on all-MiniLM-L6-v2, 14 sentences, on this machine (2 cores, shared while it ran):"
  echo "transformers eager fp32 ${wall} s wall, $(awk "BEGIN { print $user + $sys }") s CPU (user + system); the start-up (Python,"
  echo "torch and transformers imported, the model loaded) took $(grep -m1 -o 'in [0-9]* ms (imports' $out/all-MiniLM-L6-v2-eager-fp32.txt | grep -o '[0-9]*') ms, the forward with hooks"
  echo "$(grep -m1 -o '[0-9.]* ms per sentence' $out/all-MiniLM-L6-v2-eager-fp32.txt) (median). The same verify of lenscheck's runtime, run just after:"
  echo "${rwall} s wall, $(awk "BEGIN { print $ruser + $rsys }") s CPU: the rest is the gate's own (oracle fp64 and fp32, local probes)."
  echo
  for fixture in "${fixtures[@]}"; do
    echo "## $fixture"
    echo
    for cell in "${cells[@]}"; do echo "- $cell: $(verdict $fixture-$cell)"; done
    echo
    ran=()
    for cell in "${cells[@]}"; do [ ${code[$fixture-$cell]} -ne 2 ] && ran+=("$cell"); done
    if ((${#ran[@]})); then
      echo "| family | $(printf '%s | ' "${ran[@]}")"
      echo "|---|$(printf -- '---:|%.0s' "${ran[@]}")"
      # One row per family, in the order of the cell that judges most; blank where a cell has no such tensor
      # (SDPA's scores, probabilities and lenses).
      for cell in "${ran[@]}"; do ratios $out/$fixture-$cell.txt | sed "s/^/$cell|/"; done |
        awk -F'|' -v cells="${ran[*]}" '
          { if (!(($2) in seen)) { seen[$2] = 1; order[++n] = $2 } value[$1, $2] = $3 }
          END { k = split(cells, c, " ")
                for (i = 1; i <= n; i++) { row = "| " order[i] " |"
                  for (j = 1; j <= k; j++) row = row " " value[c[j], order[i]] " |"
                  print row } }' 
      echo
    fi
  done
  echo "## Faults on trained-mini"
  echo
  echo "One op's output or one weight off by 0.1 % or 1 % (\`--fault-op\`, a forward hook; \`--candidate-model\`, a"
  echo "copy by scripts/scale-weight.py), in every cell: caught (FAIL, the op or span blamed) or not, with the"
  echo "worst local ratio of the tensor it reaches first (k = 16). In bf16, 1.001 rounds to 1: no fault at all;"
  echo "a fault under half a step of the format is no change a trace can show."
  echo
  echo "| fault | $(printf '%s | ' "${cells[@]}")"
  echo "|---|$(printf -- '---|%.0s' "${cells[@]}")"
  for i in "${!faults[@]}"; do
    IFS='|' read -r name _ _ <<<"${faults[$i]}"
    row="| $name |"
    for cell in "${cells[@]}"; do row+=" ${caught[$i,$cell]} |"; done
    echo "$row"
  done
  echo
  echo "## What torch's CPU kernels compute"
  echo
  echo "Measured by \`scripts/torch-cpu-kernels.py\` in the same environment: for each op BertModel runs, the"
  echo "share of outputs equal to the exact result rounded once to the format (what the fp16 and bf16 schemes"
  echo "declare), and the worst error in units of the format's spacing at the exact value."
  echo
  "$env/bin/python3" -I scripts/torch-cpu-kernels.py
} > reports/verify-transformers.md
echo "wrote reports/verify-transformers.md"
[ $all_pass -eq 1 ]
