"""The registration records: rules frozen before each run, checked before judging."""
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from replication.judge.registration import judged_code, register
from replication.judge.registry import load_registry

from test_registry import BOUND, PAIRED, ROOT, RULES, in_name_form, run_analyze, write_world
from helpers import judged_claims


def registered_world(root):
    """The small world of test_registry, with the project's judging code and params beside it, registered."""
    write_world(root)
    for path in judged_code(ROOT):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, root / path)
    rules, claims = load_registry(root / "analysis" / "claims.yaml")[:2]
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
    claim = judged_claims(tmp_path)[0]
    assert status == 0, err
    assert claim["frozen_verdict"] == "reproduced" and claim["verdict"] == "no meaningful effect"
    assert "post hoc" in claim["labels"]


def test_an_arm_named_by_its_condition_is_the_arm_registered_by_its_pattern(tmp_path, monkeypatch, capsys):
    """Registered in path form, written in name form (or back): the same claim, no amendment; naming
    another condition is a change; an amended claim in name form is judged by its frozen path form too."""
    registry = registered_world(tmp_path)
    registry.write_text(in_name_form(registry.read_text()))
    assert run_analyze(tmp_path, monkeypatch, capsys) == (0, "")
    registry.write_text(registry.read_text().replace("a: {condition: ca,", "a: {condition: cb,"))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "claim a-beats-b: differs from its registered form" in err
    date = json.loads((tmp_path / "analysis" / "registration.json").read_text())["date"]
    amendment = (f"  amended: [{{date: '{date}', what: margin 0.02 -> 0.5, why: test, "
                 "previous_verdict: reproduced, post_registration: true}]\n")
    registry.write_text(in_name_form(RULES + "claims:\n" + PAIRED + BOUND).replace("  margin: 0.02\n",
                                                                                  "  margin: 0.5\n" + amendment))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    claim = judged_claims(tmp_path)[0]
    assert status == 0, err
    assert claim["frozen_verdict"] == "reproduced" and claim["verdict"] == "no meaningful effect"


def test_a_claim_registered_in_name_form_is_the_same_in_path_form(tmp_path, monkeypatch, capsys):
    registry = registered_world(tmp_path)
    registry.write_text(in_name_form(registry.read_text()))
    (tmp_path / "analysis" / "registration.json").unlink()
    register(*load_registry(registry)[:2], tmp_path)           # registered in name form
    assert "condition" in json.loads((tmp_path / "analysis" / "registration.json").read_text())[
        "claims"]["a-beats-b"]["arms"]["a"]
    registry.write_text(RULES + "claims:\n" + PAIRED + BOUND)
    assert run_analyze(tmp_path, monkeypatch, capsys) == (0, "")


def test_changed_judging_code_or_params_after_registration_stop_the_analysis(tmp_path, monkeypatch, capsys):
    registered_world(tmp_path)
    verdicts = tmp_path / "src" / "replication" / "judge" / "verdicts.py"
    verdicts.write_text(verdicts.read_text() + "\n# changed\n")
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "src/replication/judge/verdicts.py: differs from the registration" in err


def test_a_changed_confidence_level_needs_a_new_registration_and_no_amendment_lets_it_through(
        tmp_path, monkeypatch, capsys):
    """rules.alpha (the confidence level, as every registry-wide rule) changed after the registration
    stops the analysis, and still does after a rule amendment (`--rules-changed`); registered again,
    it judges (docs/changing.md: Changing the study)."""
    from replication.judge import registration
    from replication.cli.register import main as register_main
    registry = registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    registry.write_text(registry.read_text().replace("alpha: 0.025", "alpha: 0.05"))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "analysis/claims.yaml: rules differ from the registration" in err, err
    assert register_main(["--rules-changed", "alpha 0.025 -> 0.05", "--why", "test"]) == 0, capsys.readouterr().err
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "analysis/claims.yaml: rules differ from the registration" in err, err
    again = tmp_path / "again"
    again.mkdir()
    registry = registered_world(again)
    first = again / "analysis" / "registration.json"
    first.write_text(json.dumps({**json.loads(first.read_text()), "date": "2026-11-01"}))
    registry.write_text(registry.read_text().replace("alpha: 0.025", "alpha: 0.05"))
    rules, claims = load_registry(registry)[:2]
    registration.register(rules, claims, again, previous={"commit": "0" * 40, "claims_json_sha256": "0" * 64})
    status, err = run_analyze(again, monkeypatch, capsys)
    assert status == 0, err
    assert judged_claims(again)[0]["contrast"]["level"] == pytest.approx(0.9)


