# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %%
import datetime
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import yaml
from IPython.display import HTML, display

from replication import render
from replication import headroom
from replication import registration
from replication import render_claims as rc
from replication import render_deviations as rd
from replication import render_figures as figures
from replication import render_html as page
from replication.datasets import GENERATED, load_dataset
from replication.io import cpu_model
from replication.decisions import VERDICT_RULES
from replication.stats import TREND_RULES, t_interval

sns.set_theme(style="whitegrid", context="notebook")
claims = rc.load_claims("reports/claims.json")
setup = json.loads(Path("resolved/report.json").read_text())               # profile, threads, workers
resolved_conditions = json.loads(Path("resolved/conditions.json").read_text())
conditions = resolved_conditions["conditions"]                              # name -> study, label, steps, rungs
reference_file, reference_arm = rd.REFERENCE_ARM
default = json.loads(Path(f"resolved/{reference_file}.json").read_text())["conditions"][reference_arm]
data_cfg = json.loads(Path("resolved/data.json").read_text())
shared = page.shared_amendments(claims)
by_section = {}
for c in claims:
    by_section.setdefault(c["section"], []).append(c)
figure_count = iter(range(1, 1000))


def load(path):
    return json.loads(Path(path).read_text())


def html(text):
    display(HTML(text))


def show(alt, caption, fig=None):
    """A figure, inline as SVG, with alt text and a caption."""
    html(figures.figure_html(fig or plt.gcf(), alt, caption, key=f"f{next(figure_count)}"))


def section(name, title, intro=""):
    html(f"<h2 id='sec-{page.esc(name)}'>{page.esc(title)}</h2>" + (f"<p>{page.esc(intro)}</p>" if intro else ""))


def claims_of(name):
    """The claims of a section, each folded in <details>."""
    if name in by_section:
        html(f"<p class='claims-head'>The {len(by_section[name])} claims of this section (click to unfold):</p>"
             + page.claim_list(by_section[name], shared))


manifests = {name: load(f"data/{name}.json") for name in GENERATED if Path(f"data/{name}.json").exists()}
tops = sorted({c["rungs"][-1] for c in conditions.values() if len(c["rungs"]) > 2})
scale = (f"a miniature: synthetic {data_cfg['image_size']}x{data_cfg['image_size']} images "
         f"({default['dataset']}, {len(manifests[default['dataset']]['classes'])} classes) and handwritten digits, "
         f"a three-layer CNN, {default['steps']} steps of {default['batch']} images, ladder claims to "
         f"{', '.join(f'{t:,}' for t in tops)} steps, on a CPU")
html(page.toc([("findings", "Key findings"), ("legend", "Legend"), ("forest", "All effects"), ("claims", "All claims"),
               ("amendments", "Amendments"), ("registration", "Registration"), ("data", "The data"),
               ("ntxent-example", "NumPy NT-Xent"), ("tiny-simclr", "Tiny SimCLR"), ("toy2d", "2-D circle"),
               ("analytic", "Analytic facts"),
               ("simclr-temperature", "Temperature, losses"), ("simclr-batch", "Batch size"),
               ("projection-head", "Projection head"), ("rotation", "Augmentation"), ("moco", "MoCo"),
               ("supcon", "SupCon"), ("ladder", "Scale ladder"), ("digits", "Digits"), ("untested", "Untested"),
               ("setup", "Setup and deviations"), ("provenance", "Provenance"), ("references", "References")]))
html(page.first_screen(claims, "Contrastive learning lore, replicated in miniature", scale))
html(page.legend(VERDICT_RULES, TREND_RULES))

# %%
section("forest", "All effects, in multiples of their margin")
show("Forest plot: every paired contrast's effect and 95% interval in multiples of its margin, grouped by verdict, "
     "with the published effect where known",
     "Each row a contrast (click its label for the claim): the effect in the claimed direction (marker) and its "
     "95% interval (line), divided by the claim's margin, so the grey band from −1 to 1 is 'no meaningful effect'. "
     "Rows grouped by verdict, largest effect first; grey rows are not judged; black bars: the published effect. "
     "Read at each claim's rung (the index gives it).", figures.forest_plot(claims))
both = [c for c in claims if rc.published_effect(c) is not None and rc.our_effect(c)]
show("Published effect against our effect, one point per claim, in the claim's unit",
     f"The {len(both)} claims with a published effect in a unit we also measure: published (x) against ours (y) with "
     "our 95% interval. On the dashed diagonal the miniature matches the paper in size; in the shaded quadrants it "
     "agrees in sign.", figures.published_vs_ours(claims))

