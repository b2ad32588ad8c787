"""Records checked against the run that wrote them (issue 55, item 1): a record of other settings, one
run recorded under two seeds, a checkpoint hash that is not the checkpoint's, and a figure outside its
range each stop the analysis (check_inputs) with one line naming the file and the field. Each case
is test_registry's small valid world with one thing broken; the committed run 2 passes."""
import json
import shutil
from pathlib import Path

import pytest
import torch
from test_registry import SEEDS, write_world

from replication.io import save_torch, sha256
from replication.judge.measure import InputError
from replication.judge.results import check_inputs
from replication.io import digest, run_digest
from replication.run.config import read_resolved

ROOT = Path(__file__).resolve().parents[1]
TRAINED = "results/pretrain/s/cb/seed_1.json"
EVALUATED = "results/evaluate/s/cb/seed_1.json"


def edit(root, path, change):
    record = json.loads(Path(root, path).read_text())
    change(record)
    Path(root, path).write_text(json.dumps(record))


def set_at(key, value):
    def change(record):
        *parents, last = key.split(".")
        for part in parents:
            record = record[int(part)] if isinstance(record, list) else record[part]
        record[last if isinstance(record, dict) else int(last)] = value
    return change


def refusal(root):
    conditions = json.loads(Path(root, "resolved", "conditions.json").read_text())
    with pytest.raises(InputError) as e:
        check_inputs(conditions, root)
    assert "\n" not in str(e.value)
    return str(e.value)


def passes(root):
    check_inputs(json.loads(Path(root, "resolved", "conditions.json").read_text()), root)
    return True


@pytest.fixture
def world(tmp_path):
    write_world(tmp_path)
    assert passes(tmp_path)
    return tmp_path


def test_the_committed_run_passes_every_check(tmp_path):
    """Every committed record passes; while a registered run is under way, the records of the studies
    it has retrained so far (the others are the previous run's, made under other settings)."""
    from test_committed_results import stale_studies
    from replication.cli.repro import registered_run_in_progress
    conditions = read_resolved("conditions", root=ROOT)
    if not registered_run_in_progress(ROOT):
        check_inputs(conditions, ROOT)
        return
    done = {info["study"] for info in conditions["conditions"].values()} - stale_studies(ROOT)
    done = {s for s in done if (ROOT / "results" / "evaluate" / s).is_dir()}
    if not done:
        pytest.skip("no study of the registered run has been retrained yet")
    shutil.copytree(ROOT / "resolved", tmp_path / "resolved")
    for kind in ("pretrain", "evaluate"):
        for study in done:
            shutil.copytree(ROOT / "results" / kind / study, tmp_path / "results" / kind / study)
    # stage 1's records (a second stage of seeds under way is checked once it has run)
    stage_one = {name: {k: v for k, v in info.items() if k != "runs"} for name, info in conditions["conditions"].items()
                 if info["study"] in done}
    check_inputs({**conditions, "conditions": stage_one}, tmp_path)


def figures(seed, step):
    """An embedding's figures, as an evaluation record holds them, different for every seed and rung."""
    accuracy = 0.3 + seed / 100 + step / 1000
    return {"alignment": 0.5, "uniformity": -2.0, "tolerance": 0.3, "tolerance_centred": 0.1, "linear": accuracy}


@pytest.fixture
def full_world(world):
    """The world with every figure an evaluation record holds (alignment, uniformity, tolerances)."""
    for seed in SEEDS:
        for name in ("ca", "cb"):
            at = {str(step): {"h": figures(seed, step), "z": figures(seed, step), "contrastive_top1": 0.5}
                  for step in (0, 300)}
            edit(world, f"results/evaluate/s/{name}/seed_{seed}.json",
                 lambda r: r.update(at=at, control=at["0"], eval=at["300"]))
    assert passes(world)
    return world


