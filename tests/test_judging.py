"""The judging rules on constructed data with known verdicts: decisions against the margin, gates
relative to headroom on the reference arm, the robustness panel, convergence, and independence
of each claim's verdict from the rest of the registry."""
import json
import math

import numpy as np
import pytest
from scipy import stats as sp

from replication.judge import judge as judging, verdicts
from replication.judge.measure import InputError, measure_by_seed, runs
from replication.judge.probes import PANEL
from replication.judge.registry import load_registry
from replication.judge.results import Results

from test_claims import REGISTRY, RULES, claim, judge


def records(root, condition, by_rung, control=0.30, batch=128, embeddings=("h",), calibrated=None,
            method="simclr"):
    """Training and evaluation records of one condition over seeds: by_rung {step: {probe: [per seed]}}
    (a list alone is the linear probe); the control scores `control` under every probe. With
    `calibrated`, the records are evaluated with BatchNorm calibrated: the control scores
    `calibrated`, and `control` is its uncalibrated linear probe."""
    steps = sorted(by_rung)
    by_rung = {t: v if isinstance(v, dict) else {"linear": v} for t, v in by_rung.items()}
    n = len(next(iter(by_rung[steps[0]].values())))
    for seed in range(n):
        def metrics(t):
            probes = {p: v[seed] for p, v in by_rung[t].items()}
            return {e: {probe: probes.get(probe, probes["linear"]) for probe in PANEL} for e in embeddings}
        acc0 = control if calibrated is None else calibrated
        control_metrics = {e: {probe: acc0 for probe in PANEL} for e in embeddings}
        at = {"0": control_metrics, **{str(t): metrics(t) for t in steps}}
        evaluation = {"condition": condition, "seed": seed, "status": "ok", "reason": None, "rungs": [0, *steps],
                      "control": control_metrics, "eval": at[str(steps[0])], "at": at}
        if calibrated is not None:
            evaluation.update(bn="calibrated", control_uncalibrated={e: {"linear": control} for e in embeddings})
        training = {"condition": condition, "seed": seed, "status": "ok", "loss": 1.0,
                    "config": {"steps": steps[0], "batch": batch, "ladder": steps[1:], "method": method},
                    "rung_loss": {str(t): 1.0 for t in [0, *steps]}}
        for stage, record in (("evaluate", evaluation), ("pretrain", training)):
            path = root / "results" / stage / "s" / condition / f"seed_{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record))


def arm(condition, key="eval.h.linear"):
    return {"files": f"results/evaluate/*/{condition}/seed_*.json", "key": key}


def ladder(condition, key="h.linear"):
    return arm(condition, f"at.{{step}}.{key}")


BASE = [0.60, 0.61, 0.59, 0.62, 0.60]


def up(values, by):
    return [v + by for v in values]


# ---------------------------------------------------------------- decisions

@pytest.mark.parametrize("mean,verdict", [(0.10, "reproduced"), (-0.10, "contradicted"), (0.0, "no meaningful effect"),
                                          (0.025, "inconclusive"), (-0.025, "inconclusive")])
def test_one_sided_tests_against_the_margin_read_the_interval_at_the_registered_level(mean, verdict):
    diffs = [mean + e for e in (0.012, -0.009, 0.003, -0.006, 0.0)]
    p = verdicts.tests(diffs, 0.02)
    assert verdicts.decide(p, RULES["alpha"]) == verdict
    lo, hi = sp.t.interval(verdicts.level(RULES), 4, loc=np.mean(diffs), scale=sp.sem(diffs))
    assert verdicts.decide_interval(lo, hi, 0.02) == verdict
    t = (np.mean(diffs) - 0.02) / sp.sem(diffs)
    assert p["p_reproduced"] == pytest.approx(sp.t.sf(t, 4))


@pytest.mark.parametrize("contrasts,combined", [
    (["reproduced", "reproduced"], "reproduced"),
    (["reproduced", "contradicted"], "contradicted"),
    (["reproduced", "inconclusive"], "inconclusive"),
    (["reproduced", "no meaningful effect"], "no meaningful effect"),
    (["no meaningful effect", "no meaningful effect"], "no meaningful effect"),
    (["reproduced", "not testable here"], "not testable here"),
])
def test_every_contrast_of_a_claim_must_hold(contrasts, combined):
    assert verdicts.combine(contrasts) == combined