# %%
section("claims", "All claims: a one-line index",
        "Published and ours in the same unit; 'at' is the training length the figure is read at; the claim's "
        "details (statement, analysis, note, amendments) unfold in its section.")
literature = [c for c in claims if rc.origin(c) == "literature"]
documents = [c for c in claims if rc.origin(c) == "document"]
html(f"<h3>Literature claims ({len(literature)})</h3>" + page.index_table(rc.by_verdict(literature))
     + page.folded_index("The documents' printed examples and analytic facts", documents))

# %%
section("amendments", "Amendments: verdicts under the original rules beside the current ones",
        "Rows: the verdict each claim had under the rules registered first (its first amendment's previous verdict); "
        "columns: its verdict now. The diagonal (shaded) did not change. Amendments shared by several claims are "
        "printed once below; each claim's own list is in its details.")
html(page.original_vs_current(claims) + page.amendments_section(claims, shared))

# %%
section("registration", "Registration: the rules frozen before the run")
summary = load("reports/summary.json")
html(page.registration_section(registration.load(), summary.get("registered_on"),
                               render.git_last_commit(registration.RECORD), claims))

# %%
section("data", "The data", "Sample training images of each generated dataset, and augmented views: the two "
        "views of a positive pair are two such draws.")
missing = [name for name in manifests if not Path(f"data/{name}.pt").exists()]
if missing:      # the report stage depends on them; a bare checkout may lack them
    html(f"<p>Not on disk: {page.esc(', '.join(missing))} (regenerate with dvc repro data).</p>")
for name in [name for name in manifests if name not in missing]:
    dataset = load_dataset(name)
    families = figures.families_of(dataset)
    samples, views = figures.dataset_figures(dataset, default if name == default["dataset"] else None)
    grouping = (f"a row per family ({len(set(families))} families), each class named by what sets it apart in "
                "its family" if families else "one image per class")
    show(f"Sample training images of the {name} dataset, {grouping}",
         f"{name}: {dataset['x_train'].shape[0]:,} training images of {len(dataset['classes'])} classes, "
         f"{dataset['x_train'].shape[2]}x{dataset['x_train'].shape[3]} pixels; {grouping}.", samples)
    if views is not None:
        options = ", ".join(f"{knob} {value}" for knob, value in figures.augment_options(default).items())
        show(f"Augmented views of {name} images, one image per row",
             f"The default arm's augmentation ({options}): each row's image, then six independent draws of it.", views)
headroom_rows = headroom.headroom(".", default["dataset"], (reference_file.split("/")[-1], reference_arm))
holds = {True: "<span class='v ok'>holds</span>", False: "<span class='v bad'>fails</span>",
         None: "<span class='v grey'>not measured</span>"}
html(f"<h3>Headroom: the {page.esc(default['dataset'])} design targets, read from this run's records</h3>"
     "<p>Fixed with the dataset's pilot, before registration, so that effects are not squeezed against a ceiling "
     "or hidden by an untrained encoder that already scores well (primary probe: the linear probe on h with the "
     "registered label budget).</p><table><tr><th>target</th><th>measured</th><th></th></tr>"
     + "".join(f"<tr><td>{page.esc(target)}</td><td>{page.esc(measured)}</td><td>{holds[ok]}</td></tr>"
               for target, measured, ok in headroom_rows) + "</table>")

# %%
section("ntxent-example", "The NumPy NT-Xent example [E]")
ex = load("results/examples/ntxent_numpy.json")
table = pd.DataFrame({"negative": ex["negatives"], "cos": ex["cos_negatives"],
                      **{f"share, tau={t['tau']}": t["shares"] for t in ex["per_tau"]}})
html(f"<p>Anchor {page.esc(ex['anchor'])}; cosine to its positive {ex['cos_positive']:.3f}; loss at tau = "
     f"{page.esc(ex['loss_tau'])}: {ex['loss']:.4f}. Largest gradient error {ex['max_grad_error_fd']:.1e} against finite "
     f"differences, {ex['max_grad_error_autograd']:.1e} against torch autograd.</p>"
     + table.to_html(index=False, float_format=lambda v: f"{v:.3f}"))
claims_of("ntxent-example")