def test_an_unreadable_record_stops_the_analysis(tmp_path, monkeypatch, capsys):
    write_world(tmp_path)
    (tmp_path / "analysis" / "registration.json").write_text('{"date": ')
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "analysis/registration.json: unreadable" in err


def test_registering_makes_the_analysis_and_report_depend_on_the_record(tmp_path):
    from replication.judge.registration import add_to_analysis_deps
    dvc_yaml = tmp_path / "dvc.yaml"
    dvc_yaml.write_text((ROOT / "dvc.yaml").read_text().replace("      - analysis/registration.json\n", ""))
    assert add_to_analysis_deps(dvc_yaml) and not add_to_analysis_deps(dvc_yaml)
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    with_record = [name for name, stage in stages.items() if "analysis/registration.json" in stage.get("deps", [])]
    assert sorted(with_record) == ["analyze", "report"]

def amendment(root, record, **change):
    """A code amendment as `python -m replication register` writes it: the judged code now, and the claims.json and
    results the analysis last wrote and read (a move of code changes neither); `change` forges it."""
    from replication.judge import registration
    digest = hashlib.sha256((root / "reports" / "claims.json").read_bytes()).hexdigest()
    honest = registration.amend_code(record, "moved", "test", digest, root, results=registration.results_snapshot(root))
    return {**honest, **change}


def test_moved_judging_code_stands_once_a_code_amendment_records_it(tmp_path, monkeypatch, capsys):
    from replication.judge import registration
    registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    verdicts = tmp_path / "src" / "replication" / "judge" / "verdicts.py"
    verdicts.write_text(verdicts.read_text() + "\n# moved here\n")
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 2
    record = registration.load(tmp_path)
    amendments = [amendment(tmp_path, record)]
    (tmp_path / registration.CODE_AMENDMENTS).write_text(json.dumps(amendments))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err
    verdicts.write_text(verdicts.read_text() + "# changed after the amendment\n")
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "verdicts.py: differs from the registration of" in err and "code amended" in err


@pytest.mark.parametrize("forged", ["claims.json as before", "no results"])
def test_a_forged_code_amendment_beside_edited_judging_code_is_refused(tmp_path, monkeypatch, capsys, forged):
    """An amendment says 'verdicts identical'; the analysis checks it on the results it names instead
    of trusting it. Judging code that gives another claims.json than the one the amendment names
    (here: the amendment names the verdicts the code gave before it was edited, one reversed), or an
    amendment naming no results, stops the analysis in one line, and nothing is written."""
    from replication.judge import registration
    registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    before = (tmp_path / "reports" / "claims.json").read_bytes()
    judged_before_the_edit = before.replace(b'"reproduced"', b'"contradicted"', 1)
    assert judged_before_the_edit != before
    verdicts = tmp_path / "src" / "replication" / "judge" / "verdicts.py"
    verdicts.write_text(verdicts.read_text() + "\n# edited\n")
    record = registration.load(tmp_path)
    forgery = amendment(tmp_path, record, claims_json_sha256=hashlib.sha256(judged_before_the_edit).hexdigest(),
                        **({"results": None} if forged == "no results" else {}))
    (tmp_path / registration.CODE_AMENDMENTS).write_text(json.dumps([forgery]))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    said = "names no results" if forged == "no results" else "says no verdict moved, but on the same results"
    assert status == 2 and err.count("\n") == 1 and said in err and "registration_amendments.json" in err, err
    assert (tmp_path / "reports" / "claims.json").read_bytes() == before


def test_a_code_amendment_on_other_results_is_not_held_to_the_old_claims(tmp_path, monkeypatch, capsys):
    """New results may move verdicts under amended code: the amendment's claims.json is checked only
    on the results it names."""
    from replication.judge import registration
    registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    verdicts = tmp_path / "src" / "replication" / "judge" / "verdicts.py"
    verdicts.write_text(verdicts.read_text() + "\n# edited\n")
    other = {"sha256": "a" * 64, "runs": 1, "stage_two_runs": 0}
    (tmp_path / registration.CODE_AMENDMENTS).write_text(json.dumps([amendment(
        tmp_path, registration.load(tmp_path), claims_json_sha256="0" * 64, results=other)]))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err


def test_a_judging_module_added_after_registration_stops_the_analysis(tmp_path, monkeypatch, capsys):
    registered_world(tmp_path)
    (tmp_path / "src" / "replication" / "judge" / "shortcut.py").write_text("OVERRIDE = True\n")
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "src/replication/judge/shortcut.py: judging code added after" in err