def test_adding_unrelated_claims_to_the_registry_changes_no_verdict(tmp_path):
    """Nine claims, each with p about 0.015 against no effect and its interval above the margin:
    each is reproduced alone and beside the others (a registry-wide Holm family would have turned
    all nine inconclusive). Only the screen's q-values see the family."""
    noisy = [v + 0.065 + e for v, e in zip(BASE, (0.04, -0.04, 0.03, -0.03, 0.0))]
    records(tmp_path, "b", {300: BASE})
    made = []
    for i in range(9):
        records(tmp_path, f"x{i}", {300: noisy})
        made.append(claim(id=f"claim-{i}", kind="paired", a=f"x{i}", b="b", margin=0.02,
                          arms={f"x{i}": arm(f"x{i}"), "b": arm("b")}))
    alone = judge(made[0], tmp_path)
    together = judging.judge_all([judging.validate_claim(c) for c in made], Results.load(tmp_path, "."), RULES)
    screen = ("q_bh", "bh_family", "robustness", "labels")
    assert alone["verdict"] == "reproduced" and alone["contrast"]["p"] == pytest.approx(0.0147, abs=2e-3)
    assert {k: v for k, v in together[0].items() if k not in screen} == \
        {k: v for k, v in alone.items() if k not in screen}
    assert [c["verdict"] for c in together] == ["reproduced"] * 9
    assert together[0]["bh_family"] == 9 and alone["bh_family"] == 1


# ---------------------------------------------------------------- gates

def test_the_gate_is_relative_to_the_controls_headroom(tmp_path):
    """A control at 96%: one point of gain removes a quarter of its error, and the arm has trained."""
    records(tmp_path, "a", {300: [0.975, 0.972, 0.973, 0.974, 0.975]}, control=0.96)
    records(tmp_path, "b", {300: [0.970, 0.971, 0.969, 0.972, 0.970]}, control=0.96)
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.001, arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    gate = judged["arms"]["b"]["control"]["b"]
    assert gate["trained"] and gate["error_removed"]["mean"] == pytest.approx(0.2604, abs=1e-3)
    assert judged["verdict"] == "reproduced"


def test_the_calibrated_control_decides_and_the_uncalibrated_is_kept(tmp_path):
    """An arm 8 points over its uncalibrated control, but only 1 over the calibrated one, has not trained."""
    records(tmp_path, "a", {300: up(BASE, 0.2)})
    records(tmp_path, "b", {300: up([0.38, 0.385, 0.375, 0.39, 0.38], 0)}, control=0.30, calibrated=0.372)
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    gate = judged["arms"]["b"]["control"]["b"]
    assert gate["calibrated"] and gate["control_calibrated"] == 0.372 and gate["control_uncalibrated"] == 0.30
    assert not gate["trained"] and judged["verdict"] == "not testable here"


def test_only_the_reference_arm_is_gated(tmp_path):
    """A claim that predicts arm b fails: b's failure is the outcome, so only a must have trained."""
    records(tmp_path, "a", {300: up(BASE, 0.2)})
    records(tmp_path, "b", {300: [0.30, 0.29, 0.31, 0.30, 0.30]})          # never left its control
    arms = {"a": arm("a"), "b": arm("b")}
    gated_on_b = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms=arms), tmp_path)
    gated_on_a = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms=arms, reference=["a"]), tmp_path)
    assert gated_on_b["verdict"] == "not testable here" and "b (b) did not train" in gated_on_b["note"]
    assert gated_on_a["verdict"] == "reproduced"


def test_a_best_of_arm_is_gated_on_its_chosen_candidate_only(tmp_path):
    records(tmp_path, "a", {300: up(BASE, 0.1)})
    records(tmp_path, "good", {300: BASE})
    records(tmp_path, "stuck", {300: [0.30, 0.31, 0.29, 0.30, 0.30]})
    best = {"best_of": [arm("good"), arm("stuck")]}
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms={"a": arm("a"), "b": best}), tmp_path)
    assert list(judged["arms"]["b"]["control"]) == ["good"] and judged["verdict"] == "reproduced"


def test_a_z_arm_is_gated_on_z(tmp_path):
    """h trains, z does not: a claim reading z is gated on z's own probe."""
    records(tmp_path, "a", {300: up(BASE, 0.1)}, embeddings=("h", "z"))
    path_of = lambda seed: tmp_path / "results" / "evaluate" / "s" / "a" / f"seed_{seed}.json"
    for seed in range(5):
        record = json.loads(path_of(seed).read_text())
        record["eval"]["z"]["linear"] = record["at"]["300"]["z"]["linear"] = 0.30 + seed / 1000
        path_of(seed).write_text(json.dumps(record))
    judged = judge(claim(kind="paired", a="h", b="z", margin=0.02,
                         arms={"h": arm("a", "eval.h.linear"), "z": arm("a", "eval.z.linear")}), tmp_path)
    assert judged["arms"]["z"]["control"]["a"]["metric"] == "linear probe on z"
    assert judged["verdict"] == "not testable here"


