"""The report's figures, each an inline SVG with alt text: the forest plot, published against ours,
the scale-ladder grid, sample images and augmented views, and the seed plot the sections use.

Colours are the Okabe-Ito palette (safe for colour-blind readers), and every verdict also has its
own marker shape, so colour is never the only cue.
"""
import html
import io
import re
import textwrap
from contextlib import contextmanager
from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from contrastive.train import augment_options as train_augment_options

from ..judge.probes import CONTRASTIVE_TOP1, NAMES, PROBES
from ..judge.verdicts import NO_EFFECT, NOT_TESTED, REPRODUCED, STYLE, rank as verdict_rank
from .claims_view import null_reading, number, our_effect, published_effect, scale_unit

def svg_markup(fig, alt, key):
    """The figure as inline SVG markup labelled with `alt`; its ids carry the prefix `key` so that
    several figures on one page never share an id. The figure is closed."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": key}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    text = text.replace(' target="_blank"', "")       # every link in a figure is to a claim on this page
    defined = set(re.findall(r'\bid="([^"]+)"', text))
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{key}-{m.group(1)}"', text)
    text = re.sub(r'(url\(#|href="#)([^")]+)',
                  lambda m: m.group(1) + (f"{key}-{m.group(2)}" if m.group(2) in defined else m.group(2)), text)
    label = html.escape(alt, quote=True)
    return re.sub(r"<svg\b", f'<svg role="img" aria-label="{label}"', text, count=1).replace(
        ">", f"><title>{label}</title>", 1)


def figure_html(fig, alt, caption, key):
    """A matplotlib figure as an inline SVG with alt text and a caption; the figure is closed."""
    return f"<figure>{svg_markup(fig, alt, key)}<figcaption>{html.escape(caption)}</figcaption></figure>"


# Every text of a figure, in points: 12 CSS px where a figure is drawn at its own width; figures are
# at most WIDTH_IN wide, so that the page's 1,080-px column never shrinks them (tests/test_render.py)
TEXT_PT = 9
WIDTH_IN = 10.5

UNITS = {"points": "effect in points of accuracy"}     # an axis title per unit; any other unit by name
OWN_UNIT = "effect in the claim's own unit (a loss, a similarity or a correlation: see the claim's metric)"


def forest_rows(claims):
    """One row per claim with an effect (its deciding contrast, as reports/plots/forest.csv has it):
    claim id, effect, interval and margin in the claim's unit, the published effect (same unit) where
    known, the unit and the verdict; grouped by unit, then by verdict, largest effect first."""
    rows = []
    for claim in claims:
        effect = our_effect(claim)
        if effect is None or effect["lo"] is None or effect["hi"] is None:
            continue
        rows.append({"claim": claim["id"], "verdict": claim["verdict"], "null": bool(null_reading(claim)),
                     "effect": effect["mean"], "lo": effect["lo"],
                     "hi": effect["hi"], "margin": effect["margin"] or 0, "unit": effect["unit"].strip(),
                     "published": published_effect(claim)})
    return sorted(rows, key=lambda r: (r["unit"] != "points", r["unit"], verdict_rank(r["verdict"]), -r["effect"]))


def forest_plot(claims):
    """Every claim's effect and interval in its own unit, one panel per unit (points of accuracy
    first), each row with its margin as a grey band and the published effect as a black bar, grouped
    by verdict; each row links to its claim (#claim-<id>)."""
    rows = forest_rows(claims)
    units = list(dict.fromkeys(r["unit"] for r in rows)) or [""]
    sizes = [sum(r["unit"] == u for r in rows) for u in units]
    fig, axes = plt.subplots(len(units), 1, figsize=(WIDTH_IN - 3, 0.15 * len(rows) + 1.2 * len(units) + 0.4), squeeze=False,
                             gridspec_kw={"height_ratios": [n + 3 for n in sizes]})
    for ax, unit in zip(axes[:, 0], units):
        mine = [r for r in rows if r["unit"] == unit]
        ax.axvline(0, color="grey", lw=0.8)
        for y, r in zip(range(len(mine) - 1, -1, -1), mine):
            colour, marker = STYLE[NO_EFFECT] if r["null"] else STYLE.get(r["verdict"], ("#999999", "x"))
            ax.barh(y, 2 * r["margin"], left=-r["margin"], height=0.8, color="#e6e6e6", zorder=0)
            line, = ax.plot([r["lo"], r["hi"]], [y, y], color=colour, lw=2)
            point, = ax.plot([r["effect"]], [y], marker, color=colour, ms=5,
                             mfc="white" if r["verdict"] not in STYLE or "not" in r["verdict"] else colour)
            for artist in (line, point):
                artist.set_url(f"#claim-{r['claim']}")
            if r["published"] is not None:
                ax.plot([r["published"]], [y], "|", color="black", ms=10, mew=2)
        ax.set_yticks(range(len(mine)), [r["claim"] for r in reversed(mine)], fontsize=TEXT_PT)
        for tick, r in zip(ax.get_yticklabels(), reversed(mine)):
            tick.set_url(f"#claim-{r['claim']}")
        for i in range(1, len(mine)):        # a rule between verdict groups
            if mine[i]["verdict"] != mine[i - 1]["verdict"]:
                ax.axhline(len(mine) - i - 0.5, color="#555555", lw=0.6, ls=":")
        ax.set_ylim(-0.7, len(mine) - 0.3)
        ax.set_xlabel(UNITS.get(unit, f"effect in {unit}" if unit else OWN_UNIT), fontsize=TEXT_PT)
        ax.grid(axis="x", alpha=0.3)
    handles = [plt.Line2D([], [], color=c, marker=m, lw=2, label=v) for v, (c, m) in STYLE.items()
               if v != NOT_TESTED and any(r["verdict"] == v and not r["null"] for r in rows)]
    if any(r["null"] for r in rows):       # a null that holds, drawn as no effect
        handles.append(plt.Line2D([], [], color=STYLE[NO_EFFECT][0], marker=STYLE[NO_EFFECT][1], lw=2,
                                  label=f"{REPRODUCED}: a null that holds"))
    handles += [plt.Line2D([], [], color="black", marker="|", ms=10, mew=2, lw=0, label="published effect"),
                plt.Rectangle((0, 0), 1, 1, color="#e6e6e6", label="inside the margin")]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=TEXT_PT, frameon=False)
    fig.tight_layout()
    return fig


