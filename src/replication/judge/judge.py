"""Judging the whole registry, as a conductor: each claim's primary analysis (kinds.py), its rungs,
convergence and trend on the scale ladder (ladder.py), the robustness panel (robustness.py); then
the Benjamini-Hochberg screen (verdicts.py), the notes and labels, the verdicts under the frozen
rules of the registration, and the headline counts. No claim's verdict depends on any other claim.
"""
from collections import Counter

from . import ladder, probes, registration, robustness, sequential, verdicts
from .kinds import judge_one
from .measure import at_sweep_value, sweep_values
from .registry import load_registry, validate_claim
from .results import Results


# ---------------------------------------------------------------- one claim

def _judge_claim(claim, results, rules, documents):
    """The primary analysis, with the ladder's lower rungs, the alternatives' verdicts and, for a
    reconstruction with a free parameter, where along it the verdict holds."""
    out = _judge_primary(claim, results, rules, documents)
    if claim.get("free_parameter"):
        out["underdetermined"] = _along_free_parameter(claim, out["verdict"], results, rules, documents)
    return out


def _along_free_parameter(claim, verdict, results, rules, documents):
    """The claim judged again at every value of its free parameter that the sweep's records hold
    (verdicts.underdetermined)."""
    free = claim["free_parameter"]
    keys = [k for k in ("measured", "realisations") if k in claim]
    first = claim[keys[0]] if keys else next(iter(claim["arms"].values()))
    by_value = {}
    for value in sweep_values(first, free, results):
        moved = {k: at_sweep_value(claim[k], free, value) for k in keys}
        if "arms" in claim:
            moved["arms"] = {n: at_sweep_value(spec, free, value) for n, spec in claim["arms"].items()}
        by_value[value] = judge_one({**claim, **moved}, results, rules, documents)["verdict"]
    return verdicts.underdetermined(free["name"], by_value, verdict)


def _judge_primary(claim, results, rules, documents):
    """The primary analysis (kinds.py), on the claim's probe where the records hold it, else on its
    stand-in (ladder.readable); for a paired claim its registered alternatives beside it
    (robustness.py) and, on the ladder, its rungs, convergence and trend (ladder.py: on the stand-in,
    as context, where the claim's probe was evaluated at fewer rungs)."""
    if claim["kind"] == "paired":
        claim, stood_in = ladder.readable(claim, results)
    if not claim.get("ladder"):
        out = judge_one(claim, results, rules, documents)
        if claim["kind"] == "paired":
            out["primary"] = ladder.primary(claim, None, results, stood_in)
            out["_alternatives"] = robustness.alternatives(claim, out, None, None, results, rules)
            _read_at_convergence(claim, out, results, rules)
        return out
    pairs = ladder.matched_rungs(claim, claim["basis"], results)
    judged = [judge_one(ladder.at_pair(claim, pair), results, rules, documents) for pair in pairs]
    out = judged[-1]
    out["primary"] = ladder.primary(claim, pairs[-1], results, stood_in)
    out["_alternatives"] = robustness.alternatives(claim, out, pairs, judged, results, rules)
    shown, shown_pairs = ladder.context(claim, pairs, results)
    if shown is not claim:
        out["primary"]["ladder_probe"] = ladder.primary_probe(shown)
        judged = [judge_one(ladder.at_pair(shown, pair), results, rules, documents) for pair in shown_pairs]
    out["ladder"] = [ladder.rung_summary(pair, o) for pair, o in zip(shown_pairs, judged)]
    _read_at_convergence(claim, out, results, rules, at=pairs[-1])
    out["untrained"] = ladder.untrained_levels(shown, results)
    ladder.add_trend(out, rules)
    return out


