"""Numbers only: summaries over seeds, paired contrasts, prediction intervals, the ladder's slopes
and rank correlations. Every level comes from the caller (verdicts.level: the registered rules').

A directional claim "A beats B" is measured on the paired per-seed differences d = A - B (sign
flipped for "A below B", so positive always supports the claim), with a Student-t interval and
the two-sided paired t-test's p-value (against no effect; shown, not used to decide: verdicts.py
decides against the margin).
"""
import math

import numpy as np
from scipy import stats


def t_interval(values, level):
    """Student-t interval at `level` for the mean of values; a single value gives [x, x] (no spread
    known)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return [float(x.mean()), float(x.mean())]
    half = stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return [float(x.mean() - half), float(x.mean() + half)]


def prediction_interval(values, level):
    """Where one more run would fall: mean +- t * sd * sqrt(1 + 1/n) (needs two values or more)."""
    x = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) * math.sqrt(1 + 1 / len(x))
    return [float(x.mean() - half), float(x.mean() + half)]


def summarize(values, level):
    """n, mean, sd, min, max and the t-interval at `level` of per-seed values (the values themselves
    kept). `ci95`, like every *ci95 key of claims.json, holds the (1 - 2 alpha) interval of the
    registered rules (verdicts.level), whatever alpha is: the name stays so that the file keeps its bytes."""
    x = np.asarray(values, dtype=float)
    return {"values": [float(v) for v in x], "n": int(len(x)), "mean": float(x.mean()),
            "sd": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
            "min": float(x.min()), "max": float(x.max()), "ci95": t_interval(x, level)}


def paired_contrast(a, b, direction, level):
    """Paired differences d = a - b (or b - a for direction 'less'): mean, its standard error,
    t-interval at `level` and the two-sided p-value of the paired t-test (d = 0)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if direction == "less":
        d = -d
    sd = d.std(ddof=1) if len(d) > 1 else 0.0
    if sd > 0:
        p = float(stats.ttest_1samp(d, 0.0).pvalue)
    else:
        p = 1.0 if d.mean() == 0 else 0.0
    return {"diffs": [float(v) for v in d], "diff_mean": float(d.mean()), "se": float(sd / math.sqrt(len(d))),
            "diff_ci95": t_interval(d, level), "p": p}


def trend_slopes(steps, effects):
    """Per seed, the least-squares slope of its effect against log10(steps) over the rungs; effects:
    one {seed: effect} per rung of `steps`. (slopes, seeds), or None with fewer than two rungs or
    two seeds present at every rung."""
    seeds = sorted(set.intersection(*(set(e) for e in effects))) if effects else []
    if len(steps) < 2 or len(seeds) < 2:
        return None
    x = np.log10(np.asarray(steps, dtype=float))
    x = x - x.mean()
    # b = sum((x - mean x)(y - mean y)) / sum((x - mean x)^2): a flat effect gives exactly 0 on any
    # CPU, where a least-squares solver leaves rounding noise whose sign depends on the kernels.
    slopes = []
    for s in seeds:
        y = np.array([e[s] for e in effects], dtype=float)
        slopes.append(float(np.sum(x * (y - y.mean())) / np.sum(x * x)))
    return slopes, seeds


def cluster_bootstrap(statistic, groups, draws=2000, seed=0):
    """The statistic over `draws` resamples that draw whole groups with replacement (each group's
    members together), from a fixed seed. statistic(weights) -> number, where weights[i] is how
    often member i was drawn."""
    labels = np.asarray(groups)
    members = [np.flatnonzero(labels == g) for g in dict.fromkeys(groups)]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(draws):
        drawn = np.concatenate([members[i] for i in rng.integers(0, len(members), len(members))])
        out.append(statistic(np.bincount(drawn, minlength=len(labels))))
    return np.array(out)


def _midranks(x, w):
    """Mid-ranks of x when item i occurs w[i] times (ties share the mean of their ranks)."""
    order = np.argsort(x, kind="stable")
    values, start = np.unique(x[order], return_index=True)
    weight = np.add.reduceat(w[order], start)
    rank = np.cumsum(weight) - weight + (weight + 1) / 2
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(rank, np.diff(np.append(start, len(x))))
    return ranks


def _weighted_pearson(a, b, w):
    a, b = a - np.average(a, weights=w), b - np.average(b, weights=w)
    return float(np.sum(w * a * b) / math.sqrt(np.sum(w * a * a) * np.sum(w * b * b)))


def rank_correlation(x, y, given=None, weights=None):
    """Spearman's rho of x and y (Pearson's r of their mid-ranks); with `given`, the partial rank
    correlation of x and y given it: (r_xy - r_xg r_yg) / sqrt((1 - r_xg^2)(1 - r_yg^2)). weights:
    how often each item counts (a bootstrap draw)."""
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=float)
    r = {k: _midranks(np.asarray(v, dtype=float), w) for k, v in (("x", x), ("y", y), ("g", given))
         if v is not None}
    rho = lambda u, v: _weighted_pearson(r[u], r[v], w)
    if given is None:
        return rho("x", "y")
    r_xy, r_xg, r_yg = rho("x", "y"), rho("x", "g"), rho("y", "g")
    return (r_xy - r_xg * r_yg) / math.sqrt((1 - r_xg ** 2) * (1 - r_yg ** 2))
