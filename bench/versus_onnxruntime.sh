#!/usr/bin/env bash
# The runtime's plain forward against ONNX Runtime's on the same checkpoint, in one run:
#   bench/versus_onnxruntime.sh [MODEL_DIR] [REPETITIONS]   (defaults build/fixtures/bert-mini, 7)
# Each repetition runs, in a random order: ONNX Runtime (PyPI onnxruntime in .deps/venv, CPU provider, graph
# optimization all) on one and on two intra-op threads; forward_bench's plain forward (runtime on
# one and two threads, libtorch on one) and its instrument-only forward and FMA peak; and
# forward_bench's plain forward again with the AVX2 kernels forced (LENSCHECK_ISA=avx2). A
# repetition's ORT figure is the median of its runs after the first of each length; forward_bench
# repeats each benchmark for 0.2 s. Printed: medians over the repetitions, and every ratio from them
# (bench/versus_onnxruntime.py writes the requests and reads the results).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-build/fixtures/bert-mini} reps=${2:-7}
cli=build/lenscheck bench=build/bench/forward_bench
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$cli export-onnx --model "$model" --variant fp32 --out "$tmp/plain.onnx" >/dev/null
$cli trace --model "$model" --text "The nurse handed the doctor the scissors." --out "$tmp/ids.safetensors" >/dev/null
# forward_bench's inputs (encoding_of_length): [CLS], the sentence's pieces repeated, [SEP].
# Runs per length: about 0.2 s of ORT each at one thread.
for threads in 1 2; do
  python3 bench/versus_onnxruntime.py request "$tmp/ids.safetensors" "$tmp/plain.onnx" "$tmp" $threads > "$tmp/ort$threads.json"
done
filter='^(peak/avx512_fma|peak/avx2_fma|oracle_plain|runtime_plain|runtime2_plain|runtime_instrument)/'
for rep in $(seq "$reps"); do
  for job in $(printf '%s\n' ort1 ort2 bench avx2 | shuf); do
    case $job in
      ort*) .deps/venv/bin/python3 -I onnx/ort-adapter.py "$tmp/$job.json" > "$tmp/$job.$rep.txt" ;;
      bench) $bench --model "$model" --repetitions 1 --benchmark_filter="$filter" \
               --benchmark_out="$tmp/bench.$rep.json" --benchmark_out_format=json >/dev/null 2>&1 ;;
      avx2) LENSCHECK_ISA=avx2 $bench --model "$model" --repetitions 1 --benchmark_filter='^runtime_plain/' \
              --benchmark_out="$tmp/avx2.$rep.json" --benchmark_out_format=json >/dev/null 2>&1 ;;
    esac
  done
  echo "repetition $rep of $reps done; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
python3 bench/versus_onnxruntime.py summary "$tmp" "$reps" "$model"
