"""The calibrated untrained control: BatchNorm re-estimation on constructed data, the rebuilt step-0
encoder against its training record, and the control record on a tiny run."""
import pytest
import torch
import torch.nn as nn

from contrastive.data import build_dataset
from helpers import PARAMS, data_params
from replication.calibration import ControlError, batch_norms, control_run, recalibrate_bn, untrained_encoder
from replication.config import ControlConfig, ControlParams, EvaluateConfig, Execution, RunConfig
from replication.datasets import save_dataset
from replication.evaluation import evaluate_method, evaluate_run
from replication.io import read_json
from replication.runs import differences, save_run, train_run

EXECUTION = Execution(threads=1, device="cpu", amp=False)


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


def test_recalibration_needs_enough_images():
    f, g, x = constructed()
    with pytest.raises(ValueError, match="need 70 images; the training set has 60"):
        recalibrate_bn([f, g], x, batches=7, batch_size=10)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """A 60-image dataset, two short training runs saved as the pretrain stage saves them (record
    and checkpoints under `root`), and a small evaluation."""
    root = tmp_path_factory.mktemp("study")
    data = data_params(shapes={"n_train": 60, "n_test": 40})
    save_dataset(build_dataset("shapes", data), "shapes", root / "data")
    evaluate = PARAMS.evaluate.model_copy(update={"n_labelled": 40, "n_test": 40, "probe_steps": 20, "wknn_k": 10})
    paths = {}
    for condition in ("simclr", "moco_m099"):
        cfg = PARAMS.pretrain.run_config(condition).model_copy(update={"steps": 2, "batch": 16, "queue": 32,
                                                                       "ladder": []})
        record, states = train_run(3, condition, cfg, EXECUTION, data, root / "data")
        save_run("tiny", record, states, root)
        paths[condition] = f"results/pretrain/tiny/{condition}/seed_3.json"
    return root, data, evaluate, paths


@pytest.mark.parametrize("condition", ["simclr", "moco_m099"])
def test_the_rebuilt_uncalibrated_encoder_evaluates_as_the_step_0_checkpoint(tiny_runs, condition):
    root, data, evaluate, paths = tiny_runs
    from_checkpoint = evaluate_run(paths[condition], EvaluateConfig(execution=EXECUTION, evaluate=evaluate), data,
                                   root / "data", root)["control"]
    record = read_json(root / paths[condition])
    method = untrained_encoder(record, paths[condition])
    dataset = torch.load(root / "data/shapes.pt", weights_only=True)
    rebuilt = evaluate_method(method, RunConfig(**record["config"]), dataset, evaluate, record["seed"])
    assert differences(from_checkpoint, rebuilt) == []


def test_a_rebuild_that_differs_from_the_checkpoint_is_one_line_naming_the_record(tiny_runs):
    root, _, _, paths = tiny_runs
    record = read_json(root / paths["simclr"])
    with pytest.raises(ControlError) as error:
        untrained_encoder({**record, "seed": 4}, paths["simclr"])
    message = str(error.value)
    assert message.startswith(paths["simclr"]) and "\n" not in message
    assert "rebuilt untrained encoder differs from the training run's" in message


def test_the_control_record_holds_the_calibrated_metrics_and_the_rule(tiny_runs):
    root, data, evaluate, paths = tiny_runs
    config = ControlConfig(execution=EXECUTION, evaluate=evaluate,
                           control=ControlParams(bn_batches=2, bn_batch_size=16))
    control = control_run(paths["simclr"], config, data, root / "data", root)
    uncalibrated = evaluate_run(paths["simclr"], EvaluateConfig(execution=EXECUTION, evaluate=evaluate), data,
                                root / "data", root)["control"]
    assert set(control) == {"condition", "seed", "calibrated", "uncalibrated_sha_match", "bn", "wall_s",
                            "threads", "cpu"}
    assert (control["condition"], control["seed"], control["uncalibrated_sha_match"]) == ("simclr", 3, True)
    assert control["bn"]["images"] == 32 and "cumulative average" in control["bn"]["rule"]
    assert set(control["calibrated"]) == set(uncalibrated)               # the same metrics as evaluate@'s control
    assert control["calibrated"]["h"] != uncalibrated["h"]               # the statistics changed the features
    assert differences(control, control_run(paths["simclr"], config, data, root / "data", root)) == []
