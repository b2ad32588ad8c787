"""Judging claims from result files, one kind at a time, on files the test writes."""
import json
import math

import numpy as np
from pathlib import Path

import pytest

from replication.judge import judge as judging, stats, verdicts
from replication.judge.measure import InputError
from replication.judge.registry import load_registry
from replication.judge.results import Results
from replication.judge.verdicts import ladder_trend

REGISTRY = Path(__file__).resolve().parents[1] / "analysis" / "claims.yaml"
# the committed rules at one look (no sequential design): constructed claims decide at t_{1 - alpha}
RULES = {k: v for k, v in load_registry(REGISTRY)[0].items() if k != "sequential"}


def judge(c, root):
    return judging.judge(c, Results.load(root, "."), RULES)


def judge_all(claims, root):
    return judging.judge_all([judging.validate_claim(c) for c in claims], Results.load(root, "."), RULES)


@pytest.fixture
def results(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "ex.json").write_text(json.dumps({
        "loss": 0.60916, "flag": True, "rows": [{"p": 0.8}, {"p": 0.5}],
        "runs": [{"seed": s, "tau": t, "acc": a, "before": 2.0, "after": 2.0 / f}
                 for s, (t, a, f) in enumerate([(0.1, 0.9, 25), (0.1, 0.92, 30), (0.1, 0.91, 28),
                                                (1.0, 0.80, 20), (1.0, 0.82, 22), (1.0, 0.81, 21)])]}))
    for seed, (h, z) in enumerate([(0.80, 0.70), (0.82, 0.71), (0.79, 0.72), (0.81, 0.70)]):
        (tmp_path / "r" / f"seed_{seed}.json").write_text(json.dumps(
            {"seed": seed, "status": "ok", "eval": {"h": h, "z": z}}))
    (tmp_path / "r" / "seed_9.json").write_text(json.dumps({"seed": 9, "status": "diverged", "reason": "nan"}))
    return tmp_path


def claim(**kw):
    if kw.get("kind") in ("paired", "correlation"):
        kw = {"direction": "greater", **kw}
    if kw.get("kind") == "paired":          # gated on the b arms unless the test declares otherwise
        bs = kw["b"] if isinstance(kw["b"], list) else [kw["b"]]
        reference = kw.get("reference", bs)
        kw = {"reference": reference, "outcome": [n for n in [kw["a"], *bs] if n not in reference], **kw}
    return {"id": "x", "section": "s", "source": "s", "statement": "t", "published": None, "metric": "m", **kw}


def test_exact(results):
    ok = judge(claim(kind="exact", published=0.6092, tolerance=5e-5, measured={"file": "r/ex.json", "key": "loss"}),
               results)
    bad = judge(claim(kind="exact", published=0.6093, tolerance=5e-5, measured={"file": "r/ex.json", "key": "loss"}),
                results)
    lst = judge(claim(kind="exact", published=[0.8, 0.5], tolerance=1e-9,
                      measured={"file": "r/ex.json", "key": "rows.*.p"}), results)
    flag = judge(claim(kind="exact", published=True, measured={"file": "r/ex.json", "key": "flag"}), results)
    assert [ok["verdict"], bad["verdict"], lst["verdict"], flag["verdict"]] == \
        ["exact match", "mismatch", "exact match", "exact match"]


def test_bound_and_range(results):
    assert judge(claim(kind="bound", at_most=0.7, measured={"file": "r/ex.json", "key": "loss"}),
                 results)["verdict"] == "within bound"
    assert judge(claim(kind="bound", at_least=0.7, measured={"file": "r/ex.json", "key": "loss"}),
                 results)["verdict"] == "mismatch"
    spec = {"file": "r/ex.json", "select": "runs", "where": {"tau": 0.1}, "key": "acc"}
    assert judge(claim(kind="range", range=[0.9, 0.92], measured=spec), results)["verdict"] == "exact match"
    assert judge(claim(kind="range", range=[0.91, 0.92], measured=spec), results)["verdict"] == "mismatch"


def test_interval_over_arms(results):
    arms = {str(t): {"file": "r/ex.json", "select": "runs", "where": {"tau": t}, "ratio": ["before", "after"]}
            for t in (0.1, 1.0)}
    judged = judge(claim(kind="interval", range=[15, 40], arms=arms), results)
    assert judged["arms"]["0.1"]["values"] == pytest.approx([25, 30, 28])
    assert judged["verdict"] == "reproduced"
    assert judge(claim(kind="interval", range=[24, 40], arms=arms), results)["verdict"] == "contradicted"


def test_paired_skips_failed_runs_and_reports_them(results):
    arms = {"h": {"files": "r/seed_*.json", "key": "eval.h"}, "z": {"files": "r/seed_*.json", "key": "eval.z"}}
    judged = judge(claim(kind="paired", a="h", b="z", margin=0.02, arms=arms), results)
    assert judged["arms"]["h"]["n"] == 4 and judged["arms"]["h"]["failed"][0]["status"] == "diverged"
    assert judged["contrast"]["diff_mean"] == pytest.approx(0.0975)
    assert judged["verdict"] == "reproduced" and "failed" in judged["note"]
    reverse = judge(claim(kind="paired", a="z", b="h", margin=0.02, arms=arms), results)
    assert reverse["verdict"] == "contradicted"