def published_vs_ours(claims):
    """One point per claim with both a published and our effect, in the claim's unit: x published,
    y ours with its interval; the diagonal is agreement in size, the shaded quadrants agreement in
    sign. Points are numbered; the key beside the axes names each claim (and links to it)."""
    points = [(published_effect(c), c) for c in claims if published_effect(c) is not None
              and number((c.get("contrast") or {}).get("diff_mean")) is not None]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    if not points:
        ax.text(0.5, 0.5, "no claim has both a published and our effect", ha="center", transform=ax.transAxes)
        return fig
    points.sort(key=lambda p: p[0])
    scaled = lambda c, v: scale_unit(c)[0] * v
    ys = [scaled(c, c["contrast"]["diff_mean"]) for _, c in points]
    spans = [scaled(c, v) for _, c in points for v in c["contrast"]["diff_ci95"]]
    lo, hi = min(0, *spans, *(x for x, _ in points)), max(0, *spans, *(x for x, _ in points))
    pad = 0.06 * (hi - lo)
    lo, hi = lo - pad, hi + pad
    ax.fill_between([0, hi], 0, hi, color="#e8f4ee", zorder=0)
    ax.fill_between([lo, 0], lo, 0, color="#e8f4ee", zorder=0)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--")
    ax.axhline(0, color="grey", lw=0.6), ax.axvline(0, color="grey", lw=0.6)
    for i, ((x, c), y) in enumerate(zip(points, ys)):
        colour, marker = STYLE.get(c["verdict"], ("#999999", "x"))
        bottom, top = (scaled(c, v) for v in c["contrast"]["diff_ci95"])
        bar, = ax.plot([x, x], [bottom, top], color=colour, lw=1.5)
        dot, = ax.plot([x], [y], marker, color=colour, ms=7)
        for artist in (bar, dot):
            artist.set_url(f"#claim-{c['id']}")
        ax.annotate(str(i + 1), (x, y), textcoords="offset points", xytext=(4, 4 if i % 2 else -10), fontsize=TEXT_PT)
        fig.text(0.7, 0.92 - i * 0.85 / len(points), f"{i + 1}  {c['id']}", fontsize=TEXT_PT, color=colour,
                 url=f"#claim-{c['id']}")
    ax.set_xlim(lo, hi), ax.set_ylim(lo, hi), ax.set_aspect("equal")
    units = sorted({scale_unit(c)[1].strip() or "the claim's unit" for _, c in points})
    ax.set_xlabel(f"published effect ({', '.join(units)})"), ax.set_ylabel(f"our effect ({', '.join(units)})")
    fig.subplots_adjust(left=0.08, right=0.66)
    return fig


