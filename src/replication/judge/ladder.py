"""The scale ladder: the rungs a claim is read at, and what the rungs say about its effect.

Rule: a ladder claim is judged at every trained rung its conditions share (equal steps), or, on a
registered compute basis, at the pairs of a's and b's rungs at which both have spent the same
(matched_steps: step_a x cost_a = step_b x cost_b), where their records hold the figure it reads;
its top rung (pair) is the primary one. A claim off the ladder is read at its runs' budget.
Where the records hold a claim's probe at no rung it reads, the claim is read on the probe's
stand-in (probes.STAND_IN: run 2's records hold the all-label probe at each run's budget only, so
a claim registered on it at a rung below the budget, or at a pair the budget is not in, reads the
few-label probe), labelled so. Where they hold it at fewer rungs than the stand-in (run 2: only at
the budget), the primary is read on the claim's probe at its top rung that holds it, and the
rungs, convergence and trend below are read on the stand-in at every rung, as context
(`primary.ladder_probe`); the rung alternative (robustness.py) is then absent, since no lower rung
holds the claim's probe. Along the rungs:
    convergence   each contrast's per-seed change over the last doubling of steps before the rung each
                  arm is read at (last_doubling), and whether one more doubling at that pace keeps its
                  verdict (verdicts.one_more_doubling; the one rule, judge._read_at_convergence);
                  each arm's own move beside it, described
    trend         the effect's slope per decade of steps over the rungs where both arms trained
                  (verdicts.ladder_trend), in the claim's unit and on the logit scale for accuracies;
                  a contradicted top rung says whether it may be a scale artefact
"""
from . import gates, probes, stats, verdicts
from .measure import (InputError, at_step, best_of, conditions_of, dig, key_of, measure_by_seed, parts,
                      record_paths, record_pattern, replace_key, runs, with_rungs)

EQUAL_STEPS = ("equal steps", "equal updates")     # bases that pair every arm at the same step


# ---------------------------------------------------------------- where a claim is read

def primary(claim, top, results, stood_in=None):
    """The registered primary analysis: the probe the arms read, the rung (the top rung pair of a
    ladder claim, `top`; else the runs' budget) and the compute basis; `stood_in`: the probe the
    claim registered, where the claim is read on its stand-in (readable)."""
    return {"probe": primary_probe(claim), "rung": pair_label(top) if top else budget(claim, results),
            "basis": claim["basis"], **({"stand_in_for": stood_in} if stood_in else {})}


def holds(spec, results):
    """Whether every finished run a spec reads holds its figure (a probe evaluated at the step its
    key names: run 2's records hold the all-label probe at each run's budget only)."""
    if parts(spec):
        return all(holds(part, results) for part in parts(spec))
    if spec.get("key") is None:
        return True
    for record in (r for r in runs(spec, results) if r.get("status", "ok") == "ok"):
        try:
            dig(record, with_rungs(spec["key"], record))
        except InputError:
            return False
    return True


def stand_in(claim):
    """The claim read on its probe's stand-in (probes.STAND_IN), or None where it has none."""
    probe = primary_probe(claim)
    if probe not in probes.STAND_IN:
        return None
    arms = {name: replace_key(spec, probe, probes.STAND_IN[probe]) for name, spec in claim["arms"].items()}
    return None if None in arms.values() else {**claim, "arms": arms}


def readable(claim, results):
    """(claim, the probe it registered or None): the claim as read, on its own probe where the
    records hold it at a rung (pair) it reads, else on its stand-in (module docstring)."""
    other = stand_in(claim)
    if other is None:
        return claim, None
    if claim.get("ladder"):
        held = _pairs(claim, claim["basis"], results)
    else:
        held = all(holds(spec, results) for spec in claim["arms"].values())
    return (claim, None) if held else (other, primary_probe(claim))