# %%
section("tiny-simclr", "The tiny SimCLR example [E]")
tiny = load("results/examples/tiny_simclr.json")
rows = [{"seed": r["seed"], "encoder": encoder, "probe": label, "accuracy": r[encoder][probe]}
        for r in tiny["runs"] for encoder in ("random", "simclr")
        for probe, label in (("linear", "linear probe"), ("knn", "5-NN"))]
fig, ax = plt.subplots(figsize=(7, 3.2))
figures.seed_plot(ax, pd.DataFrame(rows), x="probe", y="accuracy", hue="encoder")
ax.axhline(0.25, color="grey", lw=0.8, ls=":")
show("Tiny SimCLR: accuracy of the untrained and the trained encoder, per seed",
     f"Tiny SimCLR, {len(tiny['runs'])} seeds at {tiny['params']['threads']} thread(s): every seed a dot, the mean and "
     "its 95% t-interval a bar; dotted: chance.", fig)
html("<p>Seed {} at each thread count here (the article ran 4 threads on its CPU):</p><pre>{}</pre>".format(
    page.esc(tiny["repeat"]["seed"]), page.esc("\n".join(f"[{r['threads']} thread(s), {r['wall_s']:.1f} s]\n"
                                                        f"{render.printout(r)}" for r in tiny["by_threads"]))))
claims_of("tiny-simclr")

# %%
section("toy2d", "The 2-D circle experiment [B]")
toy = load("results/examples/toy2d.json")
seed0 = [r for r in toy["runs"] if r["seed"] == toy["params"]["seeds"][0]]
pull0 = [r for r in toy["pull_only"] if r["seed"] == toy["params"]["seeds"][0]]
panels = [("untrained", seed0[0]["angles_before"], seed0[0]["labels"])]
panels += [(f"tau = {r['tau']}", r["angles_after"], r["labels"]) for r in seed0]
panels += [("no negatives", pull0[0]["angles_after"], pull0[0]["labels"])] if pull0 else []
fig, axes = plt.subplots(1, len(panels), figsize=(2.2 * len(panels), 2.4))
for ax, (title, angles, labels) in zip(np.atleast_1d(axes), panels):
    a = np.asarray(angles)
    radius = 1 + 0.04 * np.asarray(labels)      # classes on slightly different radii, to see overlaps
    ax.scatter(np.cos(a) * radius, np.sin(a) * radius, c=labels, cmap="tab10", s=3, vmin=0, vmax=9)
    ax.set_aspect("equal"), ax.set_xlim(-1.3, 1.3), ax.set_ylim(-1.3, 1.3), ax.axis("off")
    ax.set_title(title, fontsize=9)
show("Held-out embeddings of the 2-D experiment on the unit circle, before and after training",
     f"Seed {toy['params']['seeds'][0]}'s held-out embeddings, untrained, after training at each temperature and "
     f"without negatives; colour: latent class. {len(toy['params']['seeds'])} seeds per temperature are judged.", fig)
claims_of("toy2d")

# %%
section("analytic", "Analytic statements, checked numerically")
an = load("results/examples/analytic.json")
mi = pd.DataFrame([{k: an[name][k] for k in ("rho", "dim", "K", "true_mi", "log_k", "estimate", "stderr")}
                   for name in ("mi_low", "mi_high")])
html("<p>The InfoNCE bound on correlated Gaussians with the optimal critic stays below the true mutual information "
     "and never above log K:</p>" + mi.to_html(index=False, float_format=lambda v: f"{v:.4f}"))
claims_of("analytic")

# %%
METRICS = ("linear", "knn", "alignment", "uniformity", "tolerance_centred", "rotation_mlp")


def pretrain_runs():
    """Every pretraining run as a row: condition, seed, status, settings and its metrics at the
    study's budget; and every rung of every run as a row of a second table (step 0: the control)."""
    rows, rungs = [], []
    for path in sorted(Path("results/pretrain").glob("*/*/seed_*.json")):
        r = load(path)
        evaluated = Path("results/evaluate", *path.parts[2:])
        evaluation = load(evaluated) if evaluated.exists() else {}
        e = evaluation.get("eval")
        row = {"condition": r["condition"], "seed": r["seed"], "status": r["status"], "reason": r["reason"],
               "study": path.parts[2], "cpu": r.get("cpu"), "wall_s": r.get("wall_s"), "peak": r.get("peak_rss_mb"),
               "control_h_linear": (evaluation.get("control") or {}).get("h", {}).get("linear"),
               "loss": (r.get("rung_loss") or {}).get(str(r["config"]["steps"])), "steps_done": r["steps_done"],
               **{k: r["config"][k] for k in ("dataset", "method", "lr", "momentum")}}
        if e:
            for feature in ("h", "z"):
                row.update({f"{feature}_{metric}": e[feature].get(metric) for metric in METRICS})
            row["contrastive_top1"] = e["contrastive_top1"]
        rows.append(row)
        for step, metrics in (evaluation.get("at") or {}).items():
            rungs.append({"condition": r["condition"], "seed": r["seed"], "step": int(step),
                          "h_linear": metrics["h"]["linear"], "momentum": r["config"]["momentum"]})
    return pd.DataFrame(rows), pd.DataFrame(rungs)


