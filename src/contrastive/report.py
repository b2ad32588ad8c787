"""Helpers for the report notebook: formatting judged claims, seed plots, and rendering the
notebook to one self-contained HTML file (no script, no stylesheet from anywhere else)."""
import html
import os
import subprocess
import sys
from pathlib import Path

VERDICT_CLASS = {"reproduced": "ok", "exact match": "ok", "contradicted": "bad", "mismatch": "bad",
                 "no meaningful effect": "null", "inconclusive": "open", "not tested": "skip"}

STYLE = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1100px;
       margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.88em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; vertical-align: top; text-align: left; }
th { background: #f2f2f2; }
td.ok { background: #d9f2d9; } td.bad { background: #f7d4d4; } td.null { background: #e6e6f7; }
td.open { background: #fbf0cc; } td.skip { background: #eeeeee; color: #555; }
img { max-width: 100%; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; }
.jp-InputArea, .jp-InputPrompt, .jp-OutputPrompt { display: none; }
"""


def fmt(x, digits=4):
    """A number at `digits` significant figures; lists shortened; other values as text."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return str(x)
    if isinstance(x, (int, float)):
        return f"{x:.{digits}g}"
    if isinstance(x, list):
        inner = ", ".join(fmt(v, digits) for v in x[:8])
        return f"[{inner}{', ...' if len(x) > 8 else ''}]"
    return html.escape(str(x))


def fmt_arm(arm):
    """'mean [lo, hi], min-max, n' for a per-seed arm; the value itself for a single number."""
    if "mean" not in arm:
        return fmt(arm["values"] if arm["n"] != 1 else arm["values"][0])
    if arm["n"] == 1:
        return fmt(arm["mean"])
    lo, hi = arm["ci95"]
    return (f"{fmt(arm['mean'])} [{fmt(lo)}, {fmt(hi)}]; range {fmt(arm['min'])}-{fmt(arm['max'])}; "
            f"n={arm['n']}")


def ours(claim):
    """Our measurement of a judged claim, in one cell."""
    arms = claim.get("arms") or {}
    if claim["kind"] == "paired" and claim.get("contrast") and claim["contrast"]["diff_mean"] is not None:
        c = claim["contrast"]
        lo, hi = c["diff_ci95"]
        parts = [f"{name}: {fmt_arm(arm)}" for name, arm in arms.items()]
        return (f"{c['a']} - {c['b']}: {fmt(c['diff_mean'])} [{fmt(lo)}, {fmt(hi)}], "
                f"Holm p {fmt(c['p_holm'], 2)}<br>" + "<br>".join(parts))
    return "<br>".join(f"{name}: {fmt_arm(arm)}" if len(arms) > 1 else fmt_arm(arm)
                       for name, arm in arms.items()) or "-"


def claims_table(claims, link=True):
    """An HTML table of judged claims: statement, published, ours, verdict (with links)."""
    rows = []
    for c in claims:
        ident = html.escape(c["id"])
        cell = f'<a href="#sec-{c["section"]}">{ident}</a>' if link else ident
        verdict = c["verdict"]
        rows.append(
            f"<tr id='claim-{ident}'><td>{cell}</td><td>{html.escape(c['statement'] or '')}"
            f"<br><small>{html.escape(c['source'] or '')}</small></td>"
            f"<td>{fmt(c['published'])}</td><td>{ours(c)}<br><small>{html.escape(c['metric'] or '')}</small></td>"
            f"<td class='{VERDICT_CLASS.get(verdict, '')}'>{verdict}</td>"
            f"<td><small>{html.escape(c.get('note') or '')}</small></td></tr>")
    head = "<tr><th>claim</th><th>statement</th><th>published</th><th>ours</th><th>verdict</th><th>note</th></tr>"
    return f'<table class="claims">{head}{"".join(rows)}</table>'


def seed_plot(ax, df, x, y, hue=None, order=None):
    """Every seed a dot; the mean and its 95% t-interval as a black bar."""
    import seaborn as sns
    sns.stripplot(data=df, x=x, y=y, hue=hue, order=order, ax=ax, dodge=hue is not None, alpha=0.6,
                  size=5, jitter=0.15)
    sns.pointplot(data=df, x=x, y=y, hue=hue, order=order, ax=ax, dodge=0.4 if hue else False,
                  errorbar=("ci", 95), linestyle="none", markers="_", markersize=18,
                  palette=["black"] * (df[hue].nunique() if hue else 1) if hue else None,
                  color=None if hue else "black", legend=False)
    return ax


def render_notebook(source, output):
    """Execute a jupytext percent-format notebook from the repository root and write it as one
    self-contained HTML page (code hidden, images inline, no external scripts or styles)."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    from .io import atomic_path
    cache = Path.cwd() / ".cache"   # the kernel's runtime files, IPython's profile, matplotlib's fonts
    for variable, folder in (("JUPYTER_RUNTIME_DIR", "jupyter/runtime"), ("JUPYTER_DATA_DIR", "jupyter/data"),
                             ("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "matplotlib")):
        os.environ.setdefault(variable, str(cache / folder))
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(notebook, kernel_name="python3", timeout=600,
                   resources={"metadata": {"path": str(Path.cwd())}}).execute()
    body, _ = HTMLExporter(template_name="basic", exclude_input=True, exclude_input_prompt=True,
                           exclude_output_prompt=True).from_notebook_node(nbformat.from_dict(notebook))
    page = (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>Contrastive learning replication report</title><style>{STYLE}</style></head>"
            f"<body>{body}</body></html>\n")
    with atomic_path(output) as tmp:
        tmp.write_text(page)


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def versions():
    import dvc.version
    import torch
    return {"python": sys.version.split()[0], "torch": torch.__version__, "dvc": dvc.version.__version__}