# (case, record, change, what the one line must say)
OUT_OF_RANGE = [
    ("a uniformity of +5", EVALUATED, set_at("eval.h.uniformity", 5.0),
     "eval.h.uniformity = 5, a uniformity, log E exp(-2 ||x - y||^2) of unit vectors outside [-8, 0]"),
    ("an alignment of 4.5", EVALUATED, set_at("at.300.z.alignment", 4.5), "at.300.z.alignment = 4.5, an alignment"),
    ("a tolerance of 1.5", EVALUATED, set_at("control.h.tolerance", 1.5), "control.h.tolerance = 1.5, a tolerance"),
    ("a centred tolerance of -3", EVALUATED, set_at("at.0.z.tolerance_centred", -3.0),
     "at.0.z.tolerance_centred = -3, a centred tolerance"),
    ("an uncalibrated accuracy of 120%", EVALUATED, set_at("control_uncalibrated.h.linear", 1.2),
     "control_uncalibrated.h.linear = 1.2, an accuracy outside [0, 1]"),
    ("a negative pretext accuracy", EVALUATED, set_at("at.300.contrastive_top1", -0.1), "an accuracy outside"),
    ("a NaN in the loss curve", TRAINED, set_at("loss_curve", [[0, 5.3], [100, float("nan")]]),
     "loss_curve.1.1 is nan, not a finite number"),
    ("an infinite final loss", TRAINED, set_at("loss", float("inf")), ": loss is inf, not a finite number"),
    ("text in the loss curve", TRAINED, set_at("loss_curve", [[0, "low"]]), "loss_curve.0.1 is 'low', not a finite"),
    ("a NaN learned scalar", TRAINED, set_at("learned_scalars", {"criterion.b": float("nan")}),
     "learned_scalars.criterion.b is nan"),
]


@pytest.mark.parametrize("path,change,said", [c[1:] for c in OUT_OF_RANGE], ids=[c[0] for c in OUT_OF_RANGE])
def test_a_figure_outside_its_range_is_refused(full_world, path, change, said):
    edit(full_world, path, change)
    message = refusal(full_world)
    assert message.startswith(path) and said in message and "dvc repro -f" in message, message


def test_a_training_record_of_other_settings_is_refused(world):
    """The probe of the issue: tau 0.1 -> 0.5 and lr 1e-3 -> 1e-2, steps unchanged."""
    resolved = world / "resolved" / "pretrain" / "s.json"
    settings = {"steps": 300, "batch": 8, "tau": 0.1, "lr": 0.001}
    resolved.write_text(json.dumps({"conditions": {"ca": settings, "cb": settings}}))
    for path in (world / "results" / "pretrain").rglob("seed_*.json"):
        edit(world, path, lambda r: r.update(config=settings))
    assert passes(world)
    edit(world, TRAINED, set_at("config.tau", 0.5))
    assert refusal(world) == (f"{TRAINED}: config.tau is 0.5, the resolved configuration says 0.1 (resolved/pretrain/"
                              "s.json): a record of another run; rewrite it with `dvc repro -f pretrain@s`")
    edit(world, TRAINED, set_at("config", {**settings, "lr": 0.01}))
    assert "config.lr is 0.01, the resolved configuration says 0.001" in refusal(world)
    edit(world, TRAINED, set_at("config", {"steps": 300, "batch": 8, "lr": 0.001}))
    assert "config.tau is (missing)" in refusal(world)


def ran_under(study):
    """The config_sha256 of condition cb of a resolved study."""
    return run_digest(study["conditions"]["cb"], study["execution"], study["data"])


