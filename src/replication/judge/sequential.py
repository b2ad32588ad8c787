"""Seeds by a registered sequential rule: a two-stage group-sequential design (rules.sequential).

Rule: stage 1 runs `stage_one_seeds` seeds (n1) of every arm. A contrast still inconclusive after it
whose seeds-needed estimate (verdicts.seeds_needed, at the observed mean and spread) is at most
`seeds_needed_at_most` gets `further_seeds` more seeds (n2 = n1 + further) for the arms it reads
(select). Each one-sided test of the verdict table (verdicts.py) spends its error alpha across the
two looks by the Lan-DeMets function `spending` at information fractions t1 = n1 / n2 and 1:
    pocock           alpha(t) = alpha ln(1 + (e - 1) t)
    obrien-fleming   alpha(t) = 2 (1 - Phi(z_{1 - alpha/2} / sqrt(t)))
Each look decides by the verdict table with its own critical value in place of t_{1 - alpha}
(boundaries): c1 = t_{1 - alpha(t1), n1 - 1} spends alpha(t1) at stage 1, exactly; c2 spends the
rest, P(T1 <= c1, T2 > c2) = alpha - alpha(t1) at the margin, where T1, T2 are the two looks'
t-statistics (T2 on all n2 seeds, so the two share the first n1 and correlate about sqrt(n1 / n2)).
With 5 seeds the t-statistics are far from normal: the normal boundary (bivariate normal with
correlation sqrt(n1 / n2)) taken to the t scale spends 2.7% instead of 2.5% when every contrast
continues, so c2 is calibrated by simulation instead (CALIBRATION draws from a fixed seed; under the
margin the t-statistics do not depend on the mean or the SD). Selection only removes
continuations, so it can only lower the error; tests/test_sequential.py checks the design's type I
error and power on constructed data. A decision at stage 1 is never revisited (decide).

A best-of contrast (measure.best_of) reads only the half of a stage's seeds that did not choose its
winner (3 of 5, then 8 of 15): its looks have boundaries of their own from the same spending (looks,
boundaries with held_out: c1 on its own degrees of freedom; c2 by the same simulation over the seeds
each look reads, which share none, so the two looks are independent). A count of seeds no look makes
is refused (LookError): there is no fallback level. The documents' examples, outside the run's
seeds, have one look at alpha (kinds._contrast).

Under this design stage 1 decides at c1, not at t_{1 - alpha}: kinds._contrast decides every paired
contrast at its look (look: the alpha each look spends, so its interval is the one that decided). Registered for run 3 (rules.sequential in analysis/rules.yaml):
    stage_one_seeds: 5, further_seeds: 10, seeds_needed_at_most: 15, spending: pocock,
    conditions_at_most: 12 (the budget's cap on stage 2), first: the five studies' claims
(alpha 0.025: stage 1 at 0.0113 one-sided, t_4 critical 3.61; stage 2 with 15 seeds at t_14 2.31).
"""
import math

import numpy as np
from functools import cache

from scipy import stats

from .measure import InputError
from .verdicts import CONTRADICTED, INCONCLUSIVE, NO_EFFECT, REPRODUCED, level_label, one_sided_label


def seeds(design):
    """(n1, n2): the seeds of each arm at stage 1 and, for a selected contrast, at stage 2."""
    return design["stage_one_seeds"], design["stage_one_seeds"] + design["further_seeds"]


def spent(design, alpha):
    """The one-sided error spent by the end of stage 1, alpha(t1), by the registered function."""
    n1, n2 = seeds(design)
    t = n1 / n2
    if design["spending"] == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    return 2 * (1 - stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(t)))


CALIBRATION = 500_000          # simulated pairs of looks that place c2


def boundaries(design, alpha, held_out=False):
    """(c1, c2): the critical values of each one-sided test at stage 1 and stage 2, spending alpha
    across the two looks (module docstring); `held_out`: the looks of a best-of contrast, which
    reads the held-out half of each stage's seeds (looks)."""
    n1, n2 = seeds(design)
    return _boundaries(n1, n2, spent(design, alpha), alpha, held_out)


