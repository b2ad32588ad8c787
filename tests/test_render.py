"""The report's pieces: what is said about each claim (origin, unit, rung, runs, original verdict,
key findings), the SVG figures, the HTML and Markdown fragments; and the committed report and
claims.md checked against the committed claims.json."""
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from replication.report import claims_view as rc  # noqa: E402
from replication.report import figures as figures  # noqa: E402
from replication.report import page as page  # noqa: E402
from replication.report import markdown
from replication.judge import sequential, stats, verdicts  # noqa: E402

from test_claims import RULES  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "reports" / "claims.json"


DOCUMENTS = ("ntxent-example", "tiny-simclr", "toy2d", "analytic")


def claim(cid, verdict, diff, margin=0.02, published=None, section="moco", **extra):
    extra.setdefault("origin", "document" if section in DOCUMENTS else "literature")
    return {"id": cid, "kind": "paired", "statement": "s", "published": "p", "verdict": verdict, "section": section,
            "published_effect_value": published, "arms": {}, "effect_scale": 100, "effect_unit": " points",
            "contrast": {"a": "x", "b": "y", "diff_mean": diff, "diff_ci95": [diff - 0.01, diff + 0.01],
                         "margin": margin, "verdict": verdict, "seeds": [0, 1, 2], "level": 0.95}, **extra}


def test_the_seed_plot_draws_the_tables_t_interval():
    values = {"a": [0.61, 0.64, 0.59, 0.66, 0.63], "b": [0.40, 0.55, 0.47, 0.52, 0.44]}
    df = pd.DataFrame([{"arm": k, "acc": v} for k, vs in values.items() for v in vs])
    fig, ax = plt.subplots()
    figures.seed_plot(ax, df, x="arm", y="acc", level=0.95, order=["a", "b"])
    drawn = sorted((tuple(sorted(line.get_ydata())) for line in ax.lines if len(line.get_ydata()) == 2
                    and line.get_xdata()[0] == line.get_xdata()[1]), key=lambda t: t[0])
    plt.close(fig)
    expected = sorted((tuple(stats.t_interval(v, 0.95)) for v in values.values()), key=lambda t: t[0])
    assert len(drawn) == 2
    for got, want in zip(drawn, expected):
        assert got == pytest.approx(want)


def test_figures_are_svg_with_alt_text_a_caption_and_ids_of_their_own():
    pieces = []
    for key in ("f1", "f2"):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        pieces.append(figures.figure_html(fig, "a rising line", "What the line shows.", key=key))
    assert all('<svg role="img" aria-label="a rising line"' in p and "<title>a rising line</title>" in p
               and "<figcaption>What the line shows.</figcaption>" in p and "base64" not in p for p in pieces)
    ids = [i for p in pieces for i in re.findall(r'\bid="([^"]+)"', p)]
    assert len(ids) == len(set(ids)) and all(i.startswith(("f1-", "f2-")) for i in ids)
    refs = [r for p in pieces for r in re.findall(r'url\(#([^)]+)\)', p)]
    assert refs and set(refs) <= set(ids)                       # clip paths point into their own figure


def test_forest_rows_are_in_the_claims_unit_grouped_by_unit_then_verdict():
    loss = {**claim("loss", "reproduced", 0.3), "effect_scale": 1, "effect_unit": ""}
    rows = figures.forest_rows([claim("two", "inconclusive", -0.01), loss, claim("one", "reproduced", 0.06, published=0.04),
                                claim("three", "reproduced", 0.08)])
    assert [r["claim"] for r in rows] == ["three", "one", "two", "loss"]             # points first
    assert rows[1]["effect"] == pytest.approx(6.0) and rows[1]["lo"] == pytest.approx(5.0)
    assert rows[1]["margin"] == pytest.approx(2.0) and rows[1]["unit"] == "points"
    assert rows[1]["published"] == pytest.approx(4.0) and rows[2]["published"] is None
    svg = figures.svg_markup(figures.forest_plot([claim("far", "reproduced", 0.5), loss,
                                                  claim("one", "not testable here", 0.01)]), "forest", key="f")
    assert '<a xlink:href="#claim-far">' in svg and "_blank" not in svg and "<metadata>" not in svg
    assert "effect in points of accuracy" in svg and "margin" not in svg.split("inside the margin")[0].lower()


