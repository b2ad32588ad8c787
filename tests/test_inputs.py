"""No input slips past a check: every bad params.yaml, and every bad file a stage reads, stops with one
line naming the file or key, a non-zero exit, and resolved/ and results/ exactly as they were.

The params cases run the resolve stage's main() in-process (fast), in a folder holding a copy of the
committed resolved/ and a results/ file; the evaluate cases run the stage's script on copies of
committed training records."""
import json
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
GOOD = (ROOT / "params.yaml").read_text()


def set_key(path, value):
    """An edit of params.yaml: the key at `path` (dotted, or a tuple of keys that may hold dots)
    set to `value`; comments are lost."""
    def edit(text):
        raw = yaml.safe_load(text)
        *parents, last = path.split(".") if isinstance(path, str) else path
        node = raw
        for key in parents:
            node = node[key]
        node[last] = value
        return yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)
    return edit


def add_study(name):
    return set_key(("pretrain", "studies", name), {"x": {"tau": 0.5}})


def replace(old, new):
    def edit(text):
        assert old in text
        return text.replace(old, new, 1)
    return edit


# (case, edit of params.yaml's text, what the one line must name)
PARAMS_CASES = [
    ("study name climbs out of the repository", add_study("../../x"), "pretrain.studies"),
    ("study name with a space", add_study("my study"), "my study"),
    ("study name with a capital", add_study("SimCLR"), "SimCLR"),
    ("condition name with a slash", set_key("pretrain.studies.head.a/b", {"tau": 0.5}), "a/b"),
    ("condition name with a dash", set_key("pretrain.studies.head.tau-0", {"tau": 0.5}), "tau-0"),
    ("profile name with a dot", set_key(("profiles", "my.profile"), {}), "profiles.my.profile"),
    ("infinite temperature", set_key("pretrain.defaults.tau", float("inf")), "pretrain.defaults.tau"),
    ("infinite learning rate", set_key("pretrain.defaults.lr", float("inf")), "pretrain.defaults.lr"),
    ("infinite probe learning rate", set_key("evaluate.probe_lr", float("inf")), "evaluate.probe_lr"),
    ("infinite class spread", set_key("examples.toy2d.class_spread", float("inf")), "examples.toy2d.class_spread"),
    ("infinite condition temperature", set_key("pretrain.studies.head.simclr_head_none.tau", float("inf")),
     "pretrain.studies.head.simclr_head_none.tau"),
    ("repeated pretraining seeds", set_key("pretrain.seeds", [0, 0]), "pretrain.seeds"),
    ("repeated toy seeds", set_key("examples.toy2d.seeds", [1, 2, 1]), "examples.toy2d.seeds"),
    ("repeated tiny SimCLR seeds", set_key("examples.tiny_simclr.seeds", [3, 3]), "examples.tiny_simclr.seeds"),
    ("text for a number", set_key("pretrain.defaults.tau", "0.2"), "pretrain.defaults.tau"),
    ("text for a flag", set_key("pretrain.defaults.normalize", "yes"), "pretrain.defaults.normalize"),
    ("text for a count", set_key("threads", "2"), "threads"),
    ("number for a flag", set_key("evaluate.probe_standardize", 1), "evaluate.probe_standardize"),
    ("flag for a count", set_key("workers", True), "workers"),
    ("float for a count", set_key("evaluate.n_labelled", 2000.0), "evaluate.n_labelled"),
    ("duplicate top-level key", replace("threads: 1 ", "threads: 2\nthreads: 1 "), "duplicate key 'threads'"),
    ("duplicate key in a condition", replace('simclr_tau1: {label: "tau 1.0", tau: 1.0,',
                                             'simclr_tau1: {label: "tau 1.0", tau: 1.0, tau: 2.0,'),
     "duplicate key 'tau'"),
    ("active profile not a mapping", lambda t: set_key("profiles.smoke", [1, 2])(set_key("profile", "smoke")(t)),
     "profiles.smoke"),
    ("text for a number in a condition", set_key("pretrain.studies.head.simclr_head_none.proj_dim", "32"),
     "pretrain.studies.head.simclr_head_none.proj_dim"),
    ("typo in an inactive profile", set_key("profiles.smoke.evaluate.probe_stpes", 3),
     "evaluate.probe_stpes"),
    ("bad value in an inactive profile", set_key("profiles.cifar10.pretrain.seeds", [0, 0]), "pretrain.seeds"),
    ("not UTF-8", lambda t: t.replace("# Every knob", "# \xe9very knob"), "UTF-8"),
    ("kNN over more neighbours than labelled images", set_key("evaluate.knn_k", 5000), "knn_k"),
    ("weighted kNN over more neighbours than labelled images", set_key("evaluate.wknn_k", 2001), "wknn_k"),
]


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def resolve_main():
    """The resolve stage's script, run in this process as `python experiments/resolve.py` runs it."""
    return lambda: runpy.run_path(str(ROOT / "experiments" / "resolve.py"), run_name="__main__")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with the committed resolved/, stage 2's selection and one result file; the test
    writes params.yaml."""
    shutil.copytree(ROOT / "resolved", tmp_path / "resolved")
    (tmp_path / "analysis").mkdir()
    shutil.copy(ROOT / "analysis" / "stage_two.yaml", tmp_path / "analysis")
    (tmp_path / "results").mkdir()
    shutil.copy(ROOT / "results" / "determinism.json", tmp_path / "results")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_committed_params_resolve_to_the_committed_files(project, resolve_main, capsys):
    (project / "params.yaml").write_text(GOOD)
    before = snapshot(project / "resolved")
    resolve_main()
    assert snapshot(project / "resolved") == before
    assert "(0 changed)" in capsys.readouterr().out


@pytest.mark.parametrize("edit,named", [c[1:] for c in PARAMS_CASES], ids=[c[0] for c in PARAMS_CASES])
def test_bad_params_stop_resolve_with_one_line_and_touch_nothing(project, resolve_main, capsys, edit, named):
    text = edit(GOOD)
    (project / "params.yaml").write_bytes(text.encode("latin-1") if "\xe9" in text else text.encode())
    before = snapshot(project)
    with pytest.raises(SystemExit) as stop:
        resolve_main()
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.startswith("error: params.yaml: ") and err.count("\n") == 1, err
    assert named in err, err
    assert snapshot(project) == before            # params.yaml, resolved/ and results/ as they were
    assert not (project.parent / "x.json").exists()


@pytest.mark.parametrize("selection, named", [
    ("stage_two:\n  seeds: [0]\n  studies: {temperature_stage2: {study: temperature, conditions: [simclr_tau01], "
     "seeds: [0]}}\n", "stage_two.seeds"),
    ("stage_two:\n  seeds: [5]\n  studies: {temperature_stage2: {study: temperature, conditions: [simclr], "
     "seeds: [5]}}\n", "stage_two.studies.temperature_stage2.conditions"),
    ("stage_two: {}\n", "stage_two.seeds"),
])
def test_a_bad_stage_two_selection_stops_resolve_with_one_line_and_touches_nothing(project, resolve_main, capsys,
                                                                                   selection, named):
    (project / "params.yaml").write_text(GOOD)
    (project / "analysis" / "stage_two.yaml").write_text(selection)
    before = snapshot(project)
    with pytest.raises(SystemExit) as stop:
        resolve_main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: analysis/stage_two.yaml: ") and err.count("\n") == 1, err
    assert named in err, err
    assert snapshot(project) == before


def test_a_study_name_given_to_a_stage_is_checked_before_it_becomes_a_path(tmp_path):
    for script in ("pretrain.py", "evaluate.py"):     # each stage that takes a study's name
        result = subprocess.run([sys.executable, str(ROOT / "experiments" / script), "../../etc/x"], cwd=tmp_path,
                                capture_output=True, text=True)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "'../../etc/x' may hold only" in result.stderr


DATASET = json.loads((ROOT / "resolved" / "pretrain" / "head.json").read_text())["conditions"][
    "simclr_head_none"]["dataset"]


@pytest.fixture
def study_copy(tmp_path):
    """The committed configuration and training records of the `head` study (each record's config
    the resolved one, as a run of this code writes it), with a dataset whose bytes do not match its
    manifest (the real dataset is not in a clone without DVC's cache)."""
    shutil.copytree(ROOT / "resolved", tmp_path / "resolved")
    (tmp_path / "resolved" / "workers.json").write_text('{"workers": 1}')     # no worker processes to start
    shutil.copytree(ROOT / "results" / "pretrain" / "head", tmp_path / "results" / "pretrain" / "head")
    conditions = json.loads((ROOT / "resolved" / "pretrain" / "head.json").read_text())["conditions"]
    for path in (tmp_path / "results" / "pretrain" / "head").glob("*/seed_*.json"):
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "config": conditions[record["condition"]]}))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / f"{DATASET}.json").write_text(json.dumps({"sha256": "0" * 64}))
    (tmp_path / "data" / f"{DATASET}.pt").write_bytes(b"not the dataset")
    return tmp_path


