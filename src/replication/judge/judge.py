"""Judging the whole registry: each claim's primary analysis (kinds.py), the scale ladder, the
convergence check, the robustness panel (robustness.py), the labels, the Benjamini-Hochberg screen
(verdicts.py) and the headline counts. No claim's verdict depends on any other claim.
"""
import glob
from collections import Counter

from . import gates, registration, robustness, verdicts
from .kinds import judge_one
from .measure import (InputError, at_step, at_sweep_value, check_inputs, conditions_of, key_of, measure_by_seed,
                      parts, read_record, replace_key, sweep_values)
from .registry import load_registry, validate_claim


def claim_at(claim, step, arm_steps=None):
    """A ladder claim as judged at one rung (or each arm at its own rung, `arm_steps`)."""
    arms = {name: at_step(spec, (arm_steps or {}).get(name, step)) for name, spec in claim["arms"].items()}
    return {**claim, "arms": arms, "_step": step, "_arm_steps": arm_steps or {}}


def _conditions(claim):
    """Every condition the arms of a claim read."""
    return [c for spec in (claim.get("arms") or {}).values() for c in conditions_of(spec)]


def ladder_rungs(claim, root="."):
    """The trained rungs (steps above 0) that every condition of a ladder claim was evaluated at."""
    common = None
    for condition in _conditions(claim):
        rungs = set(gates.rungs_of(condition, root))
        common = rungs if common is None else common & rungs
    rungs = sorted(r for r in common or () if r > 0)
    if not rungs:
        raise InputError(f"claim {claim['id']}: its conditions share no trained rung; run their evaluate stages")
    return rungs


def _budget(claim, root):
    """The steps a non-ladder claim reads its runs at (their budget, from the training records):
    one number when every arm shares it, else {arm: steps}."""
    steps = {}
    for name, spec in claim["arms"].items():
        for condition in conditions_of(spec):
            found = glob.glob(f"results/pretrain/*/{condition}/seed_*.json", root_dir=root)
            if found:
                steps.setdefault(name, read_record(sorted(found)[0], root)["config"]["steps"])
    return next(iter(steps.values())) if len(set(steps.values())) == 1 else steps or None


def _probe(claim):
    key = key_of(next(iter(claim["arms"].values()))) if claim.get("arms") else None
    last = (key or "").rsplit(".", 1)[-1]
    return last if last in robustness.PROBES else key


# ---------------------------------------------------------------- one claim

def _judge_claim(claim, root, rules, documents):
    """The primary analysis, with the ladder's lower rungs, the alternatives' verdicts and, for a
    reconstruction with a free parameter, where along it the verdict holds."""
    out = _judge_primary(claim, root, rules, documents)
    if claim.get("free_parameter"):
        out["underdetermined"] = _along_free_parameter(claim, out["verdict"], root, rules, documents)
    return out


def _along_free_parameter(claim, verdict, root, rules, documents):
    """The claim judged again at every value of its free parameter that the sweep's records hold
    (verdicts.underdetermined)."""
    free = claim["free_parameter"]
    keys = [k for k in ("measured", "realisations") if k in claim]
    first = claim[keys[0]] if keys else next(iter(claim["arms"].values()))
    by_value = {}
    for value in sweep_values(first, free, root):
        moved = {k: at_sweep_value(claim[k], free, value) for k in keys}
        if "arms" in claim:
            moved["arms"] = {n: at_sweep_value(spec, free, value) for n, spec in claim["arms"].items()}
        by_value[value] = judge_one({**claim, **moved}, root, rules, documents)["verdict"]
    return verdicts.underdetermined(free["name"], by_value, verdict)


