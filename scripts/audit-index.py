#!/usr/bin/env python3
"""One study's audits on several checkpoints, side by side: reads each DIR/audit.json that
`lenscheck audit --out DIR` wrote and writes OUT (Markdown) with every checkpoint's verdict, its sink
shares under each lens of the plan, and, where the plan shows the residual lens, its mixing ratios per
layer. Every figure is copied from the audits' JSON; nothing is computed here but the percentages.

    scripts/audit-index.py OUT DIR...
"""
import json
import pathlib
import sys


def pct(x):
    return "—" if x is None else f"{100 * x:.1f} %"


def main(out, dirs):
    audits = [(pathlib.Path(d), json.loads((pathlib.Path(d) / "audit.json").read_text())) for d in dirs]
    studies = {a["study"] for _, a in audits}
    if len(studies) != 1:
        sys.exit(f"audit-index: the audits are of more than one study: {sorted(studies)}")
    first = audits[0][1]
    lines = [f"# Audit: {first['study']}, on every bundled checkpoint", "",
             f"> {first['hypothesis']}", "",
             f"Registered {first['registered']}; plan SHA-256 `{first['hashes']['plan']}`, the same for every row "
             "below (a checkpoint's own report holds its model's hash, its rows and its picture). The verdict is the "
             "plan's abandon criteria on that checkpoint: exit 0 PROCEED, 3 ABANDON.", "",
             "## Verdicts and sink shares", "",
             "Median / worst row / rows over 50 % / rows over 90 % of each row's weight on [CLS] and [SEP], and "
             "rows whose every weight is on the word itself (no context shown), and the sink's share of what each "
             "row takes from the other tokens (the row without its word's own weight), per lens in the same order.",
             ""]
    lenses = [l["lens"] for l in first["lenses"]]
    lines.append("| checkpoint | verdict | rows | " + " | ".join(lenses) + " | rows with no context (per lens) | "
                 "sink share of the context, median (per lens) |")
    lines.append("|---" * (len(lenses) + 5) + "|")
    for d, a in audits:
        if a["hashes"]["plan"] != first["hashes"]["plan"]:
            sys.exit(f"audit-index: {d}/audit.json ran another version of the plan")
        cells = [f"[{d.name}]({d.name}/audit.md)", f"**{a['verdict']}**", str(a["rows_total"])]
        for l in a["lenses"]:
            cells.append(f"{pct(l['median'])} / {pct(l['worst'])} / {l['rows_above_50']} / {l['rows_above_90']}")
        cells.append(" / ".join(str(l["self_only"]) for l in a["lenses"]))
        cells.append(" / ".join(pct(l["context"]["median"]) for l in a["lenses"]))
        lines.append("| " + " | ".join(cells) + " |")
    if any("mixing_ratios" in a for _, a in audits):
        lines += ["", "## Mixing ratio per layer (Kobayashi et al. 2021)", "",
                  "Median over every content token: Attn-N / AttnRes-N / AttnResLn-N, the share of a token's update "
                  "that the other tokens carry.", ""]
        for d, a in audits:
            layers = a.get("mixing_ratios", [])
            lines.append(f"- **{d.name}**: " + "; ".join(
                f"layer {m['layer']} {pct(m['attention'])} / {pct(m['residual'])} / {pct(m['residual_layernorm'])}"
                for m in layers))
    pathlib.Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