def test_published_and_ours_are_in_one_unit():
    c = claim("one", "reproduced", 0.06, published=0.047)
    assert page.ours_text(c) == "+6 points [+5, +7] (95%)" and rc.published_text(c) == "+4.7 points"
    per_contrast = claim("four", "reproduced", 0.06, published=[0.047, 0.064])
    per_contrast["contrasts"] = [per_contrast["contrast"], {**per_contrast["contrast"], "b": "z"}]
    assert rc.published_effect(per_contrast, 1) == pytest.approx(6.4)
    assert rc.published_text(per_contrast) == "+4.7 / +6.4 points"
    text_only = {**claim("two", "reproduced", 0.06), "published_effect": "+15.3 points"}
    assert rc.published_effect(text_only) is None            # only a number the magnitude comparison read
    assert rc.published_text(text_only) == "+15.3 points"
    assert rc.published_text({**claim("three", "reproduced", 0.06), "published_effect": "lower loss"}) == "lower loss"


def test_an_alternative_analysis_shows_its_effect_in_the_claims_unit():
    basis = {"dimension": "basis", "choice": "equal steps", "verdict": "reproduced", "diff_mean": 0.121,
             "diff_ci95": [0.110, 0.131]}
    bh = {"dimension": "multiplicity", "choice": "Benjamini-Hochberg", "verdict": "inconclusive"}
    table = page.robustness_table(claim("one", "inconclusive", -0.028, robustness={"alternatives": [basis, bh]}))
    assert "<td>+12.1 points [+11, +13.1]</td>" in table and "<td>–</td>" in table and "0.121" not in table


def test_the_documents_index_is_folded_under_its_verdict_counts():
    claims = [claim("a", "exact match", 0.0), claim("b", "mismatch", 0.1), claim("c", "exact match", 0.0)]
    folded = page.folded_index("Examples", claims, RULES)
    assert folded.startswith("<details") and "<b>Examples (3)</b></summary>" in folded
    assert folded.count("<tr>") == 4                                  # the header and one row per claim


def test_missing_values_show_a_dash_never_nan():
    broken = claim("gone", "not tested", float("nan"))
    assert rc.our_effect(broken) is None and page.ours_text(broken) == "–"
    assert rc.sig(None) == rc.sig(float("nan")) == "–"
    assert "nan" not in page.claim_details(broken, {}).lower()
    assert "nan" not in page.index_table([broken], RULES).lower()


def test_the_rung_and_the_runs_are_named_for_what_they_are():
    ladder = {**claim("l", "reproduced", 0.1), "contrast": {**claim("l", "reproduced", 0.1)["contrast"],
                                                              "metric_key": "at.2400.h.linear"}}
    assert rc.rung(ladder) == 2400 and rc.realisations(ladder) == (3, "seeds")
    arms = {"a": {"n": 5, "control": {"cond_a": {}}}, "b": {"n": 5, "control": {"cond_b": {}}}}
    budget = {**claim("b", "reproduced", 0.1), "arms": arms}
    assert rc.read_at(budget, {"cond_a": 100, "cond_b": 400}) == "100 / 400 steps"
    primary = {**budget, "primary": {"rung": 100}}
    assert rc.read_at(primary, {"cond_a": 100, "cond_b": 400}) == "100 / 400 steps"     # the arms differ
    assert rc.read_at(primary, {"cond_a": 100, "cond_b": 100}) == "100 steps"
    # a key that names a rung by index reads that rung, whatever the primary analysis records
    first = {**primary, "contrast": {**primary["contrast"], "metric_key": "at.{rung:0}.h.linear"},
             "primary": {"rung": 4800}}
    rungs = {"cond_a": [0, 300, 1200, 4800], "cond_b": [0, 300, 4800]}
    assert rc.named_rung(first, rungs) == 300 and rc.read_at(first, {"cond_a": 4800, "cond_b": 4800}, rungs) == "300 steps"
    assert rc.named_rung(first, {"cond_a": [0, 300], "cond_b": [0, 100]}) is None        # the arms disagree
    assert "rung 300" in page.claim_details({**first, "named_rung": 300}, {})
    one_seed = {"kind": "single_run", "realisation": "seed 3 at 1, 2 and 4 threads",
                "arms": {"realisations": {"n": 3, "values": [1.0, 1.1, 1.2]}}}
    assert rc.realisations(one_seed) == (3, "thread-count realisations of one seed")
    assert rc.realisations({**one_seed, "realisation": None}) == (3, "seeds")        # ten seeds are seeds
    assert rc.realisations({**one_seed, "n_realisations": 4, "realisation_kind": "seeds"}) == (4, "seeds")
    pooled = {"kind": "correlation", "arms": {"eval.z.alignment": {"n": 255}, "eval.h.linear": {"n": 255}}}
    assert rc.realisations(pooled) == (255, "runs")            # pooled over arms and seeds, not 255 seeds