def _judge_primary(claim, root, rules, documents):
    """The primary analysis, with the ladder's lower rungs and the alternatives' verdicts."""
    if not claim.get("ladder"):
        out = judge_one(claim, root, rules, documents)
        if claim["kind"] == "paired":
            out["primary"] = {"probe": _probe(claim), "rung": _budget(claim, root), "basis": claim["basis"]}
            out["_alternatives"] = (_probe_alternatives(claim, None, root, rules, out["verdict"]) +
                                    _baseline_alternative(out))
            out["convergence"] = {"converged": None, "reason": "one trained rung: convergence not measured"}
        return out
    pairs = matched_rungs(claim, claim["basis"], root)
    judged = [judge_one(_at_pair(claim, pair), root, rules, documents) for pair in pairs]
    out, top = judged[-1], pairs[-1]
    out["primary"] = {"probe": _probe(claim), "rung": _pair_label(top), "basis": claim["basis"]}
    out["ladder"] = [_rung_summary(pair, o) for pair, o in zip(pairs, judged)]
    out["_alternatives"] = (_probe_alternatives(claim, top, root, rules, out["verdict"]) +
                            _rung_alternative(pairs, judged) + _basis_alternatives(claim, root, rules) +
                            _baseline_alternative(out))
    out["convergence"] = _convergence(claim, pairs, judged, rules)
    out["untrained"] = _untrained_levels(claim, root)
    _trend(claim, out, rules)
    return out


def _at_pair(claim, pair):
    """A ladder claim at one rung pair ({arm: step}; one step for every arm on equal steps)."""
    steps = set(pair.values())
    return claim_at(claim, steps.pop()) if len(steps) == 1 else claim_at(claim, pair[claim["a"]], pair)


def _pair_label(pair):
    """The primary rung: one step, or {arm: step} when the basis pairs different steps."""
    steps = set(pair.values())
    return next(iter(steps)) if len(steps) == 1 else dict(pair)


def matched_rungs(claim, basis, root="."):
    """The rung pairs ({arm: step}, ascending) a ladder claim is judged at on a compute basis: every
    common trained rung on equal steps (or updates); else the pairs of a's and b's rungs at which
    both have spent the same (robustness.matched_steps), which the registry allows for two arms."""
    if basis in ("equal steps", "equal updates"):
        return [{name: step for name in claim["arms"]} for step in ladder_rungs(claim, root)]
    a, b = claim["a"], claim["b"] if isinstance(claim["b"], str) else claim["b"][0]
    (ca,), (cb,) = conditions_of(claim["arms"][a]), conditions_of(claim["arms"][b])
    pairs = robustness.matched_steps(gates.rungs_of(ca, root), gates.rungs_of(cb, root),
                                     robustness.cost_per_step(_config(ca, root), basis),
                                     robustness.cost_per_step(_config(cb, root), basis))
    if not pairs:
        raise InputError(f"claim {claim['id']}: no rungs of {ca} and {cb} spend the same on '{basis}'; "
                         "add ladder rungs to params.yaml that pair up, or register another basis")
    return [{a: sa, b: sb} for sa, sb in pairs]


def _config(condition, root):
    found = glob.glob(f"results/pretrain/*/{condition}/seed_*.json", root_dir=root)
    if not found:
        raise InputError(f"results/pretrain/*/{condition}: no training record; run its pretrain stage")
    return read_record(sorted(found)[0], root)["config"]


def _untrained_levels(claim, root):
    """Each arm's figure at step 0 (the evaluation of the untrained encoder, on the arm's own
    measure), mean over seeds; only arms that read an evaluation at a rung have one."""
    levels = {}
    for name, spec in claim["arms"].items():
        if (key_of(spec) or "").startswith("at.{step}."):
            values = list(measure_by_seed(at_step(spec, 0), root).values())
            levels[name] = sum(values) / len(values) if values else None
    return levels


def _rung_summary(pair, out):
    """One rung pair's verdict; `step` is a's (every arm's on equal steps), `arm_steps` each arm's
    where the basis pairs different steps."""
    label = _pair_label(pair)
    return {"step": next(iter(pair.values())), "arm_steps": None if isinstance(label, int) else label,
            "verdict": out["verdict"], "arms": out["arms"], "contrasts": out.get("contrasts", [])}


def _alternative(dimension, choice, out):
    main = (out.get("contrasts") or [{}])[0]
    return {"dimension": dimension, "choice": choice, "verdict": out["verdict"],
            "diff_mean": main.get("diff_mean"), "diff_ci95": main.get("diff_ci95")}