def ladder_grid(claims, columns=3):
    """One small panel per ladder claim: the primary effect (claim's unit) and its interval
    against training steps (log axis), the margin band and the published effect."""
    ladder = [c for c in claims if c.get("ladder")]
    rows = max(1, -(-len(ladder) // columns))
    fig, axes = plt.subplots(rows, columns, figsize=(WIDTH_IN, 2.6 * rows), squeeze=False)
    for ax, claim in zip(axes.flat, ladder):
        scale, unit = scale_unit(claim)
        steps, mean, lo, hi = [], [], [], []
        for rung in claim["ladder"]:
            c = (rung.get("contrasts") or [{}])[0]
            if number(c.get("diff_mean")) is None:
                continue
            steps.append(rung["step"]), mean.append(scale * c["diff_mean"])
            lo.append(scale * c["diff_ci95"][0]), hi.append(scale * c["diff_ci95"][1])
        colour, marker = STYLE.get(claim["verdict"], ("#999999", "x"))
        margin = scale * (number((claim.get("contrast") or {}).get("margin")) or 0)
        ax.axhspan(-margin, margin, color="#e6e6e6", zorder=0)
        ax.axhline(0, color="grey", lw=0.6)
        if steps:
            ax.plot(steps, mean, marker + "-", color=colour, ms=4)
            ax.fill_between(steps, lo, hi, color=colour, alpha=0.2)
            step_axis(ax, steps, fontsize=TEXT_PT)
        if published_effect(claim) is not None:
            ax.axhline(published_effect(claim), color="black", ls=":", lw=1)
        ax.tick_params(axis="y", labelsize=TEXT_PT)
        ax.set_title(f"{claim['id']}\n{claim['verdict']}; trend: {claim.get('trend') or '–'}", fontsize=TEXT_PT,
                     url=f"#claim-{claim['id']}")
        ax.set_ylabel(unit.strip() or "effect", fontsize=TEXT_PT)
    for ax in list(axes.flat)[len(ladder):]:
        ax.axis("off")
    fig.supxlabel("training steps (log scale)", fontsize=TEXT_PT)
    fig.tight_layout()
    return fig


def step_axis(ax, steps, fontsize=TEXT_PT):
    """A log-scaled steps axis labelled at the rungs only."""
    from matplotlib.ticker import NullLocator
    ax.set_xscale("log")
    ax.set_xticks(list(steps), [f"{int(s):,}" for s in steps], fontsize=fontsize)
    ax.xaxis.set_minor_locator(NullLocator())


def families_of(dataset):
    """Each class's family name (glyphs100's superclasses), or None for a dataset without families."""
    if "superclass" not in dataset:
        return None
    return [dataset["superclasses"][s] for s in dataset["superclass"]]


def sample_rows(labels, names, families=None, per_row=10, most_rows=12, examples=2):
    """Which images to show: [(row title, [(index, class name), ...]), ...]. With `families` (a family
    or superclass name per class) one row per family, one image per class of it, each class named
    without its family's name; otherwise `examples` rows of one image per class. At most `most_rows`
    rows of `per_row` images."""
    labels = np.asarray(labels)
    present = [k for k in range(len(names)) if (labels == k).sum() >= (1 if families else examples)]
    pick = lambda k, j=0: int(np.flatnonzero(labels == k)[j])
    if families:
        members = {}
        for k in present:
            members.setdefault(families[k], []).append(k)
        short = lambda k: names[k].removeprefix(families[k]).lstrip(" +:-") or names[k]
        return [(family, [(pick(k), short(k)) for k in ks[:per_row]]) for family, ks in list(members.items())[:most_rows]]
    return [(None, [(pick(k, j), names[k]) for k in present[:per_row]]) for j in range(min(examples, most_rows))]


def image_grid(rows):
    """rows: [(row title, [(image (3, H, W), title), ...])] as a grid of images, the row's title at its
    left; an image's title is printed only where it differs from the one above it."""
    width = max(len(row) for _, row in rows)
    fig, axes = plt.subplots(len(rows), width, figsize=(0.95 * width, 1.1 * len(rows) + 0.2), squeeze=False)
    above = [None] * width
    for line, (row_title, row) in zip(axes, rows):
        for j, (ax, (image, title)) in enumerate(zip(line, row)):
            ax.imshow(np.transpose(np.asarray(image), (1, 2, 0)).clip(0, 1), interpolation="nearest")
            if title != above[j]:
                ax.set_title(textwrap.fill(title, 14), fontsize=TEXT_PT)
            above[j] = title
        if row_title:
            line[0].set_ylabel(row_title, fontsize=TEXT_PT, rotation=0, ha="right", va="center")
    for ax in axes.flat:
        ax.set_xticks([]), ax.set_yticks([])
        if not ax.images:
            ax.axis("off")
    return fig


def sample_grid(images, rows):
    """The images of `sample_rows`, titled with their class, a row's family at its left."""
    return image_grid([(family, [(images[i], name) for i, name in row]) for family, row in rows])


def augment_options(run_config):
    """A resolved run configuration's augmentation options, as training draws its views
    (contrastive.train.augment_options)."""
    return train_augment_options(SimpleNamespace(**run_config))


def augmented_views(images, options, n_views, seed=0):
    """`n_views` augmented views of each image of `images` (n, 3, H, W): (n, n_views, 3, H, W), drawn
    by contrastive.augment.augment with `options` from a generator seeded with `seed`."""
    import torch

    from contrastive.augment import augment
    x = torch.as_tensor(np.asarray(images))
    views = augment(x.repeat_interleave(n_views, 0), torch.Generator().manual_seed(seed), **options)
    return views.reshape(len(x), n_views, *x.shape[1:]).numpy()


def views_grid(rows):
    """rows: [(title, image (3, H, W), views (k, 3, H, W))]: per row the image, then its views; the
    row's title at its left."""
    return image_grid([(title, [(image, "image")] + [(v, f"view {i + 1}") for i, v in enumerate(views)])
                       for title, image, views in rows])


def dataset_figures(dataset, run_config=None, n_views=6, seed=0):
    """The data section's figures of a dataset: sample images (a row per family and an image per
    class of it, or rows of one image per class) and, given a run configuration, each row's first
    image with `n_views` views under that run's augmentation (else None). Returns (samples, views)."""
    rows = sample_rows(dataset["y_train"].numpy(), dataset["classes"], families_of(dataset))
    samples = sample_grid(dataset["x_train"].numpy(), rows)
    if run_config is None:
        return samples, None
    originals = dataset["x_train"][[row[0][0] for _, row in rows]].numpy()
    views = augmented_views(originals, augment_options(run_config), n_views, seed)
    titles = [family or row[0][1] for family, row in rows]
    return samples, views_grid(list(zip(titles, originals, views)))


@contextmanager
def seeded_global_numpy(seed):
    """NumPy's global generator seeded with `seed` inside the block and restored after it, so that a
    library drawing from it draws the same numbers in every render."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def seed_plot(ax, df, x, y, level, hue=None, order=None):
    """Every seed a dot; the mean and its t-interval at `level` (the tables' interval) as a black bar."""
    import seaborn as sns

    from ..judge.stats import t_interval
    levels = df[hue].nunique() if hue else 1
    dodge = levels > 1              # seaborn divides by (levels - 1) when it dodges
    with seeded_global_numpy(0):    # seaborn draws the jitter from NumPy's global generator
        sns.stripplot(data=df, x=x, y=y, hue=hue, order=order, ax=ax, dodge=dodge, alpha=0.6, size=5, jitter=0.15)
    sns.pointplot(data=df, x=x, y=y, hue=hue, order=order, ax=ax, dodge=0.4 if dodge else False,
                  errorbar=lambda values: tuple(t_interval(values, level)), linestyle="none", markers="_", markersize=18,
                  palette=["black"] * levels if hue else None, color=None if hue else "black", legend=False)
    return ax


def figure_name(figure):
    """A record's figure in a reader's words: 'h: all-label linear probe' for 'h.linear_full'."""
    embedding, _, key = figure.partition(".")
    if not key:
        return {CONTRASTIVE_TOP1: "pretext task, top-1"}.get(embedding, embedding)
    name = NAMES.get(key) or (PROBES[key] if "{" not in PROBES.get(key, "{") else key)
    return f"{embedding}: {name.removeprefix('the ')}"


def arm_panels(rows, panels, label, level, marks=(), columns=3):
    """rows (claims_view.section_arms) as one seed plot per (figure, step) panel, a column per
    condition (labelled by `label`), the panels in the order given; accuracies in %. `marks`
    (claims_view.published_marks): where a published effect puts an arm, a dashed black bar."""
    import pandas as pd
    data = pd.DataFrame(rows)
    n_rows = -(-len(panels) // columns)
    width = min(columns, len(panels))
    fig, axes = plt.subplots(n_rows, width, figsize=(WIDTH_IN / columns * width, 3.4 * n_rows), squeeze=False)
    in_percent = []
    for ax, (figure, step) in zip(axes.flat, panels):
        part = data[(data.figure == figure) & (data.step.isna() if step is None else data.step == step)].copy()
        part["arm"] = part.condition.map(label)
        order = list(dict.fromkeys(part.arm))
        seed_plot(ax, part, x="arm", y="value", level=level, order=order)
        for mark in marks:
            if mark["figure"] == figure and mark["step"] == step and label(mark["condition"]) in order:
                x = order.index(label(mark["condition"]))
                ax.plot([x - 0.35, x + 0.35], [mark["value"]] * 2, color="black", ls="--", lw=1.5)
        percent = set(part.unit) == {"points"}
        if percent:
            in_percent.append(ax)
        ax.set_xlabel(""), ax.set_ylabel("accuracy (%)" if percent else figure_name(figure), fontsize=TEXT_PT)
        ax.set_title(f"{figure_name(figure)}, {'the budget' if step is None else f'{step:,} steps'}", fontsize=TEXT_PT)
        ax.tick_params(axis="x", labelrotation=30 if len(order) > 3 else 0, labelsize=TEXT_PT)
        plt.setp(ax.get_xticklabels(), ha="right" if len(order) > 3 else "center", rotation_mode="anchor")
    if in_percent:                  # accuracies on one scale, so that panels compare at a glance
        low = min(ax.get_ylim()[0] for ax in in_percent)
        high = max(ax.get_ylim()[1] for ax in in_percent)
        for ax in in_percent:
            ax.set_ylim(low, high)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if marks:
        fig.legend(handles=[plt.Line2D([], [], color="black", ls="--", label="published: the other arm's mean plus "
                                       "the published effect")], loc="lower center", bbox_to_anchor=(0.5, 1.0),
                   fontsize=TEXT_PT, frameon=False)
    fig.tight_layout()
    return fig


def loss_panels(curves, chance, columns=3):
    """One panel per study: each condition's training loss (mean over seeds, the band from the lowest
    to the highest seed) against steps; dotted grey: the chance loss of its conditions where the loss
    has one (judge.kinds.chance_loss); a log axis where a curve starts more than three times above the
    panel's last values. `curves`: {study: DataFrame of reports/plots/loss/<study>.csv}; `chance`:
    {condition: loss or None}."""
    n_rows = -(-len(curves) // columns)
    fig, axes = plt.subplots(n_rows, columns, figsize=(WIDTH_IN, 3.0 * n_rows), squeeze=False)
    for ax, (study, curve) in zip(axes.flat, curves.items()):
        for i, (name, line) in enumerate(curve.groupby("series", sort=False)):
            ax.plot(line.step, line.loss, color=f"C{i % 10}", lw=1.2, label=name)
            ax.fill_between(line.step, line.loss_min, line.loss_max, color=f"C{i % 10}", alpha=0.15, lw=0)
        for level in sorted({chance.get(name) for name in curve.series.unique()} - {None}):
            ax.axhline(level, color="grey", ls=":", lw=1.2)
        last = curve.groupby("series").loss.last()
        if curve.loss.max() > 3 * last.max() > 0:
            ax.set_yscale("log")
        ax.set_title(study, fontsize=TEXT_PT)
        ax.set_xlabel("steps", fontsize=TEXT_PT), ax.set_ylabel("training loss", fontsize=TEXT_PT)
        ax.tick_params(labelsize=TEXT_PT)
        ax.legend(fontsize=TEXT_PT, frameon=False, loc="upper right")
    for ax in list(axes.flat)[len(curves):]:
        ax.axis("off")
    fig.tight_layout()
    return fig
