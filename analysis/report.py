# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Contrastive learning lore, replicated in miniature
#
# Each row below is one claim from the three source documents (the encyclopedia article on
# contrastive learning [E], the blog post on InfoNCE, temperature, alignment and uniformity [B],
# and the short note on InfoNCE [N]), beside what this pipeline measured. Verdicts are computed
# by `src/contrastive/claims.py` from the rules in `analysis/claims.yaml`, fixed before the
# results were seen. Intervals are 95% Student-t intervals over seeds; paired contrasts use the
# per-seed differences, Holm-corrected within a claim. Every number on this page is read from a
# file the pipeline wrote.

# %%
import json
import math
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import yaml
from IPython.display import HTML, Markdown, display

from contrastive import report
from contrastive.config import read_params
from contrastive.examples.tiny_simclr import printout

sns.set_theme(style="whitegrid", context="notebook")
claims = json.loads(Path("reports/claims.json").read_text())
params = read_params("params.yaml")
by_section = {}
for c in claims:
    by_section.setdefault(c["section"], []).append(c)


def load(path):
    return json.loads(Path(path).read_text())


def section(name, title):
    display(HTML(f"<h2 id='sec-{name}'>{title}</h2>"))
    if name in by_section:
        display(HTML(report.claims_table(by_section[name], link=False)))


counts = Counter(c["verdict"] for c in claims)
display(Markdown(f"**{len(claims)} claims** (profile `{params.profile}`): " +
                 ", ".join(f"{n} {v}" for v, n in counts.most_common()) + "."))
display(HTML(report.claims_table(claims)))

# %%
section("ntxent-example", "The NumPy NT-Xent example [E]")
ex = load("results/examples/ntxent_numpy.json")
table = pd.DataFrame({"negative": ex["negatives"], "cos": ex["cos_negatives"],
                      **{f"share, tau={t['tau']}": t["shares"] for t in ex["per_tau"]}})
display(Markdown(f"Anchor: {ex['anchor']}; cosine similarity to its positive {ex['cos_positive']:.3f}. "
                 f"Loss at tau = {ex['loss_tau']}: {ex['loss']:.4f}. Largest gradient error: "
                 f"{ex['max_grad_error_fd']:.1e} against finite differences, "
                 f"{ex['max_grad_error_autograd']:.1e} against torch autograd."))
display(HTML(table.to_html(index=False, float_format=lambda v: f"{v:.3f}")))

# %%
section("tiny-simclr", "The tiny SimCLR example [E]")
tiny = load("results/examples/tiny_simclr.json")
rows = []
for r in tiny["runs"]:
    for encoder in ("random", "simclr"):
        for probe, label in (("linear", "linear probe"), ("knn", "5-NN")):
            rows.append({"seed": r["seed"], "encoder": encoder, "probe": label, "accuracy": r[encoder][probe]})
df = pd.DataFrame(rows)
fig, ax = plt.subplots(figsize=(7, 3.5))
report.seed_plot(ax, df, x="probe", y="accuracy", hue="encoder")
ax.axhline(0.25, color="grey", lw=0.8, ls=":")
ax.set_title(f"Tiny SimCLR, {len(tiny['runs'])} seeds, {tiny['params']['threads']} thread(s); dotted: chance")
plt.show()
display(Markdown("**Printed by the article for seed 3** (4 threads, its CPU):"))
display(HTML("<pre>seed 3: NT-Xent after 300 steps 3.692\n  random encoder: linear probe 0.288, 5-NN 0.340\n"
             "  simclr encoder: linear probe 0.956, 5-NN 0.826</pre>"))
display(Markdown("**Ours**, the same seed at each thread count on this machine:"))
display(HTML("<pre>" + "\n".join(f"[{r['threads']} thread(s), {r['wall_s']:.1f} s]\n{printout(r)}"
                                  for r in tiny["by_threads"]) + "</pre>"))
display(Markdown(
    f"A second run of seed {tiny['repeat']['seed']} at {tiny['repeat']['threads']} thread(s) "
    f"{'printed the same output' if tiny['repeat_identical'] else 'printed different output'}. "
    "The untrained control is bit-identical at every thread count (no training, no reduction-order "
    "effects); the trained figures move with the thread count because float sums are taken in a "
    "different order, and 300 steps amplify the difference."))

# %%
section("toy2d", "The 2-D circle experiment [B]")
toy = load("results/examples/toy2d.json")
rows = []
for r in toy["runs"]:
    for when in ("before", "after"):
        rows.append({"tau": r["tau"], "when": when, "seed": r["seed"], **r[when]})
