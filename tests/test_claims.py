"""Judging claims from result files, one kind at a time, on files the test writes."""
import json
from pathlib import Path

import pytest

from replication.claims import judge, judge_all, load_registry


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
    return {"id": "x", "source": "s", "statement": "t", "published": None, "metric": "m", **kw}


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
                 results)["verdict"] == "exact match"
    assert judge(claim(kind="bound", at_least=0.7, measured={"file": "r/ex.json", "key": "loss"}),
                 results)["verdict"] == "mismatch"
    spec = {"file": "r/ex.json", "select": "runs", "where": {"tau": 0.1}, "key": "acc"}
    assert judge(claim(kind="range", range=[0.9, 0.92], measured=spec), results)["verdict"] == "exact match"
    assert judge(claim(kind="range", range=[0.91, 0.92], measured=spec), results)["verdict"] == "mismatch"


def test_interval_over_arms(results):
    arms = {t: {"file": "r/ex.json", "select": "runs", "where": {"tau": t}, "ratio": ["before", "after"]}
            for t in (0.1, 1.0)}
    judged = judge(claim(kind="interval", range=[15, 40], arms=arms), results)
    assert judged["arms"][0.1]["values"] == pytest.approx([25, 30, 28])
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


def test_missing_measurement_is_not_tested_not_dropped(results):
    judged = judge_all([claim(kind="exact", published=1, measured={"file": "r/absent.json", "key": "x"}),
                        claim(kind="not_tested", reason="needs ImageNet")], results)
    assert [c["verdict"] for c in judged] == ["not tested", "not tested"]
    assert "absent.json" in judged[0]["note"] and judged[1]["note"] == "needs ImageNet"


def test_registry_is_well_formed():
    registry = load_registry(Path(__file__).resolve().parents[1] / "analysis" / "claims.yaml")
    for c in registry:
        assert {"id", "source", "statement", "kind", "section"} <= set(c), c.get("id")
        if c["kind"] == "not_tested":
            assert c.get("reason"), c["id"]
        if c["kind"] in ("paired", "interval"):
            assert c.get("arms"), c["id"]
