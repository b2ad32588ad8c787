"""Every rule that turns numbers into a verdict, and the words, order, colours and shapes of the
verdicts: the one home of both. Every other module imports them from here.

The confidence level is one setting, rules.alpha (analysis/rules.yaml): each one-sided test is at
level alpha, so every interval shown is the (1 - 2 alpha) interval whose bounds the tests read
(level_label, one_sided_label: how the page and README print them).

Rule, per contrast: d = paired per-seed differences, signed so that a positive d supports the
claim; mean d_bar, standard error s, n - 1 degrees of freedom, margin m >= 0, and each one-sided
test at level alpha.
    reproduced            H0: delta <= m rejected       (lower bound > +m)
    contradicted          H0: delta >= -m rejected      (upper bound < -m)
    no meaningful effect  both H0: delta <= -m and H0: delta >= m rejected (TOST: interval inside +-m)
    inconclusive          otherwise
    not testable here     a reference arm did not train on the quantity the claim reads, or the
                          registry says so (`not_testable`, with its reason)
A bound is an answer: an interval that settles nothing is inconclusive, and says which effects it
rules out. A published effect no larger than the margin forbids `reproduced` (an effect beyond +m
cannot reproduce it) and nothing else. A claim of no effect is reproduced only where its registered
positive control (a contrast the same measurement should see) lies beyond +m by the same test:
without one, or with one that does not, the measurement has not shown it could see an effect of the
margin's size, and the claim is inconclusive (positive_control). Beside each verdict stands the
magnitude comparison: whether the published effect lies inside our interval, below it or above it.
A claim with several contrasts (legs) holds only if every one does (an intersection-union test,
which needs no correction within the claim), and a decided leg is never hidden behind an undecided
one: any contradicted -> contradicted; else any without meaningful effect -> no meaningful effect
(the claim that every leg clears the margin is refuted, whatever the open legs show); else any not
testable -> not testable here; any inconclusive -> inconclusive; all reproduced -> reproduced. Each
leg keeps its own verdict and reason beside the claim's.
Every answer an interval gives is stated: for each judged leg with a published effect, whether that
effect lies inside our interval or is ruled out (ours larger or smaller), in its reason
(published_answer), whatever the verdict. A claim whose published size is ruled out while its
direction against the margin is undecided (inconclusive) carries the mandatory label RULED_OUT, not
a verdict word of its own: the verdict answers one registered question (does the effect clear the
margin, one-sided tests at alpha) and the magnitude another (does our interval hold the published
size); a word that mixed them would break the one-to-one of verdict and test, the counts by verdict
and the verdicts registered before it, while a label is shown wherever the verdict is (the studies
table, claims.md, the counts) and counted apart.
A registered alternative probe that decides the claim the opposite way (reproduced on one,
contradicted on another) is named in a label of its own with its figure (reverses_label); `depends
on` names the alternatives that only weaken the verdict (robustness.py).
Across the registry, Benjamini-Hochberg q-values over one p per decided claim (the p of the test
behind its verdict, read on the legs that gave it: the largest over the legs of an
intersection-union claim that decided it; for an inconclusive claim the smallest of its three tests)
are shown as a screen. They decide nothing.
"""
import math

import numpy as np
from scipy import stats

from . import stats as numbers

# ---------------------------------------------------------------- the vocabulary

REPRODUCED = "reproduced"                  # the verdicts of a paired, interval or correlation claim
CONTRADICTED = "contradicted"
NO_EFFECT = "no meaningful effect"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"         # a reference arm did not train, or the registry says why
EXACT_MATCH = "exact match"                # the verdicts of a printed figure or bound
WITHIN_BOUND = "within bound"
MISMATCH = "mismatch"
NOT_TESTED = "not tested"                  # the registry's statement why the study cannot test it
VERDICTS = (REPRODUCED, CONTRADICTED, NO_EFFECT, INCONCLUSIVE, NOT_TESTABLE, EXACT_MATCH, WITHIN_BOUND, MISMATCH,
            NOT_TESTED)                                                  # the order of every table and list