def evaluate_head(cwd):
    return subprocess.run([sys.executable, str(ROOT / "experiments" / "evaluate.py"), "head"], cwd=cwd,
                          capture_output=True, text=True)


@pytest.mark.parametrize("case", ["truncated training record", "record of an older run",
                                  "dataset not matching its sha256"])
def test_bad_files_stop_evaluate_with_one_line_and_touch_nothing(study_copy, case):
    record = study_copy / "results/pretrain/head/simclr_head_none/seed_2.json"
    if case == "truncated training record":
        record.write_text(record.read_text()[:500])
        named = ["results/pretrain/head/simclr_head_none/seed_2.json", "dvc repro -f pretrain@head"]
    elif case == "record of an older run":        # a config without a knob this code has
        old = json.loads(record.read_text())
        del old["config"]["crop_min_side"]
        record.write_text(json.dumps(old))
        named = ["results/pretrain/head/simclr_head_none/seed_2.json", "older run", "dvc repro -f pretrain@head"]
    else:
        named = [f"data/{DATASET}.pt", "sha256", "dvc repro -f data"]
    before = snapshot(study_copy)
    result = evaluate_head(study_copy)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr[-2000:]
    assert result.stderr.startswith("error: ") and all(n in result.stderr for n in named), result.stderr
    assert snapshot(study_copy) == before


