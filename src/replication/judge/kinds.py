"""Judging the claims registry (analysis/claims.yaml, schema in registry.py) against the files the
pipeline wrote. One function per kind:

    exact       a printed number (or list, or true/false) within `tolerance`  -> exact match | mismatch
    bound       a measured number against at_most / at_least                  -> within bound | mismatch
    range       every per-seed value inside a printed range [lo, hi] +- tolerance -> exact match | mismatch
    interval    each arm's interval of the mean inside [lo, hi]               -> reproduced | contradicted | inconclusive
    single_run  a figure printed from one run, against the prediction interval of our
                realisations (seeds, or one seed at several thread counts)   -> reproduced | contradicted
    paired      arm a against each arm in b, seed by seed, decided against the margin (verdicts.py),
                gated on the reference arms (gates.py), re-judged under the robustness panel
    correlation Spearman's rank correlation of two figures over runs, with a bootstrap interval over
                conditions, decided against the margin like a paired effect; over a population
                named by its conditions, those that did not train or learn from labels left out
    failure     a condition fails: every run diverges or collapses, or it does not train (gates.py)
                and its loss stays near its chance level; with `reference`, a condition that must
                train by the same step (else the failure is not specific); with `collapse`, judged on
                the embedding's spread instead
    not_tested  the registry's explicit statement why this study cannot test it -> not tested

A claim with `not_testable: reason` is measured and shown; its verdict is `not testable here`.
Every interval is at the registered level (verdicts.level: 1 - 2 alpha).
A ladder claim (`ladder: true`, keys with '{step}') is judged at every rung its arms share; the top
rung is its primary analysis, lower rungs are descriptive, with a trend along them (stats.py).
Labels: robust / depends on (robustness.py), calibrated, realisation, post hoc (every amendment
while no registration exists; under one, a rule changed after it that moved the verdict on the same
results: judge._provenance), not converged (judge._read_at_convergence), unstable.
"""
import math
import re

import numpy as np

from . import gates, sequential, stats, verdicts
from .probes import ON_LOGIT_SCALE
from .measure import (InputError, at_step, best_of, conditions_of, dig, failed_runs, flatten, in_path_form, key_of,
                      measure, measure_by_seed, parts, patterns, realisations, record_paths,
                      record_pattern, runs, selection_seeds)
from .registry import declared_gates
from .verdicts import (CONTRADICTED, EXACT_MATCH, INCONCLUSIVE, MISMATCH, NOT_TESTABLE, NOT_TESTED, REPRODUCED,
                       WITHIN_BOUND)


def _close(measured, published, tolerance):
    m, p = flatten(measured), flatten(published)
    if len(m) != len(p):
        return False
    return all(a == b if isinstance(b, (bool, str)) else abs(a - b) <= tolerance for a, b in zip(m, p))


def _arm(values, rules, per_seed=True):
    """An arm for claims.json: per-seed numbers get their summary; anything else is kept as is."""
    values = values if isinstance(values, list) else [values]
    numeric = values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return stats.summarize(values, verdicts.level(rules)) if per_seed and numeric else {"values": values, "n": len(values)}


# ---------------------------------------------------------------- printed figures

def _judge_exact(claim, out, notes, results, rules):
    """A printed number (or list, or true/false) within `tolerance`."""
    measured = measure(claim["measured"], results)
    out["arms"]["measured"] = _arm(measured, rules, per_seed=False)
    if _close(measured, claim["published"], claim["tolerance"]):
        return EXACT_MATCH
    notes.append(f"Measured {flatten(measured)[:6]} against the printed {flatten(claim['published'])[:6]}, "
                 f"tolerance {claim['tolerance']:g}.")
    return MISMATCH


def _judge_bound(claim, out, notes, results, rules):
    """Every measured number within at_most / at_least."""
    measured = measure(claim["measured"], results)
    out["arms"]["measured"] = _arm(measured, rules, per_seed=False)
    ok = all((claim.get("at_most") is None or v <= claim["at_most"]) and
             (claim.get("at_least") is None or v >= claim["at_least"]) for v in flatten(measured))
    if not ok:
        notes.append(f"Measured {flatten(measured)[:6]} against at most {claim.get('at_most')}, "
                     f"at least {claim.get('at_least')}.")
    return WITHIN_BOUND if ok else MISMATCH


