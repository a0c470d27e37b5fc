#!/usr/bin/env python3
"""One study's audits on several checkpoints, side by side: reads each DIR/audit.json that
`lenscheck audit --out DIR` wrote and writes OUT (Markdown) with every checkpoint's verdict, its sink
shares under each lens of the plan, where the plan shows the residual lens its mixing ratios per layer,
and per layer over every head its depth table. Every figure is copied from the audits' JSON; nothing is
computed here but the percentages. scripts/real-index.py reads its sections for the real checkpoints.

    scripts/audit-index.py OUT DIR...
"""
import json
import os
import pathlib
import subprocess
import sys


def pct(x):
    return "—" if x is None else f"{100 * x:.1f} %"


def load(dirs):
    """(dir, audit.json) of each DIR, which must all be of one study and one version of its plan."""
    audits = [(pathlib.Path(d), json.loads((pathlib.Path(d) / "audit.json").read_text())) for d in dirs]
    studies = {a["study"] for _, a in audits}
    if len(studies) != 1:
        sys.exit(f"audit-index: the audits are of more than one study: {sorted(studies)}")
    for d, a in audits:
        if a["hashes"]["plan"] != audits[0][1]["hashes"]["plan"]:
            sys.exit(f"audit-index: {d}/audit.json ran another version of the plan")
    return audits


def checkpoint(audit):
    """The checkpoint's name: its folder's."""
    return pathlib.PurePath(audit["model"]["dir"]).name


def sink_shares(audits, out):
    """The verdicts and sink shares per lens, one line per checkpoint, each linking its report from OUT's folder."""
    lenses = [l["lens"] for l in audits[0][1]["lenses"]]
    lines = ["Median / worst row / rows over 50 % / rows over 90 % of each row's weight on [CLS] and [SEP], and "
             "rows whose every weight is on the word itself (no context shown), and the sink's share of what each "
             "row takes from the other tokens (the row without its word's own weight), per lens in the same order.",
             "",
             "| checkpoint | verdict | rows | " + " | ".join(lenses) + " | rows with no context (per lens) | "
             "sink share of the context, median (per lens) |",
             "|---" * (len(lenses) + 5) + "|"]
    for d, a in audits:
        report = os.path.relpath(d / "audit.md", pathlib.Path(out).parent)
        cells = [f"[{checkpoint(a)}]({report})", f"**{a['verdict']}**", str(a["rows_total"])]
        for l in a["lenses"]:
            cells.append(f"{pct(l['median'])} / {pct(l['worst'])} / {l['rows_above_50']} / {l['rows_above_90']}")
        cells.append(" / ".join(str(l["self_only"]) for l in a["lenses"]))
        cells.append(" / ".join(pct(l["context"]["median"]) for l in a["lenses"]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def mixing(audits, heading="##"):
    """Kobayashi et al. 2021's mixing ratios per layer, where the plan shows the residual lens; else nothing."""
    if not any("mixing_ratios" in a for _, a in audits):
        return []
    lines = [f"{heading} Mixing ratio per layer (Kobayashi et al. 2021)", "",
             "Median over every content token: Attn-N / AttnRes-N / AttnResLn-N, the share of a token's update "
             "that the other tokens carry.", ""]
    for _, a in audits:
        lines.append(f"- **{checkpoint(a)}**: " + "; ".join(
            f"layer {m['layer']} {pct(m['attention'])} / {pct(m['residual'])} / {pct(m['residual_layernorm'])}"
            for m in a.get("mixing_ratios", [])))
    return lines


def depth(audits, heading="##"):
    """Per checkpoint, per layer over every head: the special tokens' value-norm ratios and the sink share under
    each lens (the audit's Depth table)."""
    over = audits[0][1]["depth_medians_over"]
    lines = [f"{heading} Depth: every head of every layer", "",
             f"Per layer, over every head (not only the one the instrument opens): ‖v‖ of [CLS] and of [SEP] over "
             f"the mean content token's, median over {over['norm_ratios']}; the sink share of every head's row "
             f"under each lens, median over {over['sink_share']}.", ""]
    for _, a in audits:
        lenses = [s["lens"] for s in a["depth"][0]["sink_share"]]
        lines += [f"**{checkpoint(a)}**", "",
                  "| layer | ‖v‖ [CLS] | ‖v‖ [SEP] | " + " | ".join(lenses) + " |",
                  "|---" * (len(lenses) + 3) + "|"]
        for layer in a["depth"]:
            shares = [pct(s["median_sink_share"]) + (f" ({s['undefined']} undefined)" if s["undefined"] else "")
                      for s in layer["sink_share"]]
            lines.append(f"| {layer['layer']} | {layer['value_cls']['median']:.2f}× | "
                         f"{layer['value_sep']['median']:.2f}× | " + " | ".join(shares) + " |")
        lines.append("")
    return lines


def registration_commit(study):
    """The commit that added the study's plan: its registration, which landed before any audit of it ran."""
    plan = f"fixtures/studies/{study}.yaml"
    found = subprocess.run(["git", "log", "--diff-filter=A", "--format=%h", "-1", "--", plan],
                           capture_output=True, text=True, check=False).stdout.strip()
    return f" in commit {found}" if found else ""


def header(audits, where):
    """The study's hypothesis and registration, the same for every checkpoint."""
    first = audits[0][1]
    return [f"> {first['hypothesis']}", "",
            f"Registered {first['registered']}{registration_commit(first['study'])}; plan SHA-256 `{first['hashes']['plan']}`, the same for every "
            f"{where} below (a checkpoint's own report holds its model's hash, its rows and its picture). The "
            "verdict is the plan's abandon criteria on that checkpoint: exit 0 PROCEED, 3 ABANDON."]


def main(out, dirs):
    audits = load(dirs)
    lines = [f"# Audit: {audits[0][1]['study']}, on every bundled checkpoint", ""] + header(audits, "row") + [
        "", "## Verdicts and sink shares", ""] + sink_shares(audits, out)
    if mixing(audits):
        lines += [""] + mixing(audits)
    lines += [""] + depth(audits)
    pathlib.Path(out).write_text("\n".join(lines).rstrip("\n") + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