def _read_at_convergence(claim, out, results, rules, at=None):
    """The one convergence rule (verdicts.READ_BEFORE_CONVERGENCE), for every judged paired verdict
    whichever way it points. Each contrast that gives the claim's verdict (every contrast of an
    inconclusive claim) is carried one more doubling of steps by its per-seed change over the last
    one (verdicts.one_more_doubling, the arms read at `at`, default the budget: ladder.last_doubling).
    Where one would give another verdict the claim is labelled not converged, and a decided verdict
    is held: inconclusive, with the verdict its interval gave (`held`). Converged where every such
    contrast was measured and keeps its verdict; else unknown. Each arm's own move is shown beside."""
    if out["verdict"] not in verdicts.JUDGED or not out.get("contrasts"):
        return
    deciding = [c for c in out["contrasts"] if c["verdict"] == out["verdict"]] or out["contrasts"]
    ends = ladder.last_doubling(claim, results, rules, at)
    moves = [verdicts.one_more_doubling(c, ends) for c in deciding]
    measured = [m for m in moves if m]
    unsettled = [m for m in measured if not m["settled"]]
    convergence = {"contrasts": measured, "arms": {n: {"moving": e["moving"], "moved": e["moved"]} for n, e in ends.items()},
                   "converged": False if unsettled else True if len(measured) == len(moves) else None}
    scale, unit = claim.get("effect_scale", 1.0), claim.get("effect_unit", "")
    if convergence["converged"] is None:
        convergence["reason"] = "the effect's change over its last doubling of steps was not measured for every contrast"
    if unsettled:
        convergence["reason"] = "; ".join(f"against {m['b']}: {verdicts.doubling_text(m, scale, unit)}" for m in unsettled)
        if out["verdict"] in verdicts.DECIDED:
            convergence["held"] = out["verdict"]
            out["verdict"] = verdicts.INCONCLUSIVE
    out["convergence"] = {k: v for k, v in convergence.items() if v not in ({}, [])}


# ---------------------------------------------------------------- notes and labels

def _effect_note(claim, c):
    if c.get("diff_mean") is None or c.get("rho") is not None:
        return ""
    scale, unit = claim.get("effect_scale", 1.0), claim.get("effect_unit", "")
    lo, hi = (v * scale for v in c["diff_ci95"])
    ours = f"here {c['diff_mean'] * scale:+.3g}{unit}, {verdicts.percent(c['level'])} CI {lo:+.3g} to {hi:+.3g}{unit}"
    if claim.get("published_effect") is not None:
        return f"Effect in the claimed direction: published {claim['published_effect']}; {ours}."
    return f"Effect in the claimed direction: {ours}."


def _labels(claim, out, run):
    labels = []
    robust = out.get("robustness") or {}
    labels += [robust["label"]] if robust.get("label") else []
    labels += robust.get("reversals") or []
    labels += robust.get("decided_on") or []
    if (out.get("primary") or {}).get("stand_in_for"):
        labels.append(verdicts.stand_in_label(probes.NAMES[out["primary"]["probe"]]))
    if verdicts.ruled_out(out["verdict"], out.get("contrasts") or [out.get("contrast") or {}]):
        labels.append(verdicts.RULED_OUT)
    if claim.get("calibrated"):
        labels.append("calibrated")
    if claim.get("realisation"):
        labels.append("realisation")
    if run is None and claim.get("amended"):      # no registration: every amendment saw results
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
            why = "; ".join(filter(None, [c.get("reason") or verdicts.reason(c, claim.get("effect_scale", 1.0),
                                                                              claim.get("effect_unit", "")),
                                          c.get("published_answer")]))
            if why:
                out["_notes"].append(f"{c['a']} vs {c['b']}: {why}.")
        decided = (out.get("convergence") or {}).get("held") or out["verdict"]     # a held verdict: what its interval gave
        deciding = [c for c in contrasts if c["verdict"] == decided] or contrasts
        out["contrast"] = min(deciding, key=lambda c: -1 if c.get("diff_mean") is None else c["diff_mean"])
        # the contrast that decided the verdict (the weakest of those that give it): shown, with its reason
        out["magnitude"] = out["contrast"].get("magnitude")
        out["unstable"] = any(c["unstable"] for c in contrasts)
        if len(contrasts) == 1:
            del out["contrasts"]
        out["_notes"].append(_effect_note(claim, out["contrast"]))
    if claim.get("not_testable"):
        out["verdict"] = verdicts.NOT_TESTABLE
        out["_notes"].insert(0, f"Not testable here as designed: {claim['not_testable']}")
    if "_alternatives" in out:
        out["robustness"] = robustness.panel(claim, out["verdict"], out.pop("_alternatives"), out.get("q_bh"), rules,
                                             out.get("contrast"))
    if out.get("underdetermined"):
        out["_notes"].append(f"Underdetermined: {out['underdetermined']['reason']}.")
    if (out.get("contrast") or {}).get("scale_artefact"):
        out["_notes"].append(f"May be a scale artefact: {out['contrast']['scale_artefact']}.")
    out["labels"] = _labels(claim, out, run)
    if "_notes" in out:
        out["note"] = " ".join(n for n in out.pop("_notes") if n)
    return out