def test_a_missing_measurement_stops_the_analysis_and_not_tested_is_only_stated(results):
    with pytest.raises(InputError, match="r/absent.json: missing"):
        judge(claim(kind="exact", published=1, measured={"file": "r/absent.json", "key": "x"}), results)
    with pytest.raises(InputError, match="has no field 'nope'"):
        judge(claim(kind="exact", published=1, measured={"file": "r/ex.json", "key": "nope"}), results)
    stated = judge(claim(kind="not_tested", reason="needs ImageNet"), results)
    assert stated["verdict"] == "not tested" and stated["note"] == "needs ImageNet"


def test_registry_is_well_formed():
    rules, registry = load_registry(REGISTRY)[:2]
    assert {"control_error_removed", "max_seeds", "failure_loss_fraction", "alpha", "convergence_fraction"} <= set(rules)
    for c in registry:
        assert {"id", "source", "statement", "kind", "section"} <= set(c), c.get("id")
        if c["kind"] == "not_tested":
            assert c.get("reason"), c["id"]
        if c["kind"] in ("paired", "interval"):
            assert c.get("arms"), c["id"]


def evaluation_records(root, condition, gains, study="s", control=0.30):
    """results/evaluate/<study>/<condition>/seed_k.json with the given gains over a control."""
    folder = root / "results" / "evaluate" / study / condition
    folder.mkdir(parents=True)
    for seed, gain in enumerate(gains):
        (folder / f"seed_{seed}.json").write_text(json.dumps({
            "condition": condition, "seed": seed, "status": "ok", "reason": None,
            "control": {"h": probes(control)}, "eval": {"h": probes(control + gain)}}))


def probes(accuracy):
    """The same accuracy under every probe (the robustness panel reads the others)."""
    return {probe: accuracy for probe in ("linear", "knn", "knn_centred", "wknn", "linear_full")}


def arm(condition):
    return {"files": f"results/evaluate/*/{condition}/seed_*.json", "key": "eval.h.linear"}


def test_no_contrast_is_judged_on_an_arm_that_did_not_train(tmp_path):
    evaluation_records(tmp_path, "trained", [0.30, 0.31, 0.29, 0.32, 0.30])
    evaluation_records(tmp_path, "stuck", [0.01, -0.02, 0.00, 0.02, -0.01])
    judged = judge(claim(kind="paired", a="t", b="u", margin=0.02, arms={"t": arm("trained"), "u": arm("stuck")}),
                   tmp_path)
    assert judged["verdict"] == "not testable here"
    assert "u (stuck) did not train" in judged["note"]
    assert judged["arms"]["t"]["control"]["trained"]["trained"] is True
    assert judged["arms"]["u"]["control"]["stuck"]["trained"] is False
    assert judged["arms"]["u"]["control"]["stuck"]["error_removed"]["ci95"][0] < RULES["control_error_removed"]


def test_the_bh_screen_runs_over_the_registry_and_decides_nothing(tmp_path):
    for name, gains in (("a", [0.30, 0.31, 0.29, 0.32, 0.30]), ("b", [0.20, 0.22, 0.19, 0.21, 0.20]),
                        ("c", [0.10, 0.11, 0.09, 0.12, 0.08])):
        evaluation_records(tmp_path, name, gains)
    claims = [claim(id="one", kind="paired", a="a", b=["b", "c"], margin=0.02, arms={n: arm(n) for n in "abc"}),
              claim(id="two", kind="paired", a="b", b="c", margin=0.02, arms={n: arm(n) for n in "bc"})]
    judged = judge_all(claims, tmp_path)
    assert [j["bh_family"] for j in judged] == [2, 2]
    assert all(j["q_bh"] >= j["p_decision"] for j in judged)
    assert [j["verdict"] for j in judged] == ["reproduced", "reproduced"]


def test_a_published_effect_inside_the_margin_forbids_reproduced_and_nothing_else(tmp_path):
    evaluation_records(tmp_path, "a", [0.30, 0.31, 0.29, 0.32, 0.30])
    evaluation_records(tmp_path, "b", [0.20, 0.22, 0.19, 0.21, 0.20])
    small = dict(kind="paired", margin=0.02, published_effect_value=0.008, arms={"a": arm("a"), "b": arm("b")})
    judged = judge(claim(a="a", b="b", **small), tmp_path)
    assert judged["verdict"] == "inconclusive" and "no larger than the margin" in judged["note"]
    assert judge(claim(a="b", b="a", **small), tmp_path)["verdict"] == "contradicted"    # ours beyond -m