def test_a_code_amendment_is_written_only_when_the_verdicts_are_identical(tmp_path, monkeypatch, capsys):
    from replication.cli.register import main as register_main
    registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0              # the committed results
    verdicts = tmp_path / "src" / "replication" / "judge" / "verdicts.py"
    verdicts.write_text(verdicts.read_text() + "\n# moved here\n")          # code that moved
    claims = tmp_path / "reports" / "claims.json"
    committed = claims.read_text()
    claims.write_text(committed.replace('"reproduced"', '"contradicted"'))    # judged otherwise before
    assert register_main(["--code-moved", "moved", "--why", "test"]) == 2
    assert "judges the committed results differently" in capsys.readouterr().err
    assert not (tmp_path / "analysis" / "registration_amendments.json").exists()
    claims.write_text(committed)
    assert register_main(["--code-moved", "moved", "--why", "test"]) == 0
    written = json.loads((tmp_path / "analysis" / "registration_amendments.json").read_text())
    assert written[0]["verdicts_identical"] and written[0]["what"] == "moved"


def test_a_code_amendment_on_a_full_disk_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    import errno
    import os
    from replication.cli.register import main as register_main
    registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    verdicts = tmp_path / "src" / "replication" / "judge" / "verdicts.py"
    verdicts.write_text(verdicts.read_text() + "\n# moved here\n")

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", full)
    assert register_main(["--code-moved", "moved", "--why", "test"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "registration_amendments.json: cannot write" in err and "disk space" in err, err
    assert not (tmp_path / "analysis" / "registration_amendments.json").exists()
    assert not list((tmp_path / "analysis").glob(".*.tmp"))


def test_a_code_amendment_for_nothing_is_refused(tmp_path, monkeypatch, capsys):
    """--code-moved with every judged file as registered (or as last amended): one line, nothing written."""
    from replication.cli.register import main as register_main
    registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    assert register_main(["--code-moved", "moved", "--why", "test"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "src/replication/judge: every judged file is as registered" in err \
        and "nothing to amend" in err
    assert not (tmp_path / "analysis" / "registration_amendments.json").exists()


def test_the_latest_registration_stands_for_the_judged_code():
    """The latest committed record (through its code amendments, if any) covers the judged files as
    they are now. For the first run, its code amendment reproduced the committed claims.json byte for
    byte; from the second on, the record names the commit and claims.json of the run before it."""
    import hashlib
    import subprocess
    from replication.judge import registration
    record, amendments = registration.load(ROOT), registration.load_code_amendments(ROOT)
    registration.check_code(record, amendments, ROOT)
    registration.check_code_amendment((ROOT / "reports" / "claims.json").read_text(), ROOT)   # names the results
    assert all(a["registration"] == record["date"] for a in amendments)
    git = lambda *args: subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout
    if record["run"] > 1:
        judged_then = git("show", f"{record['previous']['commit']}:reports/claims.json")
        assert record["previous"]["claims_json_sha256"] == hashlib.sha256(judged_then.encode()).hexdigest()
        return
    added = git("log", "--diff-filter=A", "--format=%H", "--", str(registration.CODE_AMENDMENTS)).split()
    if not added or not amendments:
        pytest.skip("the code amendment is not committed yet")
    judged_then = git("show", f"{added[-1]}:reports/claims.json")
    assert amendments[0]["claims_json_sha256"] == hashlib.sha256(judged_then.encode()).hexdigest()
    assert amendments[0]["verdicts_identical"]


def test_a_registered_claim_deleted_from_the_registry_stops_the_analysis(tmp_path, monkeypatch, capsys):
    from test_registry import BOUND
    registry = registered_world(tmp_path)
    registry.write_text(registry.read_text().replace(BOUND, ""))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and err.count("\n") == 1 and "claim small-loss: registered on" in err and "missing" in err
    assert not (tmp_path / "reports").exists()


def test_a_claim_withdrawn_by_a_post_registration_amendment_may_go(tmp_path, monkeypatch, capsys):
    from test_registry import BOUND
    registry = registered_world(tmp_path)
    date = json.loads((tmp_path / "analysis" / "registration.json").read_text())["date"]
    withdraw = (f"amendments:\n  drop-small-loss:\n    date: '{date}'\n    what: withdrawn\n    why: test\n"
                "    post_registration: true\n    withdraws: [small-loss]\n")
    registry.write_text(registry.read_text().replace(BOUND, "").replace("claims:\n", withdraw + "claims:\n"))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err


@pytest.mark.parametrize("date,named", [("2026-99-99", "not a real date"), ("2999-01-01", "dated after today")])
def test_an_amendment_dated_impossibly_is_refused(tmp_path, monkeypatch, capsys, date, named):
    registry = registered_world(tmp_path)
    amendment = (f"  amended: [{{date: '{date}', what: m, why: test, previous_verdict: reproduced, "
                 "post_registration: true}]\n")
    registry.write_text(registry.read_text().replace("  margin: 0.02\n", "  margin: 0.5\n" + amendment))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and err.count("\n") == 1 and named in err, err


@pytest.mark.parametrize("edit,named", [
    (lambda r: r.pop("rules_sha256"), "rules_sha256: Field required"),
    (lambda r: r.update(sha256=["not", "a", "mapping"]), "sha256: Input should be a valid dictionary"),
    (lambda r: r.update(date=20261201), "date: Input should be a valid string"),
])
def test_a_malformed_record_stops_the_analysis_with_one_line_naming_the_key(tmp_path, monkeypatch, capsys, edit,
                                                                              named):
    registered_world(tmp_path)
    path = tmp_path / "analysis" / "registration.json"
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and err.count("\n") == 1 and named in err, err


def test_a_claim_added_after_registration_stops_the_analysis(tmp_path, monkeypatch, capsys):
    from test_registry import BOUND
    registry = registered_world(tmp_path)
    registry.write_text(registry.read_text() + BOUND.replace("small-loss", "new-claim"))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "claim new-claim: added after the registration of" in err


def test_a_rule_change_after_registration_shows_each_moved_verdict_post_hoc_beside_the_frozen_one(
        tmp_path, monkeypatch, capsys):
    from replication.cli.register import main as register_main
    registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    claims = tmp_path / "reports" / "claims.json"
    judged = json.loads(claims.read_text())
    now = judged[0]["verdict"]
    judged[0]["verdict"] = "inconclusive"                # what the frozen code said of it, say
    claims.write_text(json.dumps(judged))
    assert register_main(["--rules-changed", "a new rule", "--why", "test"]) == 0
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    first, second = json.loads(claims.read_text())
    assert first["verdict"] == now and first["frozen_verdict"] == "inconclusive" and "post hoc" in first["labels"]
    assert [change["what"] for change in first["rules_amended"]] == ["a new rule"]
    assert "frozen_verdict" not in second and "post hoc" not in second["labels"]    # not moved: not post hoc


def test_an_amended_claim_after_a_rule_change_shows_the_registered_codes_verdict_as_frozen(
        tmp_path, monkeypatch, capsys):
    """Amended and rule-moved: the frozen verdict is the one the registered code gave (the rule
    change's record), not today's code on the frozen claim."""
    from replication.cli.register import main as register_main
    registry = registered_world(tmp_path)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    claims = tmp_path / "reports" / "claims.json"
    judged = json.loads(claims.read_text())
    judged[0]["verdict"] = "inconclusive"                # what the registered code said of it, say
    claims.write_text(json.dumps(judged))
    assert register_main(["--rules-changed", "a new rule", "--why", "test"]) == 0
    date = json.loads((tmp_path / "analysis" / "registration.json").read_text())["date"]
    amendment = (f"  amended: [{{date: '{date}', what: margin 0.02 -> 0.5, why: test, "
                 "previous_verdict: reproduced, post_registration: true}]\n")
    registry.write_text(registry.read_text().replace("  margin: 0.02\n", "  margin: 0.5\n" + amendment, 1))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    claim = judged_claims(tmp_path)[0]
    assert status == 0, err
    assert claim["frozen_verdict"] == "inconclusive" and claim["verdict"] == "no meaningful effect"
    assert "post hoc" in claim["labels"]


def test_a_claim_amended_before_a_rule_change_keeps_its_registered_texts_verdict_as_frozen(
        tmp_path, monkeypatch, capsys):
    """Amended first (frozen text: reproduced, today's text: no meaningful effect), then a rule change
    that moves nothing: the frozen verdict shown is still the registered text's, not today's text's
    verdict under the replaced code."""
    from replication.cli.register import main as register_main
    registry = registered_world(tmp_path)
    date = json.loads((tmp_path / "analysis" / "registration.json").read_text())["date"]
    amendment = (f"  amended: [{{date: '{date}', what: margin 0.02 -> 0.5, why: test, "
                 "previous_verdict: reproduced, post_registration: true}]\n")
    registry.write_text(registry.read_text().replace("  margin: 0.02\n", "  margin: 0.5\n" + amendment, 1))
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    assert judged_claims(tmp_path)[0]["frozen_verdict"] == "reproduced"
    assert register_main(["--rules-changed", "a new rule", "--why", "test"]) == 0
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    claim = judged_claims(tmp_path)[0]
    assert status == 0, err
    assert claim["frozen_verdict"] == "reproduced" and claim["verdict"] == "no meaningful effect"
    assert "post hoc" in claim["labels"]


def test_the_analyze_entry_point_checks_the_code_and_judging_does_not(tmp_path, monkeypatch):
    """judge_registry judges whatever code it runs (`python -m replication register` relies on it); analyze checks first."""
    from replication.judge import registration
    from replication.judge.judge import judge_registry
    registered_world(tmp_path)
    verdicts = tmp_path / "src" / "replication" / "judge" / "verdicts.py"
    verdicts.write_text(verdicts.read_text() + "\n# moved here\n")
    with pytest.raises(registration.RegistrationError, match="verdicts.py: differs from the registration"):
        registration.check_registered_code(tmp_path)
    monkeypatch.chdir(tmp_path)
    judged, record = judge_registry(json.loads((tmp_path / "resolved" / "conditions.json").read_text()))
    assert record is not None and [c["verdict"] for c in judged][0] == "reproduced"


def test_declaring_the_gates_a_claim_was_registered_with_is_no_change_and_declaring_others_is(
        tmp_path, monkeypatch, capsys):
    """A claim registered before reference and outcome were declared was read with its b arms gated:
    spelling that out needs no amendment; gating another arm does."""
    registry = registered_world(tmp_path)
    record_path = tmp_path / "analysis" / "registration.json"
    record = json.loads(record_path.read_text())
    for key in ("reference", "outcome"):
        del record["claims"]["a-beats-b"][key]
    record_path.write_text(json.dumps(record))
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    registry.write_text(registry.read_text().replace("  reference: [b]\n  outcome: [a]\n",
                                                     "  reference: [a]\n  outcome: [b]\n"))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "claim a-beats-b: differs from its registered form" in err


# ---------------------------------------------------------------- the second registered run

def second_registered_world(root):
    """registered_world with its record backdated to 2026-11-01, then registered again today
    (analysis/registration_2.json, run 2)."""
    from replication.judge import registration
    registry = registered_world(root)
    first = root / "analysis" / "registration.json"
    first.write_text(json.dumps({**json.loads(first.read_text()), "date": "2026-11-01"}))
    rules, claims = load_registry(registry)[:2]
    registration.register(rules, claims, root, previous={"commit": "0" * 40, "claims_json_sha256": "0" * 64})
    return registry


def git(root, *args):
    result = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root,
                            capture_output=True, text=True, check=True)
    return result.stdout.strip()


def committed_first_run(root, monkeypatch, capsys):
    """registered_world backdated to 2026-11-01, judged, with dvc.yaml, all committed in a git repository."""
    registered_world(root)
    first = root / "analysis" / "registration.json"
    first.write_text(json.dumps({**json.loads(first.read_text()), "date": "2026-11-01"}))
    assert run_analyze(root, monkeypatch, capsys)[0] == 0
    shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the first run")
    return first


def test_registering_again_writes_a_second_record_naming_the_first_run_and_leaves_the_first_as_it_was(
        tmp_path, monkeypatch, capsys):
    from replication.judge import registration
    from replication.cli.register import main as register_main
    first = committed_first_run(tmp_path, monkeypatch, capsys)
    before = first.read_bytes()
    assert register_main([]) == 0, capsys.readouterr().err
    assert "wrote analysis/registration_2.json" in capsys.readouterr().out
    second = json.loads((tmp_path / "analysis" / "registration_2.json").read_text())
    assert first.read_bytes() == before
    assert second["run"] == 2 and second["date"] != "2026-11-01"
    claims_sha = hashlib.sha256((tmp_path / "reports" / "claims.json").read_bytes()).hexdigest()
    assert second["previous"] == {"record": "analysis/registration.json", "date": "2026-11-01",
                                  "commit": git(tmp_path, "rev-parse", "HEAD"), "claims_json_sha256": claims_sha}
    assert set(second) >= set(json.loads(before)) and second["claims"] == json.loads(before)["claims"]
    stages = yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]
    assert all("analysis/registration_2.json" in stages[name]["deps"] for name in ("analyze", "report"))
    # load() is the latest record; records() every one, oldest first
    assert registration.load(tmp_path)["run"] == 2
    assert registration.record_path(tmp_path) == registration.path_of(2) == Path("analysis/registration_2.json")
    assert [(str(path), r["run"]) for path, r in registration.records(tmp_path)] == [
        ("analysis/registration.json", 1), ("analysis/registration_2.json", 2)]
    assert registration.records(tmp_path)[0][1]["previous"] is None


def test_a_second_record_is_refused_on_the_same_day_or_over_uncommitted_verdicts(tmp_path, monkeypatch, capsys):
    from replication.cli.register import main as register_main
    committed_first_run(tmp_path, monkeypatch, capsys)
    claims = tmp_path / "reports" / "claims.json"
    committed = claims.read_text()
    claims.write_text(committed.replace('"reproduced"', '"contradicted"'))
    assert register_main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "reports/claims.json: uncommitted changes" in err
    assert not (tmp_path / "analysis" / "registration_2.json").exists()
    claims.write_text(committed)
    assert register_main([]) == 0
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "registration 2")
    dvc_yaml = (tmp_path / "dvc.yaml").read_text()
    assert register_main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "analysis/registration_2.json: registered today" in err
    assert not (tmp_path / "analysis" / "registration_3.json").exists()
    assert (tmp_path / "dvc.yaml").read_text() == dvc_yaml


SHARED_AMENDMENT = ("amendments:\n  late:\n    date: '2026-11-02'\n    what: a note\n    why: test\n"
                    "    post_registration: true\n    registration: {run}\n")


@pytest.mark.parametrize("form,run", [("inline", 1), ("inline", 2), ("ref", 1), ("ref", 2)])
def test_an_amendment_that_moves_no_verdict_labels_nothing_post_hoc_under_either_record(
        tmp_path, monkeypatch, capsys, form, run):
    """A note amended after registration 1 or 2 changes no rule of the claim: its verdict is the one
    the registered rule gives, so it is not post hoc (the amendment is still shown with the claim)."""
    registry = second_registered_world(tmp_path)
    text = registry.read_text()
    if form == "inline":
        amended = ("  amended: [{date: '2026-11-02', what: a note, why: test, previous_verdict: reproduced, "
                   f"post_registration: true, registration: {run}}}]\n")
    else:
        text = text.replace("claims:\n", SHARED_AMENDMENT.format(run=run) + "claims:\n")
        amended = "  amended: [{ref: late, previous_verdict: reproduced}]\n"
    registry.write_text(text.replace("  margin: 0.02\n", "  margin: 0.02\n" + amended))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err
    claim = judged_claims(tmp_path)[0]
    assert "post hoc" not in claim["labels"] and "frozen_verdict" not in claim
    assert [a["post_registration"] for a in claim["amended"]] == [True]


def test_a_claim_changed_after_the_second_record_needs_an_amendment_of_registration_2(tmp_path, monkeypatch, capsys):
    registry = second_registered_world(tmp_path)
    text = registry.read_text()
    amended = ("  amended: [{date: '2026-11-02', what: margin 0.02 -> 0.5, why: test, previous_verdict: reproduced, "
               "post_registration: true}]\n")                                  # registration 1's, by default
    registry.write_text(text.replace("  margin: 0.02\n", "  margin: 0.5\n" + amended))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and err.count("\n") == 1, err
    assert "claim a-beats-b: differs from its registered form" in err and "registration: 2" in err
    registry.write_text(text.replace("  margin: 0.02\n", "  margin: 0.5\n" + amended.replace("true}", "true, "
                                                                                             "registration: 2}")))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    claim = judged_claims(tmp_path)[0]
    assert status == 0 and claim["frozen_verdict"] == "reproduced" and "post hoc" in claim["labels"], err


def test_a_claim_withdrawn_under_the_first_record_does_not_withdraw_it_from_the_second(tmp_path, monkeypatch,
                                                                                        capsys):
    from test_registry import BOUND
    registry = second_registered_world(tmp_path)
    text = registry.read_text().replace(BOUND, "")
    withdraw = ("amendments:\n  drop-small-loss:\n    date: '2026-11-02'\n    what: withdrawn\n    why: test\n"
                "    post_registration: true\n    withdraws: [small-loss]\n")
    registry.write_text(text.replace("claims:\n", withdraw + "claims:\n"))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "claim small-loss: registered on" in err and "registration: 2" in err
    registry.write_text(text.replace("claims:\n", withdraw + "    registration: 2\nclaims:\n"))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err


def test_code_amendments_of_the_first_record_do_not_count_under_the_second(tmp_path, monkeypatch, capsys):
    from replication.judge import registration
    second_registered_world(tmp_path)
    first = registration.records(tmp_path)[0][1]
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    verdicts = tmp_path / "src" / "replication" / "judge" / "verdicts.py"
    verdicts.write_text(verdicts.read_text() + "\n# moved here\n")
    of_first = registration.amend_code(first, "moved", "test", "0" * 64, tmp_path)
    (tmp_path / registration.CODE_AMENDMENTS).write_text(json.dumps([of_first]))
    assert registration.load_code_amendments(tmp_path) == []
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "verdicts.py: differs from the registration of" in err and "code amended" not in err
    of_second = amendment(tmp_path, registration.load(tmp_path))
    (tmp_path / registration.CODE_AMENDMENTS).write_text(json.dumps([of_first, of_second]))
    assert [a["registration"] for a in registration.load_code_amendments(tmp_path)] == [of_second["registration"]]
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err


# ---------------------------------------------------------------- records anchored in git

def anchored_world(root):
    """registered_world committed in git before its results: the record and code first, then the
    results (results/pretrain, results/evaluate) in a later commit, as a registered run has them."""
    registered_world(root)
    results = root / "results"
    held = root.parent / f"{root.name}-results"
    shutil.move(results, held)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "registration")
    shutil.move(held, results)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the run")
    return root / "analysis" / "registration.json"