def _probe_alternatives(claim, pair, root, rules, verdict):
    """The claim under each other registered probe, at the primary rung pair (None: its budget)."""
    primary = _probe(claim)
    found = []
    for probe in rules["robustness"]["probes"]:
        if probe in robustness.BUDGET_ONLY and (pair or not all(_reads_budget(s) for s in claim["arms"].values())):
            continue
        arms = {n: replace_key(s, primary, probe) for n, s in claim["arms"].items()} if probe != primary else {}
        if arms and None not in arms.values():
            other = {**claim, "arms": arms}
            judged = judge_one(_at_pair(other, pair) if pair else other, root, rules)
            found.append(_alternative("probe", probe, judged))
    return found


def _baseline_alternative(out):
    """The main contrast's gain over step 0, where its sides differ before training."""
    gain = (((out.get("contrasts") or [{}])[0].get("baseline")) or {}).get("gain")
    if not gain:
        return []
    return [{"dimension": "baseline", "choice": "gain over step 0", "verdict": gain["verdict"],
             "diff_mean": gain["diff_mean"], "diff_ci95": gain["diff_ci95"]}]


def _reads_budget(spec):
    """Whether every figure a spec reads is at its runs' budget checkpoint (`eval.`)."""
    if parts(spec):
        return all(_reads_budget(part) for part in parts(spec))
    return (spec.get("key") or "").startswith("eval.")


def _rung_alternative(pairs, judged):
    """The pair that starts the last doubling of a's steps before the primary pair's."""
    a_steps = [next(iter(p.values())) for p in pairs]
    start = gates.previous_rung(a_steps, a_steps[-1])
    if start is None:
        return []
    i = a_steps.index(start)
    return [_alternative("rung", _pair_label(pairs[i]), judged[i])]


def _basis_alternatives(claim, root, rules):
    """The claim at its top rung pair on every other basis (equal steps, equal images, equal encoder
    passes) that pairs different rungs from the primary's; only for two-arm, one-condition claims."""
    found, seen = [], {_pair_key(matched_rungs(claim, claim["basis"], root)[-1])}
    for basis in rules["robustness"]["bases"]:
        if basis == claim["basis"]:
            continue
        try:
            pairs = matched_rungs(claim, basis, root) if basis == "equal steps" or _two_plain_arms(claim) else []
        except InputError:
            pairs = []
        if pairs and _pair_key(pairs[-1]) not in seen:
            seen.add(_pair_key(pairs[-1]))
            steps = ", ".join(f"{arm} at {step:,}" for arm, step in pairs[-1].items())
            found.append(_alternative("basis", f"{basis}: {steps} steps", judge_one(_at_pair(claim, pairs[-1]), root, rules)))
    return found


def _pair_key(pair):
    return tuple(sorted(pair.items()))


def _two_plain_arms(claim):
    bs = claim["b"] if isinstance(claim["b"], list) else [claim["b"]]
    return len(bs) == 1 and len(claim["arms"]) == 2 and all(
        len(conditions_of(spec)) == 1 for spec in claim["arms"].values())


def _convergence(claim, pairs, judged, rules):
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


def _trend(claim, out, rules):
    """Per contrast: the trend along the rungs where both arms trained, in the claim's unit and on
    the logit scale for accuracies; a contradicted top rung says whether it may be a scale artefact."""
    ladder = out["ladder"]
    for i, c in enumerate(out["contrasts"]):
        per_rung = [(r["step"], r["contrasts"][i]) for r in ladder if _both_trained(r, r["contrasts"][i])]
        steps = [s for s, _ in per_rung]
        effects = [dict(zip(rc["seeds"], rc.get("diffs") or [])) for _, rc in per_rung]
        first = per_rung[0][1]["verdict"] if per_rung else None
        c["trend"] = verdicts.ladder_trend(steps, effects, c["margin"], first, c["verdict"], rules)
        logits = [dict(zip(rc["seeds"], rc["logit"]["diffs"])) for _, rc in per_rung if rc.get("logit")]
        if c.get("logit") and len(logits) == len(per_rung):
            mean_b = out["arms"][c["b"]]["mean"]
            margin = c["margin"] / max(mean_b * (1 - mean_b), 1e-3)     # the margin near b's level, in logits
            c["trend_logit"] = verdicts.ladder_trend(steps, logits, margin, first, c["verdict"], rules)
        if c["verdict"] == "contradicted":
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


