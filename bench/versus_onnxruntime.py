"""The two halves of bench/versus_onnxruntime.sh that are not shell:

  versus_onnxruntime.py request IDS.safetensors GRAPH.onnx OUT_DIR THREADS   the adapter's request, on stdout
  versus_onnxruntime.py summary DIR REPETITIONS MODEL                          the tables, from DIR's results
"""
import json
import math
import sys

from trace_ids import trace_ids

# forward_bench's inputs (encoding_of_length): [CLS], the sentence's pieces repeated, [SEP]; runs per
# length after a first one, about 0.2 s of ONNX Runtime each at one thread.
LENGTHS = [(16, 200), (128, 40), (512, 8)]


def request(ids_file, graph, out_dir, threads):
    ids = trace_ids(ids_file)
    pieces, sentences = ids[1:-1], []
    for length, runs in LENGTHS:
        x = [ids[0]] + [pieces[i % len(pieces)] for i in range(length - 2)] + [ids[-1]]
        sentences += [x] * (runs + 1)
    print(json.dumps({"model": graph, "out_dir": out_dir, "intra_op_threads": int(threads),
                      "graph_optimization": "all", "producer": "bench", "precision": "fp32", "plain": True,
                      "sentences": sentences}))


def median(xs):
    s, n = sorted(xs), len(xs)
    return s[(n - 1) // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def summary(folder, reps, model):
    per, flop = {}, {}  # per[name] = [ms of each repetition]
    for r in range(1, reps + 1):
        for t in (1, 2):
            with open(f"{folder}/ort{t}.{r}.txt") as f:
                runs = [float(line.split()[2]) for line in f if line.startswith("done ")]
            at = 0  # runs of each length follow each other, the first of each a warm-up
            for length, n in LENGTHS:
                per.setdefault(f"ort{t}/T={length}", []).append(median(runs[at + 1:at + 1 + n]))
                at += n + 1
        for file, prefix in (("bench", ""), ("avx2", "avx2:")):
            with open(f"{folder}/{file}.{r}.json") as f:
                benchmarks = json.load(f)["benchmarks"]
            for b in benchmarks:
                name = prefix + b["run_name"].split("/min_time")[0]
                per.setdefault(name, []).append(b["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6}[b["time_unit"]])
                if b.get("flop"):
                    flop[name] = b["flop"]  # forward_bench's count per call
    m = {k: median(v) for k, v in per.items()}
    f = lambda x: f"{x:.2f}"
    spread = lambda k: f"{f(min(per[k]))}–{f(max(per[k]))}"
    print(f"{model}: medians of {reps} interleaved repetitions, wall clock, ms (range over the repetitions)\n")
    print("| T | ORT, 1 thread | runtime, 1 thread | libtorch (OpenBLAS), 1 thread | runtime / ORT | runtime / libtorch "
          "| ORT, 2 threads | runtime, 2 threads | runtime / ORT, 2 threads | runtime, AVX2 kernels, 1 thread "
          "| AVX2 runtime / ORT |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for length, _ in LENGTHS:
        o1, r1, lt = m[f"ort1/T={length}"], m[f"runtime_plain/T={length}"], m[f"oracle_plain/T={length}"]
        o2, r2, a2 = m[f"ort2/T={length}"], m[f"runtime2_plain/T={length}"], m[f"avx2:runtime_plain/T={length}"]
        print(f"| {length} | {f(o1)} ({spread(f'ort1/T={length}')}) | {f(r1)} ({spread(f'runtime_plain/T={length}')}) "
              f"| {f(lt)} | {f(r1 / o1)}× | {f(r1 / lt)}× | {f(o2)} ({spread(f'ort2/T={length}')}) "
              f"| {f(r2)} ({spread(f'runtime2_plain/T={length}')}) | {f(r2 / o2)}× | {f(a2)} | {f(a2 / o1)}× |")
    peak_name = "peak/avx512_fma" if "peak/avx512_fma" in m else "peak/avx2_fma"
    peak = flop[peak_name] / (m[peak_name] * 1e-3) / 1e9
    print(f"\nInstrument-only forward against the FMA peak ({peak_name}: {peak:.1f} GFLOP/s, measured in the same "
          "repetitions):\n")
    print("| T | runtime | GFLOP/s | % of peak |\n|---:|---:|---:|---:|")
    for length, _ in LENGTHS:
        name = f"runtime_instrument/T={length}"
        g = flop[name] / (m[name] * 1e-3) / 1e9
        print(f"| {length} | {f(m[name])} | {g:.1f} | {math.floor(100 * g / peak + 0.5)} % |")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "request":
        request(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "summary":
        summary(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        raise SystemExit(__doc__)