# ---------------------------------------------------------------- robustness and convergence

def test_a_probe_that_flips_the_sign_is_named_with_its_figure(tmp_path):
    """The linear probe puts a 10 points above b; kNN on centred features puts it 10 points below:
    a reversal, named with the alternative's effect and interval, not folded into 'depends on'."""
    records(tmp_path, "a", {300: {"linear": up(BASE, 0.1), "knn_centred": BASE}})
    records(tmp_path, "b", {300: {"linear": BASE, "knn_centred": up(BASE, 0.1)}})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, effect_scale=100, effect_unit=" points",
                         arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["verdict"] == "reproduced"
    by_choice = {(x["dimension"], x["choice"]): x["verdict"] for x in judged["robustness"]["alternatives"]}
    assert by_choice[("probe", "knn_centred")] == "contradicted" and by_choice[("probe", "wknn")] == "reproduced"
    assert by_choice[("probe", "linear_full")] == "reproduced"          # read at the budget
    assert judged["robustness"]["label"] is None
    assert judged["robustness"]["reversals"] == ["reverses on centred kNN: -10 [-10, -10] points"]
    assert judged["labels"] == ["reverses on centred kNN: -10 [-10, -10] points"]


def test_a_probe_that_only_weakens_the_verdict_is_a_dependence_not_a_reversal(tmp_path):
    records(tmp_path, "a", {300: {"linear": up(BASE, 0.1), "knn_centred": up(BASE, 0.01)}})
    records(tmp_path, "b", {300: BASE})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["verdict"] == "reproduced" and judged["robustness"]["label"] == "depends on: probe"
    assert "reversals" not in judged["robustness"] and not any(t.startswith("reverses") for t in judged["labels"])


def test_probes_that_decide_one_way_around_an_undecided_primary_are_named_with_their_decision(tmp_path):
    """The primary probe cannot decide; kNN on centred features and weighted kNN both put a 10 points
    below b: named 'contradicted on ...' with their figures, not folded into 'depends on: probe'."""
    noisy = [0.60, 0.70, 0.50, 0.65, 0.55]
    records(tmp_path, "a", {300: {"linear": noisy, "knn_centred": BASE, "wknn": BASE}})
    records(tmp_path, "b", {300: {"linear": BASE, "knn_centred": up(BASE, 0.1), "wknn": up(BASE, 0.1)}})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, effect_scale=100, effect_unit=" points",
                         arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["verdict"] == "inconclusive" and "reversals" not in judged["robustness"]
    assert judged["robustness"]["decided_on"] == [
        "contradicted on centred kNN: -10 [-10, -10] points; weighted kNN: -10 [-10, -10] points"]   # one label
    assert judged["robustness"]["decided_on"][0] in judged["labels"]
    assert not any(t.startswith("depends on") for t in judged["labels"]), judged["labels"]


def test_probes_that_decide_both_ways_around_an_undecided_primary_are_named(tmp_path):
    noisy = [0.60, 0.70, 0.50, 0.65, 0.55]
    records(tmp_path, "a", {300: {"linear": noisy, "knn_centred": BASE, "wknn": up(BASE, 0.1)}})
    records(tmp_path, "b", {300: {"linear": BASE, "knn_centred": up(BASE, 0.1), "wknn": BASE}})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["verdict"] == "inconclusive"
    [reversal] = judged["robustness"]["reversals"]                  # both probes in one label
    assert [t.split(":")[0] for t in reversal.split("; ")] == ["reverses on centred kNN", "weighted kNN"]


def test_a_claim_every_alternative_agrees_with_is_robust(tmp_path):
    records(tmp_path, "a", {300: up(BASE, 0.1)})
    records(tmp_path, "b", {300: BASE})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["robustness"]["label"] == "robust" and judged["primary"]["probe"] == "linear"


def test_rung_and_equal_images_alternatives_of_a_ladder_claim(tmp_path):
    """a (batch 128) leads b (batch 64) by 6 points at equal steps, but b at twice the steps has
    seen as many images and catches up: the verdict depends on the compute basis."""
    records(tmp_path, "a", {300: up(BASE, 0.05), 1200: up(BASE, 0.10), 2400: up(BASE, 0.11)}, batch=128)
    records(tmp_path, "b", {300: BASE, 1200: up(BASE, 0.04), 2400: up(BASE, 0.05), 4800: up(BASE, 0.11)}, batch=64)
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True,
                         arms={"a": ladder("a"), "b": ladder("b")}), tmp_path)
    assert judged["primary"]["rung"] == 2400 and judged["verdict"] == "reproduced"
    alternatives = {x["dimension"]: x for x in judged["robustness"]["alternatives"] if x["dimension"] != "probe"}
    assert alternatives["rung"]["choice"] == 1200 and alternatives["rung"]["verdict"] == "reproduced"
    assert alternatives["basis"]["choice"] == "equal images: a at 2,400, b at 4,800 steps"
    assert alternatives["basis"]["verdict"] == "no meaningful effect"
    assert judged["robustness"]["label"] == "depends on: basis"


