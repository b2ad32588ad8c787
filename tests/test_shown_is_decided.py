"""What a reader is shown is what decided: the effect and interval beside a verdict come from the
contrast that decided it, the reason agrees with both and is in the claim's unit, a failure claim
shows the fact that decided it, and the count of runs is named for what it is. Checked on the
committed reports/claims.json and reports/claims.md, and on constructed claims, one per defect."""
import html
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
        held = (claim.get("convergence") or {}).get("held")       # a verdict read before convergence, held
        holds = {"reproduced": (-m < lo and hi < m) if equal else lo > m,
                 "contradicted": (hi < -m or lo > m) if equal else hi < -m,
                 "no meaningful effect": -m < lo and hi < m,
                 "inconclusive": unseen or held or not (lo > m or hi < -m or (-m < lo and hi < m))}[v]
        if not holds:
            found.append(f"shown interval [{lo:.3g}, {hi:.3g}] (margin {m:.3g}) does not give '{v}'")
        if c.get("verdict") not in (None, v, held) and v != "not testable here":
            found.append(f"the shown contrast is {c.get('verdict')}, the claim {v}")
        if held and not reason.startswith(f"held by the convergence rule: its interval gives {held}"):
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


NUMBER = r"([+−-]?\d+(?:\.\d+)?(?:e[+−-]?\d+)?)"
SAID = [   # every way a page says where an interval lies against the margin: (pattern, lo, hi, words, margin)
    re.compile(rf"interval {NUMBER} to {NUMBER}(?: [a-z]+)? (lies above|lies below|lies inside|reaches across) "
               rf"[±+−-]?{NUMBER}"),
    re.compile(rf"interval \[{NUMBER}[^,\]]*, {NUMBER}[^\]]*\] (reaches across|lies inside|lies beyond|below) "
               rf"(?:the margin )?[±+−-]?{NUMBER}"),
]


def as_float(text):
    return float(text.replace("−", "-"))


def interval_words_against_figures(text):
    """Every sentence of `text` that says where an interval lies, checked against its own figures:
    above +m, below -m, inside +-m, beyond it, or reaching across it."""
    wrong = []
    for pattern in SAID:
        for found in pattern.finditer(text):
            lo, hi, words, m = as_float(found[1]), as_float(found[2]), found[3], as_float(found[4])
            true = {"lies above": lo >= m, "lies below": hi <= -m, "below": hi <= -m,
                    "lies inside": -m <= lo and hi <= m, "lies beyond": lo >= m or hi <= -m,
                    "reaches across": not (lo > m or hi < -m or (-m < lo and hi < m))}[words]
            if not true:
                wrong.append(found[0])
    return wrong


@pytest.mark.parametrize("page", ["claims.md", "report.html"])
def test_no_reason_on_a_page_contradicts_its_own_interval(page):
    path = ROOT / "reports" / page
    if not path.exists():
        pytest.skip(f"no reports/{page}")
    text = html.unescape(re.sub(r"<[^>]+>", " ", path.read_text()))
    said = sum(len(p.findall(text)) for p in SAID)
    assert said >= 10                                      # the scan reads the pages' reasons at all
    assert interval_words_against_figures(text) == []


def test_the_scan_finds_a_reason_that_contradicts_its_interval():
    assert interval_words_against_figures("97.7% interval -8.42 to -4.56 points reaches across ±2 points") == \
        ["interval -8.42 to -4.56 points reaches across ±2"]
    assert interval_words_against_figures("the interval [-8 points, -5 points] reaches across the margin ±2 points")
    assert interval_words_against_figures("96.9% interval -8.42 to -4.56 points lies below −2 points") == []
    assert interval_words_against_figures("the whole interval [-1, +1] lies inside the margin ±2") == []


@pytest.mark.skipif(not COMMITTED.exists(), reason="no committed reports/claims.json")
def test_the_first_screen_counts_what_the_labels_and_intervals_say():
    """The summary's counts of intervals across the margin and of verdicts read before convergence are
    the committed claims' own: the literature's judged claims whose shown interval reaches across
    its margin, and those labelled not converged."""
    from replication.judge.verdicts import where_interval_lies
    literature = [c for c in rc.load_claims(COMMITTED) if c.get("origin") == "literature"
                  and c["verdict"] in rc.JUDGED and "calibrated" not in c["labels"]]
    across = sum(where_interval_lies(c["contrast"]["diff_ci95"][0], c["contrast"]["diff_ci95"][1],
                                     c["contrast"]["margin"]).startswith("reaches")
                 for c in literature if (c.get("contrast") or {}).get("diff_ci95"))
    moving = sum("not converged" in c["labels"] for c in literature)
    text = (ROOT / "reports" / "claims.md").read_text()
    assert f"{across} intervals still reach across their margin, and {moving} verdicts were read before" in text
