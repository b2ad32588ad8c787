"""What the pipeline notices, in copies of the shared smoke pipeline (tests/smoke_run.py): an edited
module makes its pretraining stage stale, a typo in the registry or a truncated result file stops
the analysis with one line, and failed runs are shown as failed, never averaged."""
import json
import subprocess
import sys

import pytest

from smoke_run import ROOT, copy_of, environment, run_script, status
from test_dvc_deps import closure, only_a_docstring
from helpers import judged_claims

pytestmark = [pytest.mark.slow, pytest.mark.copies_smoke_run]


def test_editing_any_module_a_pretraining_stage_imports_makes_it_stale(smoke, tmp_path):
    copy = copy_of(smoke, tmp_path / "edited")
    files = sorted(p.relative_to(ROOT) for p in closure(ROOT / "experiments/pretrain.py") if not only_a_docstring(p))
    assert len(files) >= 10
    for relative in files:
        path = copy / relative
        original = path.read_text()
        path.write_text(original + "\n# edited\n")
        assert "pretrain@simclr_mocov2" in status(copy, "pretrain@simclr_mocov2"), relative
        path.write_text(original)
    assert status(copy) == {}


def test_a_claim_naming_an_unknown_condition_stops_the_analysis(smoke, tmp_path):
    copy = copy_of(smoke, tmp_path / "typo")
    registry = copy / "analysis/claims.yaml"
    registry.write_text(registry.read_text().replace("condition: simclr_tau005,", "condition: simclr_tau0005,", 1))
    before = (copy / "reports/claims.json").read_text()
    result = run_script(["experiments/analyze.py"], copy)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "'simclr_tau0005' is not defined in params.yaml" in result.stderr and "claims.yaml: claim " in result.stderr
    assert (copy / "reports/claims.json").read_text() == before          # nothing written


def test_a_truncated_result_file_names_the_stage_that_regenerates_it(smoke, tmp_path):
    copy = copy_of(smoke, tmp_path / "truncated")
    for path, stage in (("results/evaluate/temperature/simclr_tau01/seed_1.json", "evaluate@temperature"),
                        ("results/pretrain/moco_bn/moco_bn4/seed_0.json", "pretrain@moco_bn")):
        original = (copy / path).read_text()
        (copy / path).write_text(original[: len(original) // 3])
        result = run_script(["experiments/analyze.py"], copy)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert path in result.stderr and f"dvc repro -f {stage}" in result.stderr
        (copy / path).write_text(original)


def test_failed_runs_are_shown_as_failed_never_averaged(smoke, tmp_path):
    """Mark one run as diverged, re-analyse and re-render outside DVC: the claim counts it as failed,
    its arm has one value fewer, and the report names it."""
    copy = copy_of(smoke, tmp_path / "failed")
    failure = {"status": "diverged", "reason": "loss nan at step 4"}
    for kind in ("pretrain", "evaluate"):
        run = copy / f"results/{kind}/temperature/simclr_tau01/seed_1.json"
        record = json.loads(run.read_text())
        run.write_text(json.dumps({**record, **failure, **({"eval": None} if kind == "evaluate" else {})}))
    for stage in ("analyze", "render_report"):
        result = subprocess.run([sys.executable, f"experiments/{stage}.py"], cwd=copy, env=environment(),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]
    claims = {c["id"]: c for c in judged_claims(copy)}
    touched = [c for c in claims.values() if any(a.get("failed") for a in c["arms"].values())]
    assert touched, "no claim reports the failed run"
    before = {c["id"]: c for c in judged_claims(smoke)}
    for claim in touched:
        name, arm = next((n, a) for n, a in claim["arms"].items() if a.get("failed"))
        assert arm["failed"][0]["status"] == "diverged"
        assert arm["n"] == len(arm["values"]) == before[claim["id"]]["arms"][name]["n"] - 1
        assert "failed" in claim["note"]
    html = (copy / "reports/report.html").read_text()
    assert "diverged" in html and "loss nan at step 4" in html