runs, rung_runs = pretrain_runs()
ok = runs[runs.status == "ok"]


def label(name):
    """A condition's label from params.yaml; an unknown name is an error, never a silent gap."""
    if name not in conditions:
        raise KeyError(f"analysis/report.py names condition {name!r}, which params.yaml does not define")
    return conditions[name]["label"]


def budget(names):
    """The training length the plotted runs are read at, in words."""
    steps = sorted({conditions[n]["steps"] for n in names if n in conditions})
    return " and ".join(f"{s:,}" for s in steps) + " steps"


def study_plot(names, y="h_linear", title="", ylabel="linear probe on h", ax=None):
    """Every seed a dot, the mean and 95% interval a bar, one column per condition."""
    data = ok[ok.condition.isin(names)].copy()
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(names)), 3.2))
    if data.empty:
        ax.axis("off")
        return ax
    data["arm"] = data.condition.map(label)
    order = [label(c) for c in names if c in set(data.condition)]
    figures.seed_plot(ax, data, x="arm", y=y, order=order)
    if y == "h_linear":
        ax.axhline(data.control_h_linear.mean(), color="#D55E00", lw=1, ls="--", label="untrained control")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel(""), ax.set_ylabel(ylabel, fontsize=9), ax.set_title(title, fontsize=9, pad=8)
    ax.tick_params(axis="x", labelrotation=30 if len(order) > 4 else 0, labelsize=8)
    plt.setp(ax.get_xticklabels(), ha="right" if len(order) > 4 else "center", rotation_mode="anchor")
    return ax


def study_panels(plots, alt, caption, width=4.4):
    """Study plots side by side; each item of `plots` holds one study_plot's arguments."""
    fig, axes = plt.subplots(1, len(plots), figsize=(width * len(plots), 3.5))
    for ax, plot in zip(np.atleast_1d(axes), plots):
        study_plot(ax=ax, **plot)
    fig.tight_layout()
    show(alt, caption, fig)


def failed(names):
    bad = runs[runs.condition.isin(names) & (runs.status != "ok")]
    if len(bad):
        html("<p><b>Failed runs</b> (shown, never averaged): " + page.esc("; ".join(
            f"{r.condition} seed {r.seed}: {r.status} after {r.steps_done} steps ({r.reason})"
            for r in bad.itertuples())) + "</p>")


SEEDS = "every seed a dot, the mean and its 95% t-interval a bar; dashed: the untrained control"
taus = ["simclr_tau005", "simclr_tau01", "simclr", "simclr_tau05", "simclr_tau1"]
losses = ["simclr", "simclr_logistic", "simclr_logistic_tau05", "simclr_logistic_tau1", "simclr_triplet_m02",
          "simclr_triplet", "simclr_triplet_m1", "simclr_triplet_hardest", "align_uniform"]
nonorm = ["simclr_tau01", "simclr_nonorm_tau10", "simclr_nonorm_tau100"]
section("simclr-temperature", "SimCLR: temperature, normalisation, losses [E, SimCLR Tables 2 and 5]")
study_panels([dict(names=taus, title="linear probe on h by tau"),
              dict(names=taus, y="z_uniformity", title="uniformity of z (lower: more uniform)", ylabel="uniformity of z"),
              dict(names=taus, y="z_tolerance_centred", title="centred tolerance of z", ylabel="tolerance of z")],
             "SimCLR by temperature: linear probe, uniformity and centred tolerance per seed",
             f"By temperature, at {budget(taus)} (the study's budget; the claims are judged at the rung in their row): "
             f"linear probe on h, uniformity of z, centred tolerance of z; {SEEDS}.")