def refusal(root):
    """check_registered_code's one line in root, or None."""
    from replication.judge.registration import RegistrationError, check_registered_code
    try:
        check_registered_code(root)
    except RegistrationError as e:
        return str(e)
    return None


def test_a_record_committed_before_its_results_is_judged(tmp_path, monkeypatch, capsys):
    anchored_world(tmp_path)
    assert refusal(tmp_path) is None
    result = next((tmp_path / "results" / "pretrain").rglob("*.json"))
    result.write_text(result.read_text() + " ")          # rewritten since the last commit: a new result
    assert refusal(tmp_path) is None
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err


def test_a_record_committed_with_or_after_its_results_is_refused(tmp_path, monkeypatch, capsys):
    committed_first_run(tmp_path, monkeypatch, capsys)           # record and results in one commit
    said = refusal(tmp_path)
    assert said and said.startswith("results/") and "committed before analysis/registration.json" in said, said
    assert "make repro-stage STAGE=" in said
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and err.count("\n") == 1 and "committed before analysis/registration.json" in err, err


@pytest.mark.parametrize("edit,said", [
    ("untracked", "analysis/registration_2.json: not committed"),
    ("edited", "analysis/registration.json: differs from its committed version"),
    ("deleted", "analysis/registration.json: committed but missing"),
    ("amendment", "analysis/registration_amendments.json: not committed"),
    ("hand-edited and committed", "committed before analysis/registration.json"),
], ids=["untracked record", "edited record", "deleted record", "uncommitted amendment", "edited and committed"])
def test_a_record_not_anchored_in_git_stops_the_analysis_with_one_line(tmp_path, monkeypatch, capsys, edit, said):
    from replication.judge import registration
    record = anchored_world(tmp_path)
    if edit == "untracked":
        rules, claims = load_registry(tmp_path / "analysis" / "claims.yaml")[:2]
        record.write_text(json.dumps({**json.loads(record.read_text()), "date": "2026-11-01"}))
        git(tmp_path, "commit", "-qam", "backdated")
        registration.register(rules, claims, tmp_path)
    elif edit == "amendment":
        (tmp_path / registration.CODE_AMENDMENTS).write_text("[]")
    elif edit == "deleted":
        record.unlink()
    else:
        record.write_text(record.read_text().replace('"rules"', '"rules" ', 1))
        if edit == "hand-edited and committed":
            git(tmp_path, "commit", "-qam", "a record edited after the run")
    before = {p: p.read_bytes() for p in tmp_path.rglob("reports/*") if p.is_file()}
    assert said in (refusal(tmp_path) or ""), refusal(tmp_path)
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and err.count("\n") == 1 and said in err, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("reports/*") if p.is_file()} == before