def test_an_underpowered_interval_is_inconclusive_and_says_what_it_rules_out(tmp_path):
    evaluation_records(tmp_path, "a", [0.30, 0.34, 0.27, 0.33, 0.29])
    evaluation_records(tmp_path, "b", [0.30, 0.31, 0.29, 0.32, 0.30])
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, effect_scale=100, effect_unit=" points",
                         arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    lo, hi = (100 * v for v in judged["contrast"]["diff_ci95"])
    assert judged["verdict"] == "inconclusive"
    assert f"rules out effects below {lo:+.3g} points and above {hi:+.3g} points" in judged["note"]


def test_every_claim_with_a_published_effect_says_where_it_lies_against_our_interval(tmp_path):
    evaluation_records(tmp_path, "a", [0.30, 0.31, 0.29, 0.32, 0.30])
    evaluation_records(tmp_path, "b", [0.20, 0.22, 0.19, 0.21, 0.20])
    at = lambda effect: judge(claim(kind="paired", a="a", b="b", margin=0.02, published_effect_value=effect,
                                    arms={"a": arm("a"), "b": arm("b")}), tmp_path)["magnitude"]
    assert (at(0.10), at(0.03), at(0.30)) == ("inside", "below", "above")


def test_an_effect_in_the_opposite_direction_inside_the_margin_is_not_contradicted(tmp_path):
    evaluation_records(tmp_path, "a", [0.300, 0.301, 0.299, 0.302, 0.300])
    evaluation_records(tmp_path, "b", [0.305, 0.306, 0.304, 0.307, 0.304])
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, arms={"a": arm("a"), "b": arm("b")}), tmp_path)
    assert judged["contrast"]["diff_ci95"][1] < 0 and judged["verdict"] == "no meaningful effect"


def test_a_single_printed_run_is_judged_against_the_prediction_interval(results):
    spec = {"file": "r/ex.json", "select": "runs", "where": {"tau": 0.1}, "key": "acc"}
    inside = judge(claim(kind="single_run", published=0.93, realisations=spec), results)
    outside = judge(claim(kind="single_run", published=0.99, realisations=spec), results)
    assert inside["verdict"] == "reproduced" and outside["verdict"] == "contradicted"
    lo, hi = inside["arms"]["realisations"]["prediction95"]
    assert lo < 0.9 and 0.93 < hi < 0.99


def test_failure_counts_an_arm_that_never_trained_and_stays_near_log_k(tmp_path):
    evaluation_records(tmp_path, "m0", [0.00, -0.03, 0.01, -0.02, 0.00], study="moco")
    folder = tmp_path / "results" / "pretrain" / "moco" / "m0"
    folder.mkdir(parents=True)
    config = {"method": "moco", "loss": "nt_xent", "queue": 1024, "steps": 300, "ladder": []}
    for seed, loss in enumerate([6.5, 6.8, 6.2, 6.9, 6.6]):
        (folder / f"seed_{seed}.json").write_text(json.dumps(
            {"seed": seed, "status": "ok", "loss": 1.0, "rung_loss": {"0": None, "300": loss}, "config": config}))
    spec = {"files": "results/pretrain/*/m0/seed_*.json", "key": "status"}
    judged = judge(claim(kind="failure", runs=spec), tmp_path)
    assert judged["verdict"] == "reproduced" and "chance 6.93" in judged["note"] and judged["step"] == 300


def triplet_records(root, condition, h_gains, z_uniformity, loss=0.5):
    """A margin-triplet arm: evaluation records (h gain over the control, z uniformity) and
    pretraining records (loss at 300 steps; margin 0.5 is the collapsed loss)."""
    evaluation_records(root, condition, h_gains)
    for seed, u in enumerate(z_uniformity):
        path = root / "results" / "evaluate" / "s" / condition / f"seed_{seed}.json"
        record = json.loads(path.read_text())
        record["eval"]["z"] = {"uniformity": u}
        path.write_text(json.dumps(record))
    folder = root / "results" / "pretrain" / "s" / condition
    folder.mkdir(parents=True)
    config = {"method": "simclr", "loss": "margin_triplet", "margin": 0.5, "steps": 300, "ladder": []}
    for seed in range(len(h_gains)):
        (folder / f"seed_{seed}.json").write_text(json.dumps(
            {"seed": seed, "status": "ok", "rung_loss": {"0": None, "300": loss}, "config": config}))


def collapse_claim(**collapse):
    z = {"files": "results/evaluate/*/hardest/seed_*.json", "key": "eval.z.uniformity"}
    return claim(kind="failure", runs={"files": "results/pretrain/*/hardest/seed_*.json", "key": "status"},
                 collapse={"runs": z, "above": -0.1, **collapse})


SPREAD = [-2.6, -2.5, -2.4, -2.2, -2.7]
STUCK = [-0.0006, -0.0009, -0.0007, -0.0007, -0.0007]