def test_a_registered_basis_judges_at_the_matched_rungs_and_keeps_equal_steps_as_an_alternative(tmp_path):
    """a: two views of 128 images per step (256 encoder passes); b: a memory bank, one view of 64
    (64 passes). On equal encoder passes a at 1,200 steps meets b at 4,800, where b has caught up;
    at equal steps (2,400 each) a still leads."""
    records(tmp_path, "a", {300: up(BASE, 0.05), 1200: up(BASE, 0.10), 2400: up(BASE, 0.11)}, batch=128)
    records(tmp_path, "b", {300: BASE, 1200: up(BASE, 0.04), 2400: up(BASE, 0.05), 4800: up(BASE, 0.10)},
            batch=64, method="memory_bank")
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True, basis="equal encoder passes",
                         arms={"a": ladder("a"), "b": ladder("b")}), tmp_path)
    assert judged["primary"]["rung"] == {"a": 1200, "b": 4800} and judged["verdict"] == "no meaningful effect"
    assert [r["arm_steps"] for r in judged["ladder"]] == [{"a": 300, "b": 1200}, {"a": 1200, "b": 4800}]
    by_choice = {x["choice"]: x["verdict"] for x in judged["robustness"]["alternatives"] if x["dimension"] == "basis"}
    assert by_choice == {"equal steps: a at 2,400, b at 2,400 steps": "reproduced",
                         "equal images: a at 2,400, b at 4,800 steps": "no meaningful effect"}
    assert judged["robustness"]["label"] == "depends on: basis"
    # each arm's doubling ends at the step it is read at: b's from 2,400 to 4,800; a has no rung at 600 or above
    # below 1,200, so the contrast's change is not measured and its convergence is unknown
    assert set(judged["convergence"]["arms"]) == {"b"} and "from 2,400 to 4,800 steps" in \
        judged["convergence"]["arms"]["b"]["moved"]
    assert judged["convergence"]["converged"] is None and "not measured" in judged["convergence"]["reason"]
    assert judging.summary([judged])["labels"]["convergence_not_measured"] == 1      # counted where pages count


def named(condition, key="at.{step}.h.linear"):
    return {"condition": condition, "key": key}


def test_arms_named_by_their_condition_are_judged_as_the_patterns_of_their_records(tmp_path):
    """A condition's name reads what its records' pattern reads, from the evaluation or the training
    record as its key says (a ladder on a compute basis reads both); `studies` every condition's
    evaluation records of those studies."""
    records(tmp_path, "a", {300: up(BASE, 0.05), 1200: up(BASE, 0.10), 2400: up(BASE, 0.11)}, batch=128)
    records(tmp_path, "b", {300: BASE, 1200: up(BASE, 0.04), 2400: up(BASE, 0.05), 4800: up(BASE, 0.10)},
            batch=64, method="memory_bank")
    paired = lambda a, b: claim(kind="paired", a="a", b="b", margin=0.02, ladder=True, basis="equal encoder passes",
                                arms={"a": a, "b": b})
    assert judge(paired(named("a"), named("s/b")), tmp_path) == judge(paired(ladder("a"), ladder("b")), tmp_path)
    results = Results.load(tmp_path)
    trained = runs(named("b", "status"), results)
    assert trained == runs({"files": "results/pretrain/*/b/seed_*.json", "key": "status"}, results)
    assert [r["config"]["method"] for r in trained] == ["memory_bank"] * 5        # the training records
    assert measure_by_seed(named("a", "rung_loss.300"), results) == {s: 1.0 for s in range(5)}
    assert runs({"studies": ["s"]}, results) == runs({"files": ["results/evaluate/s/*/seed_*.json"]}, results)
    assert len(runs({"studies": ["s", "gone"]}, results)) == 10        # a study without records reads none


def test_a_basis_whose_rungs_never_pair_up_stops_the_analysis(tmp_path):
    records(tmp_path, "a", {300: BASE, 1200: BASE}, batch=128)
    records(tmp_path, "b", {300: BASE, 1200: BASE}, batch=96)
    with pytest.raises(InputError, match="spend the same on 'equal images'"):
        judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True, basis="equal images",
                    arms={"a": ladder("a"), "b": ladder("b")}), tmp_path)