DECIDED = (REPRODUCED, CONTRADICTED, NO_EFFECT)                         # a test rejected its null
JUDGED = (*DECIDED, INCONCLUSIVE)                                        # a paired or interval verdict
NOT_JUDGED = (NOT_TESTABLE, NOT_TESTED)
SHAPE = {REPRODUCED: "●", CONTRADICTED: "■", NO_EFFECT: "◆", INCONCLUSIVE: "▲", NOT_TESTABLE: "✕", NOT_TESTED: "✕",
         EXACT_MATCH: "●", WITHIN_BOUND: "●", MISMATCH: "■"}
CLASS = {REPRODUCED: "ok", EXACT_MATCH: "ok", WITHIN_BOUND: "ok", CONTRADICTED: "bad", MISMATCH: "bad",
         NO_EFFECT: "null", INCONCLUSIVE: "open", NOT_TESTABLE: "grey", NOT_TESTED: "grey"}
STYLE = {REPRODUCED: ("#009E73", "o"), CONTRADICTED: ("#D55E00", "s"), NO_EFFECT: ("#0072B2", "D"),
         INCONCLUSIVE: ("#E69F00", "^"), NOT_TESTABLE: ("#999999", "x"), NOT_TESTED: ("#999999", "x")}
# Okabe-Ito colours and matplotlib markers of the figures
OPPOSITE = {REPRODUCED: CONTRADICTED, CONTRADICTED: REPRODUCED}           # the decisions that reverse each other
RULED_OUT = "published size ruled out"     # the label of an inconclusive claim whose interval excludes it
ORIGINS = {   # who makes a claim (a claim's `origin`, else its section's), in the words of the counts
    "literature": "literature claims (published papers' results)",   # each origin counted apart, in this order
    "document": "of the documents' own claims and examples",
    "addition": "claims this study added",
}


def verdict_rules(interval, each, brief=False):
    """(verdict, rule) with the paired interval's level `interval` and each one-sided test's `each` as
    printed (sequential.level_texts: the registered level, or each look's): one source for README and
    the report; `brief`: each rule without its qualification (the report's key, beside which the
    Legend holds the rest)."""
    rules_and_qualifications = [
        (REPRODUCED, f"the lower bound of the paired effect's interval ({interval}) lies above +m "
                     f"(one-sided test of delta <= m at {each}), for every contrast of the claim", None),
        (CONTRADICTED, f"the upper bound lies below -m (one-sided test of delta >= -m at {each}), for any contrast",
         None),
        (NO_EFFECT, "the whole interval lies inside (-m, +m) (two one-sided tests, TOST), for any contrast that "
                    "no other contradicts: a decided leg is never hidden behind an undecided one", None),
        (INCONCLUSIVE, "otherwise: the interval reaches across a margin",
         f"with the published size outside it, labelled '{RULED_OUT}'"),
        (NOT_TESTABLE, "a declared reference arm did not train on the quantity the claim reads, or the registry "
                       "states why the design cannot test it",
         "an underpowered interval is inconclusive, with the effects it rules out, and a published effect no larger "
         "than the margin forbids reproduced only"),
    ]
    return [(v, rule if brief or not more else f"{rule}; {more}") for v, rule, more in rules_and_qualifications]


