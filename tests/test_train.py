"""The training loop's early stops, determinism of a whole run, and atomic writes under SIGKILL."""
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
import torch.nn as nn

from contrastive.data import build_dataset
from contrastive.losses import nt_xent
from contrastive.methods import SimCLR
from contrastive.models import SmallCNN, make_head
from contrastive.train import CHECK_EVERY, TrainSettings, train
from helpers import PARAMS, data_params
from replication.run.config import EvaluateConfig, Execution
from replication.run.datasets import save_dataset
from replication.run.evaluate import evaluate_method, method_from_state
from replication.run.train import differences, train_run


def images(n=32, size=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, size, size, generator=gen), torch.randint(0, 4, (n,), generator=gen)


class NaNAfter:
    """NT-Xent that turns into NaN from the `k`-th call on (0-based)."""
    def __init__(self, k):
        self.k, self.calls = k, 0

    def __call__(self, z1, z2):
        self.calls += 1
        loss = nt_xent(z1, z2, 0.2)
        return loss * float("nan") if self.calls > self.k else loss


class Constant(nn.Module):
    """A head whose output does not depend on its input: every embedding is the same vector."""
    def forward(self, h):
        return torch.ones(len(h), 8) + 0 * h.sum(1, keepdim=True)


def test_nan_loss_stops_the_run_as_diverged():
    torch.manual_seed(0)
    x, y = images()
    method = SimCLR(SmallCNN(), make_head("mlp", 64), NaNAfter(3))
    record = train(method, x, y, torch.Generator().manual_seed(0), TrainSettings(steps=20, batch=8), progress=False)
    assert record["status"] == "diverged" and record["steps_done"] == 3
    assert "nan" in record["reason"] and "step 3" in record["reason"]
    assert torch.isfinite(torch.tensor(record["loss"]))        # the last finite loss, not the NaN


def test_infinite_loss_stops_the_run_as_diverged():
    torch.manual_seed(0)
    x, y = images()
    method = SimCLR(SmallCNN(), make_head("mlp", 64), lambda z1, z2: nt_xent(z1, z2, 0.2) + float("inf"))
    record = train(method, x, y, torch.Generator().manual_seed(0), TrainSettings(steps=5, batch=8), progress=False)
    assert record["status"] == "diverged" and record["steps_done"] == 0 and "inf" in record["reason"]


def test_constant_embeddings_stop_the_run_as_collapsed():
    torch.manual_seed(0)
    x, y = images()
    method = SimCLR(SmallCNN(), Constant(), lambda z1, z2: nt_xent(z1, z2, 0.2))
    record = train(method, x, y, torch.Generator().manual_seed(0), TrainSettings(steps=3 * CHECK_EVERY, batch=8), progress=False)
    assert record["status"] == "collapsed" and record["steps_done"] == CHECK_EVERY
    assert f"step {CHECK_EVERY - 1}" in record["reason"]


def test_a_healthy_run_is_not_stopped():
    torch.manual_seed(0)
    x, y = images()
    method = SimCLR(SmallCNN(), make_head("mlp", 64), lambda z1, z2: nt_xent(z1, z2, 0.2))
    record = train(method, x, y, torch.Generator().manual_seed(0), TrainSettings(steps=CHECK_EVERY + 1, batch=8), progress=False)
    assert record["status"] == "ok" and record["steps_done"] == CHECK_EVERY + 1 and record["reason"] is None


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    """A 60-image dataset on disk, the data settings and a small evaluation."""
    data_dir = tmp_path_factory.mktemp("data")
    data = data_params(shapes={"n_train": 60, "n_test": 40})
    save_dataset(build_dataset("shapes", data), "shapes", data_dir)
    evaluate = PARAMS.evaluate.model_copy(update={"n_labelled": 40, "n_test": 40, "probe_steps": 20, "wknn_k": 10,
                                                  "labels_per_class": None})
    return data, evaluate, data_dir


EXECUTION = Execution(threads=1, device="cpu", precision="fp32")


def on_shapes(condition, **update):
    """A condition's configuration, on the tiny shapes set of `tiny_study`, with some fields changed."""
    return PARAMS.pretrain.run_config(condition).model_copy(update={"dataset": "shapes", "checkpoints": [], **update})


def train_and_evaluate(condition, tiny_study, seed=1):
    data, evaluate, data_dir = tiny_study
    cfg = on_shapes(condition, steps=6, batch=16, queue=32, ladder=[])
    record, states = train_run(seed, condition, cfg, EXECUTION, data, data_dir)
    method = method_from_state(cfg, states[cfg.steps], record["n_data"], record["n_classes"])
    dataset = torch.load(data_dir / "shapes.pt", weights_only=True)
    return record, states, evaluate_method(method, cfg, dataset, evaluate, seed)


@pytest.mark.parametrize("condition", ["simclr", "moco_m099", "supcon_out"])
def test_the_same_run_twice_gives_bit_identical_metrics(tiny_study, condition):
    a, state_a, eval_a = train_and_evaluate(condition, tiny_study)
    b, state_b, eval_b = train_and_evaluate(condition, tiny_study)
    assert a["status"] == "ok" and eval_a["h"]["linear"] > 0
    assert differences(a, b) == [] and differences(eval_a, eval_b) == []   # every value but time and memory
    assert sorted(state_a) == [0, 6]
    assert all(torch.equal(state_a[s][k], state_b[s][k]) for s in state_a for k in state_a[s])
    assert a["wall_s"] > 0 and a["peak_rss_mb"] > 0


