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

from replication.io import cpu_model
from replication.judge import registration, sequential, verdicts
from replication.judge.kinds import chance_loss
from replication.judge.results import study_of
from replication.judge.registry import load_registry
from replication.judge.stats import t_interval
from replication.report import claims_view as rc, deviations as rd, figures, headroom, levels, notebook as render, page
from replication.run.datasets import GENERATED, load_dataset

sns.set_theme(style="whitegrid", context="notebook")
claims = rc.load_claims("reports/claims.json")
registry = load_registry("analysis/claims.yaml")                        # the sections, their order, the rules
LEVEL = verdicts.level(registry.rules)                                      # every interval drawn
LEVEL_LABEL = verdicts.level_label(registry.rules)                          # and as every caption names it
EFFECT_LEVEL = sequential.level_text(registry.rules)           # a paired effect's: each sequential look's
registered = {c["id"]: c for c in registry.claims}
setup = json.loads(Path("resolved/report.json").read_text())               # profile, threads, workers
resolved_conditions = json.loads(Path("resolved/conditions.json").read_text())
conditions = resolved_conditions["conditions"]                              # name -> study, label, steps, rungs
reference_file, reference_arm = rd.REFERENCE_ARM
default = json.loads(Path(f"resolved/{reference_file}.json").read_text())["conditions"][reference_arm]
shared = page.shared_amendments(claims)
by_section = {}
for c in claims:
    by_section.setdefault(c["section"], []).append(c)
figure_count = iter(range(1, 1000))


def load(path):
    return json.loads(Path(path).read_text())


def html(text):
    display(HTML(text))


def figure(alt, caption, fig=None):
    """A figure's HTML, inline as SVG, with alt text and a caption."""
    return figures.figure_html(fig or plt.gcf(), alt, caption, key=f"f{next(figure_count)}")


def show(alt, caption, fig=None):
    html(figure(alt, caption, fig))


def folded(summary, body):
    """`body` folded under `summary` (the page stays short; one click unfolds it)."""
    html(f"<details class='figures'><summary>{page.esc(summary)}</summary>{body}</details>")


def section(name, title, intro=""):
    html(f"<h2 id='sec-{page.esc(name)}'>{page.esc(title)}</h2>" + (f"<p>{page.esc(intro)}</p>" if intro else ""))


def claims_of(name):
    """The claims of a section, each folded in <details>."""
    if name in by_section:
        html(f"<p class='claims-head'>The {len(by_section[name])} claims of this section (click to unfold):</p>"
             + page.claim_list(by_section[name], shared))


manifests = {name: load(f"data/{name}.json") for name in GENERATED if Path(f"data/{name}.json").exists()}
html(page.toc([("lore", "The studies"), ("levels", "What each arm reached"), ("legend", "Legend"),
               ("forest", "All effects"), ("claims", "All claims"), ("amendments", "Amendments"),
               ("registration", "Registration"), ("data", "The data")]
              + [(s["id"], s["short"]) for s in registry.sections]
              + [("loss", "Training loss"), ("ladder", "Scale ladder"), ("setup", "Setup and deviations"),
                 ("provenance", "Provenance"), ("references", "References")]))
primary = levels.primary_probe()
html(page.first_screen(claims, "Contrastive learning lore, replicated in miniature",
                       rc.replication_summary(claims, "in miniature on a CPU (Scale, below)", rc.compute()), registry.rules,
                       scale=rd.scale_line(rd.load_deviations(), f"{rd.miniature()}; the primary probe on h: {primary}" if primary else rd.miniature()),
                       levels=levels.method_levels(levels.load_methods(), LEVEL)))

# %%
section("levels", "What each arm reached")
reached = levels.levels()
if len(reached):
    reached.insert(2, "arm", reached.condition.map(lambda name: conditions.get(name, {}).get("label", name)))
    reached["steps"] = reached.step.map(lambda step: "0 (untrained)" if step == 0 else f"{step:,}")
    papers = levels.published_figures(claims)
    last = ~reached.duplicated("condition", keep="last")
    reached["published (claim: as printed)"] = [papers.get(c, "") if end else "" for c, end in
                                                zip(reached.condition, last)]
    shown = reached.drop(columns=["step"]).set_index(["study", "condition", "arm", "steps"])
    html(f"<details class='levels'><summary>Every arm's probes on h at every rung, in % (mean over seeds; "
         f"{len(reached.condition.unique())} arms, {len(reached)} rows), with its untrained control and the "
         "published figures of the claims that read it</summary>"
         + shown.to_html(float_format=lambda v: f"{v:.1f}", na_rep="–") + "</details>")
html(page.legend(registry.rules))