MAGNITUDES = {   # where the published effect lies against our interval: the replication's second criterion
    "inside": "published inside ours",
    "below": "ours larger than published",
    "above": "ours smaller than published",
}
DOCUMENT_VERDICTS = [
    (EXACT_MATCH, "a printed number reproduced to half a unit of its last printed digit"),
    (WITHIN_BOUND, "a printed or analytic bound holds (for example a gradient error below 1e-8)"),
    (MISMATCH, "a printed number not reproduced to its digit (often float summation order, not a contradiction)"),
    (NOT_TESTED, "the study cannot test it; the claim says why"),
]
STEPS = [   # (step, rule, code): how a verdict is reached, in order; README's table is generated from this list
    ("primary analysis", "one per claim, registered: the probe and embedding its key reads (the all-label linear "
     "probe where the published figure is an all-label linear evaluation), the top rung of a ladder claim at which "
     "that probe was evaluated (else the budget), the compute basis (`basis`: arms that spend differently per step "
     "are paired at the rungs where they have spent the same encoder passes, images x views; default equal steps); "
     "where the records hold the probe at no rung the claim reads, its stand-in (the few-label probe), labelled",
     "judge/judge.py, judge/ladder.py, judge/robustness.py"),
    ("untrained control", "every run's step-0 checkpoint, probed (as every checkpoint is) with BatchNorm statistics "
     "re-estimated on training images; the uncalibrated figure is kept beside it", "run/calibration.py, run/evaluate.py"),
    ("trained", "the arm's gain removes at least `rules.control_error_removed` of its control's error (lower bound of "
     "the interval), on the claim's own probe where it is one (else the linear probe of the embedding it measures)",
     "judge/gates.py"),
    ("gated arms", "only a contrast's declared reference arms (`reference`, default the b arms; an arm the claim "
     "predicts will fail is its outcome, recorded as such); of a `best_of` arm only the chosen candidate, chosen on "
     "half the seeds and judged on the others", "judge/kinds.py, judge/measure.py"),
    ("decision", "the verdict table above, per contrast; a claim holds only if every contrast does "
     "(intersection-union), and a decided contrast is never hidden behind an undecided one; an inconclusive "
     "interval states the effects it rules out", "judge/verdicts.py"),
    ("magnitude", "beside every verdict with a published effect, read on the primary: whether that effect lies "
     "inside our interval or is ruled out (ours larger or smaller), stated in each contrast's reason",
     "judge/verdicts.py"),
    ("baseline", "where the two sides already differ at step 0 beyond the margin (h against z), the contrast of their "
     "gains over step 0, a registered alternative", "judge/kinds.py"),
    ("correlations", "Spearman's rho across the named conditions, one value per condition (the mean of its seeds, "
     "so that a condition with more seeds weighs no more), the outcome on the primary probe; its interval from a "
     "bootstrap over conditions", "judge/kinds.py, judge/stats.py"),
    ("screen", "Benjamini-Hochberg q-values over the registry's decided claims, shown beside each verdict; they "
     "decide nothing, so adding a claim never moves another's verdict", "judge/verdicts.py"),
    ("convergence", "one rule for every judged verdict, whichever way it points: each contrast that gives the "
     "verdict is carried one more doubling of steps by its per-seed change over the last one (d + (d - d_start)) and "
     "decided again at its own level; where that gives another verdict the claim is `not converged`, and a decided "
     "verdict is held inconclusive, read before convergence, beside the verdict its interval gave. Each arm's own "
     "move is shown, and decides nothing", "judge/verdicts.py, judge/judge.py, judge/ladder.py"),
    ("looks", "under the registered sequential design every look has its own boundary from the same alpha spending: "
     "each stage's seeds, and the held-out half of them that a best-of contrast reads; a count of seeds no look "
     "makes stops the analysis", "judge/sequential.py"),
    ("provenance", "each snapshot of the verdicts after a registration records the results it was judged on: a "
     "move between two snapshots on the same results is a rule's (post hoc), one between snapshots on different "
     "results is the registered data's (the sequential rule's stage-2 seeds), and is not post hoc",
     "judge/judge.py, judge/registration.py"),
    ("robustness", "re-judged under each registered alternative: the other probes, the rung that starts the last "
     "doubling, the other compute bases where rungs allow, the gain over step 0, Benjamini-Hochberg; `robust` when "
     "all agree, a probe that decides the other way named (`reverses on ...`), a probe that decides an undecided "
     "primary named with its decision (`contradicted on ...`, `reproduced on ...`), else `depends on: ...`",
     "judge/robustness.py"),
    ("labels", "`calibrated` (the setup was tuned to the figure: never counted as judged), `realisation` (judged "
     "against float realisations of one seed), `post hoc` (a rule changed after the registration moved it: shown "
     "beside the verdict the registered rule gives on the same results), `not converged` (the convergence rule "
     "above), `unstable` (half a standard error moves the "
     f"verdict, by the claim's own rule), `{RULED_OUT}` (inconclusive, the published size outside the interval), "
     "`reverses on ...` (a registered probe decides the other way), `contradicted on ...` or `reproduced on ...` (an "
     "undecided primary decided by another registered probe), `read on ...` (a stand-in probe)",
     "judge/judge.py, judge/verdicts.py"),
]
TREND_RULES = [   # (label, rule): checked in this order; registered in analysis/rules.yaml before any ladder run
    ("flips", "the top rung's verdict is reproduced and the first trained rung's contradicted, or the reverse"),
    ("stable", "-m < b_lo and b_hi < m: the effect moves by less than the margin per decade of steps"),
    ("grows toward the claim", "b_lo > 0"),
    ("moves against the claim", "b_hi < 0"),
    ("unclear", "otherwise"),
]