def context(claim, pairs, results):
    """(claim, pairs) the rungs, convergence and trend are read on: the claim's own where its
    records hold its probe at every rung pair its stand-in's hold, else the stand-in's (module
    docstring)."""
    other = stand_in(claim)
    wider = _pairs(other, claim["basis"], results) if other else []
    return (other, wider) if len(wider) > len(pairs) else (claim, pairs)


def primary_probe(claim):
    """The class-label probe the claim's arms read (probes.PANEL), else the key of its first arm."""
    key = key_of(next(iter(claim["arms"].values()))) if claim.get("arms") else None
    last = (key or "").rsplit(".", 1)[-1]
    return last if last in probes.PANEL else key


def budget(claim, results):
    """The steps a non-ladder claim reads its runs at (their budget, from the training records):
    one number when every arm shares it, else {arm: steps}."""
    steps = {}
    for name, spec in claim["arms"].items():
        for condition in conditions_of(spec):
            found = record_paths(condition, "training", results)
            if found:
                steps.setdefault(name, results.record(found[0])["config"]["steps"])
    return next(iter(steps.values())) if len(set(steps.values())) == 1 else steps or None


def last_doubling(claim, results, rules, at=None, arms=None):
    """Each arm's figure per seed at both ends of its last doubling of steps before the step it is
    read at (`at`: one step or {arm: step}; default the runs' budget; gates.previous_rung), on the
    claim's own figure (`eval.<figure>` or `at.{step}.<figure>`; a best_of arm on the candidate it
    chose there), for the arms named in `arms` (default every arm): {arm: {from_step, to_step,
    before ({seed: value} at the start), moving, moved}}, where `moved` describes its per-seed change in
    the claim's unit ('moved +x [lo, hi] points from a to b steps', at the registered level) and
    `moving` says whether that interval lies beyond +-margin (descriptive: the rule reads the
    contrast, verdicts.one_more_doubling). An arm whose condition was evaluated at no rung that
    starts the doubling, or whose figure is read at one rung only, is left out (not measured)."""
    margin = claim["margin"]
    scale, unit = claim.get("effect_scale", 1.0), claim.get("effect_unit", "")
    steps = budget(claim, results) if at is None else at
    ends = {}
    for name, spec in claim["arms"].items():
        at_budget = steps.get(name) if isinstance(steps, dict) else steps
        if (arms is not None and name not in arms) or not at_budget:
            continue
        if "best_of" in spec:
            spec = spec["best_of"][best_of(at_step(spec, at_budget), results)[0]]
        key, found = key_of(spec) or "", conditions_of(spec)
        figure = next((key[len(p):] for p in ("eval.", "at.{step}.") if key.startswith(p)), None)
        if parts(spec) or not figure or len(found) != 1:
            continue
        start = gates.previous_rung(gates.rungs_of(found[0], results), at_budget)
        if start is None:
            continue
        try:
            before, after = (measure_by_seed({**spec, "key": f"at.{step}.{figure}"}, results) for step in (start, at_budget))
        except InputError:          # the figure is read at the budget only (the all-label probe in run 2)
            continue
        change = [after[s] - before[s] for s in after if s in before]
        if len(change) < 2:
            continue
        lo, hi = stats.t_interval(change, verdicts.level(rules))
        ends[name] = {"from_step": start, "to_step": at_budget, "before": before,
                      "moving": bool(lo > margin or hi < -margin),
                      "moved": f"moved {sum(change) / len(change) * scale:+.3g} [{lo * scale:+.3g}, "
                               f"{hi * scale:+.3g}]{unit} from {start:,} to {at_budget:,} steps"}
    return ends


def claim_at(claim, step, arm_steps=None):
    """A ladder claim as judged at one rung (or each arm at its own rung, `arm_steps`)."""
    arms = {name: at_step(spec, (arm_steps or {}).get(name, step)) for name, spec in claim["arms"].items()}
    return {**claim, "arms": arms, "_step": step, "_arm_steps": arm_steps or {}}