@pytest.mark.parametrize("shift, verdict", [(0.0, "reproduced"), (0.08, "contradicted"), (-0.08, "contradicted")])
def test_a_claim_of_no_effect_is_reproduced_inside_the_margin_and_contradicted_beyond_it(tmp_path, shift, verdict):
    """With a positive control that sees an effect beyond the margin (c against b)."""
    records(tmp_path, "a", {300: up(BASE, 0.2 + shift)})
    records(tmp_path, "b", {300: up(BASE, 0.2)})
    records(tmp_path, "c", {300: up(BASE, 0.3)})
    judged = judge(claim(kind="paired", a="a", b="b", direction="equal", margin=0.02,
                         arms={"a": arm("a"), "b": arm("b")},
                         positive_control={"a": arm("c"), "b": arm("b"), "direction": "greater"}), tmp_path)
    assert judged["verdict"] == verdict


@pytest.mark.parametrize("scale", [1, 100])
def test_a_rung_named_by_its_index_reads_the_same_rung_at_any_step_scale(tmp_path, scale):
    """'at.{rung:1}' is a run's second trained rung, whatever a profile scales the steps by: the
    gain of a over b at their first rungs minus the gain at their second."""
    records(tmp_path, "a", {4 // scale or 1: up(BASE, 0.10), 16 // scale or 2: up(BASE, 0.12)})
    records(tmp_path, "b", {4 // scale or 1: BASE, 16 // scale or 2: up(BASE, 0.09)})
    rung = lambda c, k: arm(c, f"at.{{rung:{k}}}.h.linear")
    judged = judge(claim(kind="paired", a="short", b="long", margin=0.02, reference=["short", "long"],
                         arms={"short": {"minus": [rung("a", 0), rung("b", 0)]},
                               "long": {"minus": [rung("a", 1), rung("b", 1)]}}), tmp_path)
    assert judged["verdict"] == "reproduced"
    assert judged["contrast"]["diff_mean"] == pytest.approx(0.10 - 0.03)
    assert all(gate["step"] == f"rung:{k}" for k, name in enumerate(("short", "long"))
               for gate in judged["arms"][name]["control"].values())


def test_an_effect_that_keeps_its_verdict_one_more_doubling_on_is_converged_while_its_arms_climb(tmp_path):
    """a gains 4 points per doubling, b almost nothing: the effect grows toward the claim, so one more
    doubling keeps it reproduced; a's own climb is shown and decides nothing."""
    records(tmp_path, "a", {300: up(BASE, 0.02), 1200: up(BASE, 0.06), 2400: up(BASE, 0.10)})
    records(tmp_path, "b", {300: BASE, 1200: up(BASE, 0.001), 2400: up(BASE, 0.002)})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True,
                         arms={"a": ladder("a"), "b": ladder("b")}), tmp_path)
    conv = judged["convergence"]
    assert conv["arms"]["a"]["moving"] is True and conv["arms"]["b"]["moving"] is False
    (move,) = conv["contrasts"]
    assert move["change"] == pytest.approx(0.039) and move["ahead"] == pytest.approx(0.098 + 0.039)
    assert move["settled"] is True and conv["converged"] is True
    assert judged["verdict"] == "reproduced" and "not converged" not in judged["labels"]


def test_a_trend_is_fitted_only_where_both_arms_trained_and_on_the_logit_scale_too(tmp_path):
    records(tmp_path, "a", {300: [0.30, 0.31, 0.29, 0.30, 0.31], 1200: up(BASE, 0.2), 2400: up(BASE, 0.3)})
    records(tmp_path, "b", {300: [0.30, 0.29, 0.31, 0.30, 0.30], 1200: up(BASE, 0.1), 2400: up(BASE, 0.2)})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True,
                         arms={"a": ladder("a"), "b": ladder("b")}), tmp_path)
    assert judged["contrast"]["trend"]["steps"] == [1200, 2400]       # 300: neither arm had trained
    assert judged["contrast"]["trend_logit"]["steps"] == [1200, 2400]
    logit = lambda p: math.log(p / (1 - p))
    assert judged["contrast"]["logit"]["mean"] == pytest.approx(
        np.mean([logit(x + 0.3) - logit(x + 0.2) for x in BASE]))