def test_the_original_verdict_is_the_first_amendments_previous_one_and_every_change_is_shown():
    c = {**claim("one", "reproduced", 0.06), "amended": [
        {"date": "2026-11-29", "what": "w1", "why": "y1", "previous_verdict": "contradicted"},
        {"date": "2026-11-30", "what": "w2", "why": "y2", "previous_verdict": "not testable here",
         "post_registration": True}]}
    assert rc.original_verdict(c) == "contradicted" and rc.post_hoc(c)
    listed = page.amendment_list(c, {})
    assert "2026-11-29: contradicted → not testable here" in listed
    assert "2026-11-30 (post-registration): not testable here → reproduced" in listed
    assert "<b>why</b>: y1" in listed and listed.startswith("<details")
    table = page.original_vs_current([c, claim("two", "reproduced", 0.06)])
    assert "original rules" in table


def test_the_lore_rows_are_the_declared_studies_in_their_order():
    claims = [claim(cid, "reproduced", 0.05) for cid, _ in reversed(rc.LORE)] + [claim("other", "reproduced", 0.3)]
    assert [c["id"] for _, c in rc.lore(claims)] == [cid for cid, _ in rc.LORE]
    table = page.lore_table(claims[:3], RULES)
    assert table.count("<tr>") == 4 and "#claim-other" not in page.lore_table(claims, RULES)


def test_the_summary_names_the_studies_by_verdict_and_the_compute():
    claims = [claim("simclr-temperature", "inconclusive", 0.0), claim("simclr-h-beats-z", "reproduced", 0.1),
              claim("mocov2-beats-simclr", "contradicted", -0.1, labels=["robust", "not converged"]),
              claim("supcon-out-beats-in", "no meaningful effect", 0.0)]
    cost = {"pretrain": 560.2, "evaluate": 176.1, "runs": 305, "cpus": ["Xeon"], "stages": 46, "stage_minutes": 397.8}
    text = rc.replication_summary(claims, "in miniature", cost)
    study = dict(rc.LORE)
    assert f"Reproduced: {study['simclr-h-beats-z']}." in text and f"contradicted {study['mocov2-beats-simclr']}" in text
    # a decided null is named under its own verdict, never among the undecided
    assert f"no meaningful effect {study['supcon-out-beats-in']}; inconclusive {study['simclr-temperature']};" in text
    assert "560 CPU-minutes of pretraining and 176 of evaluation over 305 runs on Xeon" in text
    assert "398 minutes" in text and "1 verdicts were read before their effect settled." in text


def test_the_compute_counts_the_latest_run_only(tmp_path):
    """A stage's entry from an earlier run (the report's own, while it renders) is neither counted nor
    named among the CPUs."""
    (tmp_path / "reports").mkdir()
    times = {"pretrain@a": {"seconds": 600, "cpu": "EPYC", "run": 2},
             "report": {"seconds": 60, "cpu": "Xeon", "run": 1}}
    (tmp_path / "reports" / "stage_times.json").write_text(json.dumps(times))
    cost = rc.compute(tmp_path)
    assert cost["stages"] == 1 and cost["stage_minutes"] == 10 and cost["cpus"] == ["EPYC"]