def at_pair(claim, pair):
    """A ladder claim at one rung pair ({arm: step}; one step for every arm on equal steps)."""
    steps = set(pair.values())
    return claim_at(claim, steps.pop()) if len(steps) == 1 else claim_at(claim, pair[claim["a"]], pair)


def pair_label(pair):
    """A rung pair as shown: one step, or {arm: step} when the basis pairs different steps."""
    steps = set(pair.values())
    return next(iter(steps)) if len(steps) == 1 else dict(pair)


def ladder_rungs(claim, results):
    """The trained rungs (steps above 0) that every condition of a ladder claim was evaluated at."""
    common = None
    for condition in (c for spec in claim["arms"].values() for c in conditions_of(spec)):
        rungs = set(gates.rungs_of(condition, results))
        common = rungs if common is None else common & rungs
    rungs = sorted(r for r in common or () if r > 0)
    if not rungs:
        raise InputError(f"claim {claim['id']}: its conditions share no trained rung; run their evaluate stages")
    return rungs


def matched_rungs(claim, basis, results):
    """The rung pairs ({arm: step}, ascending) a ladder claim is judged at on a compute basis (_pairs);
    InputError where there is none."""
    pairs = _pairs(claim, basis, results)
    if pairs:
        return pairs
    if basis in EQUAL_STEPS:
        raise InputError(f"claim {claim['id']}: the records hold {key_of(next(iter(claim['arms'].values())))} at "
                         "none of the rungs its conditions share; run their evaluate stages")
    a, b = claim["a"], claim["b"] if isinstance(claim["b"], str) else claim["b"][0]
    raise InputError(f"claim {claim['id']}: no rungs of {conditions_of(claim['arms'][a])[0]} and "
                     f"{conditions_of(claim['arms'][b])[0]} spend the same on '{basis}' with their figures "
                     "recorded; add ladder rungs to params.yaml that pair up, or register another basis")


def _pairs(claim, basis, results):
    """Every rung pair ({arm: step}, ascending) of a ladder claim on a compute basis at which the
    records hold the figures it reads: every common trained rung on equal steps (or updates); else
    the pairs of a's and b's rungs at which both have spent the same (matched_steps), which the
    registry allows for two arms."""
    if basis in EQUAL_STEPS:
        pairs = [{name: step for name in claim["arms"]} for step in ladder_rungs(claim, results)]
    else:
        a, b = claim["a"], claim["b"] if isinstance(claim["b"], str) else claim["b"][0]
        (ca,), (cb,) = conditions_of(claim["arms"][a]), conditions_of(claim["arms"][b])
        pairs = [{a: sa, b: sb} for sa, sb in matched_steps(
            gates.rungs_of(ca, results), gates.rungs_of(cb, results),
            cost_per_step(_config(ca, results), basis), cost_per_step(_config(cb, results), basis))]
    return [pair for pair in pairs if all(holds(spec, results) for spec in at_pair(claim, pair)["arms"].values())]


def cost_per_step(config, basis):
    """What one training step of a run (its training record's config) spends on a compute basis:
    one update; `batch` images; or its encoder passes, views x batch (a forward pass counts whether
    or not it is back-propagated: the memory bank encodes one view per image, every other method two,
    MoCo's second through its key encoder)."""
    if basis in EQUAL_STEPS:
        return 1
    if basis == "equal images":
        return config["batch"]
    return config["batch"] * (1 if config["method"] == "memory_bank" else 2)


def matched_steps(rungs_a, rungs_b, cost_a, cost_b):
    """Every pair of trained rungs (step_a, step_b), ascending, at which the two arms have spent the
    same on a basis: step_a x cost_a = step_b x cost_b."""
    return sorted((ra, rb) for ra in rungs_a for rb in rungs_b if ra > 0 and rb > 0 and ra * cost_a == rb * cost_b)


