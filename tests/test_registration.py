"""The registration record: rules frozen before the run, checked before judging."""
import json
import shutil

import yaml

from replication.registration import REGISTERED_CODE, register
from replication.registry import load_registry

from test_registry import ROOT, run_analyze, write_world


def registered_world(root):
    """The small world of test_registry, with the project's judging code and params beside it, registered."""
    write_world(root)
    for path in REGISTERED_CODE:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, root / path)
    rules, claims = load_registry(root / "analysis" / "claims.yaml")
    register(rules, claims, root)
    return root / "analysis" / "claims.yaml"


def test_an_unregistered_project_labels_every_amendment_post_hoc(tmp_path, monkeypatch, capsys):
    write_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    summary = json.loads((tmp_path / "reports" / "summary.json").read_text())
    assert summary["registered_on"] is None


def test_a_registered_registry_is_judged(tmp_path, monkeypatch, capsys):
    registered_world(tmp_path)
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err
    assert json.loads((tmp_path / "reports" / "summary.json").read_text())["registered_on"] is not None


def test_a_rule_changed_after_registration_without_an_amendment_stops_the_analysis(tmp_path, monkeypatch, capsys):
    registry = registered_world(tmp_path)
    registry.write_text(registry.read_text().replace("margin: 0.02", "margin: 0.5"))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "claim a-beats-b: differs from its registered form" in err
    assert not (tmp_path / "reports").exists()


def test_a_logged_post_registration_amendment_is_judged_by_both_rules(tmp_path, monkeypatch, capsys):
    registry = registered_world(tmp_path)
    date = json.loads((tmp_path / "analysis" / "registration.json").read_text())["date"]
    amendment = (f"  amended: [{{date: '{date}', what: margin 0.02 -> 0.5, why: test, "
                 "previous_verdict: reproduced, post_registration: true}]\n")
    registry.write_text(registry.read_text().replace("  margin: 0.02\n", "  margin: 0.5\n" + amendment))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    claim = json.loads((tmp_path / "reports" / "claims.json").read_text())[0]
    assert status == 0, err
    assert claim["frozen_verdict"] == "reproduced" and claim["verdict"] == "no meaningful effect"
    assert "post hoc" in claim["labels"]


def test_changed_judging_code_or_params_after_registration_stop_the_analysis(tmp_path, monkeypatch, capsys):
    registered_world(tmp_path)
    decisions = tmp_path / "src" / "replication" / "decisions.py"
    decisions.write_text(decisions.read_text() + "\n# changed\n")
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "src/replication/decisions.py: differs from the registration" in err


def test_an_unreadable_record_stops_the_analysis(tmp_path, monkeypatch, capsys):
    write_world(tmp_path)
    (tmp_path / "analysis" / "registration.json").write_text('{"date": ')
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "analysis/registration.json: unreadable" in err


def test_registering_makes_the_analysis_and_report_depend_on_the_record(tmp_path):
    from replication.registration import add_to_analysis_deps
    dvc_yaml = tmp_path / "dvc.yaml"
    dvc_yaml.write_text((ROOT / "dvc.yaml").read_text().replace("      - analysis/registration.json\n", ""))
    assert add_to_analysis_deps(dvc_yaml) and not add_to_analysis_deps(dvc_yaml)
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    with_record = [name for name, stage in stages.items() if "analysis/registration.json" in stage.get("deps", [])]
    assert sorted(with_record) == ["analyze", "report"]