def rank(verdict):
    """A verdict's place in VERDICTS (an unknown word last)."""
    return VERDICTS.index(verdict) if verdict in VERDICTS else len(VERDICTS)


# ---------------------------------------------------------------- the confidence level

def level(rules):
    """The level of every interval shown: 1 - 2 alpha, so its bounds are the one-sided tests'."""
    return 1 - 2 * rules["alpha"]


def level_label(rules):
    """The level of every interval, as printed: '95%' at alpha = 0.025."""
    return percent(level(rules))


def one_sided_label(rules):
    """The level of each one-sided test (alpha), as printed."""
    return percent(rules["alpha"])


def percent(fraction):
    return f"{100 * fraction:.3g}%"


# ---------------------------------------------------------------- one contrast

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
        return REPRODUCED
    if p["p_contradicted"] < alpha:
        return CONTRADICTED
    if p["p_equivalent"] < alpha:
        return NO_EFFECT
    return INCONCLUSIVE


def as_equivalence_claim(p):
    """The p-values of a claim that predicts no effect (direction 'equal'): reproduced when the
    interval lies inside +-m (TOST), contradicted when it lies beyond +m or beyond -m."""
    return {"p_reproduced": p["p_equivalent"], "p_contradicted": min(p["p_reproduced"], p["p_contradicted"]),
            "p_equivalent": 1.0}


NO_POSITIVE_CONTROL = "no registered positive control has shown the measurement can see an effect of the margin's size"


def positive_control(c, control):
    """A contrast of a claim of no effect as decided once its positive control is read (`control`:
    that contrast, decided against the same margin, or None): reproduced stands only where the
    control is reproduced; otherwise it is inconclusive, with the reason."""
    if c["verdict"] != REPRODUCED or (control or {}).get("verdict") == REPRODUCED:
        return c
    found = "" if control is None else (f" (its positive control, {control['a']} against {control['b']}, is "
                                        f"{control['verdict']})")
    return {**c, "verdict": INCONCLUSIVE, "reason": NO_POSITIVE_CONTROL + found}


def seeds_needed(diffs, margin, rules):
    """Seeds the observed spread would need for the interval to clear the margin (or to sit inside
    it), assuming the mean and SD stay as observed; None when no finite number would do."""
    d = np.asarray(diffs, dtype=float)
    sd, gap = d.std(ddof=1) if len(d) > 1 else 0.0, abs(abs(d.mean()) - margin)
    if sd == 0 or gap == 0:
        return None
    for n in range(2, 10_001):
        if stats.t.ppf(1 - rules["alpha"], n - 1) * sd / math.sqrt(n) < gap:
            return n
    return None


def decide_contrast(c, untrained, rules, scale=1.0, unit=""):
    """A paired contrast's verdict (c holds its diffs, margin, p-values and published effect), with
    its reason: not testable when a reference arm did not train (`untrained`: their reasons); a
    published effect no larger than the margin turns `reproduced` into inconclusive; an
    inconclusive interval states the effects it rules out and the seeds that would settle it.
    Every number in a reason is in the claim's unit (scale, unit)."""
    margin, effect = c["margin"], c["published_effect_value"]
    c["magnitude"] = magnitude(effect, c.get("diff_ci95"))
    if untrained:
        return {**c, "verdict": NOT_TESTABLE, "reason": "; ".join(untrained)}
    c["verdict"] = decide(c, rules["alpha"])
    if published_answer(c, scale, unit):
        c["published_answer"] = published_answer(c, scale, unit)
    if c["verdict"] == REPRODUCED and effect is not None and abs(effect) <= margin:
        c["verdict"] = INCONCLUSIVE
        c["reason"] = (f"the published effect ({_in(effect, scale, unit)}) is no larger than the margin "
                       f"({_in(margin, scale, unit, sign=False)}), so an effect beyond the margin cannot reproduce it")
    if c["verdict"] == INCONCLUSIVE:
        c["seeds_needed"] = seeds_needed(c["diffs"], margin, rules)
        c["reason"] = "; ".join(filter(None, [c.get("reason"), bound(c, rules, scale, unit)]))
    return c