def test_a_record_names_the_resolved_configuration_it_ran_under_by_its_digest(world):
    study = {"conditions": {"ca": {"steps": 300, "batch": 8}, "cb": {"steps": 300, "batch": 8}},
             "execution": {"threads": 1, "device": "cpu", "precision": "fp32"}, "data": {"image_size": 32}}
    (world / "resolved" / "pretrain" / "s.json").write_text(json.dumps(study))
    (world / "resolved" / "evaluate.json").write_text(json.dumps({"evaluate": {"n_test": 300}}))
    edit(world, TRAINED, set_at("config_sha256", ran_under(study)))
    edit(world, EVALUATED, set_at("config_sha256", digest({"evaluate": {"n_test": 300}})))
    assert passes(world)
    study["execution"]["threads"] = 2                 # the same condition, run at another thread count
    (world / "resolved" / "pretrain" / "s.json").write_text(json.dumps(study))
    assert refusal(world).startswith(f"{TRAINED}: config_sha256 is not the digest of cb's resolved configuration")
    edit(world, TRAINED, set_at("config_sha256", ran_under(study)))
    (world / "resolved" / "evaluate.json").write_text(json.dumps({"evaluate": {"n_test": 5000}}))
    assert refusal(world).startswith(f"{EVALUATED}: config_sha256 is not the digest of resolved/evaluate.json")


def test_a_missing_resolved_study_is_named(world):
    (world / "resolved" / "pretrain" / "s.json").unlink()
    assert refusal(world) == "resolved/pretrain/s.json: missing or unreadable; write it with `dvc repro resolve`"


def copy_run(root, source, target):
    """One seed's records copied over another's, their condition and seed edited to fit."""
    for stage in ("pretrain", "evaluate"):
        to = Path(root, "results", stage, "s", "cb", f"seed_{target}.json")
        shutil.copy(Path(root, "results", stage, "s", "cb", f"seed_{source}.json"), to)
        edit(root, to, set_at("seed", target))


def test_one_run_recorded_under_two_seeds_is_refused(world):
    copy_run(world, 0, 1)
    assert refusal(world) == (f"{EVALUATED}: its evaluation at every rung (at) is that of results/evaluate/s/cb/"
                              "seed_0.json: one run recorded twice (a copied record?); rewrite it with "
                              "`dvc repro -f evaluate@s`")


@pytest.mark.parametrize("shared", ["loss_curve", "checkpoints"])
def test_two_seeds_sharing_a_loss_curve_or_a_checkpoint_are_one_run(world, shared):
    for seed in SEEDS:
        own = [{"step": 0, "path": f"artifacts/pretrain/s/cb/seed_{seed}/step_0.pt", "sha256": f"{seed + 1}" * 64}]
        edit(world, f"results/pretrain/s/cb/seed_{seed}.json", lambda r: r.update(loss_curve=[[0, 5.0 + seed]],
                                                                                   checkpoints=own))
    assert passes(world)
    edit(world, TRAINED, set_at(shared, {"loss_curve": [[0, 5.0]], "checkpoints": [
        {"step": 0, "path": "artifacts/pretrain/s/cb/seed_1/step_0.pt", "sha256": "1" * 64}]}[shared]))
    what = {"loss_curve": "loss_curve", "checkpoints": "checkpoint sha256"}[shared]
    assert refusal(world) == (f"{TRAINED}: its {what} is that of results/pretrain/s/cb/seed_0.json: one run recorded "
                              "twice (a copied record?); rewrite it with `dvc repro -f pretrain@s`")


CHECKPOINT = "artifacts/pretrain/s/cb/seed_1/step_0.pt"


@pytest.mark.parametrize("case,entry,said", [
    ("zeroed hash", {"step": 0, "path": CHECKPOINT, "sha256": "0" * 64}, f"the sha256 of {CHECKPOINT} is '000"),
    ("short hash", {"step": 0, "path": CHECKPOINT, "sha256": "abc"}, "'abc', not a checkpoint's hash"),
    ("no hash", {"step": 0, "path": CHECKPOINT}, "is None, not a checkpoint's hash"),
    ("another seed's checkpoint", {"step": 0, "path": "artifacts/pretrain/s/cb/seed_0/step_0.pt", "sha256": "a" * 64},
     "checkpoint 'artifacts/pretrain/s/cb/seed_0/step_0.pt' is not in its run's folder "
     "artifacts/pretrain/s/cb/seed_1/"),
], ids=lambda c: c if isinstance(c, str) else None)
def test_a_checkpoint_hash_that_cannot_be_the_checkpoints_is_refused(world, case, entry, said):
    edit(world, TRAINED, set_at("checkpoints", [entry]))
    message = refusal(world)
    assert message.startswith(TRAINED) and said in message, message


