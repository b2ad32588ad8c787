"""The report's pieces: the seed plot draws the tables' intervals, the forest plot and the Markdown
table read claims.json, figures carry alt text."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from replication import render, stats  # noqa: E402


def test_the_seed_plot_draws_the_tables_t_interval():
    values = {"a": [0.61, 0.64, 0.59, 0.66, 0.63], "b": [0.40, 0.55, 0.47, 0.52, 0.44]}
    df = pd.DataFrame([{"arm": k, "acc": v} for k, vs in values.items() for v in vs])
    fig, ax = plt.subplots()
    render.seed_plot(ax, df, x="arm", y="acc", order=["a", "b"])
    drawn = sorted((tuple(sorted(line.get_ydata())) for line in ax.lines if len(line.get_ydata()) == 2
                    and line.get_xdata()[0] == line.get_xdata()[1]), key=lambda t: t[0])
    plt.close(fig)
    expected = sorted((tuple(stats.t_interval(v)) for v in values.values()), key=lambda t: t[0])
    assert len(drawn) == 2
    for got, want in zip(drawn, expected):
        assert got == pytest.approx(want)


@pytest.mark.parametrize("objectives", [["SupCon"], ["SupCon", "cross-entropy"]])
def test_the_seed_plot_by_hue_draws_one_interval_per_level_even_when_one_level_is_present(objectives):
    """A sweep whose second objective has no runs yet (a run in progress, a profile without it)."""
    df = pd.DataFrame([{"lr": lr, "objective": o, "acc": 0.5 + i / 100 + k / 10} for k, o in enumerate(objectives)
                       for lr in ("0.001", "0.003") for i in range(3)])
    fig, ax = plt.subplots()
    render.seed_plot(ax, df, x="lr", y="acc", hue="objective", order=["0.001", "0.003"])
    bars = [line for line in ax.lines if len(line.get_ydata()) == 2 and line.get_xdata()[0] == line.get_xdata()[1]]
    plt.close(fig)
    assert len(bars) == 2 * len(objectives)


def test_figures_carry_alt_text_and_a_caption():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    html = render.figure_html(fig, "a rising line", "What the line shows.")
    assert "alt='a rising line'" in html and "<figcaption>What the line shows.</figcaption>" in html
    assert "data:image/png;base64," in html


def claim(cid, verdict, diff, margin=0.02, published=None):
    return {"id": cid, "kind": "paired", "statement": "s", "published": "p", "verdict": verdict,
            "published_effect_value": published, "arms": {},
            "contrast": {"a": "x", "b": "y", "diff_mean": diff, "diff_ci95": [diff - 0.01, diff + 0.01],
                         "margin": margin, "verdict": verdict, "seeds": [0, 1, 2]}}


def test_forest_rows_scale_each_effect_by_its_margin():
    rows = render.forest_rows([claim("one", "reproduced", 0.06, published=0.04), claim("two", "inconclusive", -0.01)])
    assert [r["effect"] for r in rows] == pytest.approx([3.0, -0.5])
    assert rows[0]["lo"] == pytest.approx(2.5) and rows[0]["published"] == pytest.approx(2.0)
    assert rows[1]["published"] is None
    plt.close(render.forest_plot([claim("one", "reproduced", 0.06)]))


def test_claims_markdown_escapes_cells_and_keeps_every_contrast():
    c = claim("one", "reproduced", 0.06)
    c["statement"] = "a | b"
    c["contrasts"] = [c["contrast"], {**c["contrast"], "b": "z", "diff_mean": 0.03}]
    text = render.claims_markdown([c])
    row = next(line for line in text.splitlines() if line.startswith("| `one`"))
    assert "a \\| b" in row and "x − y: +0.06 [+0.05, +0.07], margin 0.02, 3 seeds" in row
    assert "x − z: +0.03" in row and "**reproduced**" in row


def test_every_verdict_has_a_colour_and_mismatch_is_not_contradicted():
    for verdict, _ in stats.VERDICT_RULES:
        assert verdict in render.VERDICT_CLASS
    assert render.VERDICT_CLASS["mismatch"] != render.VERDICT_CLASS["contradicted"]


def test_effects_are_shown_in_the_claims_units():
    c = {**claim("one", "reproduced", 0.06), "effect_scale": 100, "effect_unit": " points"}
    assert render.effect_text(c, c["contrast"]) == "+6 points [+5, +7], margin 2 points, 3 seeds"


def test_a_claim_without_a_measurement_still_gets_a_row():
    untested = {"id": "gone", "kind": "paired", "statement": "s", "published": "p", "verdict": "not tested",
                "arms": {}, "contrast": None}
    assert "| `gone` | s | p | – | **not tested** |  |" in render.claims_markdown([untested])


def test_every_amendment_shows_the_verdict_it_replaced():
    c = {**claim("one", "reproduced", 0.06), "amended": [
        {"date": "2026-11-29", "what": "w1", "why": "y1", "previous_verdict": "contradicted"},
        {"date": "2026-11-30", "what": "w2", "why": "y2", "previous_verdict": "not testable here"}]}
    cell = render.verdict_cell(c)
    assert "amended 2026-11-30 (2 times); before: contradicted &rarr; not testable here" in cell
    single = {**c, "amended": c["amended"][0]}
    assert "amended 2026-11-29; before: contradicted" in render.verdict_cell(single)


def test_the_ladder_figure_draws_each_rungs_means_and_intervals():
    """Left: each arm's mean at every rung and its untrained control; right: the effect (in the
    claim's units) with the 95% interval of claims.json as its band."""
    def rung(step, a, b, diff):
        arm = lambda m: {"mean": m, "ci95": [m - 0.01, m + 0.01], "n": 5}
        contrast = {"a": "a", "b": "b", "diff_mean": diff, "diff_ci95": [diff - 0.02, diff + 0.02], "margin": 0.02,
                    "verdict": "inconclusive", "trend": {"label": "stable"}}
        return {"step": step, "verdict": "inconclusive", "arms": {"a": arm(a), "b": arm(b)}, "contrasts": [contrast]}
    c = {"id": "l", "verdict": "inconclusive", "effect_scale": 100, "effect_unit": " points",
         "published_effect_value": 0.05,
         "ladder": [rung(300, 0.5, 0.45, 0.05), rung(1200, 0.6, 0.58, 0.02), rung(2400, 0.62, 0.61, 0.01)]}
    fig = render.ladder_figure(c, {"a": 0.3, "b": None})
    left, right = fig.axes
    lines = [line for line in left.lines if len(line.get_xdata()) == 3]
    assert [list(line.get_ydata()) for line in lines] == [[0.5, 0.6, 0.62], [0.45, 0.58, 0.61]]
    assert [line.get_ydata()[0] for line in left.lines if len(line.get_xdata()) == 2] == [0.3]   # a's control only
    effect = next(line for line in right.lines if len(line.get_xdata()) == 3)
    assert list(effect.get_ydata()) == pytest.approx([5, 2, 1])
    band = right.collections[0].get_paths()[0].vertices[:, 1]
    assert min(band) == pytest.approx(-1) and max(band) == pytest.approx(7)
    assert left.get_xscale() == "log" and "steps" in right.get_xlabel()
    plt.close(fig)
