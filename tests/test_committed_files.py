"""Every number read from a committed file has a physical range, and every file DVC or a tool reads is
checked first (issue 75, items 1, 4 and 5). make's check (src/replication/cli/check.py) refuses, in one line naming
the file and the key, with a non-zero exit and every file as it was: reports/stage_times.json
truncated, with a byte-order mark, a string, NaN or a negative time; a training record's negative
wall_s or steps_done; a truncated results/determinism.json, a NaN in an example's record;
analysis/stage_two.yaml with an alias bomb, oversized, of the wrong type or with a name that is not
a name; README.md, docs/ or dvc.lock a symlink out of the repository. params.yaml's every float has bounds,
a profile cannot set `profile:`, and device: cuda needs a GPU."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from replication.run.config import ParamsError, check_device, parse_params
from test_hostile_input import BOMB

ROOT = Path(__file__).resolve().parents[1]
GOOD = yaml.safe_load((ROOT / "params.yaml").read_text())
TIMES = "reports/stage_times.json"
TRAINED = "results/pretrain/head/simclr_head_linear/seed_0.json"
COPIED = ("params.yaml", "analysis/stage_two.yaml", TIMES, TRAINED, "results/determinism.json",
          "results/examples/ntxent_numpy.json")


# ---------------------------------------------------------------- params.yaml's floats

def floats(value, path=()):
    """(path, value) of every float, or list of floats, in params.yaml outside its profiles and studies
    (a condition's overrides are checked by the same fields as pretrain.defaults)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if path + (key,) not in (("profiles",), ("pretrain", "studies")):
                yield from floats(item, path + (key,))
    elif isinstance(value, float) or (isinstance(value, list) and value and all(isinstance(v, float) for v in value)):
        yield path, value


FLOATS = [path for path, _ in floats(GOOD)]
TEMPERATURES = [path for path in FLOATS if path[-1] in ("tau", "taus", "loss_tau", "wknn_t")]


def with_value(path, value):
    raw = json.loads(json.dumps(GOOD))
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = [value] * len(node[path[-1]]) if isinstance(node[path[-1]], list) else value
    return raw


def refused(raw):
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    line = str(e.value)
    assert "\n" not in line and len(line) < 300, line
    return line


@pytest.mark.parametrize("value", [1e300, -1e300])
@pytest.mark.parametrize("path", FLOATS, ids=[".".join(p) for p in FLOATS])
def test_every_float_parameter_has_a_range(path, value):
    assert path[-1] in refused(with_value(path, value))


@pytest.mark.parametrize("path", TEMPERATURES, ids=[".".join(p) for p in TEMPERATURES])
def test_a_temperature_too_small_for_float64_is_refused(path):
    assert path[-1] in refused(with_value(path, 1e-300))


def test_the_temperatures_cover_the_ones_that_need_a_floor():
    assert {p[-1] for p in TEMPERATURES} == {"tau", "taus", "loss_tau", "wknn_t"} and len(TEMPERATURES) >= 7


def test_a_profile_that_chooses_a_profile_is_refused():
    raw = json.loads(json.dumps(GOOD))
    raw["profiles"]["smoke"] = {**raw["profiles"]["smoke"], "profile": "default"}
    assert "profiles.smoke.profile: a profile cannot choose" in refused({**raw, "profile": "smoke"})
    assert "profiles.smoke.profile" in refused(raw)          # an inactive one too


def test_device_cuda_without_a_gpu_is_one_line():
    params = parse_params(with_value(("device",), "cuda"))
    with pytest.raises(ParamsError, match=r"params\.yaml: device: cuda, but torch sees no CUDA device"):
        check_device(params, available=False)
    check_device(params, available=True)
    check_device(parse_params(GOOD), available=False)       # auto: the CPU where there is no GPU


# ---------------------------------------------------------------- make's check of the committed files

@pytest.fixture
def tree(tmp_path):
    """The files make's check reads, copied from this checkout."""
    for name in COPIED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    return tmp_path


def files(tree):
    return {p: p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def check(tree):
    """`python -m replication check` (make's CHECK) in `tree`: (exit status, stdout, stderr)."""
    result = subprocess.run([sys.executable, "-m", "replication", "check"], cwd=tree, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}, timeout=60)
    return result.returncode, result.stdout, result.stderr


def edit_json(tree, path, change):
    record = json.loads((tree / path).read_text())
    change(record)
    (tree / path).write_text(json.dumps(record, indent=2))


def record(change):
    """An edit of a file (tree, path) that changes its JSON value."""
    return lambda tree, path: edit_json(tree, path, change)


def set_seconds(value):
    return record(lambda times: times["analyze"].update(seconds=value))


def text(content):
    """An edit of a file (tree, path) that replaces its text by content(its text)."""
    return lambda tree, path: (tree / path).write_text(content((tree / path).read_text()))


CASES = [  # (case, file, edit, said)
    ("negative seconds", TIMES, set_seconds(-5.0), "analyze.seconds: Input should be greater than or equal to 0"),
    ("seconds as text", TIMES, set_seconds("22"), "analyze.seconds: Input should be a valid number"),
    ("more in DVC than in all", TIMES, set_seconds(1.0), "seconds_in_dvc (4.0) must not exceed seconds"),
    ("seconds a year", TIMES, set_seconds(3.2e7), "analyze.seconds: Input should be less than or equal"),
    ("NaN seconds", TIMES, text(lambda old: old.replace('"seconds": 22.1', '"seconds": NaN')),
     "NaN is not a number JSON allows"),
    ("truncated", TIMES, text(lambda old: old[:500]), "not valid JSON at line"),
    ("a byte-order mark", TIMES, text(lambda old: "\ufeff" + old), "starts with a byte-order mark"),
    ("negative wall_s", TRAINED, record(lambda r: r.update(wall_s=-1.0)), "wall_s: Input should be greater than or equal to 0"),
    ("negative steps_done", TRAINED, record(lambda r: r.update(steps_done=-100)), "steps_done: Input should be greater"),
    ("truncated determinism", "results/determinism.json", text(lambda old: old[:300]),
     "not valid JSON at line"),
    ("NaN loss in an example", "results/examples/ntxent_numpy.json",
     text(lambda old: '{"loss": NaN}'), "NaN is not a number JSON allows"),
]


@pytest.mark.parametrize("path,change,said", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_damaged_committed_file_stops_make_in_one_line(tree, path, change, said):
    change(tree, path)
    before = files(tree)
    status, _, err = check(tree)
    assert status != 0 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"error: {path}: ") and said in err and "git checkout -- " + path in err, err
    assert files(tree) == before


def test_the_committed_files_pass(tree):
    status, out, err = check(tree)
    assert status == 0 and out.startswith("params ok") and err == "", err


def test_the_tools_read_the_times_through_the_check(tree, monkeypatch):
    """make status's times and README's figures come from the checked reader, not json.loads."""
    from replication.committed import FileError, read_stage_times
    set_seconds(-5.0)(tree, TIMES)
    monkeypatch.chdir(tree)
    with pytest.raises(FileError, match="analyze.seconds"):
        read_stage_times()
    import replication.cli.readme
    import replication.cli.repro
    assert replication.cli.repro.read_stage_times is read_stage_times and replication.cli.readme.read_stage_times is read_stage_times


# ---------------------------------------------------------------- analysis/stage_two.yaml (item 1)

def selection_with(study="head_stage2", part_study="head", seeds="[5]"):
    return (f"stage_two:\n  seeds: [5]\n  studies:\n    {study}: {{study: {part_study}, conditions: [simclr], "
            f"seeds: {seeds}}}\n")


SELECTIONS = [  # (case, text, said)
    ("an alias bomb", BOMB, "its aliases (*name) expand to more than"),
    ("a study name with a shell command", selection_with(study='"x;id>/tmp/pwn"'), "may hold only lower-case"),
    ("a part's study that is not a name", selection_with(part_study='"a b"'), "studies.head_stage2.study: may hold"),
    ("a seed as text", selection_with(seeds='["5"]'), "studies.head_stage2.seeds.0: Input should be a valid integer"),
    ("a key twice", "stage_two: {seeds: []}\nstage_two: {seeds: []}\n", "duplicate key 'stage_two'"),
    ("oversized", "# " + "x" * 1_100_000 + "\n" + selection_with(), "bytes, over the 1,000,000"),
]


@pytest.mark.parametrize("content,said", [c[1:] for c in SELECTIONS], ids=[c[0] for c in SELECTIONS])
def test_a_bad_stage_two_file_stops_make_before_dvc_reads_it(tree, content, said):
    (tree / "analysis/stage_two.yaml").write_text(content)
    before = files(tree)
    status, _, err = check(tree)
    assert status != 0 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("error: analysis/stage_two.yaml: ") and said in err, err
    assert files(tree) == before


# ---------------------------------------------------------------- dvc.lock (item 1)

LOCKS = [  # (case, text, said)
    ("an alias bomb", BOMB, "its aliases (*name) expand to more than"),
    ("not a mapping of stages", "stages: [resolve, data]\n", "expected `stages:`, a mapping of DVC stages"),
    ("a stage that is text", "schema: '2.0'\nstages:\n  resolve: done\n", "expected `stages:`"),
    ("not YAML", "stages:\n  resolve: {cmd: [\n", "not valid YAML at line"),
]


@pytest.mark.parametrize("content,said", [c[1:] for c in LOCKS], ids=[c[0] for c in LOCKS])
def test_a_bad_lock_stops_make_before_dvc_reads_it(tree, content, said):
    (tree / "dvc.lock").write_text(content)
    before = files(tree)
    status, _, err = check(tree)
    assert status != 0 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("error: dvc.lock: ") and said in err and "git checkout" in err, err
    assert files(tree) == before


def test_the_committed_lock_passes_and_the_tools_read_it_through_the_check(tree):
    shutil.copyfile(ROOT / "dvc.lock", tree / "dvc.lock")
    status, _, err = check(tree)
    assert status == 0 and err == "", err
    from replication.committed import read_lock
    import replication.cli.relock
    import replication.cli.repro
    assert replication.cli.repro.read_lock is read_lock and replication.cli.relock.read_lock is read_lock
    assert "resolve" in read_lock(ROOT / "dvc.lock")["stages"]


# ---------------------------------------------------------------- files written through a link (item 4)

@pytest.mark.parametrize("linked", ["README.md", "docs", "dvc.lock", "dvc.yaml"])
def test_a_file_linked_out_of_the_repository_stops_make_in_one_line(tree, tmp_path_factory, linked):
    outside = tmp_path_factory.mktemp("outside") / "victim"
    outside.write_text("keep me\n")
    (tree / linked).symlink_to(outside)
    status, _, err = check(tree)
    assert status != 0 and err.startswith(f"error: {linked}: a symlink out of the repository") and \
        len(err.splitlines()) == 1, err
    assert outside.read_text() == "keep me\n"


@pytest.mark.parametrize("linked", ["README.md", "docs/verdicts.md"])
def test_readme_never_writes_through_a_link(tree, tmp_path_factory, linked):
    """`python -m replication readme` on its own (not through make) refuses too, before rendering anything:
    README.md and every page of docs/ it writes."""
    outside = tmp_path_factory.mktemp("outside") / Path(linked).name
    outside.write_text("keep me\n")
    (tree / linked).parent.mkdir(parents=True, exist_ok=True)
    (tree / linked).symlink_to(outside)
    result = subprocess.run([sys.executable, "-m", "replication", "readme"], cwd=tree, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}, timeout=120)
    assert result.returncode != 0 and f"{linked}: a symlink out of the repository" in result.stderr, result.stderr
    assert outside.read_text() == "keep me\n" and (tree / linked).is_symlink()


def test_a_clone_in_a_folder_named_like_a_command_runs_nothing(tmp_path):
    """The Makefile names the repository's path only as "$$PWD": a folder named `p $(touch INJECTED) q`
    is text to the shell, never a command."""
    tree = tmp_path / "p $(touch INJECTED) q"
    bin_dir = tree / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copyfile(ROOT / "Makefile", tree / "Makefile")
    (bin_dir / "python").write_text("#!/bin/sh\nexit 0\n")       # every tool a stand-in that succeeds
    (bin_dir / "python").chmod(0o755)
    for entry in ("repro", "repro-all"):
        result = subprocess.run(["make", "-s", "-o", ".venv/.installed", entry, "CHECK=true"], cwd=tree,
                                capture_output=True, text=True, timeout=60,
                                env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")})
        assert result.returncode == 0 and f"Report: {tree}/reports/report.html" in result.stdout, result
    assert not list(tmp_path.rglob("INJECTED"))