def _judge_range(claim, out, notes, results, rules):
    """Every per-seed value inside the printed range [lo, hi], widened by `tolerance`."""
    measured = measure(claim["measured"], results)
    out["arms"]["measured"] = _arm(measured, rules)
    lo, hi = claim["range"]
    tol = claim["tolerance"]
    outside = [v for v in measured if not lo - tol <= v <= hi + tol]
    if outside:
        notes.append(f"{len(outside)} of {len(measured)} values outside [{lo:g}, {hi:g}] (tolerance {tol:g}): "
                     + ", ".join(f"{v:.4g}" for v in outside) + ".")
    return MISMATCH if outside else EXACT_MATCH


def _reference_gate(spec, step, out, results, rules):
    """The gate of the reference a claim declares (a condition, and the figure whose probe and
    embedding it must have trained on), recorded in out['reference']: (condition, gate or None)."""
    condition, key = _gated_runs(spec, results)[0]
    gate = gates.control_gain(condition, key, step, rules, results)
    out["reference"] = {"condition": condition, "control": gate}
    return condition, gate


def _untrained_reference(claim, out, notes, results, rules):
    """Whether the reference an interval or single-run claim declares did not train (then its
    figures are shown and its verdict is `not testable here`); its arms are the claim's outcome."""
    if not claim.get("reference"):
        return False
    out["outcome_arms"] = list(out["arms"])
    condition, gate = _reference_gate(claim["reference"], None, out, results, rules)
    if gate is not None and gate["trained"]:
        return False
    notes.insert(0, (gates.untrained_reason("The reference", condition, gate) if gate else
                     f"The reference ({condition}) has fewer than two runs to compare with their untrained "
                     "controls") + ", so the figure is read on an encoder that did not train.")
    return True


def _judge_interval(claim, out, notes, results, rules):
    """Each arm's interval of the mean inside the published range, once the declared reference
    (where the arms read trained encoders) has trained. With `yardstick: one run` (a range printed
    from one run), each arm's prediction interval of one more run (on the log scale for a
    ratio) against the range instead (verdicts.one_run_range_verdict)."""
    lo, hi = claim["range"]
    found = []
    for name, spec in claim["arms"].items():
        out["arms"][name] = _arm(measure(spec, results), rules)
        if claim.get("yardstick") == "one run":
            found.append(_one_run_against_range(name, spec, out["arms"][name], lo, hi, notes, rules))
            continue
        found.append(verdicts.interval_verdict(out["arms"][name]["ci95"], lo, hi))
        if found[-1] != REPRODUCED:
            a, b = out["arms"][name]["ci95"]
            notes.append(f"{name}: the {verdicts.level_label(rules)} interval of the mean [{a:.4g}, {b:.4g}] "
                         f"{'lies outside' if found[-1] == CONTRADICTED else 'straddles an edge of'} "
                         f"the published range [{lo:g}, {hi:g}].")
    if _untrained_reference(claim, out, notes, results, rules):
        return NOT_TESTABLE
    return verdicts.combine(found)


def _one_more_run(arm, spec, rules, runs="runs"):
    """Where one more run of ours would fall: the arm's prediction interval (`prediction95`), on
    the log scale for a ratio, which varies by factors, not by steps; returns the sentence that says
    so."""
    values = arm["values"]
    log = "ratio" in spec and min(values) > 0
    arm["prediction95"] = verdicts.prediction_interval(values, rules, log)
    a, b = arm["prediction95"]
    return (f"one more run of ours would fall in [{a:.4g}, {b:.4g}] ({verdicts.level_label(rules)} prediction "
            f"interval over {len(values)} {runs}{', on the log scale: a ratio' if log else ''})")


def _one_run_against_range(name, spec, arm, lo, hi, notes, rules):
    """One arm's runs against a range printed from one run: where one more run of ours would fall."""
    where = _one_more_run(arm, spec, rules)
    notes.append(f"{name}: {where}, against the printed [{lo:g}, {hi:g}].")
    return verdicts.one_run_range_verdict(arm["prediction95"], lo, hi)