# ---------------------------------------------------------------- notes and labels

def _effect_note(claim, c):
    if c.get("diff_mean") is None or c.get("rho") is not None:
        return ""
    scale, unit = claim.get("effect_scale", 1.0), claim.get("effect_unit", "")
    lo, hi = (v * scale for v in c["diff_ci95"])
    ours = f"here {c['diff_mean'] * scale:+.3g}{unit}, 95% CI {lo:+.3g} to {hi:+.3g}{unit}"
    if claim.get("published_effect") is not None:
        return f"Effect in the claimed direction: published {claim['published_effect']}; {ours}."
    return f"Effect in the claimed direction: {ours}."


def _labels(claim, out, run):
    labels = []
    if out.get("robustness"):
        labels.append(out["robustness"]["label"])
    if claim.get("calibrated"):
        labels.append("calibrated")
    if claim.get("realisation"):
        labels.append("realisation")
    if any(run is None or registration.amends(a, run) for a in claim.get("amended") or []):
        labels.append("post hoc")
    if (out.get("convergence") or {}).get("converged") is False:
        labels.append("not converged")
    if out.get("unstable"):
        labels.append("unstable")
    if out.get("underdetermined"):
        labels.append(verdicts.UNDERDETERMINED)
    return labels


def _finish(claim, out, rules, run):
    """Main contrast, reasons, notes, robustness and labels of a judged claim."""
    contrasts = out.get("contrasts")
    if contrasts:
        for c in contrasts:
            c["unstable"] = verdicts.unstable(c, rules)
            why = c.get("reason") or verdicts.reason(c, claim.get("effect_scale", 1.0), claim.get("effect_unit", ""))
            if why:
                out["_notes"].append(f"{c['a']} vs {c['b']}: {why}.")
        deciding = [c for c in contrasts if c["verdict"] == out["verdict"]] or contrasts
        out["contrast"] = min(deciding, key=lambda c: -1 if c.get("diff_mean") is None else c["diff_mean"])
        # the contrast that decided the verdict (the weakest of those that give it): shown, with its reason
        out["magnitude"] = out["contrast"].get("magnitude")
        out["unstable"] = any(c["unstable"] for c in contrasts)
        if len(contrasts) == 1:
            del out["contrasts"]
        out["_notes"].append(_effect_note(claim, out["contrast"]))
    if claim.get("not_testable"):
        out["verdict"] = "not testable here"
        out["_notes"].insert(0, f"Not testable here as designed: {claim['not_testable']}")
    if "_alternatives" in out:
        alternatives = out.pop("_alternatives")
        alternatives.append({"dimension": "multiplicity", "choice": "Benjamini-Hochberg",
                             "verdict": verdicts.multiplicity_verdict(out["verdict"], out.get("q_bh"),
                                                                      rules["alpha"])})
        out["robustness"] = {"label": robustness.label(out["verdict"], alternatives), "alternatives": alternatives}
    if out.get("underdetermined"):
        out["_notes"].append(f"Underdetermined: {out['underdetermined']['reason']}.")
    if (out.get("contrast") or {}).get("scale_artefact"):
        out["_notes"].append(f"May be a scale artefact: {out['contrast']['scale_artefact']}.")
    out["labels"] = _labels(claim, out, run)
    if "_notes" in out:
        out["note"] = " ".join(n for n in out.pop("_notes") if n)
    return out


# ---------------------------------------------------------------- the registry