study_panels([dict(names=losses, title="NT-Xent against the alternative losses"),
              dict(names=nonorm, y="contrastive_top1", title="contrastive top-1, with and without l2 normalisation",
                   ylabel="contrastive top-1")],
             "SimCLR losses and normalisation: linear probe and contrastive top-1 per seed",
             f"Left: NT-Xent, NT-Logistic and the margin triplet at three settings each, the hardest-negative triplet and "
             f"alignment + uniformity; right: how often the pretext task is solved with and without l2 normalisation; "
             f"at {budget(losses + nonorm)}; {SEEDS}.", width=6)
failed(taus + losses + nonorm)
plane = ok[ok.dataset == default["dataset"]].dropna(subset=["z_alignment"])
if len(plane):
    fig, ax = plt.subplots(figsize=(6.2, 3.8))
    points = ax.scatter(plane.z_uniformity, plane.z_alignment, c=plane.h_linear, cmap="viridis", s=12)
    fig.colorbar(points, ax=ax, label="linear probe on h")
    ax.set_xlabel("uniformity of z (lower: more uniform)"), ax.set_ylabel("alignment of z (lower: closer views)")
    show("Alignment against uniformity of z for every finished run, coloured by linear-probe accuracy",
         f"The alignment-uniformity plane (Wang & Isola): {len(plane)} finished runs on {default['dataset']}, every "
         "method and setting at its budget; colour: linear probe on h.", fig)
claims_of("simclr-temperature")

# %%
batch = ["simclr_b32", "simclr_b32_sqrtlr", "simclr_b128", "siglip_b32_s400", "simclr_neg1", "simclr_neg16", "simclr"]
section("simclr-batch", "Batch size, negatives and the sigmoid loss [E, N]")
study_plot(batch, title="linear probe on h by batch and negatives")
show("Batch size and negatives: linear probe per seed",
     f"Each arm at its budget: batch 32 (learning rate 1e-3, and 5e-4 by the square-root rule) and batch 128 at the "
     f"first rung of their ladders (the claims pair them at equal encoder passes further up), the sigmoid loss at "
     f"batch 32, and batch 128 with 1, 16 and all 254 negatives per anchor; {SEEDS}.")
failed(batch)
claims_of("simclr-batch")

# %%
heads = ["simclr_head_none", "simclr_head_linear", "simclr"]
section("projection-head", "Projection head: h against z [E, SimCLR]")
data = ok[ok.condition.isin(heads)].melt(id_vars=["condition", "seed"], value_vars=["h_linear", "z_linear"],
                                          var_name="feature", value_name="accuracy")
if len(data):
    data["head"] = data.condition.map(label)
    data["feature"] = data.feature.map({"h_linear": "h", "z_linear": "z = g(h)"})
    fig, ax = plt.subplots(figsize=(6, 3.2))
    figures.seed_plot(ax, data, x="head", y="accuracy", hue="feature", order=[label(h) for h in heads])
    ax.set_xlabel(""), ax.set_ylabel("linear probe")
    show("Projection head: linear probe on h and on z per seed",
         f"Linear probe on h and on z = g(h) with no head, a linear and an MLP head, at {budget(heads)}; every seed a "
         "dot, mean and 95% t-interval a bar.", fig)
claims_of("projection-head")

# %%
section("rotation", "Augmentation: rotation and colour [E, SimCLR Table 3]")
fig, axes = plt.subplots(1, 2, figsize=(10, 3.3))
data = ok[ok.condition.isin(["simclr_rotate_wide_z", "simclr"])].melt(
    id_vars=["condition", "seed"], value_vars=["h_rotation_mlp", "z_rotation_mlp"], var_name="feature",
    value_name="accuracy")
if len(data):
    data["pretraining"] = data.condition.map(label)
    data["feature"] = data.feature.map({"h_rotation_mlp": "h", "z_rotation_mlp": "z = g(h)"})
    figures.seed_plot(axes[0], data, x="pretraining", y="accuracy", hue="feature")
    axes[0].axhline(0.25, color="grey", lw=0.8, ls=":")
    axes[0].set_xlabel(""), axes[0].set_ylabel("4-way rotation probe")
    axes[0].set_title("rotation probe (dotted: chance)", fontsize=9)
