"""Summaries over seeds, paired contrasts, Holm's correction and the verdict rules.

Verdicts for a directional claim "A beats B" on paired per-seed differences d = A - B (sign
flipped for "A below B"), with 95% Student-t interval [lo, hi] and margin m >= 0:
    reproduced           lo > m (m = the claim's practical size, or 0) and Holm p < 0.05
    contradicted         hi < 0
    no meaningful effect -m < lo and hi < m
    inconclusive         otherwise
"""
import math

import numpy as np
from scipy import stats

ALPHA = 0.05


def t_interval(values, level=0.95):
    """Student-t interval for the mean of values; a single value gives [x, x] (no spread known)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return [float(x.mean()), float(x.mean())]
    half = stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return [float(x.mean() - half), float(x.mean() + half)]


def summarize(values):
    """n, mean, sd, min, max and a 95% t-interval of per-seed values (the values themselves kept)."""
    x = np.asarray(values, dtype=float)
    return {"values": [float(v) for v in x], "n": int(len(x)), "mean": float(x.mean()),
            "sd": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
            "min": float(x.min()), "max": float(x.max()), "ci95": t_interval(x)}


def paired_contrast(a, b, direction="greater"):
    """Paired differences d = a - b (or b - a for direction 'less'): mean, 95% t-interval and the
    one-sided p-value of the paired t-test for d > 0."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if direction == "less":
        d = -d
    if len(d) > 1 and d.std(ddof=1) > 0:
        p = float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
    else:
        p = 0.0 if d.mean() > 0 else 1.0
    return {"diffs": [float(v) for v in d], "diff_mean": float(d.mean()), "diff_ci95": t_interval(d),
            "p": p}


def holm(pvalues):
    """Holm's step-down adjusted p-values, in the input order."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    adjusted = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return [float(v) for v in adjusted]


def verdict(diff_ci, margin, p_holm):
    lo, hi = diff_ci
    if lo > margin and p_holm < ALPHA:
        return "reproduced"
    if hi < 0:
        return "contradicted"
    if margin > 0 and -margin < lo and hi < margin:
        return "no meaningful effect"
    return "inconclusive"


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