def test_a_collapse_claim_is_judged_on_the_embedding_not_on_h(tmp_path):
    """h trains (+11 points over its control) while z stays a point and the loss sits at the margin:
    the gate on h calls that a success; judged on z it is the collapse the claim describes."""
    triplet_records(tmp_path, "hardest", [0.11, 0.12, 0.10, 0.13, 0.11], STUCK)
    triplet_records(tmp_path, "semi", [0.05, 0.06, 0.05, 0.07, 0.05], SPREAD, loss=0.3)
    on_h = claim(kind="failure", runs={"files": "results/pretrain/*/hardest/seed_*.json", "key": "status"})
    assert judge(on_h, tmp_path)["verdict"] == "contradicted"
    semi = {"files": "results/evaluate/*/semi/seed_*.json", "key": "eval.z.uniformity"}
    judged = judge(collapse_claim(avoided_by=semi), tmp_path)
    assert judged["verdict"] == "reproduced"
    assert judged["arms"]["hardest: eval.z.uniformity"]["collapsed"] == 5
    assert judged["arms"]["semi: eval.z.uniformity"]["collapsed"] == 0
    assert "above -0.1 (a collapsed embedding) in 5 of 5 runs" in judged["note"]


@pytest.mark.parametrize("hardest,semi,loss,verdict", [
    (SPREAD, SPREAD, 0.5, "contradicted"),                 # the hardest negatives spread z: no collapse
    (STUCK, STUCK, 0.5, "contradicted"),                   # semi-hard collapses as well
    (STUCK[:3] + SPREAD[3:], SPREAD, 0.5, "inconclusive"),  # some runs collapse
    (STUCK, SPREAD, 0.2, "inconclusive"),                  # z a point, yet the loss well below the margin
])
def test_collapse_verdicts_in_both_directions(tmp_path, hardest, semi, loss, verdict):
    triplet_records(tmp_path, "hardest", [0.11] * 5, hardest, loss=loss)
    triplet_records(tmp_path, "semi", [0.05] * 5, semi)
    spec = {"files": "results/evaluate/*/semi/seed_*.json", "key": "eval.z.uniformity"}
    assert judge(collapse_claim(avoided_by=spec), tmp_path)["verdict"] == verdict


