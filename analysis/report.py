# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Contrastive learning lore, replicated in miniature
#
# Each claim of three source documents, beside what this pipeline measured: [E] "Contrastive
# Learning" (an encyclopedia article with two runnable examples), [B] "Contrastive Learning
# Intuition: InfoNCE, Temperature, Alignment and Uniformity" (a blog post), and [N] "Contrastive
# Learning" (a short note on InfoNCE). Setup: ten synthetic 32x32 glyph classes (`shapes`, chance
# 10%) and scikit-learn's handwritten digits, a three-layer CNN, 300 Adam steps of 128 images (MoCo
# arms: 64), five seeds; the regime-sensitive claims also on a scale ladder (1,200, 2,400 and, for
# batch-64 MoCo, 4,800 steps); probes on frozen features (section "Setup" at the end). Verdicts are computed
# by `src/replication/claims.py` from the rules in `analysis/claims.yaml`; a rule changed after
# results were seen is marked as an amendment with the previous verdict. Intervals are 95%
# Student-t intervals over seeds; paired contrasts use the per-seed differences, with Holm's
# correction over every paired contrast of the registry. Every arm of a pretraining claim is
# compared with its untrained control (the same encoder at step 0); a contrast on an arm that did
# not train is not judged. Every number on this page is read from a file the pipeline wrote.

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

from replication import render as report
from replication.io import cpu_model
from replication.render import printout
from replication.stats import TREND_RULES, VERDICT_RULES, t_interval

sns.set_theme(style="whitegrid", context="notebook")
claims = json.loads(Path("reports/claims.json").read_text())
setup = json.loads(Path("resolved/report.json").read_text())          # profile, threads, workers
conditions = json.loads(Path("resolved/conditions.json").read_text())["conditions"]   # name -> study, label, steps
by_section = {}
for c in claims:
    by_section.setdefault(c["section"], []).append(c)


def load(path):
    return json.loads(Path(path).read_text())


def section(name, title):
    display(HTML(f"<h2 id='sec-{name}'>{title}</h2>"))
    if name in by_section:
        display(HTML(report.claims_table(by_section[name], link=False)))


def show(alt, caption, fig=None):
    """The current figure, inline, with alt text and a caption."""
    display(HTML(report.figure_html(fig or plt.gcf(), alt, caption)))


printed = [c for c in claims if c["kind"] in ("exact", "bound", "range")]
judged = [c for c in claims if c not in printed]
tally = Counter(c["verdict"] for c in judged)
count = lambda group: ", ".join(f"{n} {v}" for v, n in Counter(c["verdict"] for c in group).most_common())
count_trends = lambda group: ", ".join(f"{n} {t}" for t, n in Counter(c.get("trend") or "none"
                                                                      for c in group if c.get("ladder")).most_common())
display(Markdown(
    f"**Summary.** Of {len(judged)} claims judged against the literature (profile `{setup['profile']}`), "
    f"{tally['reproduced']} reproduced, {tally['contradicted']} contradicted, {tally['no meaningful effect']} showed "
    f"no meaningful effect, {tally['inconclusive']} are inconclusive, {tally['not testable here']} are not testable "
    f"here (an arm that did not train, a published effect inside the margin, or a design that differs from the "
    f"paper's) and {tally['not tested']} are not tested. Of {len(printed)} printed examples and analytic checks: "
    f"{count(printed)}. {sum(bool(c.get('amended')) for c in claims)} claims carry an amendment (a rule changed "
    "after results were first seen; the previous verdict is shown beside the new one). "
    + (f"{len([c for c in claims if c.get('ladder')])} claims are judged along the scale ladder, their verdict at the "
       f"top rung; trends: {count_trends(claims)}." if any(c.get('ladder') for c in claims) else "")))
studies = sorted({c["study"] for c in conditions.values()})
trained = [s for s in studies if Path("results/evaluate", s).is_dir()]
if len(trained) < len(studies):
    display(HTML("<p style='color:#b00;font-weight:bold'>A run in progress: " + f"{len(trained)} of {len(studies)} "
                 "pretraining studies are trained and evaluated with the current code (" + ", ".join(trained) +
                 "); claims whose arms belong to the others say 'not tested' with the missing files. The "
                 "remaining stages are listed by `dvc status`.</p>"))
show("Forest plot: one row per paired contrast, its effect and 95% interval in units of its margin, coloured by verdict",
     "Every contrast: the effect in the claimed direction (dot) and its 95% interval (line), divided by the claim's "
     "margin, so the grey band from -1 to 1 is 'no meaningful effect'. Crosses: the published effect where the "
     "registry holds it as a number. Colour: verdict.", report.forest_plot(judged))
toc = "".join(f"<li><a href='#sec-{name}'>{title}</a></li>" for name, title in [
    ("claims", "All claims"), ("ntxent-example", "NumPy NT-Xent example"), ("tiny-simclr", "Tiny SimCLR"),
    ("toy2d", "2-D circle"), ("analytic", "Analytic statements"), ("simclr-temperature", "SimCLR"),
    ("simclr-batch", "Batch size"), ("projection-head", "Projection head"), ("rotation", "Augmentation"),
    ("moco", "MoCo"), ("supcon", "SupCon"), ("ladder", "Scale ladder"), ("digits", "Digits"), ("untested", "Untested claims"),
    ("setup", "Setup and deviations"), ("provenance", "Provenance"), ("references", "References")])
