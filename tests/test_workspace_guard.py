"""Experiments that cannot damage the workspace: `make exp` on a clone without checkpoints retrains
nothing unasked and changes nothing; `make repro` says truly what it ran; a stage that fails (the
wrong interpreter) keeps its committed outputs, since DVC no longer deletes them first."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from test_dvc_user import clone_of_this_tree, environment, run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    return clone_of_this_tree(tmp_path_factory.mktemp("clone"))


def copy_of(clone, dest):
    shutil.copytree(clone, dest, symlinks=True)
    return dest


def git_status(tree):
    return run(["git", "status", "--porcelain"], tree).stdout


def test_make_exp_on_a_clone_without_checkpoints_retrains_nothing_and_changes_nothing(clone, tmp_path):
    tree = copy_of(clone, tmp_path / "exp")
    result = run(["make", "-s", "-o", ".venv/.installed", "exp", "SET=evaluate.probe_steps=1000"], tree)
    said = [line for line in result.stdout.splitlines() if "would retrain" in line]
    assert result.returncode != 0 and len(said) == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert "pretrain@head" in said[0] and "RETRAIN=1" in said[0] and "nothing was run" in said[0]
    assert "Running stage" not in result.stdout + result.stderr
    assert git_status(tree) == ""                     # params.yaml, resolved/, dvc.lock, results/ as committed


def test_make_exp_with_a_bad_value_stops_with_its_line_and_changes_nothing(clone, tmp_path):
    tree = copy_of(clone, tmp_path / "bad")
    result = run(["make", "-s", "-o", ".venv/.installed", "exp", "SET=evaluate.probe_steps=-1"], tree)
    assert result.returncode != 0 and "error: params.yaml: evaluate.probe_steps" in result.stderr, result.stderr
    assert git_status(tree) == ""


def test_make_repro_says_that_resolve_ran_when_it_did(clone, tmp_path):
    tree = copy_of(clone, tmp_path / "edited")
    params = tree / "params.yaml"
    params.write_text(params.read_text().replace("  probe_steps: 300", "  probe_steps: 301", 1))
    result = run(["make", "-s", "-o", ".venv/.installed", "repro"], tree)
    assert result.returncode != 0
    assert "Only `resolve` ran" in result.stdout and "Nothing was run" not in result.stdout, result.stdout[-2000:]
    assert "RETRAIN=1" in result.stdout


def wrong_interpreter(folder):
    """A `python` first on PATH without the project's packages (no site-packages, PYTHONPATH ignored), as a
    shell without the venv activated finds."""
    folder.mkdir()
    python = folder / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -E -s -S "$@"\n')
    python.chmod(0o755)
    return folder


@pytest.mark.parametrize("stage", ["ntxent_example", "evaluate@head", "analyze"])
def test_a_stage_run_with_the_wrong_interpreter_keeps_its_committed_outputs(clone, tmp_path, stage):
    tree = copy_of(clone, tmp_path / "tree")
    bin_dir = wrong_interpreter(tmp_path / "bin")
    path = f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}"     # dvc itself from the venv
    result = subprocess.run(["dvc", "repro", "-f", "-s", stage], cwd=tree, env={**environment(tree), "PATH": path},
                            capture_output=True, text=True)
    assert result.returncode != 0, result.stdout[-2000:]
    said = [line for line in result.stderr.splitlines() if "is not the project's interpreter" in line]
    assert len(said) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "lacks torch" in said[0] and "source .venv/bin/activate" in said[0]
    assert git_status(tree) == "", git_status(tree)      # nothing deleted: the outputs are persistent


def test_every_committed_result_is_a_persistent_output():
    """DVC deletes an output before its stage's command runs unless it is persistent; a result
    kept in git (cache: false) would be lost to a stage that then fails."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    outs = [out for stage in stages.values() for key in ("outs", "metrics")
            for out in stage.get("do", stage).get(key, []) if isinstance(out, dict)]
    committed = {path: spec for out in outs for path, spec in out.items() if spec.get("cache") is False}
    assert committed and all(spec.get("persist") for spec in committed.values()), \
        [path for path, spec in committed.items() if not spec.get("persist")]


def make_status(tree):
    """`make status`: (exit status, its lines after params.yaml's check, stderr)."""
    result = run(["make", "-s", "-o", ".venv/.installed", "status"], tree)
    return result.returncode, [line for line in result.stdout.splitlines() if not line.startswith("params ok")], \
        result.stderr


def test_make_status_says_in_a_few_lines_what_is_truly_stale(clone, tmp_path):
    status, lines, err = make_status(clone)
    assert status == 0 and len(lines) <= 3, lines + [err]
    from replication.cli.repro import registered_run_in_progress
    expected = "Registered run " if registered_run_in_progress(clone) else "Current:"   # mid-run: its progress
    assert lines[0].startswith(expected) and not any("not in cache" in line for line in lines), lines
    tree = copy_of(clone, tmp_path / "edited")
    params = tree / "params.yaml"
    params.write_text(params.read_text().replace("  probe_steps: 300", "  probe_steps: 301", 1))
    status, lines, err = make_status(tree)
    assert status == 0 and len(lines) <= 3 and lines[0].startswith("Stale") and "resolve" in lines[0], lines
    assert git_status(tree) == " M params.yaml\n"         # it ran nothing


def test_make_status_refuses_an_alias_bomb_before_dvc_reads_it(clone, tmp_path):
    """DVC's own reader of params.yaml expands the aliases without end (`dvc status` hangs)."""
    from test_hostile_input import params_with_bomb
    tree = copy_of(clone, tmp_path / "bomb")
    (tree / "params.yaml").write_text(params_with_bomb())
    result = subprocess.run(["make", "-s", "-o", ".venv/.installed", "status"], cwd=tree, env=environment(tree),
                            capture_output=True, text=True, timeout=120)     # a hang guard
    assert result.returncode != 0 and "error: params.yaml: its aliases" in result.stderr, result.stderr[-2000:]