# ---------------------------------------------------------------- the registry

def judge_all(claims, results, rules=None, run=None, documents=()):
    """Judge every claim on its own; then the Benjamini-Hochberg screen over the decided claims
    (a q-value beside each verdict; it decides nothing). run: the registered run of the latest
    record, if any (its post-registration amendments are post hoc; with none, every amendment is);
    documents: the sections of the documents' own examples."""
    judged = [_judge_claim(claim, results, rules, documents) for claim in claims]
    screened = [(out, verdicts.claim_p(out["verdict"], out.get("contrasts") or [])) for out in judged]
    screened = [(out, p) for out, p in screened if p is not None]
    for (out, p), q in zip(screened, verdicts.bh([p for _, p in screened])):
        out["p_decision"], out["q_bh"], out["bh_family"] = p, q, len(screened)
    return [_finish(claim, out, rules, run) for claim, out in zip(claims, judged)]


def judge_registry(conditions, registry="analysis/claims.yaml"):
    """Every claim of the registry judged on the results of the resolved `conditions`; under the
    latest registration record, each verdict's provenance (_provenance): the verdict the registered
    rules give on these results (`frozen_verdict`, where it differs or the claim was amended), and
    what moved it since, rules (post hoc) or registered data. The judged code's hashes are the
    caller's to check (analyze checks them first, registration.check_registered_code;
    tools/register.py judges with moved code on purpose). Returns (judged, record)."""
    registered = load_registry(registry, conditions["conditions"])
    rules, claims = registered.rules, registered.claims
    record = registration.load()
    amendments = registration.load_code_amendments() if record else []
    frozen = registration.check_claims(record, rules, claims, registered.withdrawn) if record else {}
    results = Results.load(conditions=conditions)
    rules = sequential.for_run(rules, conditions["seeds"])
    judged = judge_all(claims, results, rules, run=record and record["run"], documents=registered.documents)
    if record:
        frozen_rules = sequential.for_run(record["rules"], conditions["seeds"])
        texts = {cid: lambda claim=claim: judge_all([claim], results, frozen_rules)[0]["verdict"]
                 for cid, claim in frozen.items()}
        amended = {c["id"]: [a for a in c.get("amended") or [] if registration.amends(a, record["run"])]
                   for c in claims}
        _provenance(judged, texts, amended, registration.rule_changes(amendments), amendments,
                    registration.results_snapshot())
    return judged, record


def _provenance(judged, texts, amended, changes, amendments, now):
    """Who moved each verdict since the registration. The snapshots of a claim's verdict, oldest
    first: its registered text's where it was amended since (`texts`: judged by the registered code,
    recorded by the first rule change, or judged now while no rule has changed), each rule change's
    frozen verdict (the verdict under the code it replaced), and the verdict now (`now`: the results
    judged, registration.results_snapshot). A move between two snapshots judged on the same results
    is a rule's (`rules_amended`, post hoc); one between snapshots on different results is the
    data's (`moved_by_data`: the registered run's later seeds), and carries the registered verdict
    with it. Where nothing records a snapshot's results the move is counted a rule's. The verdict
    the registered rules give on these results is shown as `frozen_verdict` where it differs from
    the verdict (labelled post hoc) or the claim was amended."""
    first_texts = (changes[0].get("registered_claim_verdicts") or {}) if changes else {}
    for out in judged:
        cid, path = out["id"], []
        late = amended.get(cid) or []
        own = {"date": late[-1]["date"], "what": f"the claim's amendment: {late[-1]['what']}"} if late else None
        if cid in texts and cid in first_texts:
            path.append((first_texts[cid], registration.results_of(changes[0], amendments), own))
        elif cid in texts and not changes:
            path.append((texts[cid](), now, own))
        path += [(change["frozen_verdicts"][cid], registration.results_of(change, amendments),
                  {"date": change["date"], "what": change["what"]})
                 for change in changes if cid in change["frozen_verdicts"]]
        path.append((out["verdict"], now, None))
        held, by_rules, by_data = path[0][0], [], []
        for (before, seen, cause), (after, then, _) in zip(path, path[1:]):
            if before == after:
                continue
            if seen and then and seen["sha256"] != then["sha256"]:
                by_data.append({"before": before, "after": after, "by": _data_words(seen, then)})
                held = after if held == before else held
            else:
                by_rules.append(cause or {"date": "", "what": "an unrecorded change"})
        if by_rules:
            out["rules_amended"] = by_rules
        if by_data:
            out["moved_by_data"] = by_data
        if held != out["verdict"] or cid in texts:
            out["frozen_verdict"] = held
        if held != out["verdict"] and "post hoc" not in out["labels"]:
            out["labels"].append("post hoc")