study_plot(["simclr", "simclr_no_colour"], title="with and without colour jitter", ax=axes[1])
fig.tight_layout()
show("Rotation probe on h and z, and the linear probe with and without colour augmentation",
     f"Left: a four-way rotation probe (an MLP) on frozen h and z of the rotation arm (z as wide as h) and of the "
     f"default arm; right: linear probe on h with and without colour jitter; at {budget(['simclr'])}; {SEEDS}.", fig)
claims_of("rotation")

# %%
section("moco", "MoCo: momentum, memory bank, MoCo v2, shuffle BN [E, MoCo]")
momenta = ["moco_m0", "moco_m05", "moco_m09", "moco_m099", "moco_m0999"]
moco = rung_runs[rung_runs.condition.isin(momenta)] if len(rung_runs) else rung_runs
mocos = ["moco_m099", "memory_bank", "moco_bn4", "moco_ranks2_bn2", "moco_ranks2_bn2_shuffle", "mocov2",
         "mocov2_tau007", "mocov2_tau05", "simclr"]
fig, axes = plt.subplots(1, 2, figsize=(12, 3.6), gridspec_kw={"width_ratios": [1, 1.4]})
for i, (m, group) in enumerate(moco[moco.step > 0].groupby("momentum") if len(moco) else []):
    means = group.groupby("step").h_linear.agg(["mean", lambda v: tuple(t_interval(v))])
    lo, hi = zip(*means.iloc[:, 1])
    axes[0].plot(means.index, means["mean"], "o-", color=f"C{i}", label=f"m = {m:g}")
    axes[0].fill_between(means.index, lo, hi, color=f"C{i}", alpha=0.15)
if len(moco):
    axes[0].axhline(moco[moco.step == 0].h_linear.mean(), color="#D55E00", ls="--", lw=1, label="untrained control")
if len(moco):
    figures.step_axis(axes[0], sorted(moco[moco.step > 0].step.unique()))
axes[0].set_xlabel("training steps (log scale)"), axes[0].set_ylabel("linear probe on h")
axes[0].legend(fontsize=7), axes[0].set_title("momentum along the ladder", fontsize=9)
study_plot(mocos, title=f"variants at {budget(mocos)}", ax=axes[1])
fig.tight_layout()
show("MoCo: linear probe against training steps for each momentum, and the variants per seed",
     "Left: MoCo v1 (batch 64, shuffled per-device BN), linear probe on h at each rung, mean and 95% t-interval over "
     f"seeds, per momentum m; right: the variants beside SimCLR, {SEEDS}.", fig)
failed(momenta + mocos)
claims_of("moco")

# %%
section("supcon", "Supervised contrastive, cross-entropy, instance discrimination [E]")
sup = ["memory_bank", "simclr", "supcon_in", "supcon_out", "supervised"]
fig, axes = plt.subplots(1, 2, figsize=(12, 3.4))
study_plot(sup, title=f"linear probe on h, {budget(sup)}", ax=axes[0])
sweep = ok[ok.condition.str.match(r"(supcon_out|supervised)(_lr\d+)?$")].copy()
if len(sweep):
    sweep["objective"] = sweep.method.map({"supcon": "SupCon L_out", "supervised": "cross-entropy"})
    sweep["learning rate"] = sweep.lr.map(lambda v: f"{v:g}")
    order = [f"{v:g}" for v in sorted(sweep.lr.unique())]
    figures.seed_plot(axes[1], sweep, x="learning rate", y="h_linear", hue="objective", order=order)
    axes[1].set_title("learning-rate sweep", fontsize=9), axes[1].set_xlabel("Adam learning rate")
    axes[1].set_ylabel("linear probe on h")
fig.tight_layout()
show("SupCon and cross-entropy: linear probe per seed, and the learning-rate sweep",
     f"Supervised contrastive, cross-entropy and instance discrimination (left), the learning-rate sweep (right); {SEEDS}.",
     fig)
claims_of("supcon")

# %%
ladder_claims = [c for c in claims if c.get("ladder")]
section("ladder", "The scale ladder",
        "A ladder arm trains on past the study's budget at a constant learning rate, with a checkpoint at every rung; "
        "a ladder claim's verdict is its top rung's, and its trend the slope of the effect against log10(steps) "
        "(legend). Each claim's details list its verdict at every rung.")
show("Scale ladder: each ladder claim's effect and 95% interval against training steps",
     f"The {len(ladder_claims)} ladder claims: the primary effect (claim's unit) and its 95% interval at each rung "
     "(log axis); grey: inside the margin; dotted: the published effect where known; colour and marker: the verdict at "
     "the top rung.", figures.ladder_grid(claims))

