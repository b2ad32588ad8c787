"""Deciding a claim against its margin, and the registry-wide screen.

Rule, per contrast: d = paired per-seed differences, signed so that a positive d supports the
claim; mean d_bar, standard error s, n - 1 degrees of freedom, margin m >= 0, and each one-sided
test at level alpha (rules.alpha; 0.025 makes every bound below a bound of the 95% interval shown).
    reproduced            H0: delta <= m rejected       (lower bound > +m)
    contradicted          H0: delta >= -m rejected      (upper bound < -m)
    no meaningful effect  both H0: delta <= -m and H0: delta >= m rejected (TOST: interval inside +-m)
    inconclusive          otherwise
A claim with several contrasts holds only if every one does (an intersection-union test, which
needs no correction within the claim): any contradicted -> contradicted; all reproduced ->
reproduced; any inconclusive -> inconclusive; else (each reproduced or without effect, at least one
without) -> no meaningful effect.
Across the registry, Benjamini-Hochberg q-values over one p per decided claim (the p of the test
behind its verdict; the largest over an intersection-union claim; for an inconclusive claim the
smallest of its three tests) are shown as a screen. They decide nothing.
"""
import math

import numpy as np
from scipy import stats

VERDICT_RULES = [   # (verdict, rule): one source for README and the report
    ("reproduced", "the lower bound of the 95% interval of the paired effect lies above +m "
                   "(one-sided test of delta <= m at 2.5%), for every contrast of the claim"),
    ("contradicted", "the upper bound lies below -m (one-sided test of delta >= -m at 2.5%), for any contrast"),
    ("no meaningful effect", "the whole interval lies inside (-m, +m) (two one-sided tests, TOST)"),
    ("inconclusive", "otherwise: the interval reaches across a margin"),
    ("not testable here", "a reference arm did not train, the published effect is no larger than the margin, "
                          "or settling it would need more seeds than the registry's bound"),
]


def _t(d_bar, se, df, shift):
    """P(T >= (d_bar - shift) / se) for Student's t with df degrees of freedom."""
    if se == 0:
        return 0.0 if d_bar > shift else 1.0
    return float(stats.t.sf((d_bar - shift) / se, df))


def tests(diffs, margin):
    """p-values of the three one-sided decisions for paired differences."""
    d = np.asarray(diffs, dtype=float)
    d_bar, df = float(d.mean()), len(d) - 1
    se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0
    p_above = _t(d_bar, se, df, margin)                 # H0: delta <= m
    p_below = 1 - _t(d_bar, se, df, -margin) if se else (0.0 if d_bar < -margin else 1.0)   # H0: delta >= -m
    p_inside = max(_t(d_bar, se, df, -margin), 1 - _t(d_bar, se, df, margin) if se else
                   (0.0 if d_bar < margin else 1.0))
    return {"p_reproduced": p_above, "p_contradicted": p_below, "p_equivalent": p_inside}


def decide(p, alpha):
    """The verdict of one contrast from its three p-values."""
    if p["p_reproduced"] < alpha:
        return "reproduced"
    if p["p_contradicted"] < alpha:
        return "contradicted"
    if p["p_equivalent"] < alpha:
        return "no meaningful effect"
    return "inconclusive"


def as_equivalence_claim(p):
    """The p-values of a claim that predicts no effect (direction 'equal'): reproduced when the
    interval lies inside +-m (TOST), contradicted when it lies beyond +m or beyond -m."""
    return {"p_reproduced": p["p_equivalent"], "p_contradicted": min(p["p_reproduced"], p["p_contradicted"]),
            "p_equivalent": 1.0}


def decide_interval(lo, hi, margin):
    """The same table read off an interval (a correlation's Fisher-z interval)."""
    if lo > margin:
        return "reproduced"
    if hi < -margin:
        return "contradicted"
    if -margin < lo and hi < margin:
        return "no meaningful effect"
    return "inconclusive"


def combine(verdicts):
    """A claim's verdict from its contrasts' (intersection-union)."""
    if not verdicts:
        return "inconclusive"
    for dominant in ("contradicted", "not testable here", "inconclusive"):
        if dominant in verdicts:
            return dominant
    if all(v == verdicts[0] for v in verdicts):
        return verdicts[0]
    if set(verdicts) <= {"reproduced", "no meaningful effect"}:
        return "no meaningful effect"
    return "inconclusive"


P_OF = {"reproduced": "p_reproduced", "contradicted": "p_contradicted", "no meaningful effect": "p_equivalent"}


def claim_p(verdict, contrasts):
    """The one p-value of a decided claim for the screen (module docstring), or None."""
    tested = [c for c in contrasts if c.get("p_reproduced") is not None]
    if not tested or verdict not in (*P_OF, "inconclusive"):
        return None
    if verdict == "inconclusive":
        return min(min(c["p_reproduced"], c["p_contradicted"], c["p_equivalent"]) for c in tested)
    if verdict == "contradicted":
        return min(c["p_contradicted"] for c in tested)
    return max(c[P_OF[verdict]] for c in tested)


def bh(pvalues):
    """Benjamini-Hochberg q-values, in the input order."""
    if not pvalues:
        return []
    return [float(q) for q in stats.false_discovery_control(pvalues, method="bh")]