def _judge_single_run(claim, out, notes, results, rules):
    """A figure from one printed run, inside the prediction interval of our realisations, once
    the declared reference (where they read trained encoders) has trained."""
    values = realisations(claim["realisations"], results)
    arm = out["arms"]["realisations"] = _arm(values, rules)
    if _untrained_reference(claim, out, notes, results, rules):
        return NOT_TESTABLE
    if len(values) < 2:
        notes.append("Fewer than two realisations: no spread to judge a single run against.")
        return INCONCLUSIVE
    where = _one_more_run(arm, claim["realisations"], rules, runs="realisations")
    notes.append(f"{where[0].upper()}{where[1:]}; the printed figure is one run.")
    published, rounding = claim["published"], claim["tolerance"]
    return verdicts.one_run_range_verdict(arm["prediction95"], published - rounding, published + rounding)


# ---------------------------------------------------------------- failure

def chance_loss(config):
    """The loss of an encoder that tells nothing apart, where the loss has one: log of the number
    of candidates for InfoNCE-type losses (K + 1 for MoCo and the memory bank, 2N - 1 for SimCLR's
    NT-Xent), the margin for the triplet loss (every similarity equal); else None."""
    if config["method"] in ("moco", "memory_bank"):
        return math.log(config["queue"] + 1)
    if config["method"] == "simclr" and config["loss"] == "nt_xent":
        return math.log(2 * config["batch"] - 1)
    if config["method"] == "simclr" and config["loss"] == "margin_triplet":
        return config["margin"]
    return None


def _judge_failure(claim, out, notes, results, rules):
    """A condition fails by its budget (or, with `at: top`, by its ladder's last rung; with `at: first`,
    by its first trained rung): every run
    diverges or collapses before it, or the arm does not train there and its loss (the mean of the
    steps just before) stays at rules['failure_loss_fraction'] of the chance loss or above. With
    `reference`, that condition must train by the same step, else the failure is not specific to
    this one. With `collapse`, judged on the embedding (_judge_collapse)."""
    records = runs(claim["runs"], results)
    config = records[0]["config"]
    step = {"budget": config["steps"], "top": ([config["steps"]] + config.get("ladder", []))[-1],
            "first": (config.get("checkpoints", []) + [config["steps"]])[0]}[claim["at"]]
    rung = None if step == config["steps"] else step    # the gates read `eval` at the budget, else this rung
    reached = [r for r in records if str(step) in (r.get("rung_loss") or {})]
    failures = [{"seed": r.get("seed"), "status": r["status"], "reason": r.get("reason")}
                for r in records if r not in reached]
    out["step"] = step
    out["arms"]["runs"] = {"values": [r.get("status", "ok") for r in records], "n": len(records), "failed": failures}
    if claim.get("reference"):
        reference, gate = _reference_gate(claim["reference"], rung, out, results, rules)
        if gate is None or not gate["trained"]:
            notes.append(f"The reference {reference} did not train by step {step} either, so a failure here is "
                         "not specific to this condition.")
            return NOT_TESTABLE
        notes.append(f"The reference {reference} trained by step {step} (it removed "
                     f"{100 * gate['error_removed']['mean']:.0f}% of its control's error).")
    if failures and len(failures) == len(records):
        notes.append(f"{len(failures)} of {len(records)} runs diverged or collapsed before step {step}.")
        out["decided_by"] = f"all {len(records)} runs diverged or collapsed before step {step}"
        return REPRODUCED
    condition = conditions_of(claim["runs"])[0]
    gate = gates.control_gain(condition, "h", rung, rules, results)
    floor = chance_loss(reached[0]["config"])
    losses = [r["rung_loss"][str(step)] for r in reached]
    out["arms"]["loss"] = {**_arm(losses, rules), "chance_loss": floor, "step": step}
    out["arms"]["runs"]["control"] = {condition: gate}
    notes.append(f"At step {step}: {len(failures)} of {len(records)} runs had diverged or collapsed; loss "
                 f"{np.mean(losses):.2f}" + (f" (chance {floor:.2f}, lowest run {min(losses):.2f})." if floor else "."))
    near_floor = floor is None or min(losses) >= rules["failure_loss_fraction"] * floor
    if gate is not None:
        lo, hi = (100 * v for v in gate["error_removed"]["ci95"])
        notes.append(f"Share of the control's error removed: {100 * gate['error_removed']['mean']:.0f}% "
                     f"[{lo:.0f}, {hi:.0f}]" + (" (on h; the verdict reads the embedding, below)."
                                                 if claim.get("collapse") else "."))
    if claim.get("collapse"):
        verdict = _judge_collapse(claim["collapse"], out, notes, results, near_floor, rules)
        out["decided_by"] = "; ".join(n.rstrip(".") for n in notes if "(a collapsed embedding)" in n)
        return verdict
    if gate is None:
        out["decided_by"] = "fewer than two finished runs to compare with their untrained controls"
        return INCONCLUSIVE
    lo, hi = (100 * v for v in gate["error_removed"]["ci95"])
    trained = (f"it removed {100 * gate['error_removed']['mean']:.0f}% [{lo:.0f}, {hi:.0f}] of its control's "
               f"error by step {step}")
    loss = f"loss {np.mean(losses):.2f}" + (f" against a chance level of {floor:.2f}" if floor else "")
    if gate["trained"]:
        out["decided_by"] = f"{len(reached)} of {len(records)} runs finished and trained: {trained}"
        return CONTRADICTED
    out["decided_by"] = (f"it did not train ({trained}), {loss}" + ("" if near_floor else
                         f", below {rules['failure_loss_fraction']:g} of chance: it learnt something"))
    return REPRODUCED if near_floor else INCONCLUSIVE