@cache
def _boundaries(n1, n2, first, alpha, held_out=False):
    """c1 spends `first` on the first look's degrees of freedom; c2 the rest, by simulation of the
    two looks' t-statistics on the seeds each reads (shared seeds make them correlate; a best-of's
    held-out halves share none)."""
    look1, look2 = (range(n1 // 2, n1), range(n2 // 2, n2)) if held_out else (range(n1), range(n2))
    c1 = float(stats.t.isf(first, len(look1) - 1))
    d = np.random.default_rng(0).standard_normal((CALIBRATION, n2))       # at the margin, shifted to 0
    t = lambda x: x.mean(axis=-1) / (x.std(axis=-1, ddof=1) / math.sqrt(x.shape[-1]))
    second = np.where(t(d[:, list(look1)]) <= c1, t(d[:, list(look2)]), -np.inf)
    return c1, float(np.quantile(second, 1 - (alpha - first)))


def decide_at(diffs, margin, direction, critical):
    """The verdict table (verdicts.py) at one look, with `critical` in place of t_{1 - alpha}, over
    the last axis of `diffs` (paired differences signed so that a positive one supports the claim):
    an array of verdicts, one per row. A claim of no effect (direction 'equal') is reproduced inside
    +-m and contradicted beyond it."""
    d = np.asarray(diffs, dtype=float)
    se = d.std(axis=-1, ddof=1) / math.sqrt(d.shape[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        above = (d.mean(axis=-1) - margin) / se > critical          # delta > +m
        below = (d.mean(axis=-1) + margin) / se < -critical         # delta < -m
        inside = ((d.mean(axis=-1) + margin) / se > critical) & ((d.mean(axis=-1) - margin) / se < -critical)
    if direction == "equal":
        return np.select([inside, above | below], [REPRODUCED, CONTRADICTED], INCONCLUSIVE)
    return np.select([above, below, inside], [REPRODUCED, CONTRADICTED, NO_EFFECT], INCONCLUSIVE)


def settles_within(diffs, margin, alpha, bound):
    """Whether the seeds-needed estimate (verdicts.seeds_needed) is at most `bound`, over the last
    axis of `diffs`: t_{1 - alpha, n - 1} sd / sqrt(n) falls with n, so it is whether it lies below
    the gap | |mean| - m | at n = bound."""
    d = np.asarray(diffs, dtype=float)
    sd, gap = d.std(axis=-1, ddof=1), np.abs(np.abs(d.mean(axis=-1)) - margin)
    return (sd > 0) & (stats.t.ppf(1 - alpha, bound - 1) * sd / math.sqrt(bound) < gap)


def decide(diffs, margin, direction, design, alpha):
    """A contrast's verdict given both looks: its first n1 seeds decide at c1 (never revisited);
    undecided, with its n2 seeds present, they decide at c2; else it stays inconclusive. Over the
    last axis of `diffs` (n1 or n2 per row)."""
    n1, n2 = seeds(design)
    c1, c2 = boundaries(design, alpha)
    d = np.asarray(diffs, dtype=float)
    first = decide_at(d[..., :n1], margin, direction, c1)
    if d.shape[-1] < n2:
        return first
    return np.where(first == INCONCLUSIVE, decide_at(d[..., :n2], margin, direction, c2), first)


def for_run(rules, seeds):
    """The rules a run is judged by: the registered design governs a run of its stage-1 seeds (the
    registered run, and its stage-2 seeds beside them); a profile that runs another number of seeds
    (the smoke run's two) has no such looks, and decides each contrast at one look at alpha."""
    design = rules.get("sequential")
    if design and len(seeds) != design["stage_one_seeds"]:
        return {k: v for k, v in rules.items() if k != "sequential"}
    return rules


def looks(design):
    """{seeds read: (stage, held_out)}: every look the design makes. Each stage reads all its seeds
    (n1, then n2); a best-of contrast reads the half of them that did not choose its winner
    (measure.selection_seeds: the first half chooses, the rest judge)."""
    n1, n2 = seeds(design)
    return {n1: (1, False), n2: (2, False), n1 - n1 // 2: (1, True), n2 - n2 // 2: (2, True)}


class LookError(InputError):
    """A contrast read over a count of seeds that no look of the registered design makes."""


def look(rules, n):
    """The rules a paired contrast over n seeds is decided by under the registered design
    (rules.sequential): at a stage-1 look alpha is the error alpha(t1) it spends, at a stage-2 look
    the one-sided error of c2 on its own degrees of freedom, so that deciding by p < alpha is
    deciding by t > c1 or t > c2, and the interval shown (1 - 2 alpha) is the one that decided.
    Without a design, the rules as they are. A count of seeds no look makes (looks) is a LookError:
    there is no fallback level."""
    design = rules.get("sequential")
    if not design:
        return rules
    if n not in looks(design):
        made = ", ".join(f"{k} ({'held-out half of ' if held else ''}stage {stage})"
                         for k, (stage, held) in sorted(looks(design).items()))
        raise LookError(f"a paired contrast read over {n} seeds, a look rules.sequential does not make (its looks: "
                        f"{made} seeds); finish the missing runs, or register a design with that look")
    stage, held_out = looks(design)[n]
    if stage == 1:
        return {**rules, "alpha": spent(design, rules["alpha"])}
    return {**rules, "alpha": float(stats.t.sf(boundaries(design, rules["alpha"], held_out)[1], n - 1))}


def select(judged, claims, design, conditions_of):
    """The contrasts the rule gives further seeds after stage 1: every contrast of a judged claim
    (claims.json, as dicts) still inconclusive whose seeds_needed is at most the registered bound,
    with the conditions its two arms read (`conditions_of(spec)`, measure.conditions_of) and the
    seeds each gets. claims: the registry's claims by id.

    The cap keeps stage 2 within the run's budget: contrasts are taken in the registered order (the
    claims named in `first`, in that order, then the fewest seeds needed) while the conditions they
    read number at most `conditions_at_most`; a contrast past the cap is listed with capped: True
    and gets no seeds."""
    n1, n2 = seeds(design)
    candidates = []
    for j in judged:
        for c in j.get("contrasts") or ([j["contrast"]] if j.get("contrast") else []):
            needed = c.get("seeds_needed")
            if c["verdict"] != INCONCLUSIVE or needed is None or needed > design["seeds_needed_at_most"]:
                continue
            arms = claims[j["id"]]["arms"]
            candidates.append({"id": j["id"], "a": c["a"], "b": c["b"], "seeds_needed": needed,
                               "conditions": list(dict.fromkeys(conditions_of(arms[c["a"]]) + conditions_of(arms[c["b"]])))})
    first = design["first"]
    candidates.sort(key=lambda c: (first.index(c["id"]) if c["id"] in first else len(first), c["seeds_needed"]))
    running = set()
    for c in candidates:
        c["capped"] = len(running | set(c["conditions"])) > design["conditions_at_most"]
        c["seeds"] = [] if c["capped"] else list(range(n1, n2))
        running |= set() if c["capped"] else set(c["conditions"])
    return candidates


def simulate(effect, margin, direction, design, alpha, replicates=20_000, seed=0, every=False):
    """The share of each verdict of the two-stage design on constructed data: per-seed paired
    differences drawn N(effect, 1) (effect in units of their SD), `replicates` times from a fixed
    seed; the rule's selection after stage 1 (`every`: every inconclusive contrast continues)."""
    n1, n2 = seeds(design)
    c1, c2 = boundaries(design, alpha)
    d = np.random.default_rng(seed).normal(effect, 1.0, size=(replicates, n2))
    first = decide_at(d[:, :n1], margin, direction, c1)
    goes_on = (first == INCONCLUSIVE) & (every | settles_within(d[:, :n1], margin, alpha,
                                                                 design["seeds_needed_at_most"]))
    final = np.where(goes_on, decide_at(d, margin, direction, c2), first)
    return {v: float(np.mean(final == v)) for v in (REPRODUCED, CONTRADICTED, NO_EFFECT, INCONCLUSIVE)} | \
        {"continued": float(np.mean(goes_on))}


def level_text(rules):
    """The level of a paired contrast's interval, as printed: the registry's (verdicts.level_label),
    or under a registered design each look's ('97.7% at 5 seeds, 96.9% at 15' at alpha 0.025), whose
    bounds are the tests that decided (look)."""
    return _at_each_look(rules, level_label)


def one_sided_text(rules):
    """The level of each one-sided test of a paired contrast, as printed ('2.5%', or each look's)."""
    return _at_each_look(rules, one_sided_label)


def level_texts(rules):
    """(level_text, one_sided_text) of the registry's rules: the levels verdicts.verdict_rules prints."""
    return level_text(rules), one_sided_text(rules)


def _at_each_look(rules, label):
    design = rules.get("sequential")
    if not design:
        return label(rules)
    n1, n2 = seeds(design)
    return f"{label(look(rules, n1))} at {n1} seeds, {label(look(rules, n2))} at {n2}"