display(HTML(f"<nav><b>Contents</b><ul>{toc}</ul></nav><h2 id='sec-claims'>All claims</h2>"))
display(HTML(report.verdict_legend(VERDICT_RULES + [
    ("exact match", "a printed number reproduced to half a unit of its last digit (or a bound met)"),
    ("mismatch", "a printed number not reproduced to its digit (often float summation order, not a contradiction)"),
    ("not tested", "the study cannot test it; the note says why")])))
display(HTML(report.claims_table(judged)))
display(Markdown("**Printed examples and analytic checks**"))
display(HTML(report.claims_table(printed)))

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
show('Tiny SimCLR: accuracy of the untrained and trained encoder per seed',
     'Tiny SimCLR over seeds: every seed a dot, the mean and its 95% t-interval a bar; dotted line: chance (25%).')
published = {c["id"]: c["published"] for c in claims}   # the article's figures, from claims.yaml
display(Markdown("**Printed by the article for seed 3** (4 threads, its CPU):"))
display(HTML(printout({"seed": 3, "loss": published["tiny-simclr-seed3-loss"],
                       "random": {"linear": published["tiny-simclr-seed3-random-linear"],
                                  "knn": published["tiny-simclr-seed3-random-knn"]},
                       "simclr": {"linear": published["tiny-simclr-seed3-simclr-linear"],
                                  "knn": published["tiny-simclr-seed3-simclr-knn"]}}).join(["<pre>", "</pre>"])))
display(Markdown("**Ours**, the same seed at each thread count on this machine:"))
display(HTML("<pre>" + "\n".join(f"[{r['threads']} thread(s), {r['wall_s']:.1f} s]\n{printout(r)}"
                                  for r in tiny["by_threads"]) + "</pre>"))
display(Markdown(
    f"A second run of seed {tiny['repeat']['seed']} at {tiny['repeat']['threads']} thread(s) "
    f"{'printed the same output' if tiny['repeat_identical'] else 'printed different output'}. "
    + ("The untrained control is bit-identical at every thread count (no training, no reduction-order effects); "
       if all(r["random"] == tiny["by_threads"][0]["random"] for r in tiny["by_threads"])
       else "The untrained control differs between thread counts; ")
    + ("the trained figures move with the thread count because float sums are taken in a different order, "
       "and 300 steps amplify the difference."
       if any(r["simclr"] != tiny["by_threads"][0]["simclr"] for r in tiny["by_threads"])
       else "the trained figures are identical at every thread count.")))

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
show('Held-out embeddings of the 2-D experiment on the unit circle before and after training',
     "Seed 0's held-out embeddings on the unit circle, untrained, after training at each temperature, and without negatives; colour is the latent class.")

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
METRICS = ("linear", "knn", "wknn", "tolerance", "tolerance_centred", "alignment", "uniformity", "rotation",
           "rotation_mlp")


def pretrain_runs():
    """Every pretraining run as a row: condition, seed, status, settings (training record) and
    headline metrics at the study's budget (evaluation record: `eval`), with the training loss just
    before it; and every rung of every run as a row of a second table (step 0 is the control)."""
    rows, rungs = [], []
    for path in sorted(Path("results/pretrain").glob("*/*/seed_*.json")):
        r = load(path)
        evaluated = Path("results/evaluate", *path.parts[2:])
        evaluation = load(evaluated) if evaluated.exists() else {}     # a study trained but not yet evaluated
        e = evaluation.get("eval")
        budget = str(r["config"]["steps"])
        row = {"condition": r["condition"], "seed": r["seed"], "status": r["status"], "reason": r["reason"],
               "study": path.parts[2], "loss_curve": r["loss_curve"], "cpu": r.get("cpu"),
               "control_h_linear": (evaluation.get("control") or {}).get("h", {}).get("linear"),
               "loss": (r.get("rung_loss") or {}).get(budget), "steps_done": r["steps_done"],
               "horizon_over_steps": r.get("horizon_over_steps"),
               **{k: r["config"][k] for k in ("dataset", "method", "tau", "head", "batch", "steps", "lr", "momentum")}}
        if e:
            for feature in ("h", "z"):
                row.update({f"{feature}_{metric}": e[feature][metric] for metric in METRICS})
            row["contrastive_top1"] = e["contrastive_top1"]
        rows.append(row)
        for step, metrics in (evaluation.get("at") or {}).items():
            rungs.append({"condition": r["condition"], "seed": r["seed"], "step": int(step),
                          "h_linear": metrics["h"]["linear"], "loss": (r.get("rung_loss") or {}).get(step),
                          "momentum": r["config"]["momentum"]})
    return pd.DataFrame(rows), pd.DataFrame(rungs)


runs, rung_runs = pretrain_runs()
ok = runs[runs.status == "ok"]