def test_new_fields_are_shown_when_present():
    c = claim("one", "reproduced", 0.06, labels=["robust", "calibrated"], q_bh=0.012,
              robustness={"label": "robust", "alternatives": [{"dimension": "probe", "choice": "kNN",
                                                                "verdict": "reproduced", "diff_mean": 0.05}]},
              primary={"probe": "linear", "rung": 1200, "basis": "equal images"},
              convergence={"converged": False, "held": "reproduced", "arms": {
                  "x": {"moving": True, "moved": "moved +3 [+2, +4] points from 1,200 to 2,400 steps"}}})
    details = page.claim_details(c, {})
    assert "kNN" in details and "q (BH)" in details and "equal images" in details
    assert "held: its interval gives reproduced; x moved +3 [+2, +4] points from 1,200 to 2,400 steps" in details
    assert rc.rung(c) == 1200 and rc.robustness(c) == "robust" and rc.is_calibrated(c)
    assert rc.counts([c])["literature"]["claims"] == 1 and not rc.counts([c])["literature"]["judged"]


def test_sample_rows_are_one_per_family_or_one_image_per_class():
    labels = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    names = ["a", "b", "c", "d"]
    by_class = figures.sample_rows(labels, names)
    assert [[n for _, n in row] for _, row in by_class] == [names, names]
    by_family = figures.sample_rows(labels, names, families=["x", "x", "y", "y"])
    assert [(f, [n for _, n in row]) for f, row in by_family] == [("x", ["a", "b"]), ("y", ["c", "d"])]
    images = np.random.default_rng(0).random((8, 3, 4, 4))
    plt.close(figures.sample_grid(images, by_family))


def test_glyphs100_samples_show_a_row_per_family_and_an_image_per_class():
    from contrastive.glyphs import ACCENTS, CLASSES, SUPERCLASS, SUPERCLASSES
    labels = np.tile(np.arange(len(CLASSES)), 2)
    dataset = {"y_train": labels, "classes": CLASSES, "superclass": SUPERCLASS, "superclasses": SUPERCLASSES}
    rows = figures.sample_rows(labels, CLASSES, figures.families_of(dataset))
    assert [family for family, _ in rows] == SUPERCLASSES
    for f, (_, row) in enumerate(rows):
        assert [SUPERCLASS[labels[i]] for i, _ in row] == [f] * len(ACCENTS)       # every image of its family
        assert sorted(labels[i] for i, _ in row) == list(range(f * len(ACCENTS), (f + 1) * len(ACCENTS)))
        assert [name for _, name in row] == list(ACCENTS)                           # named by the accent
    assert figures.families_of({"classes": ["a"]}) is None


def test_the_views_are_drawn_with_every_augmentation_knob_of_the_run():
    import torch

    from contrastive.augment import augment
    from helpers import run_config
    cfg = run_config(blur=True, colour_strength=0.5, crop_min_side=0.9).model_dump()
    options = figures.augment_options(cfg)
    assert options == {"blur": True, "colour": True, "colour_strength": 0.5, "crop_min_side": 0.9}
    images = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    views = figures.augmented_views(images.numpy(), options, n_views=3, seed=7)
    expected = augment(images.repeat_interleave(3, 0), torch.Generator().manual_seed(7), blur=True, colour=True,
                       colour_strength=0.5, crop_min_side=0.9).reshape(2, 3, 3, 8, 8)
    assert views.shape == (2, 3, 3, 8, 8) and np.array_equal(views, expected.numpy())
    default = figures.augmented_views(images.numpy(), figures.augment_options(run_config().model_dump()), 3, seed=7)
    assert not np.array_equal(views, default)


def test_the_seed_plot_draws_the_same_jitter_whatever_numpys_global_state():
    df = pd.DataFrame({"arm": ["a"] * 5 + ["b"] * 5, "acc": np.linspace(0.5, 0.9, 10)})
    drawn = []
    for seed in (1, 2):
        np.random.seed(seed)
        state = np.random.get_state()[1].copy()
        fig, ax = plt.subplots()
        figures.seed_plot(ax, df, x="arm", y="acc", level=0.95)
        drawn.append(figures.svg_markup(fig, "seeds", key="f"))
        assert np.array_equal(np.random.get_state()[1], state)          # the global generator is left as it was
    assert drawn[0] == drawn[1]


def test_ids_outside_the_safe_alphabet_become_a_digest():
    assert rc.slug("moco-m0-fails_short") == "moco-m0-fails_short"
    assert re.fullmatch(r"id-[0-9a-f]{12}", rc.slug("x' onmouseover='1"))