def test_a_present_checkpoint_must_have_the_recorded_hash(world):
    save_torch(world / CHECKPOINT, {"w": torch.zeros(2)})
    edit(world, TRAINED, set_at("checkpoints", [{"step": 0, "path": CHECKPOINT, "sha256": sha256(world / CHECKPOINT)}]))
    assert passes(world)
    edit(world, TRAINED, set_at("checkpoints", [{"step": 0, "path": CHECKPOINT, "sha256": "b" * 64}]))
    assert refusal(world) == (f"{TRAINED}: the sha256 of {CHECKPOINT} differs from the checkpoint's own; restore it "
                              f"with `dvc checkout {CHECKPOINT} --force`, or rewrite it with `dvc repro -f pretrain@s`")


def test_the_digest_a_run_writes_is_the_one_the_check_reads_back_from_resolved():
    """train_run digests its settings as models (model_dump); check_inputs digests resolved/'s JSON: the same,
    for every condition of every committed study, and for resolved/evaluate.json (evaluate_run's)."""
    from replication.run.config import EvaluateConfig, StudyConfig
    for path in sorted((ROOT / "resolved" / "pretrain").glob("*.json")):
        raw = json.loads(path.read_text())
        study = StudyConfig(**raw)
        for name, cfg in study.conditions.items():
            assert run_digest(cfg.model_dump(), study.execution.model_dump(), study.data.model_dump()) == \
                run_digest(raw["conditions"][name], raw["execution"], raw["data"])
    raw = json.loads((ROOT / "resolved" / "evaluate.json").read_text())
    assert digest(EvaluateConfig(**raw).model_dump()) == digest(raw)


def test_the_snapshot_globs_as_glob_does(tmp_path):
    """Results.glob finds what glob.glob(pattern, root_dir=root) finds, sorted: a wildcard does not
    cross '/' and skips a name with a leading '.'; a record it holds reads as read_record reads it."""
    import glob
    from replication.judge.results import Results, read_record
    for path in ("results/a/seed_1.json", "results/a/seed_2.json", "results/a/.seed_3.json.tmp", "results/a/.x.json",
                 "results/b/c/seed_4.json", "results/seed_5.json", "results/b/empty.json"):
        Path(tmp_path, path).parent.mkdir(parents=True, exist_ok=True)
        Path(tmp_path, path).write_text("" if "empty" in path else json.dumps({"seed": 1}))
    results = Results.load(tmp_path)
    for pattern in ("results/*/seed_*.json", "results/*/*.json", "results/*.json", "results/*/*/seed_*.json",
                    "results/*", "results/a/.*", "results/a/.x.json", "results/a/*", "results/**/*.json",
                    "results/[ab]/seed_?.json", "results/nothing/*.json"):
        assert results.glob(pattern) == sorted(p for p in glob.glob(pattern, root_dir=tmp_path)
                                               if Path(tmp_path, p).is_file()), pattern
    assert results.glob("results/*/*.json") == ["results/a/seed_1.json", "results/a/seed_2.json", "results/b/empty.json"]
    assert results.record("results/a/seed_1.json") == read_record("results/a/seed_1.json", tmp_path)
    for path in ("results/b/empty.json", "results/a/absent.json"):
        with pytest.raises(InputError) as read:
            read_record(path, tmp_path)
        with pytest.raises(InputError) as looked_up:
            results.record(path)
        assert str(looked_up.value) == str(read.value)