def label(name):
    """A condition's label in plots, from params.yaml; an unknown name is an error, never a silent gap."""
    if name not in conditions:
        raise KeyError(f"analysis/report.py names condition {name!r}, which params.yaml does not define")
    return conditions[name]["label"]


def study_plot(names, y="h_linear", title="", ylabel="linear-probe accuracy on h", ax=None):
    """Every seed a dot, the mean and 95% interval a bar, one column per condition."""
    data = ok[ok.condition.isin(names)].copy()
    if data.empty:
        return
    data["arm"] = data.condition.map(label)
    order = [label(c) for c in names if c in set(data.condition)]
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(order)), 3.2))
    report.seed_plot(ax, data, x="arm", y=y, order=order)
    if y == "h_linear":       # the same encoder at step 0, averaged over the plotted runs
        ax.axhline(data.control_h_linear.mean(), color="#b00", lw=1, ls="--", label="untrained control")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel(""), ax.set_ylabel(ylabel), ax.set_title(title, fontsize=10)
    ax.tick_params(axis="x", labelrotation=30 if len(order) > 4 else 0, labelsize=8)
    plt.setp(ax.get_xticklabels(), ha="right" if len(order) > 4 else "center", rotation_mode="anchor")
    return ax


def study_panels(plots, alt, caption, size=(4.4, 3.5)):
    """Study plots side by side, each item of `plots` the keyword arguments of one study_plot."""
    fig, axes = plt.subplots(1, len(plots), figsize=(size[0] * len(plots), size[1]))
    for ax, plot in zip(axes, plots):
        study_plot(ax=ax, **plot)
    plt.tight_layout()
    show(alt, caption, fig)


def loss_curves(names, title):
    """Mean training loss against step for each condition of `names` (finished runs)."""
    data = ok[ok.condition.isin(names)]
    if data.empty:
        return
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for name, group in data.groupby("condition", sort=False):
        steps = [s for s, _ in group.loss_curve.iloc[0]]
        mean = np.mean([[v for _, v in curve] for curve in group.loss_curve if len(curve) == len(steps)], axis=0)
        ax.plot(steps, mean, lw=1, label=label(name))
    ax.set_xlabel("training step"), ax.set_ylabel("training loss (mean over seeds)")
    ax.set_xscale("symlog", linthresh=300)
    ax.legend(fontsize=6, ncol=2, loc="upper right")
    show(f"Training loss curves: {title}", f"Training loss against step (linear to 300 steps, logarithmic beyond), "
         f"mean over seeds: {title}. Losses of different objectives are not comparable with each other.", fig)


def failed(names):
    bad = runs[runs.condition.isin(names) & (runs.status != "ok")]
    if len(bad):
        display(Markdown("**Failed runs** (shown, never averaged): " + "; ".join(
            f"{r.condition} seed {r.seed}: {r.status} after {r.steps_done} steps ({r.reason})"
            for r in bad.itertuples())))


taus = ["simclr_tau001", "simclr_tau005", "simclr_tau01", "simclr", "simclr_tau05", "simclr_tau1"]
section("simclr-temperature", "SimCLR: temperature, normalisation, losses [E, SimCLR Tables 2 and 5]")
study_panels([dict(names=taus, title="linear probe on h by tau"),
              dict(names=taus, y="z_uniformity", title="uniformity of z (lower: more uniform)",
                   ylabel="uniformity loss of z"),
              dict(names=taus, y="z_tolerance_centred", title="centred tolerance of z",
                   ylabel="same-class minus other-class similarity")],
             'SimCLR by temperature: linear probe, uniformity and centred tolerance per seed',
             'By temperature, at 300 steps: linear probe on h (left), uniformity of z (middle, lower is more uniform), '
             'centred tolerance of z (right: same-class minus different-class mean cosine similarity); every seed a '
             'dot, mean and 95% t-interval a bar; dashed: the untrained control.')
losses = ["simclr", "simclr_logistic", "simclr_logistic_tau05", "simclr_logistic_tau1", "simclr_triplet_m02",
          "simclr_triplet", "simclr_triplet_m1", "simclr_triplet_hardest", "align_uniform"]
study_plot(losses, title="NT-Xent against NT-Logistic and the margin triplet at three settings each, and alignment + uniformity")
show('SimCLR losses: linear probe per seed for NT-Xent and the alternatives at each setting',
     'Losses at 300 steps: linear probe on h for NT-Xent (tau 0.2), NT-Logistic at three temperatures, the margin '
     'triplet at three margins (semi-hard negatives in FaceNet\'s band) and on the hardest negative, and alignment + '
     'uniformity; dashed: the untrained control.')
nonorm = ["simclr_tau01", "simclr_nonorm_tau10", "simclr_nonorm_tau100"]
study_panels([dict(names=nonorm, title="linear probe on h"),
              dict(names=nonorm, y="contrastive_top1", title="the pretext task: contrastive top-1 (1,023 candidates)",
                   ylabel="contrastive top-1 accuracy")],
             'Normalisation: linear probe and contrastive top-1 with and without l2 normalisation',
             'With l2 normalisation (tau 0.1) and without it (tau 10 and 100), at 300 steps: linear probe on h (left) '
             'and how often the pretext task is solved (right); every seed a dot.', size=(5.5, 3.3))