def test_bh_as_an_alternative_turns_a_weak_decision_inconclusive():
    from replication.judge.verdicts import multiplicity_verdict
    assert multiplicity_verdict("reproduced", 0.2, 0.025) == "inconclusive"
    assert multiplicity_verdict("reproduced", 0.01, 0.025) == "reproduced"
    assert multiplicity_verdict("inconclusive", 0.9, 0.025) == "inconclusive"


def test_labels_for_what_is_not_a_test(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps({"runs": [{"seed": 3, "x": v} for v in (0.64, 0.65, 0.66)]}))
    spec = {"file": "r.json", "select": "runs", "key": "x"}
    judged = judge(claim(kind="single_run", published=0.65, realisations=spec, calibrated="tuned to it",
                         realisation="three thread counts of seed 3"), tmp_path)
    assert {"calibrated", "realisation"} <= set(judged["labels"])
    counts = judging.summary([judged])
    assert counts["document"]["judged"] == 0 or counts["literature"]["judged"] == 0
    assert sum(counts[o]["verdicts"].get("reproduced", 0) for o in ("literature", "document")) == 0


def test_the_probe_panel_holds_every_probe_the_committed_rules_registered():
    """The panel is every class-label probe but the primary (robustness.py): each probe registration
    2 listed is in it, and plain kNN (the withdrawn simclr-temperature-knn's probe) as well."""
    rules = load_registry(REGISTRY).rules
    assert set(rules["robustness"]["probes"]) | {"knn"} == set(PANEL)
    assert rules["robustness"]["rungs"] == "last doubling"


def test_an_alternative_shows_the_figure_of_the_contrast_that_decided_it():
    """A claim of two contrasts, contradicted on another probe by its second: the alternative (and so
    its 'contradicted on ...' label) carries the second contrast's figure, not the first's."""
    from replication.judge.robustness import as_alternative
    out = {"verdict": "contradicted",
           "contrasts": [{"verdict": "inconclusive", "diff_mean": 0.01, "diff_ci95": [-0.01, 0.03]},
                         {"verdict": "contradicted", "diff_mean": -0.05, "diff_ci95": [-0.07, -0.03]}]}
    alternative = as_alternative("probe", "knn", out)
    assert (alternative["diff_mean"], alternative["diff_ci95"]) == (-0.05, [-0.07, -0.03])
    assert as_alternative("probe", "knn", {**out, "verdict": "reproduced"})["diff_mean"] == 0.01


# ---------------------------------------------------------------- what a verdict carries beside it

def test_a_step_zero_reading_that_cannot_be_read_says_why_the_baseline_is_absent(tmp_path):
    """z has a trained reading but its untrained control lacks z: the baseline names the failure."""
    records(tmp_path, "a", {300: up(BASE, 0.1)}, embeddings=("h", "z"))
    for path in (tmp_path / "results" / "evaluate" / "s" / "a").glob("seed_*.json"):
        record = json.loads(path.read_text())
        del record["control"]["z"]
        path.write_text(json.dumps(record))
    judged = judge(claim(kind="paired", a="h", b="z", margin=0.02,
                         arms={"h": arm("a", "eval.h.linear"), "z": arm("a", "eval.z.linear")}), tmp_path)
    absent = judged["contrast"]["baseline"]["absent"]
    assert absent.startswith("the step-0 records of z hold no control.z.linear")


def test_the_published_effect_is_counted_for_the_literature_only():
    judged = [{"id": i, "origin": origin, "verdict": "reproduced", "labels": [], "magnitude": place}
              for i, (origin, place) in enumerate([("literature", "inside"), ("literature", "below"),
                                                   ("document", "inside")])]
    counts = judging.summary(judged)
    assert counts["literature"]["published_effect"] == {"inside": 1, "below": 1, "above": 0}
    assert "published_effect" not in counts["document"]


def test_the_dead_normal_quantile_is_gone():
    assert not hasattr(verdicts, "normal_quantile")


# ---------------------------------------------------------------- declared gates and free parameters

def test_an_interval_read_on_an_encoder_that_did_not_train_is_not_testable(tmp_path):
    """z sits at chance on a run whose encoder (h) never left its control: not a finding about z."""
    records(tmp_path, "stuck", {300: [0.30, 0.31, 0.29, 0.30, 0.30]}, embeddings=("h", "z"))
    records(tmp_path, "trained", {300: up(BASE, 0.1)}, embeddings=("h", "z"))
    at_chance = lambda condition: claim(kind="interval", range=[0.2, 0.35], arms={"z": arm(condition, "eval.z.linear")},
                                        reference=arm(condition, "eval.h.linear"))
    stuck, trained = judge(at_chance("stuck"), tmp_path), judge(at_chance("trained"), tmp_path)
    assert stuck["verdict"] == "not testable here" and stuck["outcome_arms"] == ["z"]
    assert stuck["note"].startswith("The reference (stuck) did not train")
    assert not stuck["reference"]["control"]["trained"] and trained["reference"]["control"]["trained"]
    assert trained["verdict"] == "contradicted"        # z trained too, well above chance


