"""The params schema: good files load, bad ones give one line naming the key, exit 2, no output."""
import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contrastive.config import ParamsError, parse_params, read_params

ROOT = Path(__file__).resolve().parents[1]
GOOD = yaml.safe_load((ROOT / "params.yaml").read_text())


def with_change(path, value):
    raw = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node = raw
    for p in parents:
        node = node[p]
    node[last] = value
    return raw


def test_committed_params_are_valid():
    assert read_params(ROOT / "params.yaml").profile == "default"


def test_smoke_profile_overrides():
    p = parse_params(with_change("profile", "smoke"))
    assert p.pretrain.seeds == [0, 1] and p.pretrain.run_config("simclr").steps < 50
    assert p.pretrain.defaults.tau == GOOD["pretrain"]["defaults"]["tau"]   # untouched keys kept


BAD = [
    ("pretrain.defaults.tau", -0.1, "pretrain.defaults.tau"),
    ("pretrain.defaults.tau", 0, "pretrain.defaults.tau"),
    ("pretrain.defaults.momentum", 1.5, "pretrain.defaults.momentum"),
    ("pretrain.defaults.momentum", -0.1, "pretrain.defaults.momentum"),
    ("pretrain.defaults.batch", 1, "pretrain.defaults.batch"),
    ("pretrain.seeds", [], "pretrain.seeds"),
    ("pretrain.defaults.dataset", "imagenet", "pretrain.defaults.dataset"),
    ("pretrain.defaults.loss", "hinge", "pretrain.defaults.loss"),
    ("pretrain.defaults.steps", "many", "pretrain.defaults.steps"),
    ("evaluate.knn_k", 0, "evaluate.knn_k"),
    ("examples.toy2d.lr", -1, "examples.toy2d.lr"),
    ("threads", 0, "threads"),
    ("data.shapes.n_trian", 10, "data.shapes.n_trian"),
    ("pretrain.studies", {"s": {"x": {"tau": -1}}}, "studies.s.x: tau"),
    ("pretrain.studies", {"s": {"x": {"bn_groups": 3}}}, "bn_groups"),
    ("pretrain.studies", {"s": {"x": {}}, "t": {"x": {}}}, "more than one study"),
    ("pretrain.studies", {}, "pretrain.studies"),
    ("profile", "fast", "profile"),
]


@pytest.mark.parametrize("path,value,named", BAD, ids=[f"{p}={v}" for p, v, _ in BAD])
def test_bad_value_names_the_key(path, value, named):
    with pytest.raises(ParamsError) as e:
        parse_params(with_change(path, value))
    message = str(e.value)
    assert named in message and "\n" not in message


def test_unknown_key_lists_the_allowed_ones():
    with pytest.raises(ParamsError, match=r"data\.shapes\.n_trian: unknown key; allowed: .*n_train"):
        parse_params(with_change("data.shapes.n_trian", 10))


@pytest.mark.parametrize("text", ["pretrain: [unclosed", "just a string", ""])
def test_unreadable_files(tmp_path, text):
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ParamsError):
        read_params(tmp_path / "params.yaml")


@pytest.mark.parametrize("stage", ["make_data.py", "pretrain.py"])
def test_stage_exits_2_with_one_line_and_writes_nothing(tmp_path, stage):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(with_change("pretrain.defaults.tau", -1)))
    before = set(tmp_path.rglob("*"))
    args = [sys.executable, str(ROOT / "experiments" / stage)] + (["simclr"] if stage == "pretrain.py" else [])
    result = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "pretrain.defaults.tau" in result.stderr
    assert set(tmp_path.rglob("*")) == before