# %%
section("forest", "All effects, in the claims' own units")
show(f"Forest plot: every claim's effect and interval ({EFFECT_LEVEL}) in its own unit, points of accuracy in one "
     "panel and the other units in another, grouped by verdict, with the published effect where known",
     "Each row a claim (click its label for it): its deciding contrast's effect in the claimed direction (marker) "
     f"and interval (line, {EFFECT_LEVEL}); the grey band: its margin, inside which an effect is not meaningful. Rows "
     "grouped by verdict, largest effect first; grey rows are not judged; black bars: the published effect. Read at "
     "each claim's rung (the index gives it).", figures.forest_plot(claims))
both = [c for c in claims if rc.published_effect(c) is not None and rc.our_effect(c)]
show("Published effect against our effect, one point per claim, in the claim's unit",
     f"The {len(both)} claims with a published effect in a unit we also measure: published (x) against ours (y) with "
     f"our interval ({EFFECT_LEVEL}). On the dashed diagonal the miniature matches the paper in size; in the shaded "
     "quadrants it agrees in sign.", figures.published_vs_ours(claims))

# %%
section("claims", "All claims: a one-line index",
        "Published and ours in the same unit; 'at' is the training length the figure is read at; the claim's "
        "details (statement, analysis, note, amendments) unfold in its section.")
literature = [c for c in claims if rc.origin(c) == "literature"]
documents = [c for c in claims if rc.origin(c) == "document"]
additions = [c for c in claims if rc.origin(c) == "addition"]
html(page.folded_index("Literature claims", literature, registry.rules)
     + page.folded_index("Claims this study added", additions, registry.rules)
     + page.folded_index("The documents' own claims, printed examples and analytic facts", documents, registry.rules))

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
                               render.git_last_commit(registration.record_path()), claims,
                               registration.load_code_amendments()))

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
    shown = figure(f"Sample training images of the {name} dataset, {grouping}",
                   f"{name}: {dataset['x_train'].shape[0]:,} training images of {len(dataset['classes'])} classes, "
                   f"{dataset['x_train'].shape[2]}x{dataset['x_train'].shape[3]} pixels; {grouping}.", samples)
    if views is not None:
        options = ", ".join(f"{knob} {value}" for knob, value in figures.augment_options(default).items())
        shown += figure(f"Augmented views of {name} images, one image per row",
                        f"The default arm's augmentation ({options}): each row's image, then six independent draws "
                        "of it.", views)
    folded(f"{name}: sample images" + (" and augmented views" if views is not None else ""), shown)
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
def ntxent_example():
    ex = load("results/examples/ntxent_numpy.json")
    table = pd.DataFrame({"negative": ex["negatives"], "cos": ex["cos_negatives"],
                          **{f"share, tau={t['tau']}": t["shares"] for t in ex["per_tau"]}})
    html(f"<p>Anchor {page.esc(ex['anchor'])}; cosine to its positive {ex['cos_positive']:.3f}; loss at tau = "
         f"{page.esc(ex['loss_tau'])}: {ex['loss']:.4f}. Largest gradient error {ex['max_grad_error_fd']:.1e} against "
         f"finite differences, {ex['max_grad_error_autograd']:.1e} against torch autograd.</p>")
    folded(f"Each of the {len(table)} negatives: its cosine and its share of the push at each temperature",
           table.to_html(index=False, float_format=lambda v: f"{v:.3f}"))


def tiny_simclr():
    tiny = load("results/examples/tiny_simclr.json")
    rows = [{"seed": r["seed"], "encoder": encoder, "probe": label, "accuracy": r[encoder][probe]}
            for r in tiny["runs"] for encoder in ("random", "simclr")
            for probe, label in (("linear", "linear probe"), ("knn", "5-NN"))]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    figures.seed_plot(ax, pd.DataFrame(rows), x="probe", y="accuracy", level=LEVEL, hue="encoder")
    ax.axhline(0.25, color="grey", lw=0.8, ls=":")
    show("Tiny SimCLR: accuracy of the untrained and the trained encoder, per seed",
         f"Tiny SimCLR, {len(tiny['runs'])} seeds at {tiny['params']['threads']} thread(s): every seed a dot, the mean "
         f"and its {LEVEL_LABEL} t-interval a bar; dotted: chance.", fig)
    folded("Seed {} at each thread count here, printed as the article prints it (it ran 4 threads)".format(
        tiny["repeat"]["seed"]), "<pre>{}</pre>".format(page.esc("\n".join(
            f"[{r['threads']} thread(s), {r['wall_s']:.1f} s]\n{render.printout(r)}" for r in tiny["by_threads"]))))


def toy2d():
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
         f"without negatives; colour: latent class. {len(toy['params']['seeds'])} seeds per temperature are judged.",
         fig)


