"""BatchNorm re-estimated before every probe: the rule on constructed encoders, and the evaluation
record of tiny runs (the calibrated control, the uncalibrated probes beside it, the full-label probe
at the budget, one line for a missing checkpoint)."""
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

from contrastive.data import DataError, build_dataset
from contrastive.evaluate import linear_probes
from helpers import PARAMS, ROOT, data_params
from replication.run.calibration import batch_norms, recalibrate_bn
from replication.run.config import ControlParams, EvaluateConfig, Execution, RunConfig, RunData, StudyConfig
from replication.run.datasets import save_dataset
from replication.run.evaluate import evaluate_method, evaluate_run, load_checkpoint, method_from_state
from replication.io import read_json, write_json
from replication.run.train import differences, save_run, train_run

EXECUTION = Execution(threads=1, device="cpu", precision="fp32")


def constructed():
    """f: a 1x1 convolution then BatchNorm2d; g: a linear layer then BatchNorm1d. Images whose
    first 40 are ordinary and the rest huge (calibration must never see those)."""
    torch.manual_seed(0)
    f = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4, momentum=0.3), nn.Flatten())
    g = nn.Sequential(nn.Linear(4 * 2 * 2, 5), nn.BatchNorm1d(5))
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(60, 3, 2, 2, generator=gen) * 2 + 1
    x[40:] = 1e6
    return f, g, x


def test_recalibrated_statistics_are_the_average_of_the_batch_statistics_and_weights_are_untouched():
    f, g, x = constructed()
    f.eval(), g.train()
    before = {k: v.clone() for k, v in [*f.named_parameters(), *g.named_parameters()]}
    recalibrate_bn([f, g], x, batches=4, batch_size=10)
    after = dict([*f.named_parameters(), *g.named_parameters()])
    assert all(torch.equal(before[k], after[k]) for k in before)          # bit-identical weights
    with torch.no_grad():                                                 # the rule, by hand
        conv = [f[0](x[i * 10:(i + 1) * 10]) for i in range(4)]         # BN2d inputs: (10, 4, 2, 2)
        pooled = [c.transpose(0, 1).flatten(1) for c in conv]           # per channel: 40 values
        lin = [g[0](f[2](nn.functional.batch_norm(c, None, None, training=True))) for c in conv]
    bn2d, bn1d = batch_norms([f, g])
    assert torch.allclose(bn2d.running_mean, torch.stack([p.mean(1) for p in pooled]).mean(0), atol=1e-6)
    assert torch.allclose(bn2d.running_var, torch.stack([p.var(1) for p in pooled]).mean(0), atol=1e-5)
    assert torch.allclose(bn1d.running_mean, torch.stack([h.mean(0) for h in lin]).mean(0), atol=1e-5)
    assert torch.allclose(bn1d.running_var, torch.stack([h.var(0) for h in lin]).mean(0), atol=1e-5)
    assert bn2d.num_batches_tracked.item() == 4
    assert bn2d.momentum == 0.3 and bn1d.momentum == 0.1                 # momenta restored
    assert not f.training and g.training                                 # modes restored