def _data_words(before, after):
    """The registered data that moved a verdict between two snapshots, in words."""
    runs = f"{before['runs']} to {after['runs']} training runs"
    if after["stage_two_runs"] > before["stage_two_runs"]:
        return f"stage 2's registered seeds ({runs})"
    return f"new results of the registered run ({runs})"


def judge(claim, results, rules=None):
    """One claim (a raw registry entry) validated and judged on its own."""
    return judge_all([validate_claim(claim)], results, rules)[0]


def _reaches_across(claim):
    """Whether the interval shown beside a judged claim (its deciding contrast's) reaches across its margin."""
    c = claim.get("contrast") or {}
    ci, m = c.get("diff_ci95"), c.get("margin")
    return claim["verdict"] in verdicts.JUDGED and bool(ci) and None not in ci and m is not None and \
        verdicts.where_interval_lies(ci[0], ci[1], m).startswith("reaches")


def _key(text):
    return text.replace(" ", "_")


def summary(judged):
    """Every count, for reports/summary.json (keys without spaces): the verdicts of each origin
    apart (verdicts.ORIGINS: the published claims, the documents' own claims and examples, our
    additions); `not tested` and calibrated figures outside the judged; where the published effect
    lies against our interval, for the literature's judged claims (the documents print no effect to
    compare); per origin the judged claims whose shown interval reaches across its margin, that are
    not converged and that are post hoc; how many verdicts are robust, post hoc, calibrated, reversed
    by a probe, read on a stand-in probe, or undecided with the published size ruled out. Every count
    a page prints comes from here."""
    out = {"claims": len(judged)}
    for origin in verdicts.ORIGINS:
        mine = [c for c in judged if c["origin"] == origin]
        judged_here = [c for c in mine
                       if c["verdict"] != verdicts.NOT_TESTED and "calibrated" not in c.get("labels", [])]
        counts = {}
        for c in judged_here:
            counts[_key(c["verdict"])] = counts.get(_key(c["verdict"]), 0) + 1
        out[origin] = {"claims": len(mine), "judged": len(judged_here), "verdicts": dict(sorted(counts.items())),
                       "not_tested": sum(c["verdict"] == verdicts.NOT_TESTED for c in mine),
                       "intervals_across_margin": sum(_reaches_across(c) for c in judged_here),
                       "not_converged": sum("not converged" in c.get("labels", []) for c in judged_here),
                       "post_hoc": sum("post hoc" in c.get("labels", []) for c in judged_here)}
        if origin == "literature":
            sizes = Counter(c["magnitude"] for c in judged_here if c.get("magnitude"))
            out[origin]["published_effect"] = {place: sizes.get(place, 0) for place in verdicts.MAGNITUDES}
    labels = [label for c in judged for label in c.get("labels", [])]
    out["labels"] = {_key(name): labels.count(name) for name in
                     ("robust", "calibrated", "post hoc", "realisation", "not converged", "unstable",
                      verdicts.UNDERDETERMINED)}
    out["labels"]["depends_on"] = sum(label.startswith("depends on") for label in labels)
    out["labels"]["reversed"] = sum(any(label.startswith("reverses on") for label in c.get("labels", []))
                                    for c in judged)
    out["labels"]["decided_on"] = sum(bool((c.get("robustness") or {}).get("decided_on")) for c in judged)
    out["labels"]["stand_in"] = sum(label.startswith("read on") for label in labels)
    out["labels"]["ruled_out"] = labels.count(verdicts.RULED_OUT)
    # the convergence rule could not read these: no rung at the start of a deciding contrast's last doubling
    out["labels"]["convergence_not_measured"] = sum(
        c["verdict"] in verdicts.DECIDED and "convergence" in c and c["convergence"].get("converged") is None
        for c in judged)
    return out