def _in(value, scale, unit, sign=True):
    """A number of the claim's raw scale in its unit: '+3.7 points'."""
    return f"{value * scale:{'+' if sign else ''}.3g}{unit}"


def bound(c, rules, scale=1.0, unit=""):
    """What an inconclusive interval still says: the effects it rules out, and the seeds that would
    settle it (or that no number within the registry's bound would): where the published effect is
    already ruled out (published_answer says so beside it), the seeds settle only the direction
    against the margin, and say so, so that they do not read as an open question about the
    published size."""
    lo, hi = c["diff_ci95"]
    needed = c.get("seeds_needed")
    what = "the direction against the margin" if c.get("magnitude") in ("below", "above") else "it"
    power = (f"about {needed} seeds would settle {what}" if needed and needed <= rules["max_seeds"] else
             f"more than the registry's {rules['max_seeds']} seeds would be needed to settle {what}")
    return (f"the interval rules out effects below {_in(lo, scale, unit)} and above {_in(hi, scale, unit)}; "
            f"{power}")


def published_answer(c, scale=1.0, unit=""):
    """What a judged contrast's interval says of its published effect, whatever its verdict: inside
    ours, or ruled out with ours larger or smaller ('the published +6.4 points is ruled out, ours is
    smaller: -1.7 [-6.1, +2.7] points'); None without a published effect or an interval."""
    place = c.get("magnitude")
    if place is None or c.get("verdict") == NOT_TESTABLE:
        return None
    lo, hi = c["diff_ci95"]
    ours = f"{c['diff_mean'] * scale:+.3g} [{lo * scale:+.3g}, {hi * scale:+.3g}]{unit}"
    published = f"the published {_in(c['published_effect_value'], scale, unit)}"
    if place == "inside":
        return f"{published} lies inside ours: {ours}"
    return f"{published} is ruled out, ours is {'larger' if place == 'below' else 'smaller'}: {ours}"


def ruled_out(verdict, contrasts):
    """Whether a claim carries RULED_OUT: undecided (inconclusive) with a leg whose interval excludes
    its published effect."""
    return verdict == INCONCLUSIVE and any(c.get("magnitude") in ("below", "above") and c.get("published_answer")
                                           for c in contrasts)


def reversals(primary_verdict, alternatives):
    """The alternative probes that decide a claim the opposite way: against a decided primary, each
    with the opposite decision (OPPOSITE); against an undecided one, every decided probe where the
    probes decide both ways."""
    decided = [a for a in alternatives if a["dimension"] == "probe" and a["verdict"] in OPPOSITE]
    if primary_verdict in OPPOSITE:
        return [a for a in decided if a["verdict"] == OPPOSITE[primary_verdict]]
    return decided if {a["verdict"] for a in decided} == set(OPPOSITE) else []


READ_BEFORE_CONVERGENCE = ("read before convergence: a verdict, whichever way it points, stands only where its "
                           "effect, carried one more doubling of steps by its change over the last one, gives the "
                           "same verdict")


def decided_elsewhere(primary_verdict, alternatives, reversing=()):
    """Against an undecided primary, the probes that decide the claim (and reverse nothing): each is
    named with its decision, so that 'depends on: probe' does not hide which way they decide."""
    if primary_verdict in OPPOSITE:
        return []
    return [a for a in alternatives if a["dimension"] == "probe" and a["verdict"] in OPPOSITE and a not in reversing]


def decided_on_label(verdict, probes_deciding, scale=1.0, unit="", primary=None):
    """One label for the probes that decide an undecided claim the same way, each with its figure
    (`probes_deciding`: (probe's words, alternative) pairs): 'contradicted on kNN: -9.7 [-12, -7.4]
    points; centred kNN: -9.1 [-11.5, -6.7] points'; each read at another look than the primary
    contrast's (`primary`) names its seeds and level."""
    return f"{verdict} on {_probe_figures(probes_deciding, scale, unit, primary)}"


