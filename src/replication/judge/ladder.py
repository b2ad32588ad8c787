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
    convergence   each contrast's per-seed change over the last doubling of steps before the primary
                  rung, with its interval, against rules.convergence_fraction x margin
                  (verdicts.convergence); each arm's own move beside it, described
    trend         the effect's slope per decade of steps over the rungs where both arms trained
                  (verdicts.ladder_trend), in the claim's unit and on the logit scale for accuracies;
                  a contradicted top rung says whether it may be a scale artefact
"""
from . import gates, probes, stats, verdicts
from .measure import (InputError, at_step, conditions_of, dig, key_of, measure_by_seed, parts, read_record,
                      record_paths, record_pattern, replace_key, runs, with_rungs)

EQUAL_STEPS = ("equal steps", "equal updates")     # bases that pair every arm at the same step


# ---------------------------------------------------------------- where a claim is read

def primary(claim, top, root, stood_in=None):
    """The registered primary analysis: the probe the arms read, the rung (the top rung pair of a
    ladder claim, `top`; else the runs' budget) and the compute basis; `stood_in`: the probe the
    claim registered, where the claim is read on its stand-in (readable)."""
    return {"probe": primary_probe(claim), "rung": pair_label(top) if top else budget(claim, root),
            "basis": claim["basis"], **({"stand_in_for": stood_in} if stood_in else {})}


def holds(spec, root):
    """Whether every finished run a spec reads holds its figure (a probe evaluated at the step its
    key names: run 2's records hold the all-label probe at each run's budget only)."""
    if parts(spec):
        return all(holds(part, root) for part in parts(spec))
    if spec.get("key") is None:
        return True
    for record in (r for r in runs(spec, root) if r.get("status", "ok") == "ok"):
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


def readable(claim, root):
    """(claim, the probe it registered or None): the claim as read, on its own probe where the
    records hold it at a rung (pair) it reads, else on its stand-in (module docstring)."""
    other = stand_in(claim)
    if other is None:
        return claim, None
    if claim.get("ladder"):
        held = _pairs(claim, claim["basis"], root)
    else:
        held = all(holds(spec, root) for spec in claim["arms"].values())
    return (claim, None) if held else (other, primary_probe(claim))


def context(claim, pairs, root):
    """(claim, pairs) the rungs, convergence and trend are read on: the claim's own where its
    records hold its probe at every rung pair its stand-in's hold, else the stand-in's (module
    docstring)."""
    other = stand_in(claim)
    wider = _pairs(other, claim["basis"], root) if other else []
    return (other, wider) if len(wider) > len(pairs) else (claim, pairs)


def primary_probe(claim):
    """The class-label probe the claim's arms read (probes.PANEL), else the key of its first arm."""
    key = key_of(next(iter(claim["arms"].values()))) if claim.get("arms") else None
    last = (key or "").rsplit(".", 1)[-1]
    return last if last in probes.PANEL else key


def budget(claim, root):
    """The steps a non-ladder claim reads its runs at (their budget, from the training records):
    one number when every arm shares it, else {arm: steps}."""
    steps = {}
    for name, spec in claim["arms"].items():
        for condition in conditions_of(spec):
            found = record_paths(condition, "training", root)
            if found:
                steps.setdefault(name, read_record(found[0], root)["config"]["steps"])
    return next(iter(steps.values())) if len(set(steps.values())) == 1 else steps or None


def arms_still_moving(claim, root, rules, at=None):
    """Each arm, a plain spec reading `eval.<figure>` or `at.{step}.<figure>`, that still gains (or
    loses) more than the claim's margin per doubling of steps: its per-seed change over its
    condition's last doubling before the step it is read at (`at`: one step or {arm: step}; default
    the runs' budget; gates.previous_rung) has an interval at the registered level beyond +-margin:
    {arm: 'moved +x [lo, hi] from a to b steps'} (in the claim's unit). An arm whose condition was
    evaluated at no rung that starts the doubling, or whose figure is read at one rung only, is left
    out (not measured)."""
    threshold = claim["margin"]
    scale, unit = claim.get("effect_scale", 1.0), claim.get("effect_unit", "")
    steps = budget(claim, root) if at is None else at
    moving = {}
    for name, spec in claim["arms"].items():
        key, found = key_of(spec) or "", conditions_of(spec)
        at_budget = steps.get(name) if isinstance(steps, dict) else steps
        figure = next((key[len(p):] for p in ("eval.", "at.{step}.") if key.startswith(p)), None)
        if parts(spec) or not figure or len(found) != 1 or not at_budget:
            continue
        start = gates.previous_rung(gates.rungs_of(found[0], root), at_budget)
        if start is None:
            continue
        try:
            before, after = (measure_by_seed({**spec, "key": f"at.{step}.{figure}"}, root) for step in (start, at_budget))
        except InputError:          # the figure is read at the budget only (the all-label probe in run 2)
            continue
        change = [after[s] - before[s] for s in after if s in before]
        if len(change) < 2:
            continue
        lo, hi = stats.t_interval(change, verdicts.level(rules))
        if lo > threshold or hi < -threshold:
            moving[name] = (f"moved {sum(change) / len(change) * scale:+.3g} [{lo * scale:+.3g}, {hi * scale:+.3g}]"
                            f"{unit} from {start:,} to {at_budget:,} steps")
    return moving


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


def ladder_rungs(claim, root="."):
    """The trained rungs (steps above 0) that every condition of a ladder claim was evaluated at."""
    common = None
    for condition in (c for spec in claim["arms"].values() for c in conditions_of(spec)):
        rungs = set(gates.rungs_of(condition, root))
        common = rungs if common is None else common & rungs
    rungs = sorted(r for r in common or () if r > 0)
    if not rungs:
        raise InputError(f"claim {claim['id']}: its conditions share no trained rung; run their evaluate stages")
    return rungs


def matched_rungs(claim, basis, root="."):
    """The rung pairs ({arm: step}, ascending) a ladder claim is judged at on a compute basis (_pairs);
    InputError where there is none."""
    pairs = _pairs(claim, basis, root)
    if pairs:
        return pairs
    if basis in EQUAL_STEPS:
        raise InputError(f"claim {claim['id']}: the records hold {key_of(next(iter(claim['arms'].values())))} at "
                         "none of the rungs its conditions share; run their evaluate stages")
    a, b = claim["a"], claim["b"] if isinstance(claim["b"], str) else claim["b"][0]
    raise InputError(f"claim {claim['id']}: no rungs of {conditions_of(claim['arms'][a])[0]} and "
                     f"{conditions_of(claim['arms'][b])[0]} spend the same on '{basis}' with their figures "
                     "recorded; add ladder rungs to params.yaml that pair up, or register another basis")


def _pairs(claim, basis, root):
    """Every rung pair ({arm: step}, ascending) of a ladder claim on a compute basis at which the
    records hold the figures it reads: every common trained rung on equal steps (or updates); else
    the pairs of a's and b's rungs at which both have spent the same (matched_steps), which the
    registry allows for two arms."""
    if basis in EQUAL_STEPS:
        pairs = [{name: step for name in claim["arms"]} for step in ladder_rungs(claim, root)]
    else:
        a, b = claim["a"], claim["b"] if isinstance(claim["b"], str) else claim["b"][0]
        (ca,), (cb,) = conditions_of(claim["arms"][a]), conditions_of(claim["arms"][b])
        pairs = [{a: sa, b: sb} for sa, sb in matched_steps(
            gates.rungs_of(ca, root), gates.rungs_of(cb, root),
            cost_per_step(_config(ca, root), basis), cost_per_step(_config(cb, root), basis))]
    return [pair for pair in pairs if all(holds(spec, root) for spec in at_pair(claim, pair)["arms"].values())]


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


def _config(condition, root):
    found = record_paths(condition, "training", root)
    if not found:
        raise InputError(f"{record_pattern(condition, 'training')}: no training record; run its pretrain stage")
    return read_record(found[0], root)["config"]


# ---------------------------------------------------------------- what the rungs say

def rung_summary(pair, out):
    """One rung pair's verdict; `step` is a's (every arm's on equal steps), `arm_steps` each arm's
    where the basis pairs different steps."""
    label = pair_label(pair)
    return {"step": next(iter(pair.values())), "arm_steps": None if isinstance(label, int) else label,
            "verdict": out["verdict"], "arms": out["arms"], "contrasts": out.get("contrasts", [])}


def untrained_levels(claim, root):
    """Each arm's figure at step 0 (the evaluation of the untrained encoder, on the arm's own
    measure), mean over seeds; only arms that read an evaluation at a rung have one."""
    levels = {}
    for name, spec in claim["arms"].items():
        if (key_of(spec) or "").startswith("at.{step}."):
            values = list(measure_by_seed(at_step(spec, 0), root).values())
            levels[name] = sum(values) / len(values) if values else None
    return levels


def convergence(claim, pairs, judged, rules):
    """Whether the claim's effect has settled: each contrast's per-seed change over the last doubling
    of steps before the primary pair, with its interval, against the registered threshold
    (verdicts.convergence); each arm's own move beside it, described (_arm_move)."""
    threshold = rules["convergence_fraction"] * claim["margin"]
    a_steps = [p[claim["a"]] for p in pairs]
    start = gates.previous_rung(a_steps, a_steps[-1])
    contrasts = []
    for k, after in enumerate(judged[-1].get("contrasts") or []):
        before = judged[a_steps.index(start)]["contrasts"][k] if start is not None else None
        contrasts.append(verdicts.convergence(before, after, threshold, rules,
                                              start and pairs[a_steps.index(start)][claim["a"]], a_steps[-1]))
    known = [c["converged"] for c in contrasts]
    arms = {name: _arm_move([p[name] for p in pairs], [o["arms"][name] for o in judged], threshold)
            for name in claim["arms"]}
    return {"threshold": threshold, "contrasts": contrasts, "arms": arms,
            "converged": False if False in known else True if known and all(known) else None}


def _arm_move(steps, judged_arms, threshold):
    """How far one arm's mean moved over the last doubling before its top rung, read off the arm as
    judged at each rung (`steps`, `judged_arms`: ascending); descriptive, the contrast decides."""
    start = gates.previous_rung(steps, steps[-1])
    if start is None:
        return {"converged": None, "reason": f"judged at no rung between {steps[-1] // 2} and {steps[-1]} steps"}
    before = dict(zip(judged_arms[steps.index(start)]["seeds"], judged_arms[steps.index(start)]["values"]))
    after = dict(zip(judged_arms[-1]["seeds"], judged_arms[-1]["values"]))
    seeds = [s for s in after if s in before]
    if len(seeds) < 2:
        return {"converged": None, "reason": "fewer than two runs reached both rungs"}
    move = sum(after[s] - before[s] for s in seeds) / len(seeds)
    return {"from_step": start, "to_step": steps[-1], "move": move, "threshold": threshold,
            "converged": abs(move) < threshold}


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
    its effect has settled (verdicts.convergence) and the trend does not grow toward the claim."""
    reasons = []
    mine = [k for k in (convergence or {}).get("contrasts") or [] if k.get("b") == c["b"]]
    conv = mine[0] if mine else {}
    if conv.get("converged") is False:
        reasons.append(f"the effect still moved by {conv['change']:+.3g} from step {conv['from_step']} to "
                       f"{conv['to_step']}")
    elif conv.get("converged") is None:
        reasons.append(f"its convergence is not shown ({conv.get('reason', 'not measured')})")
    if (c.get("trend") or {}).get("label") == "grows toward the claim":
        reasons.append("the effect grows toward the claim with training")
    return "; ".join(reasons) or None
