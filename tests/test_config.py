"""The params schema: good files load, bad ones give one line naming the key, exit 2, no output."""
import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from replication.run.config import ParamsError, parse_params, read_params

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


def test_moco_arms_use_shuffled_per_device_bn_unless_they_study_cheating():
    """MoCo's design: per-device BN with the keys shuffled across devices. Only the arms that
    study cheating through batch statistics (unshuffled) may differ; the memory bank has no key
    encoder and one view, so no groups."""
    p = read_params(ROOT / "params.yaml")
    cheating = {"moco_bn4", "moco_ranks2_bn2"}
    for name in p.pretrain.conditions:
        cfg = p.pretrain.run_config(name)
        if cfg.method == "moco" and name not in cheating:
            assert cfg.bn_groups * cfg.ranks > 1 and cfg.shuffle_bn, name
        if name in cheating:
            assert cfg.bn_groups * cfg.ranks > 1 and not cfg.shuffle_bn, name
    assert p.pretrain.run_config("memory_bank").bn_groups == 1


def test_arms_without_normalisation_run_at_simclr_temperatures():
    p = read_params(ROOT / "params.yaml")
    taus = {p.pretrain.run_config(n).tau for n in p.pretrain.conditions if not p.pretrain.run_config(n).normalize}
    assert taus == {10.0, 100.0}


def test_ladder_rungs_scale_with_the_profile_and_need_a_constant_schedule():
    smoke = parse_params(with_change("profile", "smoke")).pretrain.run_config("simclr")
    assert smoke.rungs == [0, 3, 12, 24, 48] and smoke.batch == 32
    cifar = parse_params(with_change("profile", "cifar10")).pretrain.run_config("simclr")
    assert cifar.ladder == []
    raw = with_change("pretrain.studies", {"s": {"x": {"ladder": [4800], "schedule": "cosine"}}})
    with pytest.raises(ParamsError, match="pretrain.studies.s.x: rungs need schedule: constant"):
        parse_params(raw)
    with pytest.raises(ParamsError, match="must rise above steps"):
        parse_params(with_change("pretrain.studies", {"s": {"x": {"ladder": [200]}}}))


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
    ("pretrain.studies", {"s": {"x": {"tau": -1}}}, "pretrain.studies.s.x.tau: "),
    ("pretrain.studies", {"s": {"x": {"bn_groups": 3}}}, "bn_groups"),
    ("pretrain.studies", {"s": {"x": {}}, "t": {"x": {}}}, "must be unique"),
    ("pretrain.studies", {"s": {"x": {"label": 3}}}, "pretrain.studies.s.x.label"),
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


def test_a_typo_in_a_condition_names_the_condition_and_its_allowed_keys():
    raw = with_change("pretrain.studies.temperature_low.simclr_tau005", {"tau": 0.05, "tua": 3})
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    message = str(e.value)
    assert message.startswith("params.yaml: pretrain.studies.temperature_low.simclr_tau005.tua: unknown key; allowed: ")
    assert "tau" in message and "label" in message and "momentum" in message
    assert "\n" not in message and len(message) < 500          # not the whole pretrain section


def test_every_default_lives_in_params_yaml():
    """The schema holds types and ranges only: no field of any model has a default value, except
    the optional folder datasets of a stage's resolved data settings."""
    from pydantic import BaseModel
    import replication.run.config as config
    models = [m for m in vars(config).values() if isinstance(m, type) and issubclass(m, BaseModel)
              and m.__module__ == config.__name__ and m is not config.RunData]
    assert len(models) > 10
    defaults = [f"{m.__name__}.{name}" for m in models for name, field in m.model_fields.items()
                if not field.is_required()]
    assert defaults == []


def test_resolve_applies_the_active_profile_only():
    from replication.run.config import resolve
    default, smoke = resolve(parse_params(GOOD)), resolve(parse_params(with_change("profile", "smoke")))
    assert default["pretrain/simclr_mocov2.json"]["conditions"]["simclr"]["steps"] == 2400
    assert smoke["pretrain/simclr_mocov2.json"]["conditions"]["simclr"]["steps"] == 24
    edited = with_change("profiles.smoke.pretrain.seeds", [7])         # a profile that is not active
    assert resolve(parse_params(edited)) == default
    assert "label" not in default["pretrain/temperature_low.json"]["conditions"]["simclr_tau005"]
    assert default["conditions.json"]["conditions"]["simclr_tau005"]["label"] == "tau 0.05"