def test_a_collapse_is_not_avoided_by_an_alternative_whose_runs_all_failed(tmp_path):
    triplet_records(tmp_path, "hardest", [0.11] * 5, STUCK)
    triplet_records(tmp_path, "semi", [0.05] * 5, SPREAD)
    for path in (tmp_path / "results" / "evaluate" / "s" / "semi").glob("seed_*.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "status": "diverged"}))
    spec = {"files": "results/evaluate/*/semi/seed_*.json", "key": "eval.z.uniformity"}
    assert judge(collapse_claim(avoided_by=spec), tmp_path)["verdict"] == "inconclusive"


def test_rank_correlation_with_an_interval(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for i in range(40):
        (folder / f"seed_{i}.json").write_text(json.dumps(
            {"seed": i, "status": "ok", "eval": {"u": -i / 10, "acc": 0.5 + i / 100}}))
    judged = judge(claim(kind="correlation", direction="greater", margin=0.1, runs={"files": "runs/seed_*.json"},
                         x="eval.u", y="eval.acc"), tmp_path)
    assert judged["contrast"]["rho"] == pytest.approx(-1.0) and judged["verdict"] == "contradicted"
    assert judged["contrast"]["level"] == verdicts.level(RULES)       # the bootstrap's percentiles, as pages name it
    judged = judge(claim(kind="correlation", direction="less", margin=0.1, runs={"files": "runs/seed_*.json"},
                         x="eval.u", y="eval.acc"), tmp_path)
    assert judged["verdict"] == "reproduced"


def test_two_figures_predict_jointly_only_when_each_does_given_the_other(tmp_path):
    """acc = -(a + u) + noise, a and u independent: each has a negative partial correlation with
    acc given the other. A figure that only copies a (c = a + tiny noise) adds nothing given a."""
    rng = np.random.default_rng(0)
    a, u = rng.normal(size=200), rng.normal(size=200)
    acc = -(a + u) + 0.3 * rng.normal(size=200)
    c = a + 0.01 * rng.normal(size=200)
    folder = tmp_path / "runs"
    folder.mkdir()
    for i in range(200):
        (folder / f"seed_{i}.json").write_text(json.dumps(
            {"seed": i, "status": "ok", "eval": {"a": a[i], "u": u[i], "c": c[i], "acc": acc[i]}}))
    joint = lambda x: judge(claim(kind="correlation", direction="less", margin=0.1,
                                  runs={"files": "runs/seed_*.json"}, x=x, y="eval.acc"), tmp_path)
    judged = joint(["eval.a", "eval.u"])
    assert judged["verdict"] == "reproduced" and [c["given"] for c in judged["contrasts"]] == ["eval.u", "eval.a"]
    assert all(c["rho"] < -0.5 for c in judged["contrasts"])
    judged = joint(["eval.a", "eval.c"])           # c is a again: neither adds to the other
    assert judged["verdict"] != "reproduced"
    assert stats.rank_correlation([1, 2, 3, 4], [2, 4, 6, 9]) == pytest.approx(1.0)


def test_amendments_are_carried_into_the_judged_claim(results):
    amended = {"date": "2026-11-30", "what": "w", "why": "y", "previous_verdict": "mismatch"}
    judged = judge(claim(kind="exact", published=0.6092, tolerance=5e-5, amended=amended,
                         measured={"file": "r/ex.json", "key": "loss"}), results)
    assert judged["amended"] == [{**amended, "post_registration": False}]
    assert "post hoc" in judged["labels"]          # no registration yet: every amendment saw results


def test_every_amendment_records_what_why_date_and_previous_verdict():
    registry = load_registry(Path(__file__).resolve().parents[1] / "analysis" / "claims.yaml").claims
    amended = [c for c in registry if c.get("amended")]
    assert len(amended) > 30
    for c in amended:
        for amendment in c["amended"] if isinstance(c["amended"], list) else [c["amended"]]:
            fields = {"date", "what", "why", "previous_verdict", "post_registration"}
            assert fields <= set(amendment) <= fields | {"registration"}, c["id"]     # registration: 1 unwritten


def test_single_run_realisations_may_share_a_seed(results):
    """Seed 3 at several thread counts: every record is a realisation, none collapses into another."""
    spec = {"file": "r/ex.json", "select": "runs", "key": "acc"}          # six records, seeds 0-5
    judged = judge(claim(kind="single_run", published=0.86, realisations=spec), results)
    assert judged["arms"]["realisations"]["n"] == 6
    (Path(results) / "r" / "same.json").write_text(json.dumps({"runs": [{"seed": 3, "acc": a} for a in (0.9, 0.91, 0.92)]}))
    judged = judge(claim(kind="single_run", published=0.91, realisations={"file": "r/same.json", "select": "runs",
                                                                          "key": "acc"}), results)
    assert judged["arms"]["realisations"]["n"] == 3 and judged["verdict"] == "reproduced"


def ladder_records(root, condition, by_rung, control=0.30):
    """Evaluation records of a ladder arm: by_rung {step: [per-seed gain over the control]}."""
    folder = root / "results" / "evaluate" / "s" / condition
    folder.mkdir(parents=True)
    steps = sorted(by_rung)
    for seed in range(len(by_rung[steps[0]])):
        at = {"0": {"h": probes(control)}, **{str(t): {"h": probes(control + by_rung[t][seed])} for t in steps}}
        (folder / f"seed_{seed}.json").write_text(json.dumps({
            "condition": condition, "seed": seed, "status": "ok", "reason": None, "rungs": [0, *steps],
            "control": at["0"], "eval": at[str(steps[0])], "at": at}))


def ladder_arm(condition):
    return {"files": f"results/evaluate/*/{condition}/seed_*.json", "key": "at.{step}.h.linear"}


BASE = [0.40, 0.41, 0.39, 0.42, 0.40]


def shifted(values, by):
    return [v + by for v in values]


def test_a_ladder_claim_is_judged_at_every_rung_with_the_top_as_headline(tmp_path):
    """b catches up with a: reproduced at 300 steps, no meaningful effect at 2,400; the effect
    shrinks by about 5 points per decade of steps: 'moves against the claim'. It fell 4 points over
    the last doubling, so one more would carry it beyond the margin: the top rung's 'no meaningful
    effect' is held, read before convergence."""
    ladder_records(tmp_path, "a", {300: shifted(BASE, 0.10), 1200: shifted(BASE, 0.12), 2400: shifted(BASE, 0.13)})
    ladder_records(tmp_path, "b", {300: BASE, 1200: shifted(BASE, 0.08), 2400: [0.53, 0.539, 0.521, 0.549, 0.531]})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True,
                         arms={"a": ladder_arm("a"), "b": ladder_arm("b")}), tmp_path)
    assert [r["step"] for r in judged["ladder"]] == [300, 1200, 2400]
    assert [r["verdict"] for r in judged["ladder"]] == ["reproduced", "reproduced", "no meaningful effect"]
    assert judged["contrast"]["verdict"] == "no meaningful effect" and judged["contrast"]["diff_mean"] == \
        pytest.approx(0.0, abs=0.002)
    assert judged["verdict"] == "inconclusive" and judged["convergence"]["held"] == "no meaningful effect"
    assert judged["ladder"][0]["arms"]["a"]["values"] == pytest.approx(shifted(shifted(BASE, 0.10), 0.30))
    assert judged["primary"] == {"probe": "linear", "rung": 2400, "basis": "equal steps"}
    assert judged["trend"] == "moves against the claim"
    assert judged["contrast"]["trend"]["slope_per_decade"] < -0.02


