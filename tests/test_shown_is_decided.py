"""What a reader is shown is what decided: the effect and interval beside a verdict come from the
contrast that decided it, the reason agrees with both and is in the claim's unit, a failure claim
shows the fact that decided it, and the count of runs is named for what it is. Checked on the
committed reports/claims.json and reports/claims.md, and on constructed claims, one per defect."""
import re
from pathlib import Path

import pytest

from replication.judge.verdicts import NO_POSITIVE_CONTROL
from replication.report import claims_view as rc, markdown


ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "reports" / "claims.json"


def inconsistencies(claim):
    """Every disagreement between what the report shows of a claim and its verdict."""
    found = []
    v, c, effect = claim["verdict"], claim.get("contrast") or {}, rc.our_effect(claim)
    reason = rc.reason(claim)
    if effect and effect["lo"] is not None and effect["margin"] is not None and v in rc.JUDGED:
        lo, hi, m = effect["lo"], effect["hi"], effect["margin"]
        equal = c.get("direction") == "equal"
        unseen = equal and c.get("reason", "").startswith(NO_POSITIVE_CONTROL)   # inside, but no control saw +m
        moving = bool((claim.get("convergence") or {}).get("arms_moving"))      # a contradiction read too early
        holds = {"reproduced": (-m < lo and hi < m) if equal else lo > m,
                 "contradicted": (hi < -m or lo > m) if equal else hi < -m,
                 "no meaningful effect": -m < lo and hi < m,
                 "inconclusive": unseen or moving or not (lo > m or hi < -m or (-m < lo and hi < m))}[v]
        if not holds:
            found.append(f"shown interval [{lo:.3g}, {hi:.3g}] (margin {m:.3g}) does not give '{v}'")
        if c.get("verdict") not in (None, v) and v != "not testable here" and not moving:
            found.append(f"the shown contrast is {c.get('verdict')}, the claim {v}")
        if moving and not reason.startswith("read before convergence"):
            found.append(f"inconclusive by convergence without saying so first: {reason}")
        unit = effect["unit"].strip()
        numbers = re.findall(r"[+−-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?", reason)
        if unit and numbers and unit not in reason:
            found.append(f"reason not in the claim's unit ({unit}): {reason}")
        if v == "reproduced" and "above" in reason and equal:
            found.append(f"a claim of no effect reproduced with a reason 'above': {reason}")
    if v == "not testable here" and "would settle it" in reason:
        found.append(f"not testable with a reason about seeds, which makes it inconclusive: {reason}")
    if claim.get("kind") == "failure" and claim.get("decided_by") and reason != claim["decided_by"]:
        found.append(f"a failure claim's reason is not the fact that decided it: {reason}")
    if claim.get("kind") == "failure" and v in ("reproduced", "contradicted") and not claim.get("decided_by"):
        found.append("a decided failure claim without the fact that decided it")
    count, kind = rc.realisations(claim)
    if kind and "thread-count" in kind and not claim.get("realisation"):
        found.append(f"{count} runs named thread-count realisations without a realisation claim")
    return found


@pytest.mark.skipif(not COMMITTED.exists(), reason="no committed reports/claims.json")
def test_the_committed_claims_show_what_decided_them():
    problems = {c["id"]: inconsistencies(c) for c in rc.load_claims(COMMITTED)}
    assert {cid: found for cid, found in problems.items() if found} == {}


@pytest.mark.skipif(not COMMITTED.exists(), reason="no committed reports/claims.json")
def test_claims_md_shows_each_claims_verdict_effect_and_reason_as_claims_json_has_them():
    rows = {re.match(r"\| `([^`]+)`", line).group(1): line
            for line in (ROOT / "reports" / "claims.md").read_text().splitlines() if line.startswith("| `")}
    for c in rc.load_claims(COMMITTED):
        if c["id"] in rows:
            row = rows[c["id"]]
            assert f"**{markdown.cell(rc.verdict_words(c))}**" in row, c["id"]
            assert markdown.cell(rc.ours(c)) in row, c["id"]
            assert markdown.cell(rc.reason(c)) in row, c["id"]


def paired(verdict, lo, hi, margin=0.02, direction="greater", **extra):
    contrast = {"a": "x", "b": "y", "diff_mean": (lo + hi) / 2, "diff_ci95": [lo, hi], "margin": margin,
                "verdict": verdict, "direction": direction, "seeds": [0, 1, 2, 3, 4], "level": 0.95}
    return {"id": "c", "kind": "paired", "origin": "literature", "section": "s", "verdict": verdict,
            "effect_scale": 100, "effect_unit": " points", "contrast": contrast, "arms": {}, **extra}


DEFECTS = [   # one constructed claim per class of defect the review found
    ("a no-effect claim reproduced with a reason 'above'", {
        **paired("reproduced", -0.0152, 0.0077, direction="equal"),
        "contrast": {**paired("reproduced", -0.0152, 0.0077)["contrast"], "direction": "greater"}}),
    ("the number from one contrast, the verdict from another",
     {**paired("inconclusive", 0.03, 0.05), "contrast": {**paired("reproduced", 0.03, 0.05)["contrast"]}}),
    ("a failure reproduced beside a fact that did not decide it", {
        "id": "f", "kind": "failure", "origin": "literature", "section": "s", "verdict": "reproduced", "arms": {},
        "note": "At step 300: 0 of 5 runs had diverged or collapsed; loss 0.50 (chance 0.50)."}),
    ("a reason in a raw fraction beside an effect in points",
     {**paired("inconclusive", -0.01, 0.03), "contrast": {**paired("inconclusive", -0.01, 0.03)["contrast"],
                                                           "reason": "the interval [-0.01, 0.03] reaches across"}}),
    ("not testable with a reason about seeds",
     {**paired("not testable here", -0.02, 0.037), "note": "tau vs tau: about 18 seeds would settle it."}),
    ("ten seeds named thread-count realisations",
     {"id": "r", "kind": "single_run", "origin": "document", "section": "s", "verdict": "reproduced",
      "arms": {"realisations": {"n": 10, "values": [0.6] * 10}}, "n_realisations": 10,
      "realisation_kind": "thread-count realisations of one seed"}),
]


@pytest.mark.parametrize("case,claim", DEFECTS, ids=[d[0] for d in DEFECTS])
def test_the_check_finds_each_class_of_defect(case, claim):
    assert inconsistencies(claim), case


def test_a_consistent_claim_passes():
    assert inconsistencies(paired("reproduced", 0.03, 0.05)) == []
    assert inconsistencies(paired("reproduced", -0.01, 0.01, direction="equal")) == []
