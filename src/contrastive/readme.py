"""The measured figures in README.md, generated from files the pipeline wrote (never typed).

    python -m contrastive.readme          # rewrite the block between the markers in README.md
    python -m contrastive.readme --check  # exit 1 if README.md is out of date

The block sits between `<!-- figures:begin -->` and `<!-- figures:end -->`; the pipeline
diagram between `<!-- dag:begin -->` and `<!-- dag:end -->` comes from `dvc dag --md`.
"""
import glob
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np


def _load(path):
    return json.loads(Path(path).read_text()) if Path(path).exists() else None


def figures_block():
    lines = []
    timing = _load("reports/repro_timing.json")
    if timing:
        stages = len(timing["stages_run"])
        lines.append(f"- Full `make repro` ({timing['profile']} profile, {stages} stages): "
                     f"{timing['seconds'] / 60:.1f} minutes on {timing['cpu']}, measured {timing['date']}.")
    runs = [json.loads(Path(p).read_text()) for p in sorted(glob.glob("results/pretrain/*/simclr/seed_*.json"))]
    linear = [r["eval"]["h"]["linear"] for r in runs if r["status"] == "ok"]
    if linear:
        lines.append(f"- Plain SimCLR on `shapes` at the default budget (tau 0.2, MLP head, "
                     f"{runs[0]['config']['steps']} steps of {runs[0]['config']['batch']} images): linear probe "
                     f"on h {100 * np.mean(linear):.1f}% (seeds: {100 * min(linear):.1f}-{100 * max(linear):.1f}%, "
                     f"n = {len(linear)}); the dataset's difficulty target is 60-90%.")
        wall = [r["wall_s"] for r in runs]
        lines.append(f"- One such run (pretraining and every probe, one torch thread): {np.mean(wall):.0f} s.")
    tiny = _load("results/examples/tiny_simclr.json")
    if tiny:
        by = ", ".join(f"{r['threads']} thread(s) {r['wall_s']:.0f} s" for r in tiny["by_threads"])
        lines.append(f"- The article's tiny SimCLR, one run: {by}.")
    summary = _load("reports/summary.json")
    if summary:
        counts = ", ".join(f"{n} {v}" for v, n in summary["verdicts"].items())
        lines.append(f"- Claims judged: {summary['claims']} ({counts}).")
    return "\n".join(lines) or "- No results yet: run `make repro`."


def dag_block():
    beside = Path(sys.executable).parent / "dvc"            # the virtual environment's dvc
    out = subprocess.run([str(beside) if beside.exists() else "dvc", "dag", "--md"], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else "(run `dvc dag --md`)"


def render(text):
    for name, block in (("figures", figures_block()), ("dag", dag_block())):
        text = re.sub(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)",
                      lambda m: m.group(1) + block + "\n" + m.group(2), text, flags=re.S)
    return text


def main(argv):
    readme = Path("README.md")
    current = readme.read_text()
    updated = render(current)
    if "--check" in argv:
        if updated != current:
            print("README.md is out of date with the pipeline's files: run `make readme`", file=sys.stderr)
            return 1
        return 0
    readme.write_text(updated)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
