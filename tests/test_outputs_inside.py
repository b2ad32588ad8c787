"""Nothing is read or written through a symlink out of the repository: reports/plots, resolved/ or a
results file linked to a folder or file outside is refused in one line naming the link, with a
non-zero exit, before anything is read or written; the outside files stay as they were."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replication.io import OutsideError, check_tree, read_json, stage_outputs, write_json

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository root (the working directory) and a folder outside it holding a file of its own."""
    (tmp_path / "repo").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    write_json(outside / "other.json", {"mine": True})
    monkeypatch.chdir(tmp_path / "repo")
    return tmp_path / "repo", outside


def contents(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_write_through_a_linked_folder_is_refused_and_names_the_link(repo):
    root, outside = repo
    (root / "reports").mkdir()
    (root / "reports" / "plots").symlink_to(outside)
    with pytest.raises(OutsideError) as e:
        write_json("reports/plots/claim.json", {})
    assert str(e.value).startswith("reports/plots: a symlink out of the repository") and "\n" not in str(e.value)
    assert contents(outside) == {"other.json": b'{\n  "mine": true\n}\n'}


def test_a_stage_with_a_linked_pruned_folder_stops_first_and_deletes_nothing(repo, capsys):
    """The prune would have deleted the outside folder's other files."""
    root, outside = repo
    (root / "reports").mkdir()
    (root / "reports" / "plots").symlink_to(outside)
    before = contents(outside)
    with pytest.raises(SystemExit) as stop:
        with stage_outputs("reports/claims.json", prune=["reports/plots"]):
            raise AssertionError("the body must not run")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and err.startswith("error: reports/plots: a symlink"), err
    assert contents(outside) == before and not (root / "reports" / "claims.json").exists()


def test_a_results_file_linked_to_an_outside_json_is_not_read(repo):
    root, outside = repo
    (root / "results" / "examples").mkdir(parents=True)
    (root / "results" / "examples" / "toy2d.json").symlink_to(outside / "other.json")
    with pytest.raises(OutsideError, match="results/examples/toy2d.json: a symlink out of the repository"):
        read_json("results/examples/toy2d.json")
    with pytest.raises(OutsideError):
        check_tree()


def test_links_that_stay_inside_and_paths_outside_to_begin_with_are_allowed(repo):
    root, outside = repo
    (root / "reports").mkdir()
    (root / "elsewhere").mkdir()
    (root / "reports" / "plots").symlink_to(root / "elsewhere")
    write_json("reports/plots/claim.json", {"ok": 1})
    check_tree()
    write_json(outside / "given.json", {"ok": 1})          # the caller's own path (a test's temp folder)
    assert read_json(root / "elsewhere" / "claim.json") == {"ok": 1}


def run(args, cwd):
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("linked", ["params.yaml", "resolved"])
@pytest.mark.parametrize("command", [["-m", "replication.io"], [str(ROOT / "experiments" / "resolve.py")],
                                     ["-m", "replication", "exp", "--set=evaluate.probe_steps=1000"]],
                         ids=["make's check", "resolve stage", "make exp"])
def test_an_entry_point_refuses_a_linked_params_or_resolved_in_one_line(repo, linked, command):
    root, outside = repo
    (outside / "params.yaml").write_bytes((ROOT / "params.yaml").read_bytes())
    (outside / "resolved").mkdir()
    for name in ("params.yaml", "resolved"):
        if name == linked:
            (root / name).symlink_to(outside / name)
        elif name == "params.yaml":
            (root / name).write_bytes((ROOT / name).read_bytes())
    before = {p: p.read_bytes() for p in sorted(outside.rglob("*")) if p.is_file()}
    result = run(command, root)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr[-2000:]
    assert result.stderr.startswith(f"error: {linked}: a symlink out of the repository"), result.stderr
    assert {p: p.read_bytes() for p in sorted(outside.rglob("*")) if p.is_file()} == before