def _collapsed_runs(spec, above, out, notes, results, rules):
    """Per seed, whether the embedding stayed collapsed: its spread figure (z uniformity, 0 for a
    single point) above `above`. Adds the arm and a note; returns (collapsed seeds, all seeds)."""
    values = measure_by_seed(spec, results)
    stuck = [s for s, v in values.items() if v > above]
    name = f"{conditions_of(spec)[0]}: {key_of(spec)}"
    out["arms"][name] = {**_arm(list(values.values()), rules), "seeds": list(values), "key": key_of(spec),
                         "collapsed_above": above, "collapsed": len(stuck)}
    notes.append(f"{name}: above {above:g} (a collapsed embedding) in {len(stuck)} of {len(values)} runs "
                 f"({', '.join(f'{v:.3g}' for v in values.values())}).")
    return stuck, list(values)


def _judge_collapse(collapse, out, notes, results, loss_at_floor, rules):
    """A collapse claim judged on the embedding the loss acts on (`collapse.runs`): every run's spread
    figure stays above `collapse.above` with the loss at the collapsed level (loss_at_floor); and,
    with `collapse.avoided_by`, every run of the alternative spreads below it."""
    stuck, seeds = _collapsed_runs(collapse["runs"], collapse["above"], out, notes, results, rules)
    if len(seeds) < 2:
        return INCONCLUSIVE
    if not stuck:
        return CONTRADICTED
    if len(stuck) < len(seeds) or not loss_at_floor:
        return INCONCLUSIVE
    if "avoided_by" not in collapse:
        return REPRODUCED
    also, others = _collapsed_runs(collapse["avoided_by"], collapse["above"], out, notes, results, rules)
    if len(others) < 2:                   # the alternative's runs did not finish: nothing avoided
        return INCONCLUSIVE
    if not also:
        return REPRODUCED
    return CONTRADICTED if len(also) == len(others) else INCONCLUSIVE


# ---------------------------------------------------------------- paired contrasts

def _gated_runs(spec, results):
    """(condition, key) of each set of runs an arm's gate reads: the chosen candidate of a best_of,
    else every part (a difference of two conditions, each at the step its own key reads)."""
    if "best_of" in spec:
        spec = spec["best_of"][best_of(spec, results)[0]]
    if parts(spec):
        return [run for part in parts(spec) for run in _gated_runs(part, results)]
    return [(condition, spec.get("key")) for condition in conditions_of(spec)]


