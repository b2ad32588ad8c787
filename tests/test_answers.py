"""Issue 54's rules on constructed data with known verdicts: the primary analysis on the published
protocol (the all-label probe, with its stand-in where the records lack it), a decided leg never
hidden behind an undecided one, every answer an interval gives of the published size, a re-read
on another probe withdrawn into its parent's panel, and the origins counted apart."""
import json

import pytest

from replication.judge import judge as judging, verdicts
from replication.judge.registry import load_registry

from test_claims import REGISTRY, RULES, claim, judge
from test_judging import BASE, arm, ladder, records, up

NOISY = [-0.01, 0.03, -0.02, 0.04, 0.01]      # a spread that leaves a 2-point margin open


def records_with_full(root, condition, rungs, full):
    """records() of one condition with the all-label probe only at the rungs `full` names ({step: per
    seed}), as run 2's records hold it at the budget only."""
    records(root, condition, {t: {"linear": v, "linear_full": full.get(t, v)} for t, v in rungs.items()})
    for path in (root / "results" / "evaluate" / "s" / condition).glob("seed_*.json"):
        record = json.loads(path.read_text())
        for step, metrics in record["at"].items():
            if int(step) not in full:
                del metrics["h"]["linear_full"]
        path.write_text(json.dumps(record))


# ---------------------------------------------------------------- every answer an interval gives

def test_an_inconclusive_claim_says_the_published_size_is_ruled_out():
    """Ours +2 points [-1.2, +5.2] against a margin of 2: inconclusive; the published +6.4 lies above
    the interval, so the claim carries the label and its reason says so, and the seeds it would need
    settle only the direction."""
    rules = RULES
    c = {"diffs": [0.01 + d for d in NOISY], "margin": 0.02, "published_effect_value": 0.064}
    from replication.judge import stats
    c.update(stats.paired_contrast([0.6 + 0.01 + d for d in NOISY], [0.6] * 5, "greater", verdicts.level(rules)))
    c.update(verdicts.tests(c["diffs"], 0.02))
    decided = verdicts.decide_contrast(c, [], rules, scale=100, unit=" points")
    assert decided["verdict"] == "inconclusive" and decided["magnitude"] == "above"
    assert decided["published_answer"].startswith("the published +6.4 points is ruled out, ours is smaller: +2 [-1.17, +5.17] points")
    assert "settle the direction against the margin" in decided["reason"]
    assert verdicts.ruled_out("inconclusive", [decided]) and not verdicts.ruled_out("reproduced", [decided])


def test_the_published_size_inside_ours_is_stated_beside_a_decided_verdict(tmp_path):
    records(tmp_path, "a", {300: [v + 0.07 + d for v, d in zip(BASE, NOISY)]})
    records(tmp_path, "b", {300: BASE})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, published_effect_value=0.07, effect_scale=100,
                         effect_unit=" points", arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["verdict"] == "reproduced" and verdicts.RULED_OUT not in judged["labels"]
    assert judged["contrast"]["published_answer"] == ("the published +7 points lies inside ours: +8 [+4.83, +11.2] "
                                                      "points")
    assert "the published +7 points lies inside ours" in judged["note"]


def test_a_claim_whose_interval_holds_the_published_size_carries_no_ruled_out_label(tmp_path):
    records(tmp_path, "a", {300: [v + 0.01 + d for v, d in zip(BASE, NOISY)]})
    records(tmp_path, "b", {300: BASE})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, published_effect_value=0.015,
                         arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["verdict"] == "inconclusive" and judged["magnitude"] == "inside"
    assert verdicts.RULED_OUT not in judged["labels"]


# ---------------------------------------------------------------- legs

@pytest.mark.parametrize("legs, combined", [
    (["no meaningful effect", "inconclusive"], "no meaningful effect"),
    (["inconclusive", "no meaningful effect"], "no meaningful effect"),
    (["no meaningful effect", "not testable here"], "no meaningful effect"),
    (["no meaningful effect", "contradicted"], "contradicted"),
    (["reproduced", "inconclusive"], "inconclusive"),
    (["reproduced", "not testable here"], "not testable here"),
])
def test_a_decided_leg_is_never_hidden_behind_an_undecided_one(legs, combined):
    assert verdicts.combine(legs) == combined


def test_each_leg_keeps_its_verdict_and_the_claim_takes_the_decided_one(tmp_path):
    """a ties b1 (inside the margin) and is open against b2: the claim (a beats both) is refuted."""
    records(tmp_path, "a", {300: BASE})
    records(tmp_path, "b1", {300: BASE})
    records(tmp_path, "b2", {300: [v - 0.01 - d for v, d in zip(BASE, NOISY)]})
    judged = judge(claim(kind="paired", a="a", b=["b1", "b2"], margin=0.02, published_effect_value=[0.047, 0.064],
                         arms={"a": arm("a"), "b1": arm("b1"), "b2": arm("b2")}), tmp_path)
    assert [c["verdict"] for c in judged["contrasts"]] == ["no meaningful effect", "inconclusive"]
    assert judged["verdict"] == "no meaningful effect"
    assert all("is ruled out" in c["published_answer"] for c in judged["contrasts"])