def judge_all(claims, root=".", rules=None, run=None, documents=()):
    """Judge every claim on its own; then the Benjamini-Hochberg screen over the decided claims
    (a q-value beside each verdict; it decides nothing). run: the registered run of the latest
    record, if any (its post-registration amendments are post hoc; with none, every amendment is);
    documents: the sections of the documents' own examples."""
    gates.clear_cache()
    judged = [_judge_claim(claim, root, rules, documents) for claim in claims]
    screened = [(out, verdicts.claim_p(out["verdict"], out.get("contrasts") or [])) for out in judged]
    screened = [(out, p) for out, p in screened if p is not None]
    for (out, p), q in zip(screened, verdicts.bh([p for _, p in screened])):
        out["p_decision"], out["q_bh"], out["bh_family"] = p, q, len(screened)
    return [_finish(claim, out, rules, run) for claim, out in zip(claims, judged)]


def judge_registry(conditions, registry="analysis/claims.yaml"):
    """Every claim of the registry judged on the results of the resolved `conditions`; under the
    latest registration record, each claim amended after it also judged by its frozen rule
    (`frozen_verdict`). The judged code's hashes are the caller's to check (analyze checks them
    first, registration.check_registered_code; tools/register.py judges with moved code on purpose).
    Returns (judged, record)."""
    registered = load_registry(registry, conditions["conditions"])
    rules, claims = registered.rules, registered.claims
    record = registration.load()
    amendments = registration.load_code_amendments() if record else []
    frozen = registration.check_claims(record, rules, claims, registered.withdrawn) if record else {}
    check_inputs(conditions)
    judged = judge_all(claims, rules=rules, run=record and record["run"], documents=registered.documents)
    for out in judged:
        if out["id"] in frozen:
            out["frozen_verdict"] = judge_all([frozen[out["id"]]], rules=record["rules"])[0]["verdict"]
    _post_hoc_rules(judged, registration.rule_changes(amendments))
    return judged, record


def _post_hoc_rules(judged, changes):
    """Verdicts the rule changes after the registration moved: each shown post hoc beside the
    verdict the registered code gave (`frozen_verdict`), with every change that moved it on the way
    (`rules_amended`: the changes whose verdict before differs from the verdict after them)."""
    for out in judged:
        path = [change["frozen_verdicts"].get(out["id"]) for change in changes] + [out["verdict"]]
        if not changes or path[0] is None or path[0] == out["verdict"]:
            continue
        out.setdefault("frozen_verdict", path[0])
        out["rules_amended"] = [{"date": change["date"], "what": change["what"]}
                                for change, before, after in zip(changes, path, path[1:])
                                if before is not None and after is not None and before != after]
        if "post hoc" not in out["labels"]:
            out["labels"].append("post hoc")


def judge(claim, root=".", rules=None):
    """One claim (a raw registry entry) validated and judged on its own."""
    return judge_all([validate_claim(claim)], root, rules)[0]


def _key(text):
    return text.replace(" ", "_")


def summary(judged):
    """The headline counts for `dvc metrics show` (keys without spaces): verdicts of the
    literature's claims and of the documents' own examples apart; `not tested` and calibrated
    figures outside the judged; where the published effect lies against our interval, for the
    literature's judged claims (the documents print no effect to compare); how many verdicts are
    robust, post hoc, calibrated."""
    out = {"claims": len(judged)}
    for origin in ("literature", "document"):
        mine = [c for c in judged if c["origin"] == origin]
        judged_here = [c for c in mine if c["verdict"] != "not tested" and "calibrated" not in c.get("labels", [])]
        counts = {}
        for c in judged_here:
            counts[_key(c["verdict"])] = counts.get(_key(c["verdict"]), 0) + 1
        out[origin] = {"claims": len(mine), "judged": len(judged_here), "verdicts": dict(sorted(counts.items())),
                       "not_tested": sum(c["verdict"] == "not tested" for c in mine)}
        if origin == "literature":
            sizes = Counter(c["magnitude"] for c in judged_here if c.get("magnitude"))
            out[origin]["published_effect"] = {place: sizes.get(place, 0) for place in verdicts.MAGNITUDES}
    labels = [label for c in judged for label in c.get("labels", [])]
    out["labels"] = {_key(name): labels.count(name) for name in
                     ("robust", "calibrated", "post hoc", "realisation", "not converged", "unstable",
                      verdicts.UNDERDETERMINED)}
    out["labels"]["depends_on"] = sum(label.startswith("depends on") for label in labels)
    return out