def test_outside_a_git_work_tree_the_records_cannot_be_anchored_and_are_not_refused(tmp_path):
    registered_world(tmp_path)
    assert refusal(tmp_path) is None


def test_a_committed_amendment_edited_afterwards_stops_the_analysis(tmp_path, monkeypatch, capsys):
    """A code change with its sha256 edited into an earlier amendment, all committed: git's history
    shows the amendment changed, and it is refused; appending a new amendment is not."""
    from replication.judge import registration
    anchored_world(tmp_path)
    path = tmp_path / registration.CODE_AMENDMENTS
    record = registration.load(tmp_path)
    first = registration.amend_code(record, "moved", "test", "0" * 64, tmp_path, date="2026-12-03")
    path.write_text(json.dumps([first]))
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "a code amendment")
    assert refusal(tmp_path) is None
    path.write_text(json.dumps([first, {**first, "what": "moved again"}]))
    git(tmp_path, "commit", "-qam", "another, appended")
    assert refusal(tmp_path) is None
    edited = {**first, "sha256": {**first["sha256"], "params.yaml": "f" * 64}}
    path.write_text(json.dumps([edited, {**first, "what": "moved again"}]))
    git(tmp_path, "commit", "-qam", "the first amendment's hashes edited")
    said = refusal(tmp_path)
    assert said and said.startswith("analysis/registration_amendments.json: amendment 1 of the registration of"), said
    assert "never edited" in said
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and err.count("\n") == 1 and "amendment 1" in err, err