failed(taus + losses + nonorm)
loss_curves(taus + nonorm, "SimCLR by temperature, with and without normalisation")
plane = ok[ok.dataset == "shapes"].dropna(subset=["z_alignment"])
if len(plane):
    fig, ax = plt.subplots(figsize=(6.5, 4))
    points = ax.scatter(plane.z_uniformity, plane.z_alignment, c=plane.h_linear, cmap="viridis", s=14)
    fig.colorbar(points, ax=ax, label="linear-probe accuracy on h")
    ax.set_xlabel("uniformity loss of z (lower: more uniform)"), ax.set_ylabel("alignment loss of z (lower: closer views)")
    show("Alignment against uniformity of z for every finished run on shapes, coloured by linear-probe accuracy",
         f"The alignment-uniformity plane (Wang & Isola): each of {len(plane)} finished runs on shapes, every method "
         "and setting, at its budget; colour is the linear probe on h. The rank correlations are the claims "
         "low-uniformity-performs-best and low-alignment-performs-best.", fig)

# %%
batch = ["simclr_b2_s6400", "simclr_b32_s100", "simclr_b128_s100", "simclr_b32_s400", "simclr_b128_s400",
         "simclr_b32_s1600", "siglip_b32_s400"]
section("simclr-batch", "Batch size, negatives and the sigmoid loss [E, N]")
study_plot(batch, title="linear probe on h by batch and training length")
show('Batch size and steps: linear probe per seed',
     'Batch size and training length: linear probe on h, every seed a dot, mean and 95% t-interval a bar; '
     'b128 x 100 steps, b32 x 400 and b2 x 6,400 see the same 12,800 images, as do b128 x 400 and b32 x 1,600.')
failed(batch)
scalars = runs[runs.condition == "siglip_b32_s400"]
if len(scalars):
    learned = pd.DataFrame([load(p)["learned_scalars"] for p in Path("results/pretrain").glob("*/siglip_b32_s400/seed_*.json")])
    display(Markdown(f"The sigmoid loss's learned temperature t = exp(log t) ended at {np.exp(learned['criterion.log_t']).mean():.2f} "
                     f"(start 10) and its bias b at {learned['criterion.b'].mean():.2f} (start {-math.log(31):.2f} = -log 31), "
                     f"means over {len(learned)} seeds."))
loss_curves(batch, "batch size and training length")

# %%
heads = ["simclr_head_none", "simclr_head_linear", "simclr"]
section("projection-head", "Projection head: h against z [E, SimCLR]")
FEATURE = {"h_linear": "h (before the head)", "z_linear": "z = g(h)", "h_rotation_mlp": "h (before the head)",
           "z_rotation_mlp": "z = g(h)"}
data = ok[ok.condition.isin(heads)].melt(id_vars=["condition", "seed"], value_vars=["h_linear", "z_linear"],
                                          var_name="feature", value_name="accuracy")
data["head"] = data.condition.map(label)
data["feature"] = data.feature.map(FEATURE)
if len(data):
    fig, ax = plt.subplots(figsize=(6, 3.3))
    report.seed_plot(ax, data, x="head", y="accuracy", hue="feature", order=[label(h) for h in heads])
    ax.set_xlabel(""), ax.set_ylabel("linear-probe accuracy")
    ax.set_title("linear probe on h and on z = g(h), 300 steps", fontsize=10)
    show('Projection head: linear probe on h and z per seed',
     'Linear probe on h and on z = g(h) for no head, a linear head and an MLP head, at 300 steps.')

# %%
section("rotation", "Augmentation: rotation and colour [E, SimCLR Table 3]")
published = {c["id"]: c["published"] for c in claims}
data = ok[ok.condition.isin(["simclr_rotate_wide_z", "simclr"])].melt(
    id_vars=["condition", "seed"], value_vars=["h_rotation_mlp", "z_rotation_mlp"], var_name="feature",
    value_name="accuracy")
if len(data):
    data["pretraining"] = data.condition.map(label)
    data["feature"] = data.feature.map(FEATURE)
    fig, ax = plt.subplots(figsize=(6.5, 3.3))
    report.seed_plot(ax, data, x="pretraining", y="accuracy", hue="feature")
    ax.axhline(0.25, color="grey", lw=0.8, ls=":")
    ax.axhline(published["rotation-at-chance-from-z"], color="#b00", lw=0.9, ls="-.", label="published, from z")
    ax.set_xlabel(""), ax.set_ylabel("4-way rotation accuracy (MLP probe)")
    ax.legend(fontsize=7)
    ax.set_title("rotation probe on frozen features (dotted: chance)", fontsize=10)
    show('Rotation probe on h and z with and without rotation augmentation',
         'Four-way rotation probe (an MLP classifier) on frozen h and z of the rotation arm (z as wide as h) and of '
         'the default arm; dotted line: chance (25%); dash-dot: the published figure from g(h) (25.6%).')
study_plot(["simclr", "simclr_no_colour"], title="with and without colour jitter and grayscale")
show('Colour augmentation: linear probe per seed with and without colour jitter',
     'SimCLR at 300 steps with and without colour jitter and grayscale: linear probe on h, every seed a dot.')

