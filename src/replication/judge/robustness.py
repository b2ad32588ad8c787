"""The robustness panel: every paired claim re-judged under each registered alternative choice.

Rule: the primary analysis (registered probe, rung, compute basis; no multiplicity correction) is
re-run with one choice changed at a time (rules.robustness):
    probe         every other class-label probe on the same embedding (probes.PANEL: the few-label and
                  the all-label linear probe, kNN, kNN on centred features, weighted kNN), where the
                  records hold it at the primary's rung (pair): the panel follows the primary, so the
                  few-label probe is an alternative where the all-label one is primary, and a re-read
                  of a published claim on another probe (a withdrawn claim) is one of its alternatives.
                  Registration 2 listed the probes in rules.robustness.probes, with the few-label probe
                  first and plain kNN left out; the panel no longer reads that list
    rung          a ladder claim at the rung that starts the last doubling before its primary rung
                  (the top rung is primary, so no trained rung lies above it)
    basis         each other registered basis (equal steps = equal updates, equal images seen, equal
                  encoder passes) where the arms spend differently per step and the rungs allow a
                  pairing (a at rung r_a, b at r_b with r_a x cost_a = r_b x cost_b)
    baseline      where the two sides already differ before training (step 0) beyond the margin, the
                  contrast of their gains over step 0
    multiplicity  Benjamini-Hochberg: a decided verdict stands only with its q-value below alpha
A claim is `robust` when every alternative gives the primary verdict; a probe that decides it the
other way (verdicts.reversals) is named with its figure (`reverses on weighted kNN: ...`), as is a
probe that decides an undecided primary (`contradicted on kNN: ...`, verdicts.decided_elsewhere); the
other choices that change it only weaken it: `depends on: <those choices>`.
"""

from . import gates, probes, verdicts
from .kinds import judge_one
from .ladder import at_pair, holds, matched_rungs, pair_label, primary_probe
from .measure import InputError, conditions_of, replace_key

DIMENSIONS = ("probe", "rung", "basis", "baseline", "multiplicity")


def alternatives(claim, out, pairs, judged, results, rules):
    """The claim re-judged under every registered alternative but multiplicity (which needs the whole
    registry's screen: add_multiplicity): at its budget (`pairs` None), else at the ladder's rung
    pairs (`judged`: the claim at each)."""
    top = pairs[-1] if pairs else None
    found = _probe_alternatives(claim, top, results, rules)
    if pairs:
        found += _rung_alternative(pairs, judged) + _basis_alternatives(claim, results, rules)
    return found + _baseline_alternative(out)


def panel(claim, verdict, found, q_bh, rules, primary=None):
    """The robustness entry of a judged claim: `found` with the Benjamini-Hochberg alternative
    added, its label, one label naming the probes that reverse it and one naming the probes that
    decide an undecided primary, each probe with its figure (in the claim's unit; with its look where
    it is not the `primary` contrast's)."""
    found = [*found, {"dimension": "multiplicity", "choice": "Benjamini-Hochberg",
                      "verdict": verdicts.multiplicity_verdict(verdict, q_bh, rules["alpha"])}]
    reversing = verdicts.reversals(verdict, found)
    deciding = verdicts.decided_elsewhere(verdict, found, reversing)
    scale, unit = claim.get("effect_scale", 1.0), claim.get("effect_unit", "")
    reversals = [verdicts.reverses_label(_named(reversing), scale, unit, primary)] if reversing else []
    # probes deciding both ways are reversals, so those left all decide one way
    decided = [verdicts.decided_on_label(deciding[0]["verdict"], _named(deciding), scale, unit, primary)] \
        if deciding else []
    return {"label": label(verdict, found, reversing + deciding), **({"reversals": reversals} if reversals else {}),
            **({"decided_on": decided} if decided else {}), "alternatives": found}


def _named(probe_alternatives):
    """(the probe's words, the alternative) of each."""
    return [(probes.NAMES[a["choice"]], a) for a in probe_alternatives]