def _paired_arms(claim, out, notes, results, rules):
    """Per-seed values of every arm of a paired claim, with failed runs and, for its declared
    reference arms, their gate on the embedding each arm measures."""
    a, bs = claim["a"], claim["b"] if isinstance(claim["b"], list) else [claim["b"]]
    reference, _ = declared_gates(claim)
    by_seed, untrained = {}, {}
    for name in [a] + bs:
        spec = claim["arms"][name]
        by_seed[name] = measure_by_seed(spec, results)
        arm = out["arms"][name] = {**_arm(list(by_seed[name].values()), rules), "seeds": list(by_seed[name]),
                                   "key": key_of(spec)}
        if "best_of" in spec:
            arm["chosen"] = patterns(spec["best_of"][best_of(spec, results)[0]])[0]
            arm["chosen_on_seeds"] = selection_seeds([measure_by_seed(s, results) for s in spec["best_of"]])
        step = claim.get("_arm_steps", {}).get(name, claim.get("_step"))
        controls = {c: gates.control_gain(c, key, step, rules, results) for c, key in _gated_runs(spec, results)}
        if any(controls.values()):
            arm["control"] = {c: g for c, g in controls.items() if g}
            arm["reference"] = name in reference
        for c, gate in controls.items():
            if name in reference and gate and not gate["trained"]:
                untrained[name] = gates.untrained_reason(name, c, gate)
        failures = failed_runs(spec["best_of"][best_of(spec, results)[0]] if "best_of" in spec else spec, results)
        if failures:
            arm["failed"] = failures
            notes.append(f"{name}: {len(failures)} run(s) failed ({failures[0]['status']}); "
                         "failed runs are shown, not averaged")
    return a, bs, by_seed, untrained


def _contrast(claim, a, b, by_seed, untrained, rules):
    """One contrast a - b (signed by the claim's direction), decided against the margin; under a
    registered sequential design, at the look its seeds make (sequential.look: a count of seeds no
    look makes stops the analysis), a stage-2 contrast first decided on its stage-1 seeds, whose
    decision is never revisited. The documents' examples, which read no condition of the run, have
    their own fixed seeds and one look at the registered alpha."""
    margin, direction = claim["margin"], claim["direction"]
    seeds = [s for s in by_seed[a] if s in by_seed[b]]
    if not conditions_of(claim["arms"][a]):      # the documents' examples: their own seeds, one fixed look
        rules = {k: v for k, v in rules.items() if k != "sequential"}
    design = rules.get("sequential")
    if design and len(seeds) == sequential.seeds(design)[1]:
        first = set(sorted(seeds)[:sequential.seeds(design)[0]])
        at_first = _contrast(claim, a, b, {arm: {s: v for s, v in values.items() if s in first}
                                           for arm, values in by_seed.items()}, untrained, rules)
        if at_first["verdict"] != INCONCLUSIVE:
            return at_first
    rules = sequential.look(rules, len(seeds))
    c = {"a": a, "b": b, "direction": direction, "margin": margin, "basis": claim.get("basis", "equal steps"),
         "seeds": seeds, "level": verdicts.level(rules), "metric_key": key_of(claim["arms"][a])}
    if len(seeds) < 2:
        return {**c, "diff_mean": None, "diff_ci95": None, "verdict": INCONCLUSIVE,
                "reason": "fewer than two seeds with both runs finished"}
    c.update(stats.paired_contrast([by_seed[a][s] for s in seeds], [by_seed[b][s] for s in seeds], direction,
                                    verdicts.level(rules)))
    c.update(verdicts.tests(c["diffs"], margin))
    if direction == "equal":
        c.update(verdicts.as_equivalence_claim(c))
    effect = claim.get("published_effect_value")
    if isinstance(effect, list):
        effect = effect[claim["b"].index(b)]
    c["published_effect_value"] = effect
    return verdicts.decide_contrast(c, [untrained[n] for n in (a, b) if n in untrained], rules,
                                    claim.get("effect_scale", 1.0), claim.get("effect_unit", ""))