# %%
section("moco", "MoCo: momentum along the ladder, memory bank, MoCo v2, shuffle BN [E, MoCo]")
momenta = ["moco_m0", "moco_m05", "moco_m09", "moco_m099", "moco_m0999"]
moco = rung_runs[rung_runs.condition.isin(momenta)]
if len(moco):
    display(Markdown("The key encoder averages the query encoder over about 1/(1 - m) steps (1,000 steps at "
                     "m = 0.999). Each momentum is one run per seed, evaluated at every rung; step 0 is the "
                     "untrained control. Failed runs are listed below, never averaged."))
    summary = (moco.groupby(["momentum", "step"]).h_linear.agg(["size", "mean", "min", "max"]).reset_index()
               .rename(columns={"size": "runs", "mean": "linear probe, mean"}))
    display(HTML(summary.pivot(index="momentum", columns="step", values="linear probe, mean")
                 .to_html(float_format=lambda v: f"{v:.3f}")))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for i, (m, group) in enumerate(moco[moco.step > 0].groupby("momentum")):
        means = group.groupby("step").h_linear.agg(["mean", lambda v: tuple(t_interval(v))])
        lo, hi = zip(*means.iloc[:, 1])
        ax.plot(means.index, means["mean"], "o-", color=f"C{i}", label=f"m = {m:g}")
        ax.fill_between(means.index, lo, hi, color=f"C{i}", alpha=0.15)
    ax.axhline(moco[moco.step == 0].h_linear.mean(), color="#b00", ls="--", lw=1, label="untrained control")
    ax.set_xscale("log"), ax.set_xlabel("training steps (log scale)"), ax.set_ylabel("linear-probe accuracy on h")
    ax.legend(fontsize=7)
    show("MoCo: linear probe against training steps for each momentum",
         "MoCo v1 (batch 64, per-device BN with shuffled keys): linear probe on h at each rung, mean and 95% "
         "t-interval over seeds, for each momentum m; dashed: the untrained control.", fig)
    failed(momenta)
mocos = ["moco_m099", "memory_bank", "moco_bn4", "moco_ranks2_bn2", "moco_ranks2_bn2_shuffle", "mocov2",
         "mocov2_tau007", "mocov2_tau05", "simclr"]
bn = ["moco_bn4", "moco_m099", "moco_ranks2_bn2", "moco_ranks2_bn2_shuffle"]
study_panels([dict(names=mocos, title="linear probe on h, 300 steps"),
              dict(names=bn, y="loss", title="training InfoNCE at 300 steps (mean of the last 10 steps)",
                   ylabel="InfoNCE loss (nats)")],
             'MoCo variants: linear probe and training loss per seed',
             "MoCo variants beside SimCLR at 300 steps: linear probe on h (left) and the InfoNCE loss of the BN-group "
             "arms with and without shuffled keys (right).", size=(6.5, 4))
failed(mocos)
loss_curves(momenta + ["moco_bn4", "memory_bank", "mocov2"], "MoCo")

# %%
section("supcon", "Supervised contrastive, cross-entropy, instance discrimination [E]")
sup = ["memory_bank", "simclr", "supcon_in", "supcon_out", "supervised"]
fig, axes = plt.subplots(1, 2, figsize=(12, 3.5))
study_plot(sup, title="linear probe on h, 300 steps", ax=axes[0])
sweep = ok[ok.condition.str.match(r"(supcon_out|supervised)(_lr\d+)?$")].copy()
if len(sweep):
    sweep["objective"] = sweep.method.map({"supcon": "SupCon L_out", "supervised": "cross-entropy"})
    sweep["learning rate"] = sweep.lr.map(lambda v: f"{v:g}")
    order = [f"{v:g}" for v in sorted(sweep.lr.unique())]
    report.seed_plot(axes[1], sweep, x="learning rate", y="h_linear", hue="objective", order=order)
    axes[1].set_title("learning-rate sweep, 300 steps", fontsize=10), axes[1].set_xlabel("Adam learning rate")
    axes[1].set_ylabel("linear-probe accuracy on h")
plt.tight_layout(), show('SupCon and cross-entropy: linear probe and learning-rate sweep',
     'Supervised contrastive, cross-entropy and instance discrimination (left); the learning-rate sweep (right).')
loss_curves(["supcon_out", "supcon_in", "supervised"], "SupCon and cross-entropy")

# %%
section("ladder", "The scale ladder: each regime-sensitive claim at 300, 1,200, 2,400 (and 4,800) steps")
ladder_claims = [c for c in claims if c.get("ladder")]
display(Markdown(
    "A ladder arm trains on past the study's budget at a constant learning rate, with a checkpoint at every rung; "
    "its 300-step checkpoint is the 300-step run, bit for bit. A ladder claim's verdict is its top rung's. Its "
    "trend is the slope of the paired effect against log10(steps), fitted per seed, with a 95% interval, labelled "
    "by the rules below (m: the claim's margin per decade of steps). A contradiction at the top rung is trusted "
    "only when both arms beat their untrained control, both have levelled off (each moved by less than half "
    "the margin between the last two rungs) and the effect is not growing toward the claim."))