def test_a_shallow_clone_checks_the_records_state_but_not_the_order_it_cannot_see(tmp_path, monkeypatch, capsys):
    """A clone of depth 1 holds one commit: the record and the results in it, the order unseen; the
    analysis is not refused for it, while an edited record still is."""
    origin = tmp_path / "origin"
    origin.mkdir()
    anchored_world(origin)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    assert git(shallow, "rev-parse", "--is-shallow-repository") == "true"
    assert refusal(shallow) is None
    record = shallow / "analysis" / "registration.json"
    record.write_text(record.read_text().replace('"rules"', '"rules" ', 1))
    assert "differs from its committed version" in (refusal(shallow) or "")


# ---------------------------------------------------------------- provenance: a rule's move or the data's

STAGE_ONE = {"sha256": "1" * 64, "runs": 280, "stage_two_runs": 0}
STAGE_TWO = {"sha256": "2" * 64, "runs": 400, "stage_two_runs": 120}


def snapshots(first_results, second_results, earlier=None):
    """Two rule changes after a registration, each with the verdicts of the code it replaced: x and y
    inconclusive under the first, reproduced under the second."""
    first = {"date": "2026-12-05", "what": "rule A", "claims_json_sha256": "a" * 64,
             "frozen_verdicts": {"x": "inconclusive", "y": "inconclusive"}}
    second = {"date": "2026-12-06", "what": "rule B", "claims_json_sha256": "b" * 64,
              "frozen_verdicts": {"x": "reproduced", "y": "reproduced"}}
    if first_results:
        first["results"] = first_results
    second["results"] = second_results
    if earlier:
        second["earlier_results"] = earlier
    return [first, second]