# %%
dig = ["digits_tau005", "digits_tau01", "digits_tau02", "digits_tau05", "digits_tau1", "digits_head_none",
       "digits_head_linear"]
section("digits", "On real handwritten digits [E, SimCLR]")
study_plot(dig, title="digits: linear probe on h (MLP head unless stated)")
show("Digits: linear probe per condition", f"Handwritten digits: linear probe on h by temperature and head, at "
     f"{budget(dig)}; {SEEDS}.")
failed(dig)
claims_of("digits")

# %%
section("untested", "Claims this study does not test")
claims_of("untested")

# %%
section("setup", "Setup and deviations from the papers",
        "Verdicts are computed by code from the rules in analysis/claims.yaml; a rule changed after results were seen "
        "is an amendment, shown with the verdict before it. Intervals are 95% Student-t intervals over seeds; paired "
        "contrasts use the per-seed differences. Every arm is compared with its untrained control (the same encoder "
        "at step 0); a contrast on an arm that did not train is not judged. Every number on this page is read from a "
        "file the pipeline wrote.")
html(f"<p>{len(conditions)} conditions x {len(resolved_conditions['seeds'])} seeds, {setup['threads']} CPU thread per "
     "run. Where the study differs from the papers in a way that could decide an outcome (analysis/deviations.yaml), "
     "our values read from the resolved configuration:</p>")
deviations = rd.resolve_deviations(rd.load_deviations(), {c["id"] for c in claims},
                                   derived=rd.derived_facts())
html(rd.deviations_html(deviations))
reference = pd.DataFrame(yaml.safe_load(Path("analysis/cifar10_reference.yaml").read_text()))
cifar = ok[ok.dataset == "cifar10"]
html(f"<p>CIFAR-10 (the cifar10 profile): {len(reference)} published ResNet-18 reference figures wait in "
     f"analysis/cifar10_reference.yaml; {len(cifar)} runs of ours so far.</p>")

# %%
section("provenance", "Provenance")
commit, dirty = render.git_commit(), render.git_dirty()
prov = {"git commit at render": commit + (" (uncommitted changes)" if dirty else ""),
        "rendered": datetime.date.today().isoformat(), "resolved configuration sha256": setup["config_sha256"],
        "profile": setup["profile"], "torch threads per run": setup["threads"], "parallel workers": setup["workers"],
        "CPU of this render": cpu_model(), **render.versions(),
        "pretraining runs, peak memory per run (MB, max)": f"{runs.peak.max():.0f}" if len(runs) else "–",
        "pretraining, run time summed over runs (minutes)": f"{runs.wall_s.sum() / 60:.1f}" if len(runs) else "–"}
cpus = runs.groupby("study").cpu.agg(lambda v: ", ".join(sorted(set(map(str, v))))) if len(runs) else {}
html(pd.Series(prov, name="value").to_frame().to_html()
     + "<p><b>CPU that trained each study</b>: " + page.esc("; ".join(f"{s}: {cpu}" for s, cpu in dict(cpus).items()))
     + "</p>")
if Path("reports/stage_times.json").exists():
    stage_times = load("reports/stage_times.json")
    minutes = sum(r["seconds"] for r in stage_times.values()) / 60
    html(f"<details><summary>Stages of the last forced runs, one by one: {minutes:.1f} minutes in all, the CPU each "
         "ran on and its precision</summary><p>fp32: no reduced-precision autocast (the NumPy examples and analytic "
         "checks compute in float64); bf16: training under bfloat16 autocast.</p>" + page.stage_table(stage_times)
         + "</details>")
det = load("results/determinism.json")
dp = det["params"]
differ = len(det["repeat_differences"])
repeat = f"not identical ({differ} values differ)" if differ else "bit-identical"
moved = {threads: len(diffs) for threads, diffs in det["thread_differences"].items()}
html(f"<p><b>Bit-reproducibility</b> (the determinism stage): {page.esc(dp['condition'])}, seed {dp['seed']}, "
     f"{dp['steps']} steps, run twice at {dp['thread_counts'][0]} thread(s): {repeat}; at other thread counts "
     + page.esc(", ".join(f"{t} threads: {n} values differ" for t, n in moved.items()))
     + ". Trained figures move with the thread count (float summation order); the generated data and the NumPy "
     "examples do not.</p>")

# %%
section("references", "References")
html(page.bibliography())