def test_resolve_stage_exits_2_with_one_line_and_writes_nothing(tmp_path):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(with_change("pretrain.defaults.tau", -1)))
    before = set(tmp_path.rglob("*"))
    result = subprocess.run([sys.executable, str(ROOT / "experiments" / "resolve.py")], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "pretrain.defaults.tau" in result.stderr
    assert set(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("stage", ["make_data.py", "pretrain.py", "evaluate.py", "analyze.py"])
def test_a_stage_without_its_resolved_file_says_how_to_write_it(tmp_path, stage):
    args = [sys.executable, str(ROOT / "experiments" / stage)] + (["simclr"] if stage in ("pretrain.py", "evaluate.py") else [])
    result = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().count("\n") == 0 and "resolve" in result.stderr


# ---------------------------------------------------------------- bounds from the machine and the data (issue 55)

# (case, key, value, what the one line must say): each passed the schema before, and failed after training began
# or never stopped
BEYOND = [
    ("an absurd learning rate", "pretrain.defaults.lr", 1e300, "pretrain.defaults.lr: must be at most 10 (MAX_RATE"),
    ("an absurd probe rate", "evaluate.probe_lr", 1e300, "evaluate.probe_lr: must be at most 10 (MAX_RATE"),
    ("an absurd toy rate", "examples.toy2d.lr", 1e300, "examples.toy2d.lr: must be at most 10 (MAX_RATE"),
    ("a toy spread of 1e300", "examples.toy2d.class_spread", 1e300, "class_spread: must be at most 100 (MAX_SPREAD"),
    ("a toy view noise of 1e300", "examples.toy2d.view_noise", 1e300, "view_noise: must be at most 100 (MAX_SPREAD"),
    ("a negative seed", "data.glyphs100.seed", -1, "data.glyphs100.seed: Input should be greater than or equal to 0"),
    ("a negative determinism seed", "determinism.seed", -1, "determinism.seed: Input should be greater than or equal"),
    ("an integer beyond int64", "examples.limits.mi_bound.symbols", 10 ** 20,
     "examples.limits.mi_bound.symbols: 100000000000000000000 is beyond a 64-bit integer"),
    ("a negative integer beyond int64", "examples.limits.mi_bound.seed", -10 ** 20, "beyond a 64-bit integer"),
    ("a million test images", "evaluate.n_test", 10 ** 6,
     "evaluate.n_test: 1,000,000 test images, but the largest test set, glyphs100's, has 5,000 "
     "(data.glyphs100.n_test)"),
    ("a million views", "evaluate.n_views", 10 ** 6, "evaluate.n_views: 1,000,000 test images, but the largest"),
    ("more views than test images", "evaluate.n_views", 5001, "evaluate.n_views: 5,001 test images"),
    ("1,000 labels of a class of 200", "evaluate.labels_per_class", 1000,
     "evaluate.labels_per_class: 1,000 of each class, but a class of glyphs100 has 200 training images "
     "(data/glyphs100.json)"),
]


@pytest.mark.parametrize("path,value,said", [c[1:] for c in BEYOND], ids=[c[0] for c in BEYOND])
def test_values_beyond_the_machine_or_the_data_are_refused_in_one_line(monkeypatch, path, value, said):
    monkeypatch.chdir(ROOT)                  # data/<name>.json, the datasets' manifests
    with pytest.raises(ParamsError) as e:
        parse_params(with_change(path, value))
    assert said in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_labels_per_class_are_bounded_by_the_generator_where_the_manifest_is_of_other_sizes(monkeypatch):
    """A manifest built at other sizes tells only the classes: a class then holds at most n_train / classes."""
    from replication.run.config import dataset_sizes
    monkeypatch.chdir(ROOT)
    raw = with_change("data.glyphs100.n_train", 1000)
    raw["evaluate"]["labels_per_class"] = 11
    with pytest.raises(ParamsError, match=r"a class of glyphs100 has 10 training images \(data.glyphs100.n_train / "
                                          r"100 classes\)"):
        parse_params(raw)
    params = parse_params(GOOD)
    assert dataset_sizes(params.data, "glyphs100", "data") == (20000, 5000, 200, "data/glyphs100.json")
    assert dataset_sizes(params.data, "cifar10", "data") is None          # read only at run time


def test_a_queue_beyond_the_memory_is_refused(monkeypatch):
    """A million 8,192-D keys: 32.8 GB of float32, refused on a 16 GB machine, taken on a 64 GB one."""
    from replication.run import config
    raw = with_change("pretrain.defaults.proj_dim", 8192)
    raw["pretrain"]["defaults"]["queue"] = 1_000_000
    monkeypatch.setattr(config, "memory_bytes", lambda: 16e9)
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    assert "queue: 1,000,000 keys x 8,192 dims x 4 bytes = 32.8 GB, beyond this machine's 16.0 GB" in str(e.value)
    monkeypatch.setattr(config, "memory_bytes", lambda: 64e9)
    assert parse_params(raw).pretrain.defaults.queue == 1_000_000


def test_threads_times_workers_beyond_the_cores_warn_and_do_not_refuse(tmp_path):
    from replication.run.config import thread_warning
    assert thread_warning(parse_params(GOOD), cores=2) is None
    crowded = parse_params({**GOOD, "threads": 64, "workers": 64})
    assert thread_warning(crowded, cores=2).startswith("warning: threads x workers = 64 x 64 on 2 cores")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({**GOOD, "threads": 64, "workers": 64}))
    result = subprocess.run([sys.executable, "-m", "replication.run.config", "params.yaml"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr.startswith("warning: threads x workers") \
        and result.stderr.count("\n") == 1, result.stderr