def test_a_contradiction_from_arms_still_moving_may_be_a_scale_artefact(tmp_path):
    """a trails b at every rung but gains 4 points a rung while b stands still: contradicted at the
    top by the interval, trend toward the claim, flagged as a possible scale artefact. The gap closed
    by 4 points over the last doubling; one more at that pace leaves it 8 points below the margin,
    so the contradiction stands (the convergence rule), a's climb shown beside it."""
    ladder_records(tmp_path, "a", {300: [0.40, 0.42, 0.39, 0.41, 0.40], 1200: shifted(BASE, 0.04),
                                   2400: shifted(BASE, 0.08)})
    ladder_records(tmp_path, "b", {300: shifted(BASE, 0.20), 1200: [0.61, 0.60, 0.60, 0.62, 0.61],
                                   2400: [0.6, 0.6, 0.62, 0.6, 0.61]})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True,
                         arms={"a": ladder_arm("a"), "b": ladder_arm("b")}), tmp_path)
    assert judged["contrast"]["verdict"] == "contradicted" and judged["trend"] == "grows toward the claim"
    assert judged["verdict"] == "contradicted" and judged["convergence"]["converged"] is True
    assert judged["convergence"]["arms"]["a"]["moving"] and not judged["convergence"]["arms"]["b"]["moving"]
    artefact = judged["contrast"]["scale_artefact"]
    assert artefact == "the effect grows toward the claim with training"
    assert "May be a scale artefact" in judged["note"]


def test_a_levelled_contradiction_is_trustworthy(tmp_path):
    ladder_records(tmp_path, "a", {300: BASE, 1200: shifted(BASE, 0.001), 2400: shifted(BASE, 0.002)})
    ladder_records(tmp_path, "b", {300: shifted(BASE, 0.10), 1200: [0.50, 0.512, 0.49, 0.52, 0.50],
                                   2400: [0.502, 0.511, 0.491, 0.521, 0.502]})
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True,
                         arms={"a": ladder_arm("a"), "b": ladder_arm("b")}), tmp_path)
    assert judged["verdict"] == "contradicted" and judged["contrast"]["scale_artefact"] is None
    assert judged["trend"] == "stable"


@pytest.mark.parametrize("slopes,verdicts,label", [
    ([0.05, 0.06, 0.04, 0.05], ("inconclusive", "reproduced"), "grows toward the claim"),
    ([-0.05, -0.06, -0.04, -0.05], ("reproduced", "inconclusive"), "moves against the claim"),
    ([0.001, -0.002, 0.0, 0.001], ("reproduced", "reproduced"), "stable"),
    ([0.05, 0.06, 0.04, 0.05], ("contradicted", "reproduced"), "flips"),
    ([-0.05, -0.06, -0.04, -0.05], ("reproduced", "contradicted"), "flips"),
    ([0.05, -0.06, 0.04, -0.05], ("inconclusive", "inconclusive"), "unclear"),
])
def test_trend_labels_follow_the_registered_rules(slopes, verdicts, label):
    steps = [300, 1200, 2400]
    effects = [{s: b * math.log10(t) for s, b in enumerate(slopes)} for t in steps]
    trend = ladder_trend(steps, effects, 0.02, *verdicts, RULES)
    assert trend["label"] == label
    assert trend["slopes"] == pytest.approx(slopes)


def test_failure_at_the_top_rung_counts_runs_that_stopped_before_it(tmp_path):
    """A ladder arm judged at its last rung: a run that collapsed after the budget has a 300-step
    rung but not the top one, and counts as failed there."""
    folder = tmp_path / "results" / "pretrain" / "s" / "m0"
    folder.mkdir(parents=True)
    config = {"method": "moco", "loss": "nt_xent", "queue": 1024, "steps": 300, "ladder": [1200]}
    for seed in range(3):
        (folder / f"seed_{seed}.json").write_text(json.dumps(
            {"seed": seed, "status": "collapsed", "reason": "std", "rung_loss": {"0": None, "300": 6.0},
             "config": config}))
    spec = {"files": "results/pretrain/*/m0/seed_*.json", "key": "status"}
    judged = judge(claim(kind="failure", runs=spec, at="top"), tmp_path)
    assert judged["verdict"] == "reproduced" and judged["step"] == 1200
    assert "3 of 3 runs diverged or collapsed before step 1200" in judged["note"]