def _logit(p):
    """log(p / (1 - p)), with p kept inside [1e-4, 1 - 1e-4] (an accuracy of 0 or 1 has no logit)."""
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def _logit_effect(claim, a, b, by_seed, rules):
    """The effect on the logit (error) scale, for accuracies: logit(acc_a) - logit(acc_b) per seed."""
    if (key_of(claim["arms"][a]) or "").rsplit(".", 1)[-1] not in ON_LOGIT_SCALE:
        return None
    seeds = [s for s in by_seed[a] if s in by_seed[b]]
    if len(seeds) < 2:
        return None
    sign = -1 if claim["direction"] == "less" else 1
    diffs = [sign * (_logit(by_seed[a][s]) - _logit(by_seed[b][s])) for s in seeds]
    return {"diffs": diffs, "mean": float(np.mean(diffs)), "ci95": stats.t_interval(diffs, verdicts.level(rules))}


def _judge_paired(claim, out, notes, results, rules):
    """Arm a against each arm in b, seed by seed; every contrast must hold (intersection-union)."""
    a, bs, by_seed, untrained = _paired_arms(claim, out, notes, results, rules)
    out["reference_arms"], out["outcome_arms"] = declared_gates(claim)
    out["contrasts"] = [_contrast(claim, a, b, by_seed, untrained, rules) for b in bs]
    if claim["direction"] == "equal":
        control = _positive_control(claim, results, rules)
        out["contrasts"] = [verdicts.positive_control(c, control) for c in out["contrasts"]]
        if control:
            out["positive_control"] = control
    at_zero = {n: _at_step_zero(claim["arms"][n], results, n) for n in [a, *bs]}
    for c in out["contrasts"]:
        c["logit"] = _logit_effect(claim, a, c["b"], by_seed, rules)
        c["baseline"] = _baseline(claim, c, at_zero, rules)
    return verdicts.combine([c["verdict"] for c in out["contrasts"]])


def _positive_control(claim, results, rules):
    """A claim of no effect's positive control (registry.PositiveControl) at the rung judged: its
    a - b in its direction, seed by seed, decided against the claim's margin; None without one."""
    control = claim.get("positive_control")
    if control is None:
        return None
    step = claim.get("_step")
    a, b = (measure_by_seed(control[k] if step is None else at_step(control[k], step), results) for k in "ab")
    seeds = [s for s in a if s in b]
    c = {"a": " ".join(patterns(control["a"])), "b": " ".join(patterns(control["b"])),
         "direction": control["direction"], "margin": claim["margin"], "seeds": seeds}
    if len(seeds) < 2:
        return {**c, "diff_mean": None, "diff_ci95": None, "verdict": INCONCLUSIVE,
                "reason": "fewer than two seeds with both runs finished"}
    c.update(stats.paired_contrast([a[s] for s in seeds], [b[s] for s in seeds], control["direction"],
                                   verdicts.level(rules)))
    c.update(verdicts.tests(c["diffs"], claim["margin"]))
    return {**c, "verdict": verdicts.decide(c, rules["alpha"])}


def _at_step_zero(spec, results, name):
    """({seed: value}, None) of an arm's figure on its untrained encoder (step 0, or the control
    record for a figure read at the budget); (None, None) where the figure has no untrained reading;
    (None, why) where it should have one that cannot be read."""
    key = spec.get("key") or ""
    if parts(spec) or not in_path_form(spec).get("files") or not key.startswith(("at.", "eval.")):
        return None, None
    zero = {**spec, "key": "control." + key.split(".", 1)[1] if key.startswith("eval.") else
            re.sub(r"^at\.[^.]+\.", "at.0.", key)}
    try:
        return measure_by_seed(zero, results), None
    except InputError:
        return None, f"the step-0 records of {name} hold no {zero['key']} (its untrained control was not probed so)"