def reverses_label(probes_reversing, scale=1.0, unit="", primary=None):
    """One label naming the probes that reverse a claim, each with its figure: 'reverses on weighted
    kNN: -10.1 [-11, -9.2] points (15 seeds, 96.9%)', the look named where it is not the primary's."""
    return f"reverses on {_probe_figures(probes_reversing, scale, unit, primary)}"


def _probe_figures(named, scale, unit, primary=None):
    """Each probe's figure, with the seeds and level of the look it was read at where they differ
    from the primary contrast's (an alternative evaluated on other seeds decides at its own look)."""
    own = (len((primary or {}).get("seeds") or []), (primary or {}).get("level"))
    look = lambda a: f" ({a['seeds']} seeds, {percent(a['level'])})" \
        if a.get("seeds") and a.get("level") and (a["seeds"], a["level"]) != own else ""
    return "; ".join(f"{words}: {a['diff_mean'] * scale:+.3g} [{a['diff_ci95'][0] * scale:+.3g}, "
                     f"{a['diff_ci95'][1] * scale:+.3g}]{unit}{look(a)}" for words, a in named)


def stand_in_label(probe_words):
    """The label of a claim read on a stand-in probe where its own was not evaluated (probes.STAND_IN)."""
    return f"read on {probe_words}: its probe was not evaluated at the rungs it reads"


def magnitude(published, ci):
    """Where the published effect lies against our interval (MAGNITUDES), or None without both."""
    if published is None or not ci or None in ci:
        return None
    lo, hi = ci
    return "inside" if lo <= published <= hi else "below" if published < lo else "above"


def beyond_margin(diffs, margin, rules):
    """Whether paired differences lie beyond +-margin, either way (the one-sided tests at alpha)."""
    return decide(tests(diffs, margin), rules["alpha"]) in (REPRODUCED, CONTRADICTED)


def contrast_verdict(diffs, margin, direction, alpha):
    """The verdict the claim's own decision rule gives these differences (TOST for a claim of no
    effect, the one-sided table otherwise)."""
    p = tests(diffs, margin)
    return decide(as_equivalence_claim(p) if direction == "equal" else p, alpha)


def decide_interval(lo, hi, margin):
    """The same table read off an interval (a correlation's Fisher-z interval)."""
    if lo > margin:
        return REPRODUCED
    if hi < -margin:
        return CONTRADICTED
    if -margin < lo and hi < margin:
        return NO_EFFECT
    return INCONCLUSIVE


def combine(verdicts):
    """A claim's verdict from its contrasts' (intersection-union; a decided leg first, module
    docstring)."""
    if not verdicts:
        return INCONCLUSIVE
    for dominant in (CONTRADICTED, NO_EFFECT, NOT_TESTABLE, INCONCLUSIVE):
        if dominant in verdicts:
            return dominant
    return verdicts[0] if all(v == verdicts[0] for v in verdicts) else INCONCLUSIVE


def unstable(c, rules):
    """Whether the contrast's verdict, by the claim's own decision rule, changes when its effect
    moves by half a standard error."""
    if c.get("diff_mean") is None or c["verdict"] == NOT_TESTABLE or not c.get("diffs"):
        return False
    decided = contrast_verdict(c["diffs"], c["margin"], c.get("direction"), rules["alpha"])
    shifted = [contrast_verdict([d + s * c["se"] / 2 for d in c["diffs"]], c["margin"], c.get("direction"),
                                rules["alpha"]) for s in (1, -1)]
    return any(v != decided for v in shifted)


def reason(c, scale=1.0, unit=""):
    """What the measured interval says, in the claim's unit, for a verdict other than reproduced."""
    if c.get("diff_mean") is None or c["verdict"] == REPRODUCED:
        return ""
    lo, hi = (_in(v, scale, unit) for v in c["diff_ci95"])
    m = _in(c["margin"], scale, unit, sign=False)
    if c["verdict"] == CONTRADICTED and c.get("direction") == "equal":
        return f"the claim predicts no effect, but the interval [{lo}, {hi}] lies beyond the margin ±{m}"
    if c["verdict"] == CONTRADICTED:
        return f"the effect runs against the claim beyond the margin (interval [{lo}, {hi}] below −{m})"
    if c["verdict"] == NO_EFFECT:
        return f"the whole interval [{lo}, {hi}] lies inside the margin ±{m}"
    return f"the interval [{lo}, {hi}] reaches across the margin ±{m}"