def test_a_one_layer_encoder_gets_the_exact_mean_and_variance_of_its_calibration_activations():
    """f(x) = BN(W x + b): after re-estimation on one batch of the first 30 images, BN's running
    statistics are the mean and unbiased variance of W x + b over exactly those images (computed
    here in float64), whatever they were before; W, b and BN's affine weights do not move."""
    torch.manual_seed(0)
    f = nn.Sequential(nn.Flatten(), nn.Linear(12, 3), nn.BatchNorm1d(3))
    bn = f[2]
    with torch.no_grad():
        bn.weight.fill_(2.0), bn.bias.fill_(-1.0)
        bn.running_mean.fill_(7.0), bn.running_var.fill_(9.0)           # stale statistics
        bn.num_batches_tracked.fill_(5)
    x = torch.randn(50, 3, 2, 2, generator=torch.Generator().manual_seed(1)) * 3 + 2
    weights = {k: v.clone() for k, v in f.named_parameters()}
    recalibrate_bn([f, nn.Identity()], x, batches=1, batch_size=30)
    activation = x[:30].flatten(1).double() @ weights["1.weight"].double().T + weights["1.bias"].double()
    assert torch.allclose(bn.running_mean.double(), activation.mean(0), atol=1e-5)
    assert torch.allclose(bn.running_var.double(), activation.var(0), rtol=1e-5)
    assert all(torch.equal(weights[k], v) for k, v in f.named_parameters())
    f.eval()                                                             # eval mode now standardises with them
    with torch.no_grad():
        h = f(x[:30]).double()
    assert torch.allclose(h.mean(0), torch.full((3,), -1.0, dtype=torch.float64), atol=1e-4)


def test_recalibration_needs_enough_images():
    f, g, x = constructed()
    with pytest.raises(DataError, match="control.bn_batches x control.bn_batch_size: .* need 70 images; "
                                        "the training set has 60"):
        recalibrate_bn([f, g], x, batches=7, batch_size=10)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """A 60-image dataset, two short training runs saved as the pretrain stage saves them (record
    and checkpoints under `root`), and a small evaluation: 3 labels of each class, BN re-estimated
    on 2 batches of 16."""
    root = tmp_path_factory.mktemp("study")
    data = data_params(shapes={"n_train": 60, "n_test": 40})
    save_dataset(build_dataset("shapes", data), "shapes", root / "data")
    evaluate = PARAMS.evaluate.model_copy(update={"labels_per_class": 3, "n_test": 40, "probe_steps": 20,
                                                  "wknn_k": 10})
    config = EvaluateConfig(execution=EXECUTION, evaluate=evaluate,
                            control=ControlParams(bn_batches=2, bn_batch_size=16))
    paths, configs = {}, {}
    for condition in ("simclr", "moco_m099"):
        cfg = PARAMS.pretrain.run_config(condition).model_copy(update={
            "dataset": "shapes", "checkpoints": [], "steps": 2, "batch": 16, "queue": 32, "ladder": [3]})
        record, states = train_run(3, condition, cfg, EXECUTION, data, root / "data")
        save_run("tiny", record, states, root)
        paths[condition], configs[condition] = f"results/pretrain/tiny/{condition}/seed_3.json", cfg
    return root, data, config, paths, configs


@pytest.mark.parametrize("condition", ["simclr", "moco_m099"])
def test_every_rung_is_probed_with_calibrated_bn_and_the_uncalibrated_probes_are_kept(tiny_runs, condition):
    """The record's control, eval and other rungs are evaluate_method on the checkpoint after the
    rule; the uncalibrated linear probes of step 0 and the budget are those of the checkpoint as
    saved; only the budget has the full-label probe."""
    root, data, config, paths, configs = tiny_runs
    evaluation = evaluate_run(paths[condition], config, data, root / "data", root)
    record = read_json(root / paths[condition])
    dataset = torch.load(root / "data/shapes.pt", weights_only=True)
    cfg = RunConfig(**record["config"])
    assert evaluation["rungs"] == [0, 2, 3] and evaluation["bn"] == "calibrated"
    assert evaluation["calibration"]["images"] == 32 and "cumulative average" in evaluation["calibration"]["rule"]
    assert evaluation["control"] == evaluation["at"]["0"] and evaluation["eval"] == evaluation["at"]["2"]
    for step, checkpoint in zip((0, 2, 3), record["checkpoints"]):
        method = method_from_state(cfg, load_checkpoint(checkpoint, paths[condition], root), record["n_data"],
                                   record["n_classes"])
        if step in (0, 2):
            key = "control_uncalibrated" if step == 0 else "eval_uncalibrated"
            assert evaluation[key] == linear_probes(method.f, method.g, dataset, config.evaluate)
        recalibrate_bn([method.f, method.g], dataset["x_train"], 2, 16)
        by_hand = evaluate_method(method, cfg, dataset, config.evaluate, record["seed"], budget=step == 2,
                                  full_labels=True)
        assert differences(evaluation["at"][str(step)], by_hand) == []
    # the all-label probe at every rung, the untrained control included (the published protocol)
    assert all("linear_full" in evaluation["at"][step][name] for step in evaluation["at"] for name in "hz")
    assert evaluation["eval"]["protocol"]["n_full"] == 60 and evaluation["eval"]["protocol"]["n_labelled"] == 30