display(HTML(report.verdict_legend(TREND_RULES).replace("<th>verdict</th>", "<th>trend</th>")))
rows = []
for c in ladder_claims:
    main = c.get("contrast") or {}
    trend = main.get("trend") or {}
    scale, unit = c.get("effect_scale", 1.0), c.get("effect_unit", "")
    row = {"claim": f"<a href='#claim-{c['id']}'>{c['id']}</a>"}
    row.update({f"{r['step']:,} steps": r["verdict"] for r in c["ladder"]})
    row["trend"] = trend.get("label", "-")
    if trend:
        lo, hi = (scale * v for v in trend["slope_ci95"])
        row["slope per decade"] = f"{scale * trend['slope_per_decade']:+.3g}{unit} [{lo:+.3g}, {hi:+.3g}]"
    row["at the top rung"] = ("may be a scale artefact: " + main["scale_artefact"]) if main.get("scale_artefact") else (
        "contradiction levelled off" if c["verdict"] == "contradicted" else "")
    rows.append(row)
if rows:
    rung_columns = [f"{step:,} steps" for step in sorted({r["step"] for c in ladder_claims for r in c["ladder"]})]
    columns = ["claim", *rung_columns, "trend", "slope per decade", "at the top rung"]
    display(HTML(pd.DataFrame(rows).reindex(columns=columns).fillna("-").to_html(index=False, escape=False)))

KEY_WORDS = {"h.linear": "linear-probe accuracy on h", "h.knn": "5-NN accuracy on h", "z.uniformity": "uniformity loss of z",
             "z.tolerance_centred": "centred tolerance of z", "h.tolerance_centred": "centred tolerance of h",
             "contrastive_top1": "contrastive top-1 accuracy", "z.linear": "linear-probe accuracy on z",
             "rung_loss": "training loss (mean of the last 10 steps)"}


def ladder_words(claim):
    """The figure a ladder claim's arms read, in words ('each arm's figure' when they differ)."""
    figures = {figure_of(arm.get("key") or "") for arm in claim["ladder"][-1]["arms"].values()}
    if len(figures) > 1:
        return "each arm's figure"
    figure = figures.pop()
    return KEY_WORDS.get(figure, figure)


def figure_of(key):
    """'at.2400.h.linear' -> 'h.linear'; 'rung_loss.2400' -> 'rung_loss'."""
    return key.split(".", 2)[2] if key.startswith("at.") else key.split(".")[0]


for c in ladder_claims:
    fig = report.ladder_figure({**c, "metric_label": ladder_words(c)}, c.get("untrained") or {})
    show(f"Scale ladder of {c['id']}: arms and effect against training steps",
         f"{c['id']}: left, each arm's mean and 95% interval at every rung (log axis), dashed lines its untrained "
         f"control; right, the paired effect in the claimed direction with its 95% interval, the grey band inside "
         f"the margin{', the dotted line the published effect' if c.get('published_effect_value') is not None else ''}. "
         f"Headline verdict (top rung): {c['verdict']}; trend: {c.get('trend') or 'none'}.", fig)

# %%
section("digits", "On real handwritten digits [E, SimCLR]")
dig = ["digits_tau005", "digits_tau01", "digits_tau02", "digits_tau05", "digits_tau1", "digits_head_none",
       "digits_head_linear"]
study_plot(dig, title="digits: linear probe on h (MLP head unless stated)")
show('Digits: linear probe per condition',
     'Handwritten digits: linear probe on h by temperature and head, 300 steps; dashed: the untrained control.')
failed(dig)
loss_curves(dig, "digits")

# %% [markdown]
# ## CIFAR-10 (the `cifar10` profile)
# Published ResNet-18 figures on CIFAR-10 (`analysis/cifar10_reference.yaml`, each with its source and recipe),
# and ours beside them once runs of the `cifar10` profile exist (README: Scaling up). Our recipe is not theirs
# (Adam, the documents' milder augmentation, 500 epochs): read the comparison as a sanity check, not a verdict.

# %%
reference = pd.DataFrame(yaml.safe_load(Path("analysis/cifar10_reference.yaml").read_text()))
cifar = ok[ok.dataset == "cifar10"]
def ours(row):
    column = "h_linear" if row.metric.startswith("linear") else "h_wknn"
    values = 100 * cifar[cifar.condition == row.condition][column]
    if values.empty:
        return "no cifar10 runs yet"
    return f"{values.mean():.1f} (n = {len(values)}, {values.min():.1f}-{values.max():.1f})"
if cifar.empty:
    display(Markdown(f"No `cifar10` runs yet: {len(reference)} published reference figures wait in "
                     "`analysis/cifar10_reference.yaml` (README: Scaling up)."))
else:
    reference["ours"] = reference.apply(ours, axis=1)
    display(HTML(reference[["method", "metric", "value", "epochs", "condition", "ours", "recipe", "source"]]
                 .rename(columns={"value": "published"}).to_html(index=False)))

# %%
section("untested", "Claims this study does not test")

# %% [markdown]
# <h2 id='sec-setup'>Setup and deviations from the papers</h2>
# What this study ran, read from the resolved configuration the pipeline used, beside what the papers did.

