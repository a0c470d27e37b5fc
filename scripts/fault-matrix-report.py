#!/usr/bin/python3
"""Writes reports/fault-matrix.md from scripts/fault-matrix.sh's results (one TSV row per verify run:
model precision position delta stored_delta exit pass global local span blamed user_s), the "after"
binary's and, if given, the "before" one's. A cell is a checkpoint × precision × position; a cell whose
runs are not all in the TSV (the matrix stopped early) is shown as not run.

Usage: fault-matrix-report.py --limit N --wall S --after TSV --after-build TEXT [--before TSV --before-build TEXT]
                              [--note TEXT] --out FILE.md
--note: how this run differed from the script's whole matrix (a subset, runs merged), printed as given.
"""
import argparse
import collections
import csv
import os

POSITIONS = ["query", "key", "value", "attention-output", "ffn-in", "ffn-out", "layernorm"]
PRECISIONS = ["fp32", "fp16", "int8"]
FIELDS = ["model", "precision", "position", "delta", "stored", "exit", "pass", "global", "local", "span", "blamed",
          "user"]


def read(path):
    """{(model, precision, position): [row, ...]} in run order, and the CPU seconds of all runs."""
    cells, user = collections.OrderedDict(), 0.0
    if not path or not os.path.exists(path):
        return cells, user
    with open(path, newline="") as f:
        for values in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            row = dict(zip(FIELDS, values))
            cells.setdefault((row["model"], row["precision"], row["position"]), []).append(row)
            user += float(row["user"] or 0)
    return cells, user


def ratio(text):
    return f"{float(text):.3g}×" if text else "—"


def clean(rows):
    run = next((r for r in rows if r["delta"] == "0"), None)
    if run is None:
        return None
    verdict = "PASS" if run["exit"] == "0" else "**FAIL**"
    return f"{verdict}, {ratios(run)}"


def ratios(run):
    return f"{ratio(run['global'])} / {ratio(run['local'])} / {ratio(run['span'])}"


def delta(run):
    stored = float(run["stored"])
    shown = f" (stored {stored:.1e})" if abs(stored - float(run["delta"])) > 1e-3 * float(run["delta"]) else ""
    return run["delta"] + shown


def caught(rows):
    """The smallest δ caught with its ratios, 'not by 1e-1' when none was, None when the ladder did not finish;
    what was blamed; the largest δ run that passed, with its ratios (how near k it came)."""
    ladder = [r for r in rows if r["delta"] != "0" and r["exit"] != "3"]  # exit 3: δ not representable
    passed = [r for r in ladder if r["exit"] == "0"]
    below = f"{delta(passed[-1])}: {ratios(passed[-1])}" if passed else "—"
    for r in ladder:
        if r["exit"] == "1":
            return f"{delta(r)}: {ratios(r)}", r["blamed"], below
    if ladder and ladder[-1]["delta"] == "1e-1":
        return "not by 1e-1", "", below
    return None, "", below


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--limit", required=True)
    p.add_argument("--wall", required=True, type=int)
    p.add_argument("--after", required=True)
    p.add_argument("--after-build", required=True)
    p.add_argument("--before")
    p.add_argument("--before-build", default="")
    p.add_argument("--note", default="")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    after, after_user = read(a.after)
    before, before_user = read(a.before)
    models = list(dict.fromkeys(k[0] for k in after))

    lines = ["# Fault matrix: one extra node per op, the smallest δ caught", "",
             "`scripts/fault-matrix.sh` (issue #44): each checkpoint's graph as `lenscheck export-onnx` writes it "
             "at fp32, fp16 and int8, without `--trace` (so a tensor an extra node hides from the graph patterns is "
             "judged inside a span), copied by `scripts/graph-fault.py` with one extra Mul node in layer 1: after "
             "the product x·W of the query, key, value, attention output, FFN input or FFN output projection "
             "(before its bias), or after the attention block's LayerNorm. `verify --candidate onnx:COPY "
             f"--limit {a.limit}` judges it on the first {a.limit} sentences of `fixtures/sentences.yaml`.", "",
             "- **clean**: the copy with the node times exactly 1, which hides what the faulty one hides: verdict, "
             "then the worst global / local / span ratio over every tensor family (k 16 for each; a FAIL here "
             "is a false alarm). This is the spans' calibration.",
             "- **caught**: the smallest δ on the ladder 1e-5, 1e-4, 1e-3, 1e-2, 1e-1 (searched upward, stopped "
             "at the first) whose copy fails; fp16 stores 1 + δ in float16, where 1e-5 and 1e-4 round to 1 "
             "(skipped) and 1e-3 is stored as 1 + 2^-10 (9.8e-4), shown as stored where it differs.",
             f"- **after**: {a.after_build}; **before**: {a.before_build or 'not run'} (the local verdict without "
             "spans: a hidden tensor was not judged, the next found one globally and as its own op).",
             f"- CPU: {after_user:.0f} s user after, {before_user:.0f} s before; {a.wall} s wall, both run at "
             "once on a machine shared with other jobs."] + ([f"- {a.note}"] if a.note else []) + [""]

    false_alarms = [k for k, rows in after.items() if any(r["delta"] == "0" and r["exit"] == "1" for r in rows)]
    misses = [k for k, rows in after.items() if caught(rows)[0] is not None
              and not any(r["delta"] in ("1e-5", "1e-4", "1e-3") and r["exit"] == "1" for r in rows)]
    lines += ["## Summary", "",
              f"- {len(after)} cells run after ({len(models)} checkpoints); false alarms (a clean copy failing): "
              f"{len(false_alarms)}" + "".join(f"; {' '.join(k)}" for k in false_alarms) + ".",
              f"- Cells not caught at δ ≤ 1e-3 after: {len(misses)}" + (":" if misses else ".")]
    lines += [f"  - {os.path.basename(m)} {pr} {po}: caught {caught(after[(m, pr, po)])[0]}; passed "
              f"{caught(after[(m, pr, po)])[2]}" for m, pr, po in misses]
    lines.append("")
    for precision in PRECISIONS:
        runs = [r for (m, pr, po), rows in after.items() if pr == precision for r in rows if r["delta"] == "0"]
        if runs:
            worst = {f: max(float(r[f]) for r in runs if r[f]) if any(r[f] for r in runs) else None
                     for f in ("global", "local", "span")}
            shown = {f: ratio(str(w) if w is not None else "") for f, w in worst.items()}
            lines.append(f"- clean copies at {precision}: worst global {shown['global']}, local {shown['local']}, "
                         f"span {shown['span']} (k 16).")
    lines.append("")

    for model in models:
        lines += [f"## {os.path.basename(model)}", "",
                  "| position | precision | clean after: verdict, global / local / span | caught before: δ, global / "
                  "local / span | caught after | blamed after | passed after: largest δ |",
                  "|---|---|---|---|---|---|---|"]
        for position in POSITIONS:
            for precision in PRECISIONS:
                key = (model, precision, position)
                rows = after.get(key)
                if rows is None:
                    continue
                was = caught(before[key])[0] if key in before else None
                now, blamed, below = caught(rows)
                lines.append(f"| {position} | {precision} | {clean(rows) or 'not run'} | {was or 'not run'} | "
                             f"{now or 'not run'} | {'`' + blamed + '`' if blamed else ''} | {below} |")
        lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