# ---------------------------------------------------------------- the published protocol

def test_a_ladder_claim_reads_the_all_label_probe_where_it_was_evaluated_and_its_ladder_as_context(tmp_path):
    """Run 2's records: the all-label probe at the budget (1,200) only, the 20-label one at every
    rung. The primary reads the all-label probe at 1,200, where a leads by 7 points; the ladder, its
    convergence and trend read the 20-label probe (a leads by 3 at every rung), labelled so; no
    rung alternative, since no lower rung holds the all-label probe."""
    records_with_full(tmp_path, "a", {300: up(BASE, 0.03), 1200: up(BASE, 0.03), 2400: up(BASE, 0.03)},
                      {1200: up(BASE, 0.27)})
    records_with_full(tmp_path, "b", {300: BASE, 1200: BASE, 2400: BASE}, {1200: up(BASE, 0.2)})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True,
                         arms={"a": ladder("a", "h.linear_full"), "b": ladder("b", "h.linear_full")}), tmp_path)
    assert judged["primary"] == {"probe": "linear_full", "rung": 1200, "basis": "equal steps", "ladder_probe": "linear"}
    assert judged["contrast"]["diff_mean"] == pytest.approx(0.07)
    assert [r["step"] for r in judged["ladder"]] == [300, 1200, 2400]
    assert all(r["contrasts"][0]["diff_mean"] == pytest.approx(0.03) for r in judged["ladder"])
    assert {x["dimension"] for x in judged["robustness"]["alternatives"]} == {"probe", "multiplicity"}
    panel = {x["choice"]: x for x in judged["robustness"]["alternatives"] if x["dimension"] == "probe"}
    assert set(panel) == {"linear", "knn", "knn_centred", "wknn"}       # every class-label probe but the primary
    assert panel["linear"]["diff_mean"] == pytest.approx(0.03)


def test_a_claim_whose_rungs_hold_no_all_label_probe_is_read_on_its_stand_in_and_labelled(tmp_path):
    records_with_full(tmp_path, "a", {300: up(BASE, 0.1), 1200: up(BASE, 0.1)}, {1200: up(BASE, 0.1)})
    records_with_full(tmp_path, "b", {300: BASE, 1200: BASE}, {1200: BASE})
    key = "at.{rung:0}.h.linear_full"          # the first trained rung, 300: no all-label probe there
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms={"a": arm("a", key), "b": arm("b", key)}),
                   tmp_path)
    assert judged["primary"]["probe"] == "linear" and judged["primary"]["stand_in_for"] == "linear_full"
    assert judged["verdict"] == "reproduced"
    assert verdicts.stand_in_label("the few-label linear probe") in judged["labels"]


# ---------------------------------------------------------------- literature claims are published claims

def test_a_re_read_on_another_probe_is_withdrawn_into_its_parents_panel():
    registry = load_registry(REGISTRY)
    ids = {c["id"]: c for c in registry.claims}
    withdrawn = registry.withdrawn["simclr-temperature-knn"]
    assert "simclr-temperature-knn" not in ids and withdrawn["post_registration"] and withdrawn["registration"] == 2
    parent = ids["simclr-temperature"]
    assert all(spec["key"].endswith(".h.linear_full") for spec in parent["arms"].values())
    from replication.judge.probes import PANEL
    assert "knn" in PANEL          # the panel (every class-label probe but the primary) reads the 5-NN re-read


def test_the_documents_claims_and_our_additions_are_counted_apart_from_the_literature():
    judged = [{"id": str(i), "origin": origin, "verdict": verdict, "labels": []}
              for i, (origin, verdict) in enumerate([("literature", "reproduced"), ("document", "contradicted"),
                                                     ("addition", "reproduced"), ("addition", "inconclusive")])]
    counts = judging.summary(judged)
    assert counts["literature"]["verdicts"] == {"reproduced": 1}
    assert counts["document"]["verdicts"] == {"contradicted": 1}
    assert counts["addition"]["claims"] == 2 and counts["addition"]["verdicts"] == {"inconclusive": 1,
                                                                                     "reproduced": 1}


def test_a_claim_names_its_own_origin_over_its_sections(tmp_path):
    records(tmp_path, "a", {300: up(BASE, 0.1)})
    records(tmp_path, "b", {300: BASE})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, origin="addition",
                         arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["origin"] == "addition"
    assert judge(claim(kind="paired", a="a", b="b", margin=0.02, arms={"a": arm("a"), "b": arm("b")}),
                 tmp_path)["origin"] == "literature"