def where_interval_lies(lo, hi, margin):
    """Where an interval lies against +-margin, in words read off its numbers alone: 'lies above
    +m', 'lies below -m', 'lies inside +-m' or 'reaches across' the margin it crosses."""
    m = f"{margin:.3g}"
    if lo > margin:
        return f"lies above +{m}"
    if hi < -margin:
        return f"lies below −{m}"
    if -margin < lo and hi < margin:
        return f"lies inside ±{m}"
    return f"reaches across ±{m}"


def interval_reason(lo, hi, margin, level, unit=""):
    """The report's one-line reason read off an interval (at `level`) in the claim's unit: where it
    lies against the margin (where_interval_lies), so that the words never contradict the figures."""
    where = where_interval_lies(lo, hi, margin).replace(f"{margin:.3g}", f"{margin:.3g}{unit}")
    return f"{percent(level)} interval {lo:+.3g} to {hi:+.3g}{unit} {where}"


def one_more_doubling(c, ends):
    """Whether a contrast keeps its verdict one more doubling of steps on: per seed, its effect d at
    the rung it is read at, extrapolated by its change over the last doubling, d + (d - d_start)
    (d_start from the arms' figures where that doubling starts, `ends`: ladder.last_doubling), and
    decided by the claim's rule at the contrast's own level. Settled when the extrapolated effect
    gives the verdict the measured one gives on the same seeds. None where either arm, or fewer
    than two seeds, were measured at both ends."""
    a, b = ends.get(c["a"]), ends.get(c["b"])
    if a is None or b is None or not c.get("diffs"):
        return None
    sign = -1 if c.get("direction") == "less" else 1
    start = {s: sign * (a["before"][s] - b["before"][s]) for s in c["seeds"] if s in a["before"] and s in b["before"]}
    pairs = [(d, start[s]) for s, d in zip(c["seeds"], c["diffs"]) if s in start]
    if len(pairs) < 2:
        return None
    alpha = (1 - c["level"]) / 2
    measured = [d for d, _ in pairs]
    change, ahead = [d - d0 for d, d0 in pairs], [2 * d - d0 for d, d0 in pairs]
    now = contrast_verdict(measured, c["margin"], c.get("direction"), alpha)
    then = contrast_verdict(ahead, c["margin"], c.get("direction"), alpha)
    return {"b": c["b"], "from_step": a["from_step"], "to_step": a["to_step"], "seeds": len(pairs),
            "change": float(np.mean(change)), "change_interval": numbers.t_interval(change, c["level"]),
            "ahead": float(np.mean(ahead)), "ahead_interval": numbers.t_interval(ahead, c["level"]),
            "verdict_now": now, "verdict_ahead": then, "settled": now == then}


def doubling_text(move, scale=1.0, unit=""):
    """A contrast's move over its last doubling and where one more takes it, in the claim's unit."""
    interval = lambda lo, hi: f"[{lo * scale:+.3g}, {hi * scale:+.3g}]{unit}"
    return (f"the effect moved {move['change'] * scale:+.3g} {interval(*move['change_interval'])} over the last "
            f"doubling ({move['from_step']:,} to {move['to_step']:,} steps), and one more at that pace gives "
            f"{move['ahead'] * scale:+.3g} {interval(*move['ahead_interval'])}: {move['verdict_ahead']}")


# ---------------------------------------------------------------- a reconstruction's free parameter

UNDERDETERMINED = "underdetermined"     # the label of a verdict on a reconstruction with a free parameter