df = pd.DataFrame(rows)
agg = df.groupby(["tau", "when"])[["loss", "alignment", "uniformity", "knn"]].agg(["mean", "min", "max"])
display(Markdown(f"{len(toy['params']['seeds'])} seeds per temperature; metrics on "
                 f"{toy['params']['n_eval']} held-out pairs (loss in batches of {toy['params']['batch']} "
                 "pairs, so its floor matches training). The document's own table did not survive; "
                 "the temperatures are SimCLR's ablation values. Class spread and view noise were set "
                 "before training from the untrained 10-NN accuracy only."))
display(HTML(agg.to_html(float_format=lambda v: f"{v:.3f}")))

seed0 = [r for r in toy["runs"] if r["seed"] == toy["params"]["seeds"][0]]
pull0 = [r for r in toy["pull_only"] if r["seed"] == toy["params"]["seeds"][0]]
panels = [("untrained", seed0[0]["angles_before"], seed0[0]["labels"])]
panels += [(f"tau = {r['tau']}", r["angles_after"], r["labels"]) for r in seed0]
panels += [("no negatives", pull0[0]["angles_after"], pull0[0]["labels"])] if pull0 else []
fig, axes = plt.subplots(1, len(panels), figsize=(2.4 * len(panels), 2.6))
for ax, (title, angles, labels) in zip(np.atleast_1d(axes), panels):
    a = np.asarray(angles)
    jitter = 1 + 0.04 * np.asarray(labels)  # classes on slightly different radii, to see overlaps
    ax.scatter(np.cos(a) * jitter, np.sin(a) * jitter, c=labels, cmap="tab10", s=4, vmin=0, vmax=9)
    ax.add_patch(plt.Circle((0, 0), 1, fill=False, color="grey", lw=0.5))
    ax.set_aspect("equal"), ax.set_xlim(-1.25, 1.25), ax.set_ylim(-1.25, 1.25), ax.axis("off")
    ax.set_title(title, fontsize=9)
fig.suptitle(f"Held-out embeddings on the unit circle, seed {toy['params']['seeds'][0]} (colour: latent class)",
             fontsize=10)
plt.show()

# %%
section("analytic", "Analytic statements, checked numerically")
an = load("results/examples/analytic.json")
zt = pd.DataFrame({"tau": an["zero_temperature"]["taus"],
                   "max |tau l - max(0, s_neg - s_pos)|": an["zero_temperature"]["max_gap"]})
display(Markdown("The zero-temperature limit, tightening as tau falls:"))
display(HTML(zt.to_html(index=False, float_format=lambda v: f"{v:.2e}")))
mi = pd.DataFrame([{k: an[name][k] for k in ("rho", "dim", "K", "true_mi", "log_k", "estimate", "stderr")}
                   for name in ("mi_low", "mi_high")])
display(Markdown("The InfoNCE bound on correlated Gaussians with the optimal critic: below the true "
                 "mutual information, and never above log K:"))
display(HTML(mi.to_html(index=False, float_format=lambda v: f"{v:.4f}")))

# %%
section("projection-head", "Projection head: h against z [E, SimCLR]")
rows = []
for path in sorted(Path("results/pretrain").glob("*/seed_*.json")):
    r = load(path)
    if r["status"] != "ok":
        rows.append({"condition": r["condition"], "seed": r["seed"], "feature": "failed", "accuracy": np.nan})
        continue
    for feature in ("h", "z"):
        rows.append({"condition": r["condition"], "seed": r["seed"], "feature": feature,
                     "accuracy": r["eval"][feature]["linear"], "knn": r["eval"][feature]["knn"]})
runs = pd.DataFrame(rows)
if len(runs):
    fig, ax = plt.subplots(figsize=(5, 3.5))
    report.seed_plot(ax, runs.dropna(subset=["accuracy"]), x="feature", y="accuracy")
    ax.set_title(f"SimCLR on shapes ({params.pretrain.defaults.steps} steps): linear probe")
    plt.show()

# %% [markdown]
# ## Provenance

# %%
import hashlib
wall = {"tiny_simclr runs (s, sum)": sum(r["wall_s"] for r in tiny["runs"] + [tiny["repeat"]] + tiny["by_threads"])}
for cond in sorted({p.parent.name for p in Path("results/pretrain").glob("*/seed_*.json")}):
    wall[f"pretrain@{cond} (s, sum over seeds)"] = sum(load(p)["wall_s"] for p in Path("results/pretrain", cond).glob("seed_*.json"))
prov = {"git commit at render": report.git_commit(),
        "params.yaml sha256": hashlib.sha256(Path("params.yaml").read_bytes()).hexdigest()[:16],
        "profile": params.profile, "torch threads per run": params.threads, "parallel workers": params.workers,
        "CPU": report.cpu_model(), **report.versions(),
        **{k: f"{v:.1f}" for k, v in wall.items()}}
display(HTML(pd.Series(prov, name="value").to_frame().to_html()))