def analytic():
    an = load("results/examples/analytic.json")
    mi = pd.DataFrame([{k: an[name][k] for k in ("rho", "dim", "K", "true_mi", "log_k", "estimate", "stderr")}
                       for name in ("mi_low", "mi_high")])
    html("<p>The InfoNCE bound on correlated Gaussians with the optimal critic stays below the true mutual "
         "information and never above log K:</p>" + mi.to_html(index=False, float_format=lambda v: f"{v:.4f}"))


EXAMPLES = {"ntxent-example": ntxent_example, "tiny-simclr": tiny_simclr, "toy2d": toy2d, "analytic": analytic}
# the documents' own examples, shown as the documents print them; every other section's figures come
# from the conditions its claims read


def pretrain_runs():
    """Every pretraining run as a row: condition, seed, status, settings and its linear probe at the
    study's budget; and every rung of every run as a row of a second table (step 0: the control)."""
    rows, rungs, studies = [], [], study_of()
    for path in sorted(Path("results/pretrain").glob("*/*/seed_*.json")):
        r = load(path)
        evaluated = Path("results/evaluate", *path.parts[2:])
        evaluation = load(evaluated) if evaluated.exists() else {}
        e = evaluation.get("eval")
        rows.append({"condition": r["condition"], "seed": r["seed"], "status": r["status"], "reason": r["reason"],
                     "study": studies.get(r["condition"], path.parts[2]), "cpu": r.get("cpu"), "config": r["config"], "wall_s": r.get("wall_s"),
                     "peak": r.get("peak_rss_mb"), "steps_done": r["steps_done"], "dataset": r["config"]["dataset"],
                     "h_linear": e["h"]["linear"] if e else None,
                     "z_alignment": e["z"].get("alignment") if e else None,
                     "z_uniformity": e["z"].get("uniformity") if e else None})
        for step, metrics in (evaluation.get("at") or {}).items():
            rungs.append({"condition": r["condition"], "seed": r["seed"], "step": int(step),
                          "h_linear": metrics["h"]["linear"]})
    return pd.DataFrame(rows), pd.DataFrame(rungs)


runs, rung_runs = pretrain_runs()
ok = runs[runs.status == "ok"]


def label(name):
    """A condition's label from params.yaml; an unknown name is an error, never a silent gap."""
    if name not in conditions:
        raise KeyError(f"a claim reads condition {name!r}, which params.yaml does not define")
    return conditions[name]["label"]


def failed(names):
    bad = runs[runs.condition.isin(names) & (runs.status != "ok")]
    if len(bad):
        html("<p><b>Failed runs</b> (shown, never averaged): " + page.esc("; ".join(
            f"{r.condition} seed {r.seed}: {r.status} after {r.steps_done} steps ({r.reason})"
            for r in bad.itertuples())) + "</p>")


SEEDS = f"each seed a dot, the mean and its {LEVEL_LABEL} t-interval a bar"


def arm_figure(section_claims):
    """Every arm the section's claims read, per seed, as judged (at the verdict's rung): one panel
    per figure and rung, one column per condition."""
    rows = rc.section_arms(section_claims, registered)
    if not rows:
        return
    panels = sorted({(r["figure"], r["step"]) for r in rows}, key=lambda p: (p[1] is None, p[1] or 0, p[0]))
    marks = rc.published_marks(section_claims, registered)
    fig = figures.arm_panels(rows, panels, label, LEVEL, marks)
    names = list(dict.fromkeys(r["condition"] for r in rows))
    folded(f"The {len(names)} arms this section's claims read, per seed ({len(panels)} panels)", figure(
        f"The arms this section's claims read, per seed, at the rung each verdict reads ({len(panels)} panels)",
        f"The {len(names)} conditions its claims read, at the verdicts' rungs, accuracies in %; {SEEDS}"
        + ("; dashed black: where the published effect puts the first arm of a contrast, given the second" if marks
           else "") + ".", fig))