@pytest.mark.parametrize("gains,verdict", [([0.0, -0.01, 0.01], "reproduced"), ([0.30, 0.32, 0.31], "contradicted")])
def test_failure_at_the_top_rung_with_some_runs_collapsed_judges_the_rest(tmp_path, gains, verdict):
    """Two of five runs collapsed before the top rung; the three that reached it decide: untrained
    there with the loss near log(K + 1) is a failure, clearly trained is not."""
    ladder_records(tmp_path, "m0", {300: [0.0, 0.0, 0.0], 1200: gains})
    folder = tmp_path / "results" / "pretrain" / "s" / "m0"
    folder.mkdir(parents=True)
    config = {"method": "moco", "loss": "nt_xent", "queue": 1024, "steps": 300, "ladder": [1200]}
    for seed in range(5):
        collapsed = seed >= 3
        (folder / f"seed_{seed}.json").write_text(json.dumps(
            {"seed": seed, "status": "collapsed" if collapsed else "ok", "reason": "std" if collapsed else None,
             "rung_loss": {"0": None, "300": 6.5, **({} if collapsed else {"1200": 6.4 - seed / 10})},
             "config": config}))
    spec = {"files": "results/pretrain/*/m0/seed_*.json", "key": "status"}
    judged = judge(claim(kind="failure", runs=spec, at="top"), tmp_path)
    assert judged["verdict"] == verdict and judged["step"] == 1200
    assert "2 of 5 runs had diverged or collapsed" in judged["note"]
    assert judged["arms"]["loss"]["values"] == pytest.approx([6.4, 6.3, 6.2])


def test_a_ladder_claim_carries_each_arms_untrained_level(tmp_path):
    """The figure each arm reads, at step 0: what the ladder figure draws as its dashed line."""
    ladder_records(tmp_path, "a", {300: shifted(BASE, 0.1), 1200: shifted(BASE, 0.2)}, control=0.20)
    ladder_records(tmp_path, "b", {300: BASE, 1200: BASE}, control=0.35)
    judged = judge(claim(kind="paired", a="a", b="b", margin=0.02, ladder=True,
                         arms={"a": ladder_arm("a"), "b": ladder_arm("b")}), tmp_path)
    assert judged["untrained"] == pytest.approx({"a": 0.20, "b": 0.35})


# ---------------------------------------------------------------- a correlation's declared population

def population_records(root, condition, method, accuracy, uniformity, gain=0.30, control=0.30):
    """Training and evaluation records of one condition's 5 runs: its method, and per seed the
    linear probe on h (its control below it by `gain`) and z's uniformity."""
    for seed in range(5):
        acc = accuracy + seed / 1000
        for stage, record in (("pretrain", {"condition": condition, "seed": seed, "status": "ok",
                                            "config": {"method": method}}),
                              ("evaluate", {"condition": condition, "seed": seed, "status": "ok",
                                            "control": {"h": {"linear": acc - gain}},
                                            "eval": {"h": {"linear": acc}, "z": {"uniformity": uniformity - seed / 100}}})):
            path = root / "results" / stage / "s" / condition / f"seed_{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record))


def population_claim(conditions, **kw):
    return claim(kind="correlation", direction="less", margin=0.1, runs={"conditions": conditions},
                 x="eval.z.uniformity", y="eval.h.linear", **kw)


def test_a_correlation_reads_its_named_conditions_less_the_untrained_and_the_supervised(tmp_path):
    """Six trained contrastive conditions: lower uniformity, higher accuracy. A supervised one and
    one that did not train lie far off that line; each is left out, with its reason, unless kept."""
    for i in range(6):
        population_records(tmp_path, f"c{i}", "simclr", 0.5 + i / 20, -1 - i / 2)
    population_records(tmp_path, "labels", "supcon", 0.95, 0.0)
    population_records(tmp_path, "stuck", "moco", 0.9, 0.0, gain=0.0)
    names = [f"c{i}" for i in range(6)] + ["labels", "stuck"]
    judged = judge(population_claim(names), tmp_path)
    assert judged["population"]["conditions"] == names[:6]
    assert judged["population"]["left_out"]["labels"] == "supervised (supcon)"
    assert judged["population"]["left_out"]["stuck"].startswith("did not train (0% [0, 0]")
    assert judged["contrast"]["n_runs"] == 30 and judged["verdict"] == "reproduced"
    assert "Population: 6 of the 8 named conditions; left out: labels, supervised" in judged["note"]
    kept = judge(population_claim(names, keep=["supervised", "untrained"]), tmp_path)
    assert kept["population"]["left_out"] == {} and kept["contrast"]["n_runs"] == 40
    assert kept["contrast"]["rho"] > judged["contrast"]["rho"]


def test_a_population_of_fewer_than_three_trained_conditions_is_inconclusive_not_a_crash(tmp_path):
    """As in a smoke run, where almost nothing trains: the population left is too small to correlate."""
    population_records(tmp_path, "c0", "simclr", 0.5, -1)
    population_records(tmp_path, "stuck", "moco", 0.9, 0.0, gain=0.0)
    judged = judge(population_claim(["c0", "stuck"]), tmp_path)
    assert judged["verdict"] == "inconclusive" and judged["contrast"] is None
    assert "Fewer than 3 conditions in the population (1)" in judged["note"]


def test_a_named_condition_without_records_stops_the_analysis(tmp_path):
    population_records(tmp_path, "c0", "simclr", 0.5, -1)
    with pytest.raises(InputError, match=r"^claim x: runs.conditions: 'gone' holds no records"):
        judge(population_claim(["c0", "gone"]), tmp_path)