def _baseline(claim, c, untrained, rules):
    """The contrast before training (step 0) and, where the two sides already differ there beyond
    the margin (h against z, heads of other widths), the contrast of their gains over it; where a
    side's step-0 reading cannot be read, why the baseline is absent."""
    (a0, why_a), (b0, why_b) = untrained[c["a"]], untrained[c["b"]]
    if why_a or why_b:
        return {"step": 0, "absent": "; ".join(filter(None, [why_a, why_b]))}
    if not a0 or not b0 or not c.get("diffs"):
        return None
    sign = -1 if claim["direction"] == "less" else 1
    seeds = [s for s in c["seeds"] if s in a0 and s in b0]
    if len(seeds) < 2:
        return None
    at_zero = [sign * (a0[s] - b0[s]) for s in seeds]
    differs = verdicts.beyond_margin(at_zero, c["margin"], rules)
    out = {"step": 0, "diff_mean": float(np.mean(at_zero)),
           "diff_ci95": stats.t_interval(at_zero, verdicts.level(rules)), "differs": differs}
    if differs:
        trained = dict(zip(c["seeds"], c["diffs"]))
        gains = [trained[s] - z for s, z in zip(seeds, at_zero)]
        out["gain"] = {"diffs": gains, "diff_mean": float(np.mean(gains)),
                       "diff_ci95": stats.t_interval(gains, verdicts.level(rules)),
                       "verdict": verdicts.contrast_verdict(gains, c["margin"], claim["direction"], rules["alpha"])}
    return out


SUPERVISED = ("supervised", "supcon")     # the methods that learn from the class labels (RunConfig.method)


def population(claim, results, rules):
    """The finished runs a correlation reads, and {condition: why it is left out}. Over a population
    named by its conditions (runs: {conditions: [...]}), each named condition must hold records,
    else InputError; a condition whose method learns from the labels (SUPERVISED), or whose runs
    did not train (gates.py, on the figure y reads), is left out unless the claim's `keep` names
    'supervised' or 'untrained'. Over a pattern, every finished run it selects."""
    finished = lambda spec: [r for r in runs(spec, results) if r.get("status", "ok") == "ok" and r.get("eval")]
    named = claim["runs"].get("conditions")
    if named is None:
        return finished(claim["runs"]), {}
    keep, records, left_out = claim.get("keep") or [], [], {}
    for condition in named:
        why = _left_out(claim, condition, keep, results, rules)
        if why:
            left_out[condition] = why
        else:
            records += finished({"condition": condition})
    return records, left_out


def _left_out(claim, condition, keep, results, rules):
    """Why a named condition is out of a correlation's population (population), or None."""
    trained = record_paths(condition, "training", results)
    if not trained or not record_paths(condition, "evaluation", results):
        raise InputError(f"claim {claim['id']}: runs.conditions: {condition!r} holds no records "
                         f"({record_pattern(condition)}); run its pretrain and evaluate stages, or leave it "
                         "out of the list in analysis/claims.yaml")
    method = results.record(trained[0])["config"]["method"]
    if method in SUPERVISED and "supervised" not in keep:
        return f"supervised ({method})"
    if "untrained" in keep:
        return None
    gate = gates.control_gain(condition, claim["y"], None, rules, results)
    if gate is None:
        return "fewer than two finished runs"
    if not gate["trained"]:
        lo, hi = (100 * v for v in gate["error_removed"]["ci95"])
        return (f"did not train ({100 * gate['error_removed']['mean']:.0f}% [{lo:.0f}, {hi:.0f}] of its "
                f"control's error removed on the {gate['metric']})")
    return None


MIN_CONDITIONS = 3     # a correlation across conditions needs at least this many (the bootstrap draws conditions)