# %%
data_cfg = load("resolved/data.json")
eval_cfg = load("resolved/evaluate.json")["evaluate"]
default = load("resolved/pretrain/simclr_mocov2.json")["conditions"]["simclr"]
moco_cfg = load("resolved/pretrain/moco_high.json")["conditions"]["moco_m099"]
tops = sorted({c["rungs"][-1] for c in conditions.values() if len(c["rungs"]) > 2})
shapes = data_cfg["shapes"]
setup_rows = [
    ("data", f"`shapes`: ten synthetic {data_cfg['image_size']}x{data_cfg['image_size']} glyph classes under clutter, "
             f"texture and noise, {shapes['n_train']:,} unlabelled training images (chance 10%); scikit-learn's "
             "handwritten digits", "ImageNet (1.28 M images, 1,000 classes), CIFAR-10"),
    ("encoder", f"{default['encoder']}: a three-layer CNN, 64-D h; MLP head 64 -> 64 -> {default['proj_dim']} "
                "(or linear, or none)", "ResNet-50 (2,048-D h), 128-D z"),
    ("budget", f"{default['steps']} Adam steps of {default['batch']} images (MoCo v1: {moco_cfg['batch']}), learning "
               f"rate {default['lr']:g}, {default['schedule']} schedule, {setup['threads']} CPU thread per run; ladder "
               f"arms on to {', '.join(f'{t:,}' for t in tops)} steps; {len(conditions)} conditions x "
               f"{len(json.loads(Path('resolved/conditions.json').read_text())['seeds'])} seeds",
     "hundreds of epochs, LARS or SGD, cosine schedules, many GPUs"),
    ("probes", f"linear probe on standardised features ({eval_cfg['n_labelled']:,} labelled, {eval_cfg['n_test']:,} "
               f"test images, {eval_cfg['probe_steps']} steps), {eval_cfg['knn_k']}-NN, weighted {eval_cfg['wknn_k']}-NN, "
               "rotation probes (linear and MLP)", "linear probe on ImageNet, transfer tasks"),
    ("MoCo", f"queue {moco_cfg['queue']:,}, {moco_cfg['bn_groups']} BN groups with shuffled keys (one process), "
             "cheating arms without shuffling", f"queue 65,536, shuffled BN across 8 GPUs"),
    ("SimCLR losses", "semi-hard negatives (FaceNet's band for the triplet); NT-Logistic at tau 0.2, 0.5, 1.0; "
                      "triplet margin 0.2, 0.5, 1.0; the best of each judged", "semi-hard mining; tuned settings"),
    ("SigLIP", "two image views, batch 32; t starts at 10, b at -log(N - 1); both learned",
     "image-text pairs, batches of thousands; b starts at -10"),
]
display(HTML(pd.DataFrame(setup_rows, columns=["", "here", "the papers"]).to_html(index=False)))

# %% [markdown]
# <h2 id='sec-provenance'>Provenance</h2>

# %%
import hashlib
wall = {"tiny_simclr runs (s, sum)": sum(r["wall_s"] for r in tiny["runs"] + [tiny["repeat"]] + tiny["by_threads"]),
        "pretraining runs, peak memory per run (MB, max)": max(load(p)["peak_rss_mb"] for p in Path("results/pretrain").glob("*/*/seed_*.json"))}
for study in sorted(p.name for p in Path("results/pretrain").iterdir() if p.is_dir()):
    wall[f"pretrain@{study}: run time summed over its runs (s)"] = sum(
        load(p)["wall_s"] for p in Path("results/pretrain", study).glob("*/seed_*.json"))
timing = Path("reports/repro_timing.json")
if timing.exists():
    t = load(timing)
    wall[f"last full `make repro` ({t['date']}, {len(t['stages_run'])} stages, {t['cpu']}, s)"] = t["seconds"]
import datetime
commit, dirty = report.git_commit(), report.git_dirty()
if dirty:
    display(HTML("<p style='color:#b00;font-weight:bold'>Rendered from a working tree with uncommitted changes: "
                 "the commit below is not the whole of the code that made this page.</p>"))
prov = {"git commit at render": commit + (" (uncommitted changes)" if dirty else ""),
        "rendered": datetime.date.today().isoformat(),
        "resolved configuration sha256": setup["config_sha256"],
        "profile": setup["profile"], "torch threads per run": setup["threads"], "parallel workers": setup["workers"],
        "CPU of this render": cpu_model(), **report.versions(),
        **{k: f"{v:.1f}" for k, v in wall.items()}}
display(HTML(pd.Series(prov, name="value").to_frame().to_html()))
stage_times = Path("reports/stage_times.json")
cpus = runs.groupby("study").cpu.agg(lambda v: ", ".join(sorted(set(map(str, v)))))
if stage_times.exists():
    st = pd.DataFrame(load(stage_times)).T
    display(Markdown(f"**Stages of the last forced run, one by one** (`make repro-stage`; a long run done across "
                     f"sessions names the CPU of each stage). Sum: {st.seconds.sum() / 60:.1f} minutes, of which "
                     f"{st.seconds_in_dvc.sum() / 60:.1f} in DVC itself."))
    display(HTML(st.to_html(float_format=lambda v: f"{v:.1f}")))