def test_a_single_run_figure_of_a_trained_encoder_is_gated_too(tmp_path):
    records(tmp_path, "stuck", {300: [0.30, 0.31, 0.29, 0.30, 0.30]})
    judged = judge(claim(kind="single_run", published=0.3, realisations=arm("stuck"),
                         reference=arm("stuck")), tmp_path)
    assert judged["verdict"] == "not testable here"


def test_the_declared_outcome_arm_is_not_gated_and_the_reference_is(tmp_path):
    records(tmp_path, "a", {300: up(BASE, 0.2)})
    records(tmp_path, "b", {300: [0.30, 0.29, 0.31, 0.30, 0.30]})          # never left its control
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, reference=["a"], outcome=["b"],
                         arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert (judged["reference_arms"], judged["outcome_arms"]) == (["a"], ["b"])
    assert judged["verdict"] == "reproduced" and judged["arms"]["b"]["reference"] is False


def sweep_file(root, factor_at):
    """A reconstruction's records: `runs` at its chosen setting and a sweep of `noise`, the figure
    (before / after) of 4 seeds at each value near factor_at[value]."""
    runs = lambda f: [{"seed": s, "before": 1.0, "after": 1.0 / (f + d)} for s, d in enumerate([-1, 0, 1, 0.5])]
    (root / "toy.json").write_text(json.dumps({
        "runs": runs(factor_at[0.3]),
        "sweep": [{"noise": v, **r} for v, f in factor_at.items() for r in runs(f)]}))


def test_a_reconstruction_with_a_free_parameter_is_labelled_underdetermined_where_its_verdict_holds(tmp_path):
    sweep_file(tmp_path, {0.1: 5, 0.2: 10, 0.3: 12, 0.4: 30, 0.5: 35})
    judged = judge(claim(kind="interval", range=[20, 40], free_parameter={"name": "noise", "sweep": "sweep"},
                         arms={"x": {"file": "toy.json", "select": "runs", "ratio": ["before", "after"]}}), tmp_path)
    free = judged["underdetermined"]
    assert judged["verdict"] == "contradicted" and "underdetermined" in judged["labels"]
    assert free["holds_at"] == [0.1, 0.2, 0.3] and free["swept"] == [0.1, 0.5]
    assert [v["verdict"] for v in free["verdicts"]] == ["contradicted"] * 3 + ["reproduced"] * 2
    assert "the verdict (contradicted) holds from 0.1 to 0.3" in judged["note"]
    assert judging.summary([judged])["labels"]["underdetermined"] == 1


def test_a_verdict_that_holds_at_scattered_values_lists_them():
    found = verdicts.underdetermined("noise", {0.1: "reproduced", 0.2: "inconclusive", 0.3: "reproduced"}, "reproduced")
    assert found["holds_at"] == [0.1, 0.3] and found["reason"].endswith("holds at 0.1, 0.3")
    assert verdicts.underdetermined("noise", {0.1: "inconclusive"}, "reproduced")["reason"].endswith("at none of them")


def test_a_range_printed_from_one_run_is_judged_against_one_more_run_of_ours(tmp_path):
    """yardstick: one run: a printed range (one run's figures) against the 95% prediction interval
    of one more run of ours, on the log scale for a ratio. Runs spread from 4x to 30x: the interval of
    their mean straddles 20 (inconclusive as a mean) while one run of ours could well print 20-40x
    (reproduced); runs around 3x are apart from the range either way."""
    sweep_file(tmp_path, {0.1: 3, 0.2: 3, 0.3: 12, 0.4: 3, 0.5: 3})
    wide = [{"seed": s, "before": 1.0, "after": 1.0 / f} for s, f in enumerate([4, 30, 8, 20, 6, 15])]
    (tmp_path / "wide.json").write_text(json.dumps({"runs": wide}))
    arms = {"x": {"file": "wide.json", "select": "runs", "ratio": ["before", "after"]}}
    as_mean = judge(claim(kind="interval", range=[20, 40], arms=arms), tmp_path)
    one_run = judge(claim(kind="interval", range=[20, 40], yardstick="one run", arms=arms), tmp_path)
    assert as_mean["verdict"] == "inconclusive" and one_run["verdict"] == "reproduced"
    lo, hi = one_run["arms"]["x"]["prediction95"]
    assert lo < 20 < hi and "one more run of ours would fall in" in one_run["note"]
    narrow = {"x": {"file": "toy.json", "select": "sweep", "where": {"noise": 0.1}, "ratio": ["before", "after"]}}
    assert judge(claim(kind="interval", range=[20, 40], yardstick="one run", arms=narrow), tmp_path)["verdict"] == \
        "contradicted"
    assert verdicts.one_run_range_verdict([1, 19.9], 20, 40) == "contradicted"
    assert verdicts.one_run_range_verdict([1, 20], 20, 40) == verdicts.one_run_range_verdict([39, 90], 20, 40) == \
        "reproduced"