def _judge_correlation(claim, out, notes, results, rules):
    """Spearman's rho of x and y across the conditions of its population, one value per condition
    (the mean over its seeds: seeds of one condition are not independent of each other, and a
    condition with more seeds must not weigh more); direction 'less' claims a negative correlation.
    The interval comes from a bootstrap over conditions (stats.cluster_bootstrap), and the claim is
    decided against the margin on it. Two x figures claim they predict y jointly: each one's partial
    rank correlation with y given the other, both required (intersection-union)."""
    records, left_out = population(claim, results, rules)
    if "conditions" in claim["runs"]:
        kept = [c for c in claim["runs"]["conditions"] if c not in left_out]
        out["population"] = {"conditions": kept, "left_out": left_out}
        notes.append(f"Population: {len(kept)} of the {len(claim['runs']['conditions'])} named conditions"
                     + ("; left out: " + "; ".join(f"{c}, {why}" for c, why in left_out.items()) if left_out else "")
                     + ".")
    xs = claim["x"] if isinstance(claim["x"], list) else [claim["x"]]
    groups = [r.get("condition", i) for i, r in enumerate(records)]      # a record without one is its own group
    conditions = list(dict.fromkeys(groups))
    columns = {key: np.array([np.mean([dig(r, key) for r, g in zip(records, groups) if g == condition])
                              for condition in conditions], dtype=float) for key in [*xs, claim["y"]]}
    out["arms"] = {key: {"values": v.tolist(), "n": len(v), "key": key} for key, v in columns.items()}
    out["contrasts"] = []
    if len(conditions) < MIN_CONDITIONS:
        notes.append(f"Fewer than {MIN_CONDITIONS} conditions in the population ({len(conditions)}): no rank "
                     "correlation across conditions to read.")
        return verdicts.INCONCLUSIVE
    for i, key in enumerate(xs):
        given = xs[1 - i] if len(xs) == 2 else None
        rho_of = lambda weights, key=key, given=given: stats.rank_correlation(
            columns[key], columns[claim["y"]], columns.get(given), weights)
        c = {**_correlation_contrast(claim, key, rho_of, conditions, rules, given), "n_runs": len(records)}
        out["contrasts"].append(c)
        partial = f" given {given}" if given else ""
        notes.append(f"Spearman rho of {key}{partial} {c['rho']:+.3f} across {c['n_conditions']} conditions, each "
                     f"the mean of its seeds ({len(records)} runs); in the claimed direction {c['diff_mean']:+.3f} "
                     f"[{c['diff_ci95'][0]:+.3f}, {c['diff_ci95'][1]:+.3f}] (bootstrap over conditions).")
    return verdicts.combine([c["verdict"] for c in out["contrasts"]])


def _correlation_contrast(claim, key, rho_of, groups, rules, given=None):
    """A rank correlation decided against the margin on the interval of a bootstrap over conditions
    (percentiles at the registered level), with one-sided bootstrap p-values for the screen."""
    sign = -1 if claim["direction"] == "less" else 1
    rho = rho_of(None)
    draws = sign * stats.cluster_bootstrap(rho_of, groups)
    lo, hi = (float(v) for v in np.quantile(draws, [rules["alpha"], 1 - rules["alpha"]]))
    m = claim["margin"]
    c = {"a": claim["y"], "b": key, "given": given, "direction": claim["direction"], "margin": m,
         "seeds": [], "rho": float(rho), "n_runs": len(groups), "n_conditions": len(set(groups)),
         "resampling_unit": "condition", "bootstrap_draws": len(draws), "diffs": [], "diff_mean": float(sign * rho),
         "diff_ci95": [lo, hi], "level": verdicts.level(rules), "p_reproduced": float(np.mean(draws <= m)),
         "p_contradicted": float(np.mean(draws >= -m)),
         "p_equivalent": float(max(np.mean(draws <= -m), np.mean(draws >= m)))}
    c["verdict"] = verdicts.decide_interval(lo, hi, m)
    return c


JUDGES = {"exact": _judge_exact, "bound": _judge_bound, "range": _judge_range, "interval": _judge_interval,
          "single_run": _judge_single_run, "paired": _judge_paired, "correlation": _judge_correlation,
          "failure": _judge_failure}
CARRIED = ("id", "source", "statement", "published", "metric", "section", "kind", "published_effect",
           "published_effect_value", "effect_scale", "effect_unit", "amended", "calibrated", "realisation")


def judge_one(claim, results, rules, documents=()):
    """A claims.json entry (contrasts kept in `contrasts`; notes still open in `_notes`); its origin
    (verdicts.ORIGINS) the claim's own where it names one, else its section's (`documents`: the
    sections that hold the documents' own examples, registry.Registry.documents)."""
    out = {k: claim[k] for k in CARRIED if claim.get(k) not in (None, [])}
    out.update(origin=claim.get("origin") or ("document" if claim["section"] in documents else "literature"),
               arms={}, contrast=None)
    if claim["kind"] == "not_tested":
        return {**out, "verdict": NOT_TESTED, "note": claim["reason"]}
    out["_notes"] = [claim["scale_note"]] if claim.get("scale_note") else []
    out["verdict"] = JUDGES[claim["kind"]](claim, out, out["_notes"], results, rules)
    return out