def _config(condition, results):
    found = record_paths(condition, "training", results)
    if not found:
        raise InputError(f"{record_pattern(condition, 'training')}: no training record; run its pretrain stage")
    return results.record(found[0])["config"]


# ---------------------------------------------------------------- what the rungs say

def rung_summary(pair, out):
    """One rung pair's verdict; `step` is a's (every arm's on equal steps), `arm_steps` each arm's
    where the basis pairs different steps."""
    label = pair_label(pair)
    return {"step": next(iter(pair.values())), "arm_steps": None if isinstance(label, int) else label,
            "verdict": out["verdict"], "arms": out["arms"], "contrasts": out.get("contrasts", [])}


def untrained_levels(claim, results):
    """Each arm's figure at step 0 (the evaluation of the untrained encoder, on the arm's own
    measure), mean over seeds; only arms that read an evaluation at a rung have one."""
    levels = {}
    for name, spec in claim["arms"].items():
        if (key_of(spec) or "").startswith("at.{step}."):
            values = list(measure_by_seed(at_step(spec, 0), results).values())
            levels[name] = sum(values) / len(values) if values else None
    return levels


def _both_trained(rung, c):
    """Whether both arms of a contrast beat their controls at a rung (unknown counts as trained)."""
    for name in (c["a"], c["b"]):
        controls = rung["arms"].get(name, {}).get("control") or {}
        if any(not g["trained"] for g in controls.values()):
            return False
    return True


def add_trend(out, rules):
    """Per contrast of a judged ladder claim: the trend along its rungs (out['ladder'], on the probe
    they read) where both arms trained, in the claim's unit and on the logit scale for accuracies; a
    contradicted top rung says whether it may be a scale artefact. The main contrast's trend label
    becomes the claim's."""
    ladder = out["ladder"]
    for i, c in enumerate(out["contrasts"]):
        top = ladder[-1]["contrasts"][i]
        per_rung = [(r["step"], r["contrasts"][i]) for r in ladder if _both_trained(r, r["contrasts"][i])]
        steps = [s for s, _ in per_rung]
        effects = [dict(zip(rc["seeds"], rc.get("diffs") or [])) for _, rc in per_rung]
        first = per_rung[0][1]["verdict"] if per_rung else None
        c["trend"] = verdicts.ladder_trend(steps, effects, c["margin"], first, top["verdict"], rules)
        logits = [dict(zip(rc["seeds"], rc["logit"]["diffs"])) for _, rc in per_rung if rc.get("logit")]
        if top.get("logit") and len(logits) == len(per_rung):
            mean_b = ladder[-1]["arms"][c["b"]]["mean"]
            margin = c["margin"] / max(mean_b * (1 - mean_b), 1e-3)     # the margin near b's level, in logits
            c["trend_logit"] = verdicts.ladder_trend(steps, logits, margin, first, top["verdict"], rules)
        if c["verdict"] == verdicts.CONTRADICTED:
            c["scale_artefact"] = _scale_artefact(c, out.get("convergence"))
    main = out["contrasts"][0] if out.get("contrasts") else None
    out["trend"] = ((main or {}).get("trend") or {}).get("label")


def _scale_artefact(c, convergence):
    """Why a contradicted top-rung contrast may be a scale artefact, or None when it is trustworthy:
    it keeps its verdict one more doubling of steps on (verdicts.one_more_doubling) and the trend
    does not grow toward the claim."""
    reasons = []
    mine = [k for k in (convergence or {}).get("contrasts") or [] if k.get("b") == c["b"]]
    move = mine[0] if mine else {}
    if move.get("settled") is False:
        reasons.append(f"the effect still moved by {move['change']:+.3g} from step {move['from_step']} to "
                       f"{move['to_step']}")
    elif not move:
        reasons.append("its change over the last doubling of steps was not measured")
    if (c.get("trend") or {}).get("label") == "grows toward the claim":
        reasons.append("the effect grows toward the claim with training")
    return "; ".join(reasons) or None
