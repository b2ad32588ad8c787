"""Hostile and huge input is refused at once: a YAML alias bomb, counts that would train for years or
fail to allocate, and a disk that is full or a folder that may not be written. Each gives one line
naming the file or key and what to do, a non-zero exit, and every old file as it was."""
import errno
import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from replication.io import ExpansionError, load_yaml, remove_stray_tmp, write_json
from test_registry import run_analyze, write_world

ROOT = Path(__file__).resolve().parents[1]
GOOD = (ROOT / "params.yaml").read_text()

# "Billion laughs": nine lines of nine aliases each stand for 9^9 (387 million) strings.
BOMB = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
               for prev, name in zip("abcdefgh", "bcdefghi"))
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + BOMB


def test_an_alias_bomb_is_refused_by_the_loader():
    with pytest.raises(ExpansionError, match="aliases"):
        load_yaml(BOMB)


def test_the_project_files_stay_far_under_the_loaders_cap():
    """params.yaml's anchors (&ladder, &moco) and the registry load as they are."""
    for path in ("params.yaml", "analysis/claims.yaml", "analysis/deviations.yaml"):
        assert load_yaml((ROOT / path).read_text()) == yaml.safe_load((ROOT / path).read_text())


def test_an_anchor_inside_itself_is_refused():
    with pytest.raises(ExpansionError):
        load_yaml("a: &a [1, *a]\n")


def params_with_bomb():
    """params.yaml with the bomb's anchors first and a condition's label the 9^9 strings: checking
    that label once quoted the whole expanded value."""
    text = GOOD.replace('simclr_head_none: {label: "no head",', 'simclr_head_none: {label: *i,', 1)
    assert text != GOOD
    return BOMB + text


def project(tmp_path, params_text):
    (tmp_path / "params.yaml").write_text(params_text)
    shutil.copytree(ROOT / "resolved", tmp_path / "resolved")
    return tmp_path


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", [["experiments/resolve.py"], ["-m", "replication.run.config", "params.yaml"]],
                         ids=["resolve stage", "make repro's check"])
def test_an_alias_bomb_in_params_stops_with_one_line(tmp_path, command):
    folder = project(tmp_path, params_with_bomb())
    before = snapshot(folder)
    args = [sys.executable, *(str(ROOT / c) if c.endswith(".py") else c for c in command)]
    result = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=120)   # a hang guard
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr[-500:]
    assert result.stderr.startswith("error: params.yaml: ") and "aliases" in result.stderr
    assert snapshot(folder) == before


def edited(path, value, text=GOOD):
    raw = load_yaml(text)
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node[key]
    node[last] = value
    return raw


# (case, key, value, ladders on): each would train for years or fail to allocate minutes later
HUGE = [
    ("1e12 steps, ladders off", "pretrain.defaults.steps", 10 ** 12, False),
    ("1e12 steps, ladders on", "pretrain.defaults.steps", 10 ** 12, True),
    ("a batch of 10^9", "pretrain.defaults.batch", 10 ** 9, True),
    ("1e12 training images", "data.glyphs100.n_train", 10 ** 12, True),
    ("1e12 test images", "data.shapes.n_test", 10 ** 12, True),
    ("a queue of 10^12 keys", "pretrain.defaults.queue", 10 ** 12, True),
    ("10^12 probe steps", "evaluate.probe_steps", 10 ** 12, True),
    ("10^12 tiny SimCLR steps", "examples.tiny_simclr.steps", 10 ** 12, True),
    ("a toy batch of 10^9", "examples.toy2d.batch", 10 ** 9, True),
    ("10^9 BatchNorm batches", "control.bn_batches", 10 ** 9, True),
    ("a ladder rung at 10^12", "pretrain.studies.head.simclr_head_linear.ladder", [1200, 10 ** 12], True),
]


@pytest.mark.parametrize("key,value,ladders", [c[1:] for c in HUGE], ids=[c[0] for c in HUGE])
def test_huge_counts_are_refused_in_one_short_line(key, value, ladders):
    from replication.run.config import ParamsError, parse_params
    raw = edited(key, value)
    raw["pretrain"]["ladders"] = ladders
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    line = str(e.value)
    assert key.rsplit(".", 1)[-1] in line and "less than or equal" in line, line
    assert "\n" not in line and len(line) < 300, line


def test_every_profile_passes_the_bounds():
    from replication.run.config import parse_params, resolve
    raw = load_yaml(GOOD)
    for name in raw["profiles"]:
        resolve(parse_params({**raw, "profile": name}))


