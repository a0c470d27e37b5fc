#!/usr/bin/env bash
# The runtime's plain forward against ONNX Runtime's on the same checkpoint, in one run:
#   bench/versus_onnxruntime.sh [MODEL_DIR] [REPETITIONS]   (defaults build/fixtures/bert-mini, 7)
# Each repetition runs, in a random order: ONNX Runtime (onnxruntime-node, CPU provider, graph
# optimization all) on one and on two intra-op threads; forward_bench's plain forward (runtime on
# one and two threads, libtorch on one) and its instrument-only forward and FMA peak; and
# forward_bench's plain forward again with the AVX2 kernels forced (LENSCHECK_ISA=avx2). A
# repetition's ORT figure is the median of its runs after the first of each length; forward_bench
# repeats each benchmark for 0.2 s. Printed: medians over the repetitions, and every ratio from them.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-build/fixtures/bert-mini} reps=${2:-7}
cli=build/lenscheck bench=build/bench/forward_bench
export NODE_PATH=.deps/npm/node_modules OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$cli export-onnx --model "$model" --variant fp32 --out "$tmp/plain.onnx" >/dev/null
$cli trace --model "$model" --text "The nurse handed the doctor the scissors." --out "$tmp/ids.safetensors" >/dev/null
# forward_bench's inputs (encoding_of_length): [CLS], the sentence's pieces repeated, [SEP].
# Runs per length: about 0.2 s of ORT each at one thread.
for threads in 1 2; do
  node -e '
    const b = require("fs").readFileSync(process.argv[1]);
    const n = Number(b.readBigUInt64LE(0)), h = JSON.parse(b.subarray(8, 8 + n));
    const [s, e] = h.input_ids.data_offsets, ids = [];
    for (let o = 8 + n + s; o < 8 + n + e; o += 8) ids.push(Number(b.readBigInt64LE(o)));
    const pieces = ids.slice(1, -1), sentences = [];
    for (const [T, runs] of [[16, 200], [128, 40], [512, 8]]) {
      const x = [ids[0]];
      for (let i = 0; i + 2 < T; ++i) x.push(pieces[i % pieces.length]);
      x.push(ids[ids.length - 1]);
      for (let r = 0; r <= runs; ++r) sentences.push(x);
    }
    console.log(JSON.stringify({ model: process.argv[2], out_dir: process.argv[3], intra_op_threads: Number(process.argv[4]),
      graph_optimization: "all", producer: "bench", precision: "fp32", plain: true, sentences }));' \
    "$tmp/ids.safetensors" "$tmp/plain.onnx" "$tmp" $threads > "$tmp/ort$threads.json"
done
filter='^(peak/avx512_fma|peak/avx2_fma|oracle_plain|runtime_plain|runtime2_plain|runtime_instrument)/'
for rep in $(seq "$reps"); do
  for job in $(printf '%s\n' ort1 ort2 bench avx2 | shuf); do
    case $job in
      ort*) node onnx/ort-adapter.js "$tmp/$job.json" > "$tmp/$job.$rep.txt" ;;
      bench) $bench --model "$model" --repetitions 1 --benchmark_filter="$filter" \
               --benchmark_out="$tmp/bench.$rep.json" --benchmark_out_format=json >/dev/null 2>&1 ;;
      avx2) LENSCHECK_ISA=avx2 $bench --model "$model" --repetitions 1 --benchmark_filter='^runtime_plain/' \
              --benchmark_out="$tmp/avx2.$rep.json" --benchmark_out_format=json >/dev/null 2>&1 ;;
    esac
  done
  echo "repetition $rep of $reps done; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
node - "$tmp" "$reps" "$model" <<'JS'
const fs = require('fs');
const [dir, reps, model] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const median = (xs) => { const s = [...xs].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const lengths = [16, 128, 512], per = {}, flop = {};  // per[name] = [ms of each repetition]
const push = (name, ms) => (per[name] = per[name] || []).push(ms);
for (let r = 1; r <= reps; ++r) {
  for (const t of [1, 2]) {
    const runs = fs.readFileSync(`${dir}/ort${t}.${r}.txt`, 'utf8').split('\n').filter((l) => l.startsWith('done '))
      .map((l) => Number(l.split(' ')[2]));
    // Runs of each length follow each other, the first of each a warm-up (201, 41, 9 runs).
    let at = 0;
    for (const [T, n] of [[16, 200], [128, 40], [512, 8]]) { push(`ort${t}/T=${T}`, median(runs.slice(at + 1, at + 1 + n))); at += n + 1; }
  }
  for (const [file, prefix] of [['bench', ''], ['avx2', 'avx2:']])
    for (const b of JSON.parse(fs.readFileSync(`${dir}/${file}.${r}.json`, 'utf8')).benchmarks)
    {
      const name = prefix + b.run_name.split('/min_time')[0];
      push(name, b.real_time * { ms: 1, us: 1e-3, ns: 1e-6 }[b.time_unit]);
      if (b.flop) flop[name] = b.flop;  // forward_bench's count per call
    }
}
const m = Object.fromEntries(Object.entries(per).map(([k, v]) => [k, median(v)]));
const f = (x) => x.toFixed(2), range = (k) => `${f(Math.min(...per[k]))}–${f(Math.max(...per[k]))}`;
console.log(`${model}: medians of ${reps} interleaved repetitions, wall clock, ms (range over the repetitions)\n`);
console.log('| T | ORT, 1 thread | runtime, 1 thread | libtorch (OpenBLAS), 1 thread | runtime / ORT | runtime / libtorch | ORT, 2 threads | runtime, 2 threads | runtime / ORT, 2 threads | runtime, AVX2 kernels, 1 thread | AVX2 runtime / ORT |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const T of lengths) {
  const o1 = m[`ort1/T=${T}`], r1 = m[`runtime_plain/T=${T}`], lt = m[`oracle_plain/T=${T}`],
        o2 = m[`ort2/T=${T}`], r2 = m[`runtime2_plain/T=${T}`], a2 = m[`avx2:runtime_plain/T=${T}`];
  console.log(`| ${T} | ${f(o1)} (${range(`ort1/T=${T}`)}) | ${f(r1)} (${range(`runtime_plain/T=${T}`)}) | ${f(lt)} | ` +
    `${f(r1 / o1)}× | ${f(r1 / lt)}× | ${f(o2)} (${range(`ort2/T=${T}`)}) | ${f(r2)} (${range(`runtime2_plain/T=${T}`)}) | ` +
    `${f(r2 / o2)}× | ${f(a2)} | ${f(a2 / o1)}× |`);
}
const peakName = m['peak/avx512_fma'] ? 'peak/avx512_fma' : 'peak/avx2_fma';
const peak = flop[peakName] / (m[peakName] * 1e-3) / 1e9;
console.log(`\nInstrument-only forward against the FMA peak (${peakName}: ${peak.toFixed(1)} GFLOP/s, measured in the same repetitions):\n`);
console.log('| T | runtime | GFLOP/s | % of peak |\n|---:|---:|---:|---:|');
for (const T of lengths) {
  const name = `runtime_instrument/T=${T}`, g = flop[name] / (m[name] * 1e-3) / 1e9;
  console.log(`| ${T} | ${f(m[name])} | ${g.toFixed(1)} | ${Math.round(100 * g / peak)} % |`);
}
JS