display(Markdown("**CPU that trained each study** (from its training records): " +
                 "; ".join(f"{study}: {cpu}" for study, cpu in cpus.items())))

# %% [markdown]
# ### Which figures are bit-reproducible
# Measured by the `determinism` stage: one short pretraining run twice at the same thread count, and once
# at each other thread count, every recorded value compared (wall time and peak memory excepted).

# %%
det = load("results/determinism.json")
dp = det["params"]
first, others = dp["thread_counts"][0], dp["thread_counts"][1:]
repeat = ("bit-identical in every recorded value" if not det["repeat_differences"]
          else f"**not** identical: {len(det['repeat_differences'])} values differ")
lines = [f"- `{dp['condition']}`, seed {dp['seed']}, {dp['steps']} steps, run twice at {first} thread(s): {repeat}."]
rows = []
for threads, diffs in det["thread_differences"].items():
    curve = [d for d in diffs if d[0].startswith("loss_curve")]
    evals = [d for d in diffs if d[0].startswith("eval.")]
    first_step = det["reference"]["loss_curve"][int(curve[0][0].split("[")[1].split("]")[0])][0] if curve else None
    lines.append(f"- the same at {threads} threads: {len(diffs)} values differ"
                 + (f"; the loss curve first differs at step {first_step}" if curve else "")
                 + f"; {len(evals)} evaluation figures differ (table).")
    rows += [{"threads": f"{first} vs {threads}", "figure": d[0].removeprefix("eval."), f"{first} thread(s)": d[1],
              f"other": d[2], "difference": d[2] - d[1]} for d in evals if isinstance(d[1], float)]
moved = [abs(r["difference"]) for r in rows if r["figure"] == "h.linear"]
seed_sd = ok[ok.condition == dp["condition"]].h_linear.std()
thread_vs_seed = (f" The largest move of the linear probe on h, {100 * max(moved):.1f} points, compares with a "
                  f"seed-to-seed SD of {100 * seed_sd:.1f} points for `{dp['condition']}` in the study "
                  f"({conditions[dp['condition']]['steps']} steps)." if moved and seed_sd == seed_sd else "")
lines.append(f"- tiny SimCLR (the article's example), seed {tiny['repeat']['seed']}: repeat identical: "
             f"{tiny['repeat_identical']}; its untrained control is identical at every thread count, its trained "
             "figures are not (see that section).")
display(Markdown("\n".join(lines) + "\n\nSo: with the same params, seed, thread count, CPU and torch build every "
                 "figure in this report is reproduced bit for bit; the generated datasets are checked by sha256 and the "
                 "NumPy examples do not depend on threads. Training changes the order of float sums with the thread "
                 "count (and, by the same mechanism, with the CPU's vector kernels; only one CPU model was measured), "
                 "so trained figures move by the amounts below." + thread_vs_seed))
if rows:
    display(HTML(pd.DataFrame(rows).to_html(index=False, float_format=lambda v: f"{v:.4f}")))

# %% [markdown]
# <h2 id='sec-references'>References</h2>
#
# Source documents: [E] "Contrastive Learning" (encyclopedia article); [B] "Contrastive Learning
# Intuition: InfoNCE, Temperature, Alignment and Uniformity" (blog post); [N] "Contrastive Learning"
# (short note on InfoNCE).
#
# Papers quoted by them and tested here:
# - Chen, Kornblith, Norouzi, Hinton (2020). A simple framework for contrastive learning of visual representations (SimCLR). arXiv:2002.05709
# - He, Fan, Wu, Xie, Girshick (2020). Momentum contrast for unsupervised visual representation learning (MoCo). arXiv:1911.05722
# - Chen, Fan, Girshick, He (2020). Improved baselines with momentum contrastive learning (MoCo v2). arXiv:2003.04297
# - Khosla et al. (2020). Supervised contrastive learning. arXiv:2004.11362
# - Wang, Isola (2020). Understanding contrastive representation learning through alignment and uniformity on the hypersphere. arXiv:2005.10242
# - Wang, Liu (2021). Understanding the behaviour of contrastive loss. arXiv:2012.09740
# - Zhai, Mustafa, Kolesnikov, Beyer (2023). Sigmoid loss for language image pre-training (SigLIP). arXiv:2303.15343
# - Wu, Xiong, Yu, Lin (2018). Unsupervised feature learning via non-parametric instance discrimination. arXiv:1805.01978
# - Schroff, Kalenichenko, Philbin (2015). FaceNet: a unified embedding for face recognition and clustering. arXiv:1503.03832
# - Sohn (2016). Improved deep metric learning with multi-class N-pair loss objective. NeurIPS 2016
# - van den Oord, Li, Vinyals (2018). Representation learning with contrastive predictive coding. arXiv:1807.03748
# - Poole, Ozair, van den Oord, Alemi, Tucker (2019). On variational bounds of mutual information. arXiv:1905.06922
# - Chuang, Robinson, Lin, Torralba, Jegelka (2020). Debiased contrastive learning. arXiv:2007.00224