def test_a_rejected_value_is_quoted_as_a_short_excerpt():
    from replication.run.config import ParamsError, parse_params
    raw = edited("pretrain.studies.head.simclr_head_none.label", list(range(100_000)))
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    assert "simclr_head_none.label" in str(e.value) and len(str(e.value)) < 250, str(e.value)[:300]


# ---------------------------------------------------------------- disk full, no permission

FAILURES = {"disk full": OSError(errno.ENOSPC, "No space left on device"),
            "no permission": PermissionError(errno.EACCES, "Permission denied")}


def failing(error):
    def replace(src, dst):
        raise error
    return replace


@pytest.mark.parametrize("case", FAILURES)
def test_a_failed_write_keeps_the_old_file_and_names_it(tmp_path, monkeypatch, case):
    target = tmp_path / "out.json"
    target.write_text('{"old": true}\n')
    monkeypatch.setattr(os, "replace", failing(FAILURES[case]))
    with pytest.raises(OSError) as e:
        write_json(target, {"new": True})
    assert str(target) in str(e.value) and "\n" not in str(e.value)
    assert ("disk space" if case == "disk full" else "writable") in str(e.value)
    assert target.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]       # no temporary file left


@pytest.mark.parametrize("case", FAILURES)
def test_analyze_on_a_full_disk_stops_with_one_line_and_keeps_the_reports(tmp_path, monkeypatch, capsys, case):
    write_world(tmp_path)
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err
    before = snapshot(tmp_path)
    monkeypatch.setattr(os, "replace", failing(FAILURES[case]))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 1 and err.count("\n") == 1, err
    assert err.startswith("error: reports/claims.json: cannot write"), err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("case", FAILURES)
def test_resolve_on_a_full_disk_stops_with_one_line_and_keeps_resolved(tmp_path, monkeypatch, capsys, case):
    folder = project(tmp_path, GOOD.replace("probe_steps: 300", "probe_steps: 301"))
    before = snapshot(folder)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(os, "replace", failing(FAILURES[case]))
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(str(ROOT / "experiments" / "resolve.py"), run_name="__main__")
    err = capsys.readouterr().err
    assert stop.value.code == 1 and err.count("\n") == 1, err
    assert err.startswith("error: resolved/") and "cannot write" in err, err
    assert snapshot(folder) == before


def test_the_report_stage_removes_stray_temporary_files_of_a_killed_write(tmp_path, monkeypatch):
    """analyze and report write into reports/; a write killed there leaves .claims.json.*.tmp."""
    write_world(tmp_path)
    stray = tmp_path / "reports" / ".claims.json.x1y2.tmp"
    stray.parent.mkdir()
    stray.write_text("half")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(ROOT / "experiments" / "analyze.py"), run_name="__main__")
    assert not stray.exists() and (tmp_path / "reports" / "claims.json").exists()


def test_a_file_output_removes_only_its_own_stray_files(tmp_path):
    (tmp_path / ".determinism.json.ab.tmp").write_text("half")
    (tmp_path / "pretrain").mkdir()
    (tmp_path / "pretrain" / ".seed_0.json.cd.tmp").write_text("another stage's, mid-write")
    assert remove_stray_tmp(tmp_path / "determinism.json") == 1
    assert (tmp_path / "pretrain" / ".seed_0.json.cd.tmp").exists()


def test_outputs_written_together_are_all_new_or_all_old(tmp_path):
    """stage_outputs(together=True), as analyze uses it: a body that fails after writing some of its
    files leaves every old file, with no temporary left; a body that succeeds replaces them all."""
    from replication.io import stage_outputs
    old = {name: tmp_path / name for name in ("claims.json", "summary.json")}
    for path in old.values():
        write_json(path, {"run": "old"})
    with pytest.raises(RuntimeError):
        with stage_outputs(tmp_path, together=True):
            write_json(old["claims.json"], {"run": "new"})
            assert json.loads(old["claims.json"].read_text()) == {"run": "old"}    # not yet in place
            raise RuntimeError("killed between the two files")
    assert {p.name: json.loads(p.read_text())["run"] for p in old.values()} == {"claims.json": "old", "summary.json": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.json", "summary.json"]
    with stage_outputs(tmp_path, together=True):
        for path in old.values():
            write_json(path, {"run": "new"})
    assert {json.loads(p.read_text())["run"] for p in old.values()} == {"new"}