SECTIONS = [{"id": "moco", "title": "MoCo"}, {"id": "toy2d", "title": "The 2-D circle"}]


def test_claims_markdown_escapes_cells_groups_by_section_and_folds_the_documents_examples():
    lit = {**claim("one", "inconclusive", 0.06), "contrast": {**claim("one", "inconclusive", 0.06)["contrast"],
                                                               "reason": "a | b <i> isn't &amp; *x* [y](z)"}}
    doc = {**claim("doc", "exact match", 0.0, section="toy2d"), "contrast": None}
    text = markdown.claims_markdown([lit, doc], SECTIONS, "Scope: a summary.", RULES)
    row = next(line for line in text.splitlines() if line.startswith("| `one`"))
    assert "+6 points [+5, +7]" in row and "**inconclusive**" in row
    assert r"a \| b \<i> isn't \&amp; \*x\* [y\](z)" in row and "&#x27;" not in text and "&lt;" not in text
    assert text.index("## MoCo (1)") < text.index("| `one`") < text.index("<details>") < text.index("| `doc`")
    assert text.index("Scope: a summary.") < text.index("## The studies")


@pytest.mark.skipif(not COMMITTED.exists(), reason="no committed reports/claims.json")
def test_the_committed_claims_md_has_one_row_per_literature_claim_with_both_effects():
    claims = rc.load_claims(COMMITTED)
    rows = [line for line in (ROOT / "reports" / "claims.md").read_text().splitlines() if line.startswith("| `")]
    for c in (c for c in claims if rc.origin(c) == "literature"):
        mine = [r for r in rows if r.startswith(f"| `{c['id']}` |")]
        assert len(mine) == 1, c["id"]
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", mine[0])[1:-1]]
        assert cells[2] == markdown.cell(rc.published_text(c))         # published, in the claim's unit
        assert cells[3].startswith(markdown.cell(rc.ours(c)) + ";")      # ours, in the same unit


@pytest.mark.skipif(not COMMITTED.exists(), reason="no committed reports/claims.json")
def test_every_author_the_registry_cites_is_in_the_bibliography_with_a_link():
    sources = " ".join(c["source"] for c in json.loads(COMMITTED.read_text()))
    cited = set(re.findall(r"([A-Z][a-z]+)(?: et al\.|,| &| and)[^()]*?\d{4}", sources))
    references = " ".join(ref for _, ref, _ in page.PAPERS)
    assert cited and all(name in references for name in cited), cited - set(references.split())
    assert all(url.startswith(("https://arxiv.org/abs/", "https://doi.org/", "https://papers.nips.cc/"))
               for _, _, url in page.PAPERS)


def test_a_null_that_holds_is_not_drawn_as_an_effect():
    """A reproduced claim of no difference or of a failure reads as what held, in the shape and colour
    of no effect, on the page, in claims.md and in the forest plot's rows; other claims are unchanged."""
    from replication.report import claims_view as rc, figures, markdown, page
    equal = {"id": "a", "verdict": "reproduced", "kind": "paired", "contrast": {"direction": "equal"}}
    failure = {"id": "b", "verdict": "reproduced", "kind": "failure"}
    effect = {"id": "c", "verdict": "reproduced", "kind": "paired", "contrast": {"direction": "greater"}}
    undecided = {**equal, "verdict": "inconclusive"}
    assert rc.verdict_words(equal) == "reproduced: no difference, as claimed"
    assert rc.verdict_words(failure) == "reproduced: the arm fails, as claimed"
    assert rc.verdict_words(effect) == "reproduced" and rc.verdict_words(undecided) == "inconclusive"
    assert page.verdict_badge(equal).startswith("<span class='v null'>◆ reproduced: no difference")
    assert page.verdict_badge(effect) == page.badge("reproduced")
    assert markdown.verdict(equal).startswith("**reproduced: no difference, as claimed**")
    with_effect = {**equal, "effect_scale": 100, "effect_unit": " points",
                   "contrast": {"direction": "equal", "diff_mean": 0.001, "diff_ci95": [-0.01, 0.012], "margin": 0.02}}
    assert [r["null"] for r in figures.forest_rows([with_effect])] == [True]


# ---------------------------------------------------------------- figures a reader can read