def test_the_calibrated_control_is_shared_by_runs_of_one_initialisation(tiny_runs):
    """simclr and moco_m099 at seed 3 share f (cnn3) but not g (MLP and linear heads): the same h
    control, a different z control; and a second evaluation repeats every figure."""
    root, data, config, paths, _ = tiny_runs
    a = evaluate_run(paths["simclr"], config, data, root / "data", root)
    b = evaluate_run(paths["moco_m099"], config, data, root / "data", root)
    assert a["control"]["h"] == b["control"]["h"] and a["control"]["z"] != b["control"]["z"]
    assert differences(a, evaluate_run(paths["simclr"], config, data, root / "data", root)) == []


def stage(root, study="tiny"):
    """experiments/evaluate.py run as the stage runs it, in `root`: (exit status, stderr)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    result = subprocess.run([sys.executable, str(ROOT / "experiments/evaluate.py"), study], cwd=root, env=env,
                            capture_output=True, text=True)
    return result.returncode, result.stderr


@pytest.fixture
def stage_root(tiny_runs, tmp_path):
    """A copy of the tiny study with the resolved files the evaluate stage reads."""
    import shutil
    root, data, config, paths, configs = tiny_runs
    copy = tmp_path / "stage"
    shutil.copytree(root, copy)
    write_json(copy / "resolved/evaluate.json", config.model_dump())
    write_json(copy / "resolved/workers.json", {"workers": 1})
    write_json(copy / "resolved/pretrain/tiny.json", StudyConfig(
        study="tiny", seeds=[3], execution=EXECUTION, data=RunData(image_size=32), conditions=configs).model_dump())
    return copy


def test_the_stage_writes_one_calibrated_record_per_run(stage_root, tiny_runs):
    root, data, config, paths, _ = tiny_runs
    assert stage(stage_root) == (0, "")
    for condition, path in paths.items():
        written = read_json(stage_root / f"results/evaluate/tiny/{condition}/seed_3.json")
        assert written["bn"] == "calibrated" and written["rungs"] == [0, 2, 3]
        assert differences(written, evaluate_run(path, config, data, root / "data", root)) == []


def test_a_missing_checkpoint_stops_the_stage_with_one_line(stage_root):
    (stage_root / "artifacts/pretrain/tiny/moco_m099/seed_3/step_0.pt").unlink()
    status, err = stage(stage_root)
    assert status == 1 and err.count("\n") == 1, err
    assert "artifacts/pretrain/tiny/moco_m099/seed_3/step_0.pt: missing checkpoint" in err
    assert "dvc repro -f pretrain@tiny" in err
    assert not (stage_root / "results/evaluate").exists()


def test_a_label_budget_the_data_cannot_meet_stops_the_stage_with_one_line(stage_root):
    resolved = json.loads((stage_root / "resolved/evaluate.json").read_text())
    resolved["evaluate"]["labels_per_class"] = 40                        # 60 images of 10 classes
    (stage_root / "resolved/evaluate.json").write_text(json.dumps(resolved))
    status, err = stage(stage_root)
    assert status == 1 and err.count("\n") == 1, err
    assert err.startswith("error: evaluate.labels_per_class: 40 labelled images of each class, but class ")