# ---------------------------------------------------------------- one convergence rule, both ways

def budgeted_records(tmp_path, name, rungs, ladder_claim):
    """records() with, for a claim off the ladder, a budget of 2,400 and a checkpoint at 1,200."""
    records(tmp_path, name, rungs)
    if not ladder_claim:
        for path in (tmp_path / "results").glob(f"*/s/{name}/seed_*.json"):
            record = json.loads(path.read_text())
            if "config" in record:
                record["config"].update(steps=2400, ladder=[])
            else:
                record["eval"] = record["at"]["2400"]
            path.write_text(json.dumps(record))


@pytest.mark.parametrize("ladder_claim", [False, True])
def test_one_convergence_rule_holds_a_closing_effect_whichever_way_it_points(tmp_path, ladder_claim):
    """The rule reads the contrast, both ways and on and off the ladder. A leads B by 10 points at
    2,400 steps after 16 at 1,200: one more doubling at that pace leaves 4, still beyond the margin,
    so the reproduction stands though both arms climb. C leads D by 4 after 10: one more doubling
    leaves -2, so the reproduction is held (inconclusive, not converged, its interval's verdict kept
    as `held`). E trails F by 4 after 10: the contradiction is held the same way. G trails H by 10 at
    both rungs while both climb 10 points: it stands."""
    rungs = {"A": {1200: up(BASE, 0.16), 2400: up(BASE, 0.30)}, "B": {1200: BASE, 2400: up(BASE, 0.20)},
             "C": {1200: up(BASE, 0.10), 2400: up(BASE, 0.24)}, "D": {1200: BASE, 2400: up(BASE, 0.20)},
             "E": {1200: BASE, 2400: up(BASE, 0.20)}, "F": {1200: up(BASE, 0.10), 2400: up(BASE, 0.24)},
             "G": {1200: up(BASE, -0.1), 2400: BASE}, "H": {1200: BASE, 2400: up(BASE, 0.1)}}
    for name, at in rungs.items():
        budgeted_records(tmp_path, name, at, ladder_claim)
    spec, extra = (ladder, {"ladder": True}) if ladder_claim else (arm, {})
    judged = lambda a, b: judge(claim(kind="paired", a=a, b=b, margin=0.02, effect_scale=100, effect_unit=" points",
                                      arms={a: spec(a), b: spec(b)}, **extra), tmp_path)
    stands = judged("A", "B")
    assert stands["verdict"] == "reproduced" and stands["convergence"]["converged"] is True
    assert stands["convergence"]["arms"]["A"]["moving"] and stands["convergence"]["arms"]["B"]["moving"]
    for a, b, held in (("C", "D", "reproduced"), ("E", "F", "contradicted")):
        out = judged(a, b)
        assert out["verdict"] == "inconclusive" and "not converged" in out["labels"], (a, out["convergence"])
        assert out["convergence"]["held"] == held and out["contrast"]["verdict"] == held
        assert "one more at that pace gives" in out["convergence"]["reason"]
    assert judged("G", "H")["verdict"] == "contradicted"


def test_a_probe_read_at_another_look_than_the_primary_names_its_seeds_and_level():
    """The primary decided on stage 1's 5 seeds (97.7%); a probe evaluated on all 15 seeds decided at
    stage 2's look (96.9%): its figure says so. At the primary's own look nothing is added."""
    primary = {"seeds": [0, 1, 2, 3, 4], "level": 0.977}
    other = {"diff_mean": -0.031, "diff_ci95": [-0.0376, -0.0245], "seeds": 15, "level": 0.969}
    assert verdicts.reverses_label([("weighted kNN", other)], 100, " points", primary) == \
        "reverses on weighted kNN: -3.1 [-3.76, -2.45] points (15 seeds, 96.9%)"
    same = {**other, "seeds": 5, "level": 0.977}
    assert verdicts.reverses_label([("weighted kNN", same)], 100, " points", primary) == \
        "reverses on weighted kNN: -3.1 [-3.76, -2.45] points"