def label(primary_verdict, alternatives, reversing=()):
    """'robust', or 'depends on: probe, rung, ...' (in DIMENSIONS order) for the alternatives that
    change the verdict and are not named apart (`reversing`: the reversals, and the probes that
    decide an undecided primary); None where only those change it."""
    moved = {a["dimension"] for a in alternatives if a["verdict"] != primary_verdict and a not in reversing}
    if moved:
        return "depends on: " + ", ".join(d for d in DIMENSIONS if d in moved)
    return None if reversing else "robust"


def as_alternative(dimension, choice, out):
    """The claim judged another way: its verdict with the figure of the contrast that gave it (the
    first contrast with the claim's verdict, else the first), so a label shows what decided, and the
    seeds and level of the look that figure was read at (an alternative may read other seeds than
    the primary: the stage-2 seeds of a probe evaluated on them)."""
    contrasts = out.get("contrasts") or [{}]
    main = next((c for c in contrasts if c.get("verdict") == out["verdict"]), contrasts[0])
    return {"dimension": dimension, "choice": choice, "verdict": out["verdict"],
            "diff_mean": main.get("diff_mean"), "diff_ci95": main.get("diff_ci95"),
            **({"seeds": len(main["seeds"]), "level": main["level"]} if main.get("seeds") and main.get("level") else {})}


def _probe_alternatives(claim, pair, results, rules):
    """The claim under each other class-label probe, at the primary rung pair (None: its budget),
    where the records hold it there."""
    primary = primary_probe(claim)
    found = []
    for probe in (p for p in probes.PANEL if p != primary):
        arms = {n: replace_key(s, primary, probe) for n, s in claim["arms"].items()}
        if None in arms.values():
            continue
        other = {**claim, "arms": arms}
        other = at_pair(other, pair) if pair else other
        if all(holds(spec, results) for spec in other["arms"].values()):
            found.append(as_alternative("probe", probe, judge_one(other, results, rules)))
    return found


def _baseline_alternative(out):
    """The main contrast's gain over step 0, where its sides differ before training."""
    gain = (((out.get("contrasts") or [{}])[0].get("baseline")) or {}).get("gain")
    if not gain:
        return []
    return [{"dimension": "baseline", "choice": "gain over step 0", "verdict": gain["verdict"],
             "diff_mean": gain["diff_mean"], "diff_ci95": gain["diff_ci95"]}]


def _rung_alternative(pairs, judged):
    """The pair that starts the last doubling of a's steps before the primary pair's."""
    a_steps = [next(iter(p.values())) for p in pairs]
    start = gates.previous_rung(a_steps, a_steps[-1])
    if start is None:
        return []
    i = a_steps.index(start)
    return [as_alternative("rung", pair_label(pairs[i]), judged[i])]


def _basis_alternatives(claim, results, rules):
    """The claim at its top rung pair on every other basis (equal steps, equal images, equal encoder
    passes) that pairs different rungs from the primary's; only for two-arm, one-condition claims."""
    found, seen = [], {_pair_key(matched_rungs(claim, claim["basis"], results)[-1])}
    for basis in rules["robustness"]["bases"]:
        if basis == claim["basis"]:
            continue
        try:
            pairs = matched_rungs(claim, basis, results) if basis == "equal steps" or _two_plain_arms(claim) else []
        except InputError:
            pairs = []
        if pairs and _pair_key(pairs[-1]) not in seen:
            seen.add(_pair_key(pairs[-1]))
            steps = ", ".join(f"{arm} at {step:,}" for arm, step in pairs[-1].items())
            judged = judge_one(at_pair(claim, pairs[-1]), results, rules)
            found.append(as_alternative("basis", f"{basis}: {steps} steps", judged))
    return found


def _pair_key(pair):
    return tuple(sorted(pair.items()))


def _two_plain_arms(claim):
    bs = claim["b"] if isinstance(claim["b"], list) else [claim["b"]]
    return len(bs) == 1 and len(claim["arms"]) == 2 and all(
        len(conditions_of(spec)) == 1 for spec in claim["arms"].values())
