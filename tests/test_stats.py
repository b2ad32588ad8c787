"""Intervals, Holm's correction and the verdict rules."""
import numpy as np
import pytest
from scipy import stats as sp

from replication import stats


def test_t_interval_matches_scipy():
    x = [0.61, 0.64, 0.59, 0.66, 0.63]
    lo, hi = stats.t_interval(x)
    ref = sp.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=sp.sem(x))
    assert (lo, hi) == pytest.approx(ref)


def test_summary_keeps_the_values():
    s = stats.summarize([1.0, 2.0, 4.0])
    assert s["values"] == [1.0, 2.0, 4.0] and s["n"] == 3 and s["min"] == 1 and s["max"] == 4
    assert s["sd"] == pytest.approx(np.std([1, 2, 4], ddof=1))


def test_holm_known_values():
    # p = 0.01, 0.04, 0.03, 0.005 -> sorted 0.005*4, 0.01*3, 0.03*2, 0.04*1 with monotonicity
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_paired_contrast_direction_and_p():
    a, b = [0.70, 0.72, 0.69, 0.71, 0.73], [0.60, 0.61, 0.62, 0.60, 0.63]
    c = stats.paired_contrast(a, b)
    assert c["diff_mean"] == pytest.approx(0.098) and c["p"] < 1e-4
    flipped = stats.paired_contrast(b, a, direction="less")
    assert flipped["diff_mean"] == pytest.approx(0.098) and flipped["p"] == pytest.approx(c["p"])
    ref = sp.ttest_rel(a, b, alternative="greater").pvalue
    assert c["p"] == pytest.approx(ref)


@pytest.mark.parametrize("ci,margin,p,expected", [
    ([0.03, 0.05], 0.01, 0.001, "reproduced"),
    ([0.005, 0.05], 0.01, 0.001, "inconclusive"),       # above 0 but not clear of the margin
    ([0.03, 0.05], 0.01, 0.2, "inconclusive"),          # Holm p too large
    ([-0.05, -0.01], 0.01, 0.99, "contradicted"),
    ([-0.005, 0.008], 0.01, 0.3, "no meaningful effect"),
    ([-0.02, 0.03], 0.01, 0.3, "inconclusive"),
])
def test_verdict_rules(ci, margin, p, expected):
    assert stats.verdict(ci, margin, p) == expected


def test_seeds_needed_grows_with_spread():
    tight = stats.seeds_needed([0.05, 0.06, 0.04, 0.05], 0.01)
    loose = stats.seeds_needed([0.05, 0.15, -0.05, 0.05], 0.01)
    assert tight is not None and loose is not None and loose > tight


def test_interval_verdict():
    assert stats.interval_verdict([0.98, 0.99], 0.97, 1.0) == "reproduced"
    assert stats.interval_verdict([0.90, 0.95], 0.97, 1.0) == "contradicted"
    assert stats.interval_verdict([0.95, 0.99], 0.97, 1.0) == "inconclusive"
