"""The report's registration block and provenance: the registration record's date, sha256s, whether
the verdicts were judged under it, the commit that added it and the post-registration amendments
with their verdicts under the registered rule; each stage's CPU and precision."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replication.report import notebook as render, page
from replication.io import write_json
from replication.cli import timing

from test_report_deviations import entry, resolved, write_deviations
from helpers import a_judged_claim

ROOT = Path(__file__).resolve().parents[1]

RECORD = {"date": "2026-12-02", "sha256": {"params.yaml": "a1" * 32, "src/replication/judge/judge.py": "b2" * 32},
          "rules_sha256": "c3" * 32, "rules": {}, "claims": {}}


def claim(cid, verdict, **extra):
    return {"id": cid, "verdict": verdict, "statement": "s", "section": "moco", "origin": "literature", "labels": [],
            **extra}


def test_the_registration_block_shows_the_record_the_match_the_commit_and_the_late_amendments():
    late = {"date": "2026-12-05", "what": "margin 0.02 -> 0.05", "why": "a typo", "previous_verdict": "reproduced",
            "post_registration": True}
    claims = [claim("kept", "reproduced"),
              claim("changed", "no meaningful effect", amended=[late], frozen_verdict="reproduced", labels=["post hoc"]),
              claim("added", "inconclusive", amended=[{**late, "what": "a new claim"}])]
    block = page.registration_section(RECORD, "2026-12-02", ("f00dcafe" * 5, "2026-12-02"), claims)
    assert "Rules registered on 2026-12-02" in block and f"<code>{'f00dcafe' * 5}</code> of 2026-12-02" in block
    assert all(f"<code>{digest}</code>" in block for digest in [*RECORD["sha256"].values(), RECORD["rules_sha256"]])
    assert "<code>src/replication/judge/judge.py</code>" in block
    assert "Judged files match the registration: yes" in block
    rows = block.split("<table class='post-registration'>")[1].split("<tr>")[2:]
    assert len(rows) == 2 and "#claim-changed" in rows[0] and "#claim-added" in rows[1]
    assert "margin 0.02 -&gt; 0.05" in rows[0] and "a typo" in rows[0]
    assert rows[0].count("</span>") == 2 and "◆ no meaningful effect" in rows[0] and "● reproduced" in rows[0]
    assert "not registered: a claim new since" in rows[1]
    assert "#claim-kept" not in block and "1 verdicts differ (post hoc)" in block


def test_verdicts_judged_before_or_under_another_registration_do_not_match():
    before = page.registration_section(RECORD, None, ("unknown", None), [])
    assert "match the registration: no: reports/claims.json was judged before this registration" in before
    assert "No rule has been amended since the registration" in before and "unknown" in before
    other = page.registration_section(RECORD, "2026-11-01", ("unknown", None), [])
    assert "no: reports/claims.json was judged under the registration of 2026-11-01" in other


def test_the_second_record_names_its_run_and_the_previous_run_and_counts_only_its_own_amendments():
    second = {**RECORD, "run": 2, "previous": {"record": "analysis/registration.json", "date": "2026-12-01",
                                               "commit": "c0ffee" * 6 + "c0ff", "claims_json_sha256": "d4" * 32}}
    of_first = {"date": "2026-12-01", "what": "w", "why": "y", "previous_verdict": "reproduced",
                "post_registration": True}
    claims = [claim("old", "reproduced", amended=[of_first]),
              claim("new", "reproduced", amended=[{**of_first, "registration": 2}])]
    block = page.registration_section(second, "2026-12-02", ("f00dcafe" * 5, "2026-12-02"), claims)
    assert "for registered run 2 (analysis/registration_2.json, added by commit" in block
    assert (f"Run 1 was registered by analysis/registration.json on 2026-12-01; its verdicts are those of the "
            f"report committed at <code>{'c0ffee' * 6 + 'c0ff'}</code>") in block
    assert "#claim-new" in block and "#claim-old" not in block
    first = page.registration_section(RECORD, "2026-12-02", ("f00dcafe" * 5, "2026-12-02"), claims)
    assert "for registered run 1 (analysis/registration.json" in first and "Run 0" not in first
    assert "#claim-old" in first and "#claim-new" not in first


def test_without_a_record_the_page_says_the_verdicts_are_not_judged_by_registered_rules():
    block = page.registration_section(None, None, ("unknown", None), [claim("a", "reproduced")])
    assert "not yet judged by registered rules" in block and "<table" not in block


def git(folder, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                   capture_output=True)


def test_the_commit_that_added_the_record_is_read_from_git(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert render.git_last_commit("analysis/registration.json") == ("unknown", None)      # not a repository
    git(tmp_path, "init", "-q")
    write_json(tmp_path / "analysis" / "registration.json", RECORD)
    assert render.git_last_commit("analysis/registration.json") == ("not committed", None)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "register")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    sha, day = render.git_last_commit("analysis/registration.json")
    assert sha == head and len(day) == 10
    (tmp_path / "analysis" / "registration.json").write_text("{}")                      # changed since
    assert render.git_last_commit("analysis/registration.json") == ("not committed", None)


def test_the_stage_table_shows_each_stages_cpu_and_precision():
    table = page.stage_table({"pretrain@b": {"seconds": 2.0, "seconds_in_dvc": 0.1, "cpu": "Xeon", "precision": "bf16",
                                             "date": "2026-12-01"},
                              "analyze": {"seconds": 1.0, "seconds_in_dvc": 0.1, "cpu": "Xeon <i>", "date": "d"}})
    rows = table.split("<tr>")[2:]
    assert rows[0].startswith("<td>analyze</td>") and "<td>not recorded</td>" in rows[0] and "Xeon &lt;i&gt;" in rows[0]
    assert "<td>Xeon</td><td>bf16</td>" in rows[1]


@pytest.mark.parametrize("stage, precision, expected", [
    ("pretrain@batch", "bf16", "bf16"),                  # a stage that trains: its resolved precision
    ("pretrain@batch", "fp32", "fp32"),
    ("determinism", "bf16", "bf16"),
    ("evaluate@batch", "bf16", "fp32"),                  # evaluation never autocasts
    ("ntxent_example", "bf16", "fp32"),
])
def test_a_stage_records_bf16_only_where_training_autocasts(tmp_path, stage, precision, expected):
    execution = {"execution": {"threads": 1, "device": "cpu", "precision": precision}}
    write_json(tmp_path / "pretrain" / "batch.json", execution)
    write_json(tmp_path / "determinism.json", execution)
    assert timing.stage_precision(stage, resolved=tmp_path) == expected


def test_each_recorded_stage_carries_its_precision(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_json(tmp_path / "resolved" / "pretrain" / "batch.json", {"execution": {"device": "cpu", "precision": "fp32"}})
    timing.record_stages({"pretrain@batch": 0.0, "analyze": 5.0}, 6.0, 1.0, 6.0, "Xeon")
    record = json.loads((tmp_path / timing.STAGE_RECORD).read_text())
    assert record["pretrain@batch"]["precision"] == "fp32" and record["analyze"]["precision"] == "fp32"
    assert record["pretrain@batch"]["seconds"] == 5.0 and record["pretrain@batch"]["cpu"] == "Xeon"
    assert record["analyze"]["run"] is None                               # nothing registered yet


def test_each_recorded_stage_names_the_registered_run_it_belongs_to(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "analysis").mkdir()
    for name in ("registration.json", "registration_2.json"):
        (tmp_path / "analysis" / name).write_text((ROOT / "analysis" / name).read_text())
    timing.record_stages({"analyze": 0.0}, 6.0, 1.0, 6.0, "Xeon")
    assert json.loads((tmp_path / timing.STAGE_RECORD).read_text())["analyze"]["run"] == 2


def test_an_unreadable_record_stops_the_report_stage_with_one_line(tmp_path):
    write_json(tmp_path / "reports" / "claims.json", [a_judged_claim(id="a-claim", verdict="reproduced")])
    resolved(tmp_path)
    (tmp_path / "analysis").mkdir()
    write_deviations(tmp_path / "analysis", [entry()])
    (tmp_path / "analysis" / "levels.yaml").write_text((ROOT / "analysis" / "levels.yaml").read_text())
    (tmp_path / "analysis" / "registration.json").write_text('{"date": ')
    (tmp_path / "experiments").mkdir()
    for script in ("render_report.py", "_interpreter.py"):      # the stage and its interpreter check
        (tmp_path / "experiments" / script).write_text((ROOT / "experiments" / script).read_text())
    result = subprocess.run([sys.executable, "experiments/render_report.py"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: analysis/registration.json: unreadable")
    assert not (tmp_path / "reports" / "report.html").exists()


def test_readme_gives_times_measured_on_two_cpus_cpu_by_cpu_never_pooled(tmp_path, monkeypatch):
    from replication.cli import readme
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(readme, "_stage_names", lambda: ["pretrain@a", "pretrain@b", "evaluate@a"])
    stage = {"seconds_in_dvc": 6.0, "precision": "fp32", "run": 3, "date": "2026-12-05"}
    write_json(tmp_path / "reports" / "stage_times.json",
               {"pretrain@a": {**stage, "seconds": 600.0, "cpu": "AMD EPYC"},
                "pretrain@b": {**stage, "seconds": 1200.0, "cpu": "Intel Xeon"},
                "evaluate@a": {**stage, "seconds": 300.0, "cpu": "AMD EPYC"}})
    config = {"dataset": "glyphs100", "tau": 0.2, "head": "mlp", "steps": 2400, "batch": 128, "ladder": [1200, 2400]}
    for seed, (cpu, wall) in enumerate([("AMD EPYC", 400.0), ("AMD EPYC", 500.0), ("Intel Xeon", 300.0)]):
        write_json(tmp_path / "results" / "pretrain" / "s" / "simclr" / f"seed_{seed}.json",
                   {"config": config, "cpu": cpu, "wall_s": wall, "steps_done": 2400})
    monkeypatch.setattr(readme, "headroom", lambda *args: [])
    lines = readme.figures_block().splitlines()
    assert ("35.0 minutes summed over 3 of 3 stages (15.0 minutes (n = 2) on AMD EPYC; 20.0 minutes (n = 1) on "
            "Intel Xeon; training in fp32") in lines[0], lines[0]
    assert lines[1] == ("- One such run (pretraining on to its last rung, 2400 steps, one torch thread): 450 s "
                        "(mean, n = 2) on AMD EPYC; 300 s (mean, n = 1) on Intel Xeon."), lines[1]