def test_the_step_0_checkpoint_is_the_untrained_initialisation(tiny_study):
    """The control: the state at step 0 equals a freshly built method of the same seed, and the
    last checkpoint differs from it (training moved the weights)."""
    from contrastive.methods import build_method
    record, states, _ = train_and_evaluate("simclr", tiny_study, seed=3)
    torch.manual_seed(3)
    fresh = build_method(PARAMS.pretrain.run_config("simclr"), record["n_data"], record["n_classes"]).state_dict()
    assert all(torch.equal(states[0][k], fresh[k]) for k in fresh)
    assert not all(torch.equal(states[0][k], states[6][k]) for k in fresh)


def test_differences_names_each_changed_leaf():
    a = {"loss": 1.0, "eval": {"h": {"linear": 0.5}}, "curve": [[0, 2.0], [1, 1.5]], "wall_s": 3}
    b = {"loss": 1.0, "eval": {"h": {"linear": 0.6}}, "curve": [[0, 2.0], [1, 1.4]], "wall_s": 4}
    assert differences(a, b) == [("curve[1][1]", 1.5, 1.4), ("eval.h.linear", 0.5, 0.6)]


WRITER = """
import sys, time
from replication import io
path, kind = sys.argv[1], sys.argv[2]
with io.atomic_path(path) as tmp:
    with open(tmp, "w") as f:
        f.write("half of the new conten")
        f.flush()
        print("writing", flush=True)
        time.sleep(60)
"""


def test_sigkill_during_a_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "metrics.json"
    target.write_text(json.dumps({"old": True}))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target), "json"], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "writing"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert json.loads(target.read_text()) == {"old": True}
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "metrics.json"]
    assert all(name.endswith(".tmp") for name in leftovers)     # ignored by git; never read by a stage


def test_a_snapshot_on_the_way_equals_a_run_that_stops_there(tiny_study):
    """Saving checkpoints draws nothing: the state at step 6 of a 12-step run equals the end of a
    6-step run of the same seed, bit for bit (the basis of evaluating rungs of one long run)."""
    data, _, data_dir = tiny_study
    dataset = torch.load(data_dir / "shapes.pt", weights_only=True)

    def run(steps, at):
        from contrastive.methods import build_method
        cfg = on_shapes("simclr", steps=steps, batch=16)
        torch.manual_seed(2)
        method = build_method(cfg, len(dataset["x_train"]), len(dataset["classes"]))
        states = {}
        keep = lambda step, m, loss: states.update({step: {k: v.clone() for k, v in m.state_dict().items()}}) if step == at else None
        record = train(method, dataset["x_train"], dataset["y_train"], torch.Generator().manual_seed(2), cfg,
                       snapshot=keep, progress=False)
        return record, states[at]

    short, at_6 = run(6, 6)
    long, on_the_way = run(12, 6)
    assert all(torch.equal(at_6[k], on_the_way[k]) for k in at_6)
    assert long["loss_curve"][:len(short["loss_curve"]) - 1] == short["loss_curve"][:-1]


def test_the_300_step_rung_of_a_ladder_run_is_the_300_step_run(tiny_study):
    """A ladder arm trains on past its budget at a constant learning rate; its checkpoint at the
    budget (300 steps) equals a plain 300-step run of the same seed bit for bit, and so does every
    probe of it (evaluation draws from its own generators)."""
    data, evaluate, data_dir = tiny_study
    dataset = torch.load(data_dir / "shapes.pt", weights_only=True)
    plain = on_shapes("simclr", batch=8, checkpoints=[], steps=300, ladder=[])
    ladder = plain.model_copy(update={"ladder": [310]})
    assert plain.steps == 300 and ladder.rungs == [0, 300, 310]
    record_plain, states_plain = train_run(0, "simclr", plain, EXECUTION, data, data_dir)
    record_ladder, states_ladder = train_run(0, "simclr", ladder, EXECUTION, data, data_dir)
    assert sorted(states_ladder) == [0, 300, 310] and record_ladder["steps_done"] == 310
    assert all(torch.equal(states_plain[300][k], states_ladder[300][k]) for k in states_plain[300])
    assert record_ladder["rung_loss"]["300"] == record_plain["rung_loss"]["300"]
    probes = [evaluate_method(method_from_state(plain, states[300], 60, 10), plain, dataset, evaluate, 0)
              for states in (states_plain, states_ladder)]
    assert differences(*probes) == []


def test_sigmoid_loss_learns_its_temperature_and_bias_and_records_them(tiny_study):
    data, _, data_dir = tiny_study
    cfg = on_shapes("siglip_b32", steps=20, ladder=[], batch=16)
    record, _ = train_run(0, "siglip_b32", cfg, EXECUTION, data, data_dir)
    learned = record["learned_scalars"]
    assert set(learned) == {"criterion.log_t", "criterion.b"}
    assert learned["criterion.b"] != pytest.approx(-10.0, abs=1e-4)      # moved from its start (the paper's -10)
    assert learned["criterion.log_t"] != pytest.approx(math.log(10), abs=1e-4)