def ladder_figure(names):
    """The linear probe on h along the ladder, mean and interval per condition with more than one
    trained rung."""
    data = rung_runs[rung_runs.condition.isin(names)] if len(rung_runs) else rung_runs
    laddered = [n for n in names if len(data) and data[(data.condition == n) & (data.step > 0)].step.nunique() > 1]
    if not laddered:
        return
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for i, name in enumerate(laddered):
        group = data[(data.condition == name) & (data.step > 0)]
        means = group.groupby("step").h_linear.agg(["mean", lambda v: tuple(t_interval(v, LEVEL))])
        lo, hi = zip(*means.iloc[:, 1])
        ax.plot(means.index, 100 * means["mean"], "o-", color=f"C{i % 10}", label=label(name))
        ax.fill_between(means.index, 100 * np.array(lo), 100 * np.array(hi), color=f"C{i % 10}", alpha=0.15)
    figures.step_axis(ax, sorted(data[data.step > 0].step.unique()))
    ax.set_xlabel("training steps (log scale)"), ax.set_ylabel("linear probe on h (%)")
    ax.legend(fontsize=figures.TEXT_PT, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    folded(f"The linear probe on h along the ladder ({len(laddered)} conditions)", figure(
        "Linear probe on h against training steps for each condition of this section with a ladder",
        f"Linear probe on h at each rung, in %: mean and {LEVEL_LABEL} t-interval over seeds.", fig))


def alignment_uniformity_plane():
    plane = ok[ok.dataset == default["dataset"]].dropna(subset=["z_alignment"])
    if not len(plane):
        return
    fig, ax = plt.subplots(figsize=(6.2, 3.8))
    points = ax.scatter(plane.z_uniformity, plane.z_alignment, c=100 * plane.h_linear, cmap="viridis", s=12)
    fig.colorbar(points, ax=ax, label="linear probe on h (%)")
    ax.set_xlabel("uniformity of z (lower: more uniform)"), ax.set_ylabel("alignment of z (lower: closer views)")
    show("Alignment against uniformity of z for every finished run, coloured by linear-probe accuracy",
         f"The alignment-uniformity plane (Wang & Isola): {len(plane)} finished runs on {default['dataset']}, every "
         "method and setting at its budget; colour: linear probe on h.", fig)


# %%
for s in registry.sections:
    mine = by_section.get(s["id"], [])
    section(s["id"], s["title"])
    EXAMPLES.get(s["id"], lambda: None)()
    names = rc.section_conditions(mine, registered)
    arm_figure(mine)
    ladder_figure(names)
    if s["origin"] == "literature" and any(c.get("kind") == "correlation" for c in mine):
        alignment_uniformity_plane()
    failed(names)
    claims_of(s["id"])
strays = [c for c in claims if c["section"] not in {s["id"] for s in registry.sections}]
if strays:      # claims.json judged under another registry: shown, never dropped
    html(f"<h3>Claims of sections analysis/claims.yaml does not define ({len(strays)})</h3>"
         "<p>reports/claims.json holds claims whose section the registry no longer names; rerun the analysis.</p>"
         + page.claim_list(strays, shared))

# %%
section("loss", "Training loss", "Every study's training loss, as `dvc plots show` draws it from reports/plots/loss/.")
curves = {path.stem: pd.read_csv(path) for path in sorted(Path("reports/plots/loss").glob("*.csv"))}
chance = {r.condition: chance_loss(r.config) for r in runs.drop_duplicates("condition").itertuples()}
if curves:
    folded(f"The loss curves of the {len(curves)} studies", figure(
        "Training loss against steps, one panel per study, each condition a line",
        "Each condition's training loss (mean over seeds; band: lowest to highest seed) against steps; the "
        "log-losses in nats. Dotted grey: the chance loss (an encoder that tells nothing apart) where the loss has "
        "one; a log axis where a curve starts more than three times above the panel's last values.",
        figures.loss_panels(curves, chance)))

# %%
ladder_claims = [c for c in claims if c.get("ladder")]
section("ladder", "The scale ladder",
        "A ladder arm trains on past the study's budget at a constant learning rate, with a checkpoint at every rung; "
        "a ladder claim's verdict is its top rung's, and its trend the slope of the effect against log10(steps) "
        "(legend). Each claim's details list its verdict at every rung.")
folded(f"The {len(ladder_claims)} ladder claims' effects against steps", figure(
    f"Scale ladder: each ladder claim's effect and interval ({EFFECT_LEVEL}) against training steps",
    f"The {len(ladder_claims)} ladder claims: the primary effect (claim's unit) and its interval ({EFFECT_LEVEL}) at "
    "each rung (log axis); grey: inside the margin; dotted: the published effect where known; colour and marker: the "
    "verdict at the top rung.", figures.ladder_grid(claims)))

# %%
section("setup", "Setup and deviations from the papers",
        "Verdicts are computed by code from the rules in analysis/claims.yaml; a rule changed after results were seen "
        f"is an amendment, shown with the verdict before it. Intervals are {LEVEL_LABEL} Student-t intervals over "
        f"seeds; paired contrasts use the per-seed differences, at the level that decided ({EFFECT_LEVEL}). Every arm is compared with its untrained control (the "
        "same encoder at step 0); a contrast on an arm that did not train is not judged. Every number on this page is "
        "read from a file the pipeline wrote.")
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
folded(f"The render: commit {commit[:12]}, configuration, library versions, memory and run time",
       pd.Series(prov, name="value").to_frame().to_html())
html("<p><b>CPU that trained each study</b>: " + page.esc("; ".join(f"{s}: {cpu}" for s, cpu in dict(cpus).items()))
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
