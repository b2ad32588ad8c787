"""Summaries over seeds, paired contrasts, prediction intervals and the ladder's trend.

A directional claim "A beats B" is measured on the paired per-seed differences d = A - B (sign
flipped for "A below B", so positive always supports the claim), with a 95% Student-t interval and
the two-sided paired t-test's p-value (against no effect; shown, not used to decide: decisions.py
decides against the margin).
"""
import math

import numpy as np
from scipy import stats

ALPHA = 0.05   # seeds_needed: the two-sided 95% interval the decisions read


def t_interval(values, level=0.95):
    """Student-t interval for the mean of values; a single value gives [x, x] (no spread known)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return [float(x.mean()), float(x.mean())]
    half = stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return [float(x.mean() - half), float(x.mean() + half)]


def prediction_interval(values, level=0.95):
    """Where one more run would fall: mean +- t * sd * sqrt(1 + 1/n) (needs two values or more)."""
    x = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) * math.sqrt(1 + 1 / len(x))
    return [float(x.mean() - half), float(x.mean() + half)]


def summarize(values):
    """n, mean, sd, min, max and a 95% t-interval of per-seed values (the values themselves kept)."""
    x = np.asarray(values, dtype=float)
    return {"values": [float(v) for v in x], "n": int(len(x)), "mean": float(x.mean()),
            "sd": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
            "min": float(x.min()), "max": float(x.max()), "ci95": t_interval(x)}


def paired_contrast(a, b, direction="greater"):
    """Paired differences d = a - b (or b - a for direction 'less'): mean, its standard error, 95%
    t-interval and the two-sided p-value of the paired t-test (d = 0)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if direction == "less":
        d = -d
    sd = d.std(ddof=1) if len(d) > 1 else 0.0
    if sd > 0:
        p = float(stats.ttest_1samp(d, 0.0).pvalue)
    else:
        p = 1.0 if d.mean() == 0 else 0.0
    return {"diffs": [float(v) for v in d], "diff_mean": float(d.mean()), "se": float(sd / math.sqrt(len(d))),
            "diff_ci95": t_interval(d), "p": p}


def seeds_needed(diffs, margin):
    """Seeds the observed spread would need for the interval to clear the margin (or to sit inside
    it), assuming the mean and SD stay as observed; None when no finite number would do."""
    d = np.asarray(diffs, dtype=float)
    sd, gap = d.std(ddof=1) if len(d) > 1 else 0.0, abs(abs(d.mean()) - margin)
    if sd == 0 or gap == 0:
        return None
    for n in range(2, 10_001):
        if stats.t.ppf(1 - ALPHA / 2, n - 1) * sd / math.sqrt(n) < gap:
            return n
    return None


def interval_verdict(ci, lo, hi):
    """A measured mean against a published range [lo, hi]: reproduced when its interval lies
    inside, contradicted when it lies wholly outside, inconclusive when it straddles an edge."""
    if lo <= ci[0] and ci[1] <= hi:
        return "reproduced"
    if ci[1] < lo or ci[0] > hi:
        return "contradicted"
    return "inconclusive"


def single_run_verdict(published, realisations, tolerance=0.0):
    """A figure printed from one run against where one more of our runs would fall: reproduced when
    it lies inside the 95% prediction interval of our realisations (widened by the printed
    rounding), contradicted when outside."""
    lo, hi = prediction_interval(realisations)
    return "reproduced" if lo - tolerance <= published <= hi + tolerance else "contradicted"


TREND_RULES = [   # (label, rule): checked in this order; registered in analysis/claims.yaml before any ladder run
    ("flips", "the top rung's verdict is reproduced and the first trained rung's contradicted, or the reverse"),
    ("stable", "-m < b_lo and b_hi < m: the effect moves by less than the margin per decade of steps"),
    ("grows toward the claim", "b_lo > 0"),
    ("moves against the claim", "b_hi < 0"),
    ("unclear", "otherwise"),
]


def ladder_trend(steps, effects, margin, first_verdict, top_verdict):
    """The trend of a contrast along the ladder: b, the slope of its per-seed effect against
    log10(steps) (one least-squares slope per seed over the trained rungs, then a 95% t-interval of
    their mean), labelled by TREND_RULES with m the margin per decade. effects: one {seed: effect}
    per rung of `steps`. None with fewer than two rungs or two seeds present at every rung."""
    seeds = sorted(set.intersection(*(set(e) for e in effects))) if effects else []
    if len(steps) < 2 or len(seeds) < 2:
        return None
    x = np.log10(np.asarray(steps, dtype=float))
    slopes = [float(np.polyfit(x, [e[s] for e in effects], 1)[0]) for s in seeds]
    lo, hi = t_interval(slopes)
    if {first_verdict, top_verdict} == {"reproduced", "contradicted"}:
        label = "flips"
    elif -margin < lo and hi < margin:
        label = "stable"
    elif lo > 0:
        label = "grows toward the claim"
    elif hi < 0:
        label = "moves against the claim"
    else:
        label = "unclear"
    return {"label": label, "slope_per_decade": float(np.mean(slopes)), "slope_ci95": [lo, hi],
            "slopes": slopes, "seeds": seeds, "steps": list(steps)}


def rank_correlation(x, y, given=None):
    """Spearman's rho of x and y; with `given`, the partial rank correlation of x and y given it:
    (r_xy - r_xg r_yg) / sqrt((1 - r_xg^2)(1 - r_yg^2)) over the Spearman correlations."""
    rho = lambda u, v: float(stats.spearmanr(u, v)[0])
    if given is None:
        return rho(x, y)
    r_xy, r_xg, r_yg = rho(x, y), rho(x, given), rho(y, given)
    return (r_xy - r_xg * r_yg) / math.sqrt((1 - r_xg ** 2) * (1 - r_yg ** 2))