def test_every_condition_a_committed_correlation_names_holds_records():
    from replication.cli.repro import registered_run_in_progress
    root = REGISTRY.parents[1]
    if registered_run_in_progress(root):
        pytest.skip("a registered run is under way: its new conditions hold records once their stages have run")
    for c in load_registry(REGISTRY).claims:
        for condition in c["runs"].get("conditions", []) if c["kind"] == "correlation" else []:
            assert list((root / "results" / "evaluate").glob(f"*/{condition}/seed_*.json")), (c["id"], condition)


# ---------------------------------------------------------------- a claim of no effect needs a positive control

def equivalence(new="new", **kw):
    return claim(kind="paired", a="new", b="old", direction="equal", margin=0.02,
                 arms={"new": arm(new), "old": arm("old")}, **kw)


def test_a_claim_of_no_effect_is_decided_only_where_its_positive_control_saw_the_margin(tmp_path):
    evaluation_records(tmp_path, "old", [0.30, 0.31, 0.29, 0.32, 0.30])
    evaluation_records(tmp_path, "new", [0.301, 0.309, 0.291, 0.322, 0.30])
    evaluation_records(tmp_path, "helps", [0.40, 0.41, 0.39, 0.42, 0.40])        # +10 points: beyond the margin
    evaluation_records(tmp_path, "barely", [0.30, 0.33, 0.28, 0.33, 0.31])       # +0.6 points: below it
    alone = judge(equivalence(), tmp_path)
    assert alone["verdict"] == "inconclusive"
    assert alone["contrast"]["reason"] == verdicts.NO_POSITIVE_CONTROL and "positive_control" not in alone
    control = lambda name: {"a": arm(name), "b": arm("old"), "direction": "greater"}
    shown = judge(equivalence(positive_control=control("helps")), tmp_path)
    assert shown["verdict"] == "reproduced" and shown["positive_control"]["verdict"] == "reproduced"
    weak = judge(equivalence(positive_control=control("barely")), tmp_path)
    assert weak["verdict"] == "inconclusive" and weak["positive_control"]["verdict"] != "reproduced"
    assert weak["contrast"]["reason"].startswith(verdicts.NO_POSITIVE_CONTROL + " (its positive control")
    evaluation_records(tmp_path, "worse", [0.20, 0.21, 0.19, 0.22, 0.20])
    beyond = judge(equivalence("worse"), tmp_path)
    assert beyond["verdict"] == "contradicted"                  # an effect seen needs no control


def test_a_correlation_reads_one_value_per_condition_so_more_seeds_weigh_no_more(tmp_path):
    """Four conditions, u rising and acc falling with them; condition d ran 15 seeds whose means are
    its 5-seed values, but one of them pulls its acc far up. Read per run, d would count three times;
    read per condition it counts once, at the mean of its seeds."""
    folder = tmp_path / "runs"
    folder.mkdir()
    means = {"a": (0.1, 0.9), "b": (0.2, 0.8), "c": (0.3, 0.7), "d": (0.4, 0.6)}
    seeds = {"a": 5, "b": 5, "c": 5, "d": 15}
    i = 0
    for condition, (u, acc) in means.items():
        offsets = [0.0] * seeds[condition]
        if condition == "d":
            offsets = [0.3] + [-0.3 / 14] * 14         # mean offset 0: d's mean acc stays 0.6
        for offset in offsets:
            (folder / f"seed_{i}.json").write_text(json.dumps(
                {"seed": i, "condition": condition, "status": "ok", "eval": {"u": u, "acc": acc + offset}}))
            i += 1
    judged = judge(claim(kind="correlation", direction="less", margin=0.1, runs={"files": "runs/seed_*.json"},
                         x="eval.u", y="eval.acc"), tmp_path)
    c = judged["contrast"]
    assert c["n_conditions"] == 4 and c["n_runs"] == 30 and judged["arms"]["eval.acc"]["n"] == 4
    assert judged["arms"]["eval.acc"]["values"] == pytest.approx([0.9, 0.8, 0.7, 0.6])
    assert c["rho"] == pytest.approx(-1.0)          # the means fall in rank order with u


def test_the_screen_reads_the_p_of_the_leg_that_decided():
    """A claim of no meaningful effect decided by one leg, its other leg undecided: the screen's p is
    the deciding leg's, not the undecided one's."""
    decided = {"verdict": "no meaningful effect", "p_reproduced": 0.9, "p_contradicted": 0.9, "p_equivalent": 0.003}
    undecided = {"verdict": "inconclusive", "p_reproduced": 0.05, "p_contradicted": 0.99, "p_equivalent": 0.158}
    assert verdicts.claim_p("no meaningful effect", [decided, undecided]) == 0.003
    both = {**decided, "p_equivalent": 0.01}
    assert verdicts.claim_p("no meaningful effect", [decided, both]) == 0.01      # the weaker deciding leg
    assert verdicts.claim_p("inconclusive", [undecided]) == 0.05
