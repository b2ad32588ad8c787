"""Intervals, Holm's correction and the verdict rules."""
import numpy as np
import pytest
from scipy import stats as sp

from replication.judge import sequential, stats, verdicts

from test_claims import RULES     # the registered rules: their level is every interval's

LEVEL = verdicts.level(RULES)


def test_t_interval_matches_scipy():
    x = [0.61, 0.64, 0.59, 0.66, 0.63]
    lo, hi = stats.t_interval(x, LEVEL)
    ref = sp.t.interval(LEVEL, len(x) - 1, loc=np.mean(x), scale=sp.sem(x))
    assert (lo, hi) == pytest.approx(ref)


def test_summary_keeps_the_values():
    s = stats.summarize([1.0, 2.0, 4.0], LEVEL)
    assert s["values"] == [1.0, 2.0, 4.0] and s["n"] == 3 and s["min"] == 1 and s["max"] == 4
    assert s["sd"] == pytest.approx(np.std([1, 2, 4], ddof=1))


def test_paired_contrast_direction_and_p():
    a, b = [0.70, 0.72, 0.69, 0.71, 0.73], [0.60, 0.61, 0.62, 0.60, 0.63]
    c = stats.paired_contrast(a, b, "greater", LEVEL)
    assert c["diff_mean"] == pytest.approx(0.098) and c["p"] < 1e-3
    flipped = stats.paired_contrast(b, a, "less", LEVEL)
    assert flipped["diff_mean"] == pytest.approx(0.098) and flipped["p"] == pytest.approx(c["p"])
    assert c["p"] == pytest.approx(sp.ttest_rel(a, b).pvalue)            # two-sided
    assert c["se"] == pytest.approx(np.std(np.subtract(a, b), ddof=1) / np.sqrt(5))


CASES = [   # (interval, margin, verdict): each rule, and its mirror image
    ([0.03, 0.05], 0.01, "reproduced"),
    ([-0.05, -0.03], 0.01, "contradicted"),
    ([0.005, 0.05], 0.01, "inconclusive"),        # above 0, not clear of the margin
    ([-0.05, -0.005], 0.01, "inconclusive"),      # below 0, not clear of the margin
    ([-0.005, 0.008], 0.01, "no meaningful effect"),
    ([-0.02, 0.03], 0.01, "inconclusive"),
    ([-0.008, -0.001], 0.01, "no meaningful effect"),   # below 0 but inside the margin: not contradicted
]


@pytest.mark.parametrize("ci,margin,expected", CASES)
def test_the_decision_table_is_symmetric(ci, margin, expected):
    mirror = {"reproduced": "contradicted", "contradicted": "reproduced"}
    assert verdicts.decide_interval(*ci, margin) == expected
    assert verdicts.decide_interval(-ci[1], -ci[0], margin) == mirror.get(expected, expected)


def test_verdict_rules_are_listed_once_for_readers():
    names = [v for v, _ in verdicts.verdict_rules(*sequential.level_texts(RULES))]
    assert names == ["reproduced", "contradicted", "no meaningful effect", "inconclusive", "not testable here"]


def test_prediction_interval_is_wider_than_the_interval_of_the_mean():
    x = [0.61, 0.64, 0.59, 0.66, 0.63]
    lo, hi = stats.prediction_interval(x, LEVEL)
    half = sp.t.ppf(1 - RULES["alpha"], 4) * np.std(x, ddof=1) * np.sqrt(1 + 1 / 5)
    assert (lo, hi) == pytest.approx((np.mean(x) - half, np.mean(x) + half))
    one_run = verdicts.prediction_interval(x, RULES)
    assert verdicts.one_run_range_verdict(one_run, 0.70, 0.70) == "reproduced"   # outside the mean's interval, inside this one
    assert stats.t_interval(x, LEVEL)[1] < 0.70
    assert verdicts.one_run_range_verdict(one_run, 0.80, 0.80) == "contradicted"


def test_seeds_needed_grows_with_spread():
    tight = verdicts.seeds_needed([0.05, 0.06, 0.04, 0.05], 0.01, RULES)
    loose = verdicts.seeds_needed([0.05, 0.15, -0.05, 0.05], 0.01, RULES)
    assert tight is not None and loose is not None and loose > tight


def test_interval_verdict():
    assert verdicts.interval_verdict([0.98, 0.99], 0.97, 1.0) == "reproduced"
    assert verdicts.interval_verdict([0.90, 0.95], 0.97, 1.0) == "contradicted"
    assert verdicts.interval_verdict([0.95, 0.99], 0.97, 1.0) == "inconclusive"


def test_trend_slopes_are_least_squares_and_exactly_zero_for_a_flat_effect():
    steps = [300, 1200, 2400, 4800]
    rng = np.random.default_rng(3)
    effects = [{s: float(v) for s, v in enumerate(rng.normal(size=4))} for _ in steps]
    slopes, seeds = stats.trend_slopes(steps, effects)
    x = np.log10(steps)
    assert slopes == pytest.approx([np.polyfit(x, [e[s] for e in effects], 1)[0] for s in seeds], abs=1e-12)
    flat = [{0: 0.1 + 0.2, 1: -0.3}] * len(steps)
    assert stats.trend_slopes(steps, flat)[0] == [0.0, 0.0]