PAGE_PX = 1080          # notebook.css: the body's widest column, which a wider figure is shrunk to fit


def smallest_text_px(svg):
    """The smallest font of an inline SVG figure as the page shows it, in CSS pixels: its font size
    (user units, the figure's points) scaled by the width it is drawn at (its own width in pt, 4/3 px
    each, shrunk to the page's column when wider) over its viewBox width."""
    width_pt = float(re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', svg).group(1))
    view_width = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', svg).group(1))
    shown_px = min(width_pt * 4 / 3, PAGE_PX)
    sizes = [float(s) for s in re.findall(r"font-size: ?([\d.]+)px", svg)]
    return min(sizes) * shown_px / view_width


def test_every_figure_s_text_is_at_least_11_px_on_the_page():
    judged = json.loads(COMMITTED.read_text())
    arms = [{"condition": f"arm_{i}", "figure": figure, "step": None, "seed": seed, "value": 40 + i + seed,
             "unit": "points"} for i in range(6) for figure in ("h.linear_full", "z.linear_full") for seed in range(5)]
    curves = {f"study_{s}": pd.DataFrame([{"series": f"condition {c}", "step": step, "loss": 5 - step / 1000,
                                           "loss_min": 4.9 - step / 1000, "loss_max": 5.1 - step / 1000}
                                          for c in range(3) for step in (0, 1200, 2400)]) for s in range(10)}
    drawn = {"forest": figures.forest_plot(judged), "published against ours": figures.published_vs_ours(judged),
             "ladder": figures.ladder_grid(judged),
             "arms": figures.arm_panels(arms, [("h.linear_full", None), ("z.linear_full", None)], str, 0.95),
             "losses": figures.loss_panels(curves, {})}
    sizes = {name: smallest_text_px(figures.svg_markup(fig, name, name)) for name, fig in drawn.items()}
    assert all(px >= 11 for px in sizes.values()), sizes


def test_every_word_of_the_studies_table_is_defined_in_the_key_beneath_it():
    """Each verdict, magnitude phrase and label the lore table prints has its definition in the key
    printed right after the table (not on hover)."""
    judged = json.loads(COMMITTED.read_text())
    screen = page.first_screen(judged, "t", "s", RULES)
    table_end = screen.index("</table>", screen.index("<table class='lore'>"))
    key = screen[table_end:screen.index("</p>", table_end)]
    assert key.startswith("</table><p class='key'>")
    rows = [c for _, c in rc.lore(judged)]
    assert all(page.badge(c["verdict"]) in key for c in rows)
    words = {rc.magnitude_text(c) for c in rows} - {None} | {t for c in rows for t in rc.tags(c)}
    assert words
    for word in words:
        term = page.term_of(word)
        assert term and f"<i>{page.esc(term[0])}</i>" in key, word


def test_the_first_screen_counts_the_verdicts_changed_since_the_first_rules():
    moved = claim("a", "reproduced", 0.05, amended=[{"previous_verdict": "inconclusive"}])
    kept = claim("b", "inconclusive", 0.0, amended=[{"previous_verdict": "inconclusive"}])
    untouched = claim("c", "contradicted", -0.05)
    assert page.changed_since_first([moved, kept, untouched]).startswith("1 of 3 judged verdicts differ")


def test_a_reason_names_the_level_of_the_look_that_decided_its_interval():
    """A contrast decided at a look records its interval's level (a stage-1 contrast under the sequential
    design: 97.7%), and its reason and its figure say so; the column heading says each row names its
    own level; without a design both say 95%."""
    design = {"stage_one_seeds": 5, "further_seeds": 10, "seeds_needed_at_most": 15, "spending": "pocock",
              "conditions_at_most": 12, "first": []}
    decided = claim("a", "reproduced", 0.05)
    assert "95% interval +4 to +6 points" in rc.reason(decided)
    decided["contrast"]["level"] = verdicts.level(sequential.look({**RULES, "sequential": design}, 5))
    assert "97.7% interval +4 to +6 points" in rc.reason(decided) and rc.ours(decided).endswith("(97.7%)")
    assert rc.ours_heading({**RULES, "sequential": design}) == "ours [interval (its look's level)]"
    assert rc.ours_heading(RULES) == "ours [95% interval]"
