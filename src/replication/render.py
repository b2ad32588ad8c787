"""Helpers for the report notebook: formatting judged claims, seed plots, and rendering the
notebook to one self-contained HTML file (no script, no stylesheet from anywhere else)."""
import html
import os
import subprocess
import sys
from pathlib import Path

VERDICT_CLASS = {"reproduced": "ok", "exact match": "ok", "contradicted": "bad", "mismatch": "digit",
                 "no meaningful effect": "null", "inconclusive": "open", "not testable here": "gate",
                 "not tested": "skip"}

STYLE = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1100px;
       margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.88em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; vertical-align: top; text-align: left; }
th { background: #f2f2f2; }
td.ok { background: #d9f2d9; } td.bad { background: #f7d4d4; } td.null { background: #e6e6f7; }
td.open { background: #fbf0cc; } td.skip { background: #eeeeee; color: #555; }
td.digit { background: #fde3c8; } td.gate { background: #dcecf5; }
.amended { font-size: 0.8em; color: #7a4b00; } .unstable { font-size: 0.8em; color: #8a1c1c; }
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


def effect_text(claim, c):
    """A contrast's effect and interval in the claim's units (points where the papers use percent),
    with its margin and seeds."""
    scale, unit = claim.get("effect_scale", 1.0), claim.get("effect_unit", "")
    lo, hi = (scale * v for v in c["diff_ci95"])
    seeds = f", {len(c['seeds'])} seeds" if c.get("seeds") else ""
    return (f"{scale * c['diff_mean']:+.3g}{unit} [{lo:+.3g}, {hi:+.3g}], margin {scale * c['margin']:.3g}{unit}"
            f"{seeds}")


def _contrast_line(claim, c):
    """'a - b: effect [lo, hi], verdict' for one contrast; the p-value named for what it is."""
    if c.get("diff_mean") is None:
        return f"{c['a']} - {c['b']}: {c.get('reason') or 'not computed'}"
    p = (f"; two-sided p {fmt(c['p'], 2)}, Holm over {c['holm_family']} contrasts {fmt(c['p_holm'], 2)}"
         if c.get("p_holm") is not None else "")
    flag = " <span class='unstable'>unstable</span>" if c.get("unstable") else ""
    return f"{c['a']} - {c['b']}: {effect_text(claim, c)}{p}: <b>{c['verdict']}</b>{flag}"


def _control_line(name, arm):
    """An arm's gain over its untrained control, in points."""
    lines = []
    for condition, gain in (arm.get("control") or {}).items():
        lo, hi = (100 * v for v in gain["ci95"])
        lines.append(f"{name} over its untrained control: {100 * gain['mean']:+.1f} points [{lo:+.1f}, {hi:+.1f}]"
                     + ("" if gain["trained"] else " (<b>did not train</b>)"))
    return lines


def ours(claim):
    """Our measurement of a judged claim, in one cell: every contrast, every arm, every control."""
    arms = claim.get("arms") or {}
    contrasts = claim.get("contrasts") or ([claim["contrast"]] if claim.get("contrast") else [])
    lines = [_contrast_line(claim, c) for c in contrasts]
    lines += [f"{name}: {fmt_arm(arm)}" if len(arms) > 1 or contrasts else fmt_arm(arm)
              for name, arm in arms.items() if name not in ("x", "y")]
    lines += [line for name, arm in arms.items() for line in _control_line(name, arm)]
    return "<br>".join(lines) or "-"


def amendments(claim):
    """A claim's amendments, oldest first (claims.yaml holds one as a mapping, several as a list)."""
    amended = claim.get("amended") or []
    return amended if isinstance(amended, list) else [amended]


def verdict_cell(claim):
    """The verdict, with the ladder's trend, a possible scale artefact, and the amendment mark with
    the verdicts before each amendment."""
    cell = claim["verdict"]
    if claim.get("trend"):
        cell += f"<br><small>trend over {len(claim['ladder'])} rungs: {html.escape(claim['trend'])}</small>"
    if any(c.get("scale_artefact") for c in claim.get("contrasts") or [claim.get("contrast") or {}]):
        cell += "<br><small>may be a scale artefact</small>"
    history = amendments(claim)
    if history:
        what = " | ".join(a["what"] for a in history)
        before = " &rarr; ".join(html.escape(a["previous_verdict"]) for a in history)
        cell += (f"<br><span class='amended' title='{html.escape(what)}'>amended {history[-1]['date']}"
                 f"{f' ({len(history)} times)' if len(history) > 1 else ''}; before: {before}</span>")
    if claim.get("unstable"):
        cell += "<br><span class='unstable'>unstable</span>"
    return cell


def verdict_legend(rules):
    """The verdict table as HTML: each verdict in its colour with its rule."""
    rows = "".join(f"<tr><td class='{VERDICT_CLASS.get(v, '')}'>{v}</td><td>{html.escape(rule)}</td></tr>"
                   for v, rule in rules)
    return f"<table class='legend'><tr><th>verdict</th><th>rule</th></tr>{rows}</table>"


def claims_table(claims, link=True):
    """An HTML table of judged claims: statement, published, ours, verdict (with links)."""
    rows = []
    for c in claims:
        ident = html.escape(c["id"])
        cell = f'<a href="#sec-{c["section"]}">{ident}</a>' if link else ident
        verdict = c["verdict"]
        rows.append(
            f"<tr{f' id=claim-{ident}' if link else ''}><td>{cell}</td><td>{html.escape(c['statement'] or '')}"
            f"<br><small>{html.escape(c['source'] or '')}</small></td>"
            f"<td>{fmt(c['published'])}</td><td>{ours(c)}<br><small>{html.escape(c['metric'] or '')}</small></td>"
            f"<td class='{VERDICT_CLASS.get(verdict, '')}'>{verdict_cell(c)}</td>"
            f"<td><small>{html.escape(c.get('note') or '')}</small></td></tr>")
    head = "<tr><th>claim</th><th>statement</th><th>published</th><th>ours</th><th>verdict</th><th>note</th></tr>"
    return f'<table class="claims">{head}{"".join(rows)}</table>'


def seed_plot(ax, df, x, y, hue=None, order=None):
    """Every seed a dot; the mean and its 95% t-interval (the tables' interval) as a black bar."""
    import seaborn as sns

    from .stats import t_interval
    levels = df[hue].nunique() if hue else 1
    dodge = levels > 1              # seaborn divides by (levels - 1) when it dodges
    sns.stripplot(data=df, x=x, y=y, hue=hue, order=order, ax=ax, dodge=dodge, alpha=0.6, size=5, jitter=0.15)
    sns.pointplot(data=df, x=x, y=y, hue=hue, order=order, ax=ax, dodge=0.4 if dodge else False,
                  errorbar=lambda values: tuple(t_interval(values)), linestyle="none", markers="_", markersize=18,
                  palette=["black"] * levels if hue else None, color=None if hue else "black", legend=False)
    return ax


def printout(r):
    """A tiny-SimCLR run's result in the article's printed format (three decimals)."""
    return (f"seed {r['seed']}: NT-Xent after 300 steps {r['loss']:.3f}\n"
            f"  random encoder: linear probe {r['random']['linear']:.3f}, 5-NN {r['random']['knn']:.3f}\n"
            f"  simclr encoder: linear probe {r['simclr']['linear']:.3f}, 5-NN {r['simclr']['knn']:.3f}")


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


def git_dirty():
    """Whether the code or configuration differs from the commit (the page would not match it); the
    pipeline's own outputs, rewritten while it runs, do not count."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "src", "experiments",
                              "analysis", "tools", "params.yaml", "dvc.yaml"], capture_output=True,
                             text=True, check=True).stdout
        return bool(out.strip())
    except (OSError, subprocess.CalledProcessError):
        return False


def versions():
    """Versions of Python and of every library a figure on the page depends on."""
    from importlib.metadata import version
    libraries = ("torch", "torchvision", "numpy", "scipy", "pandas", "matplotlib", "seaborn", "scikit-learn",
                 "pydantic", "dvc", "jupytext", "nbconvert")
    return {"python": sys.version.split()[0], **{name: version(name) for name in libraries}}


def _ours_markdown(claim):
    """Our measurement of a judged claim in one Markdown cell."""
    contrasts = claim.get("contrasts") or ([claim["contrast"]] if claim.get("contrast") else [])
    if contrasts:
        return "; ".join(f"{c['a']} − {c['b']}: {effect_text(claim, c)}" if c.get("diff_mean") is not None
                         else f"{c['a']} − {c['b']}: too few finished runs" for c in contrasts)
    cells = []
    for name, arm in (claim.get("arms") or {}).items():
        label = f"{name}: " if len(claim["arms"]) > 1 else ""
        if "mean" in arm and arm["n"] > 1:
            lo, hi = arm["ci95"]
            cells.append(f"{label}{arm['mean']:.4g} [{lo:.4g}, {hi:.4g}], {arm['n']} seeds")
        else:
            cells.append(label + fmt(arm["values"] if arm["n"] != 1 else arm["values"][0]))
    return "; ".join(cells) or "–"


def claims_markdown(claims):
    """reports/claims.md: one GitHub Markdown table row per judged claim."""
    def cell(text):
        return html.escape(str(text), quote=False).replace("|", "\\|").replace("\n", " ")
    rows = ["| claim | statement | published | ours: effect or value [95% interval], margin, seeds | verdict | "
            "trend over the ladder |", "|---|---|---|---|---|---|"]
    rows += [f"| `{c['id']}` | {cell(c['statement'] or '')} | {cell(fmt(c['published']))} | "
             f"{cell(_ours_markdown(c))} | **{c['verdict']}**{' (amended)' if c.get('amended') else ''} | "
             f"{cell(c.get('trend') or '')} |" for c in claims]
    counts = {}
    for c in claims:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    head = ("# Claims and verdicts\n\nGenerated by the `report` stage from reports/claims.json; the full "
            "report with plots and notes is reports/report.html. Effects are paired per-seed differences "
            "in the claimed direction (positive supports the claim), in points where the papers use percent. "
            "A ladder claim's verdict is its top rung's; its trend is the effect's slope against log(steps).\n\n"
            + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) + f" ({len(claims)} claims).\n\n")
    return head + "\n".join(rows) + "\n"


def figure_html(fig, alt, caption):
    """A matplotlib figure as an inline PNG with alt text and a caption; the figure is closed."""
    import base64
    import io as bytes_io

    import matplotlib.pyplot as plt
    buffer = bytes_io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode()
    return (f"<figure><img alt='{html.escape(alt, quote=True)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


VERDICT_COLOUR = {"reproduced": "#2e7d32", "contradicted": "#c62828", "no meaningful effect": "#5c6bc0",
                  "inconclusive": "#f9a825", "not testable here": "#4f8fb8"}


def forest_rows(claims):
    """One row per judged contrast: claim, label, effect and interval in units of its margin,
    the published effect where registered as a number, and the verdict."""
    rows = []
    for c in claims:
        for k in c.get("contrasts") or ([c["contrast"]] if c.get("contrast") else []):
            if k.get("diff_mean") is None or not k.get("margin"):
                continue
            m = k["margin"]
            rows.append({"claim": c["id"], "label": f"{c['id']}: {k['a']} - {k['b']}", "effect": k["diff_mean"] / m,
                         "lo": k["diff_ci95"][0] / m, "hi": k["diff_ci95"][1] / m, "verdict": k["verdict"],
                         "published": (c["published_effect_value"] / m) if c.get("published_effect_value") else None})
    return rows


def forest_plot(claims):
    """Every contrast's effect with its 95% interval, in units of its own margin (the band from -1 to
    1 is 'no meaningful effect'), coloured by verdict; x marks the published effect where known."""
    import matplotlib.pyplot as plt
    rows = forest_rows(claims)
    fig, ax = plt.subplots(figsize=(10, 0.16 * len(rows) + 1.2))
    ax.axvspan(-1, 1, color="#eeeeee", zorder=0)
    ax.axvline(0, color="grey", lw=0.8)
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        colour = VERDICT_COLOUR.get(r["verdict"], "black")
        ax.plot([max(r["lo"], -12), min(r["hi"], 12)], [y, y], color=colour, lw=2)
        ax.plot([min(max(r["effect"], -12), 12)], [y], "o", color=colour, ms=4)
        if r["published"] is not None:
            ax.plot([min(r["published"], 12)], [y], "x", color="black", ms=5)
    ax.set_yticks(range(len(rows)), [r["label"][:70] for r in reversed(rows)], fontsize=7)
    ax.set_xlim(-12, 12)
    ax.set_xlabel("effect in the claimed direction, in units of the claim's margin (clipped at 12)")
    handles = [plt.Line2D([], [], color=c, lw=2, label=v) for v, c in VERDICT_COLOUR.items()]
    handles.append(plt.Line2D([], [], color="black", marker="x", lw=0, label="published effect"))
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return fig


def ladder_figure(claim, controls):
    """A ladder claim in two panels: each arm's mean and 95% interval against training steps (log
    axis), with its untrained control as a dashed line in the arm's colour; and each contrast's
    effect with its interval band, the margin band and the published effect. `controls`: arm ->
    mean of its step-0 control on the same figure, or None."""
    import matplotlib.pyplot as plt
    ladder = claim["ladder"]
    steps = [r["step"] for r in ladder]
    scale, unit = claim.get("effect_scale", 1.0), claim.get("effect_unit", "")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.4))
    for i, name in enumerate(ladder[-1]["arms"]):
        colour = f"C{i}"
        arms = [r["arms"].get(name) or {} for r in ladder]
        means = [a.get("mean", float("nan")) for a in arms]
        lo = [a["ci95"][0] if "ci95" in a else float("nan") for a in arms]
        hi = [a["ci95"][1] if "ci95" in a else float("nan") for a in arms]
        left.plot(steps, means, "o-", color=colour, label=name)
        left.fill_between(steps, lo, hi, color=colour, alpha=0.15)
        if controls.get(name) is not None:
            left.axhline(controls[name], color=colour, ls="--", lw=0.9)
    _step_axis(left, steps)
    left.set_xlabel("training steps (log scale)"), left.set_ylabel(claim.get("metric_label") or "measured value")
    left.set_title("arms: mean and 95% interval; dashed: untrained control", fontsize=9)
    left.legend(fontsize=7)
    for i, first in enumerate(ladder[-1]["contrasts"]):
        rows = [r["contrasts"][i] for r in ladder]
        mean = [scale * c["diff_mean"] if c.get("diff_mean") is not None else float("nan") for c in rows]
        lo = [scale * c["diff_ci95"][0] if c.get("diff_ci95") else float("nan") for c in rows]
        hi = [scale * c["diff_ci95"][1] if c.get("diff_ci95") else float("nan") for c in rows]
        trend = (first.get("trend") or {}).get("label", "no trend")
        right.plot(steps, mean, "o-", color=f"C{i + 3}", label=f"{first['a']} - {first['b']} ({trend})")
        right.fill_between(steps, lo, hi, color=f"C{i + 3}", alpha=0.15)
    margin = scale * ladder[-1]["contrasts"][0]["margin"] if ladder[-1]["contrasts"] else 0
    right.axhspan(-margin, margin, color="#dddddd", zorder=0, label="inside the margin")
    right.axhline(0, color="grey", lw=0.8)
    if claim.get("published_effect_value") is not None:
        right.axhline(scale * claim["published_effect_value"], color="black", ls=":", label="published effect")
    _step_axis(right, steps)
    right.set_xlabel("training steps (log scale)")
    right.set_ylabel(f"effect in the claimed direction{f' ({unit.strip()})' if unit else ''}")
    right.set_title("effect and 95% interval; grey: inside the margin", fontsize=9)
    right.legend(fontsize=7)
    fig.suptitle(f"{claim['id']}: headline {claim['verdict']} at {steps[-1]:,} steps", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def _step_axis(ax, steps):
    """A log-scaled steps axis labelled at the rungs only."""
    from matplotlib.ticker import NullLocator
    ax.set_xscale("log")
    ax.set_xticks(steps, [f"{s:,}" for s in steps])
    ax.xaxis.set_minor_locator(NullLocator())