@pytest.mark.parametrize("recorded", ["own", "established later"])
def test_a_verdict_moved_between_snapshots_on_different_results_is_the_datas_and_not_post_hoc(recorded):
    from replication.judge.judge import _provenance
    changes = snapshots(STAGE_ONE, STAGE_TWO) if recorded == "own" else \
        snapshots(None, STAGE_TWO, earlier={"a" * 64: STAGE_ONE})
    judged = [{"id": "x", "verdict": "reproduced", "labels": []}, {"id": "y", "verdict": "contradicted", "labels": []}]
    _provenance(judged, {}, {}, changes, changes, STAGE_TWO)
    x, y = judged
    # x: inconclusive on stage 1's results, reproduced on stage 2's, and no rule moved it since
    assert x["moved_by_data"] == [{"before": "inconclusive", "after": "reproduced",
                                   "by": "stage 2's registered seeds (280 to 400 training runs)"}]
    assert "post hoc" not in x["labels"] and "frozen_verdict" not in x and "rules_amended" not in x
    # y: moved by the data too, then by rule B on the same results: post hoc beside the data's verdict
    assert y["moved_by_data"] and y["rules_amended"] == [{"date": "2026-12-06", "what": "rule B"}]
    assert y["frozen_verdict"] == "reproduced" and "post hoc" in y["labels"]


def test_a_verdict_moved_between_snapshots_on_the_same_results_is_a_rules():
    from replication.judge.judge import _provenance
    changes = snapshots(STAGE_TWO, STAGE_TWO)
    judged = [{"id": "x", "verdict": "reproduced", "labels": []}]
    _provenance(judged, {}, {}, changes, changes, STAGE_TWO)
    assert judged[0]["rules_amended"] == [{"date": "2026-12-05", "what": "rule A"}]
    assert judged[0]["frozen_verdict"] == "inconclusive" and "post hoc" in judged[0]["labels"]
    assert "moved_by_data" not in judged[0]


def test_the_results_digest_of_the_tree_is_the_committed_one_where_results_are_clean():
    """registration.results_snapshot (files in the tree) and results_snapshot_at (git's tree) agree,
    so a snapshot recorded now compares with one established from git's history."""
    from replication.judge.registration import git, in_git, results_snapshot, results_snapshot_at
    if not in_git(ROOT) or git("status", "--porcelain", "--", "results", root=ROOT).strip():
        pytest.skip("not a clone, or results/ has uncommitted changes")
    assert results_snapshot(ROOT) == results_snapshot_at("HEAD", ROOT)