def underdetermined(name, by_value, verdict):
    """Where the verdict of a reconstruction that leaves `name` free holds: the verdict at each swept
    value (`by_value`), the values at which it is the claim's own, and the sentence that says so."""
    swept = sorted(by_value)
    holds = [v for v in swept if by_value[v] == verdict]
    if not holds:
        where = "at none of them"
    elif holds == swept[swept.index(holds[0]):swept.index(holds[-1]) + 1]:
        where = f"at {holds[0]:g}" if len(holds) == 1 else f"from {holds[0]:g} to {holds[-1]:g}"
    else:
        where = "at " + ", ".join(f"{v:g}" for v in holds)
    return {"parameter": name, "swept": [swept[0], swept[-1]], "holds_at": holds,
            "verdicts": [{"value": v, "verdict": by_value[v]} for v in swept],
            "reason": f"the reconstruction leaves {name} free: swept from {swept[0]:g} to {swept[-1]:g}, the "
                      f"verdict ({verdict}) holds {where}"}


# ---------------------------------------------------------------- printed figures

def interval_verdict(ci, lo, hi):
    """A measured mean against a published range [lo, hi]: reproduced when its interval lies
    inside, contradicted when it lies wholly outside, inconclusive when it straddles an edge."""
    if lo <= ci[0] and ci[1] <= hi:
        return REPRODUCED
    if ci[1] < lo or ci[0] > hi:
        return CONTRADICTED
    return INCONCLUSIVE


def prediction_interval(realisations, rules, log=False):
    """Where one more of our runs would fall, at the registered level; for a ratio (log) the
    interval of the log-values, taken back to the ratio's scale."""
    if not log:
        return numbers.prediction_interval(realisations, level(rules))
    lo, hi = numbers.prediction_interval(np.log(realisations), level(rules))
    return [float(np.exp(lo)), float(np.exp(hi))]


def one_run_range_verdict(prediction, lo, hi):
    """A figure or range printed from one run against where one more of our runs would fall:
    reproduced when the two overlap (a run of ours could print it), contradicted when they are
    apart. A single figure is the range of its printed rounding."""
    return CONTRADICTED if prediction[1] < lo or prediction[0] > hi else REPRODUCED


# ---------------------------------------------------------------- the ladder's trend

def ladder_trend(steps, effects, margin, first_verdict, top_verdict, rules):
    """The trend of a contrast along the ladder: b, the slope of its per-seed effect against
    log10(steps) (stats.trend_slopes), with the interval of their mean, labelled by TREND_RULES with
    m the margin per decade. None with fewer than two rungs or two seeds present at every rung."""
    found = numbers.trend_slopes(steps, effects)
    if found is None:
        return None
    slopes, seeds = found
    lo, hi = numbers.t_interval(slopes, level(rules))
    if {first_verdict, top_verdict} == {REPRODUCED, CONTRADICTED}:
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


# ---------------------------------------------------------------- the registry-wide screen

P_OF = {REPRODUCED: "p_reproduced", CONTRADICTED: "p_contradicted", NO_EFFECT: "p_equivalent"}


def claim_p(verdict, contrasts):
    """The one p-value of a judged claim for the screen: the p of the test behind its verdict, read
    on the legs that decided it (a claim of no meaningful effect on its legs without meaningful
    effect, not on a leg left undecided beside them; the weakest of them, or of every leg of a
    reproduced claim, which all must hold); for an inconclusive claim the smallest of its legs'
    three tests. None without a tested leg."""
    tested = [c for c in contrasts if c.get("p_reproduced") is not None]
    if not tested or verdict not in (*P_OF, INCONCLUSIVE):
        return None
    if verdict == INCONCLUSIVE:
        return min(min(c["p_reproduced"], c["p_contradicted"], c["p_equivalent"]) for c in tested)
    deciding = [c for c in tested if c.get("verdict") == verdict] or tested
    if verdict == CONTRADICTED:
        return min(c["p_contradicted"] for c in deciding)
    return max(c[P_OF[verdict]] for c in deciding)


def bh(pvalues):
    """Benjamini-Hochberg q-values, in the input order."""
    if not pvalues:
        return []
    return [float(q) for q in stats.false_discovery_control(pvalues, method="bh")]


def multiplicity_verdict(verdict, q, alpha):
    """The verdict if it had to survive Benjamini-Hochberg at alpha."""
    if verdict in DECIDED and (q is None or q >= alpha):
        return INCONCLUSIVE
    return verdict