def test_the_checkpoint_fix_it_suggests_is_a_command_that_works():
    """`dvc checkout FILE` refuses to replace a modified file without --force."""
    from replication.run.evaluate import CheckpointError, load_checkpoint
    checkpoint = {"path": "artifacts/pretrain/head/simclr_head_none/seed_0/step_0.pt", "sha256": "0"}
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(checkpoint, "record.json", root="/nonexistent")
    assert f"`dvc checkout {checkpoint['path']} --force`" in str(e.value)


def test_a_checkpoint_path_that_leads_outside_the_repository_is_refused(tmp_path):
    """A record whose checkpoint path climbs out of the repository is refused before anything is
    read, even when a file with the recorded sha256 sits there."""
    from replication.io import save_torch, sha256
    from replication.run.evaluate import CheckpointError, load_checkpoint
    repo, outside = tmp_path / "repo", tmp_path / "outside" / "x.pt"
    repo.mkdir()
    save_torch(outside, {"w": torch.zeros(1)})
    checkpoint = {"path": "../outside/x.pt", "sha256": sha256(outside)}
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(checkpoint, "results/pretrain/s/c/seed_0.json", root=repo)
    message = str(e.value)
    assert "\n" not in message and "leads outside the repository" in message and "seed_0.json" in message
    inside = "artifacts/pretrain/s/c/seed_0/step_0.pt"              # the same file inside is loaded
    save_torch(repo / inside, {"w": torch.zeros(1)})
    assert load_checkpoint({**checkpoint, "path": inside}, "r.json", root=repo)["w"].shape == (1,)


def test_cifar10_is_found_where_the_readme_says_to_extract_it(tmp_path, monkeypatch):
    """data.cifar10.root names the extracted folder cifar-10-batches-py itself (params.yaml's
    cifar10 profile), or the folder that holds it (torchvision's convention)."""
    import pickle

    import numpy as np

    from contrastive.data import load_cifar10
    from torchvision.datasets import CIFAR10
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name, _ in CIFAR10.train_list + CIFAR10.test_list:
        batch = {"data": rng.integers(0, 255, (4, 3072), dtype=np.uint8), "labels": [0, 1, 2, 3]}
        (folder / name).write_bytes(pickle.dumps(batch))
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": [f"c{i}" for i in range(10)]}))
    monkeypatch.setattr(CIFAR10, "_check_integrity", lambda self: True)    # a fake cannot meet the real md5s
    monkeypatch.setattr("torchvision.datasets.cifar.check_integrity", lambda *args: True)
    for root in (folder, tmp_path):
        data = load_cifar10(str(root))
        assert data["x_train"].shape == (20, 3, 32, 32) and data["x_test"].shape == (4, 3, 32, 32)


def test_stray_temporary_files_are_removed_and_ignored_by_dvc(tmp_path):
    from replication.io import remove_stray_tmp
    stray = tmp_path / "seed_0" / ".step_24.pt.abc123.tmp"
    stray.parent.mkdir()
    stray.write_bytes(b"half a checkpoint")
    kept = tmp_path / "seed_0" / "step_0.pt"
    kept.write_bytes(b"checkpoint")
    assert remove_stray_tmp(tmp_path) == 1 and not stray.exists() and kept.exists()
    assert "*.tmp" in (ROOT / ".dvcignore").read_text().splitlines()
