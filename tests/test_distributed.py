"""Data parallelism: two gloo processes on the CPU give the loss and gradients of one process on
the same global batch (SimCLR's global BN and negatives from every rank, SupCon, MoCo with BN per
device with and without shuffling across devices, the memory bank), and the training loop on two
ranks follows the one-process run; torchrun starts ranks; the cifar10 profile trains on the CPU."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from contrastive.distributed import data_parallel, local_slice, mean_over_ranks, run_on_ranks, world_size
from contrastive.methods import build_method
from contrastive.models import SmallCNN
from contrastive.train import TrainSettings, train
from helpers import run_config
from replication.run.config import Execution, FolderData, RunData, parse_params
from replication.run.evaluate import evaluate_method, method_from_state
from replication.run.train import train_run

N = 16   # global batch


def global_batch():
    gen = torch.Generator().manual_seed(5)
    v1, v2 = torch.rand(N, 3, 16, 16, generator=gen), torch.rand(N, 3, 16, 16, generator=gen)
    return v1, v2, torch.randint(0, 3, (N,), generator=gen), torch.randperm(40, generator=gen)[:N]


def loss_and_gradients(cfg):
    """One forward and backward on this process's share of the global batch."""
    torch.manual_seed(0)
    method = build_method(cfg, n_data=40, n_classes=3)
    model = data_parallel(method, torch.device("cpu"))
    v1, v2, labels, index = (local_slice(t) for t in global_batch())
    loss, _ = model(v1, v2, labels, index)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in method.named_parameters() if p.grad is not None}
    return mean_over_ranks(loss.item()), grads, world_size()


CASES = {   # condition on 2 ranks -> the same in one process
    "simclr": ({}, {}),
    "supcon": ({"method": "supcon", "tau": 0.1}, {"method": "supcon", "tau": 0.1}),
    "moco per-device BN": ({"method": "moco", "queue": 32}, {"method": "moco", "queue": 32, "bn_groups": 2}),
    "moco shuffled BN": ({"method": "moco", "queue": 32, "shuffle_bn": True},
                         {"method": "moco", "queue": 32, "bn_groups": 2, "shuffle_bn": True}),
    "memory bank": ({"method": "memory_bank", "queue": 8}, {"method": "memory_bank", "queue": 8}),
}


@pytest.mark.parametrize("case", CASES)
def test_two_ranks_give_the_loss_and_gradients_of_one_process(case):
    on_ranks, alone = CASES[case]
    loss_2, grads_2, world_size = run_on_ranks(2, loss_and_gradients, run_config(batch=N, **on_ranks))
    loss_1, grads_1, _ = loss_and_gradients(run_config(batch=N, **alone))
    assert world_size == 2
    assert loss_2 == pytest.approx(loss_1, rel=1e-5)
    assert grads_2.keys() == grads_1.keys() and len(grads_1) > 4
    for name in grads_1:
        torch.testing.assert_close(grads_2[name], grads_1[name], rtol=1e-4, atol=1e-6, msg=name)


def short_training(cfg, steps=4):
    torch.manual_seed(0)
    method = build_method(cfg, n_data=40, n_classes=3)
    x, y = torch.rand(40, 3, 16, 16, generator=torch.Generator().manual_seed(1)), torch.arange(40) % 3
    record = train(method, x, y, torch.Generator().manual_seed(0), TrainSettings(steps=steps, batch=N), progress=False)
    return record, {name: p.detach().clone() for name, p in method.named_parameters()}


def test_the_training_loop_on_two_ranks_follows_one_process():
    cfg = run_config(batch=N, channels_last=False)
    (record_2, state_2), (record_1, state_1) = run_on_ranks(2, short_training, cfg), short_training(cfg)
    assert record_2["steps_done"] == record_1["steps_done"] == 4
    for (_, a), (_, b) in zip(record_2["loss_curve"], record_1["loss_curve"]):
        assert a == pytest.approx(b, rel=1e-5)
    # a convolution's bias before BN gets a zero gradient up to rounding, which Adam's normalised
    # step turns into noise of size lr: not comparable (nor, therefore, BN's running means)
    before_bn = {f"f.net.{i}.bias" for i, m in enumerate(SmallCNN().net) if isinstance(m, torch.nn.Conv2d)}
    for name in state_1.keys() - before_bn:
        torch.testing.assert_close(state_2[name].float(), state_1[name].float(), rtol=1e-4, atol=1e-5, msg=name)


def test_ranks_must_divide_the_batch():
    with pytest.raises(ValueError, match="must divide batch"):
        run_config(batch=30, ranks=4)


def test_the_cifar10_profile_trains_a_few_steps_on_a_tiny_image_folder(tmp_path):
    """The cifar10 profile's settings (ResNet-18, batch 512, 48,900 steps, all of CIFAR-10 for the
    probes), shrunk to 2 steps of 8 images of a 24-image folder, on the CPU."""
    from PIL import Image
    for c, colour in enumerate([(200, 30, 30), (30, 200, 30), (30, 30, 200)]):
        (tmp_path / f"class{c}").mkdir()
        for i in range(8):
            Image.new("RGB", (40, 40), tuple(min(255, v + 7 * i) for v in colour)).save(tmp_path / f"class{c}" / f"{i}.png")
    raw = yaml.safe_load(Path(__file__).resolve().parents[1].joinpath("params.yaml").read_text())
    params = parse_params({**raw, "profile": "cifar10", "device": "cpu"})
    cfg = params.pretrain.run_config("simclr")
    assert (cfg.dataset, cfg.encoder, cfg.batch, cfg.steps) == ("cifar10", "resnet18", 512, 48_960)
    data = RunData(image_size=32, imagefolder=FolderData(root=str(tmp_path), seed=0, n_test=0.25))
    cfg = cfg.model_copy(update={"dataset": "imagefolder", "steps": 2, "batch": 8})
    record, states = train_run(0, "simclr", cfg, Execution(threads=1, device="cpu", precision="fp32"), data)
    assert record["status"] == "ok" and record["steps_done"] == 2 and record["device"] == "cpu"
    assert any(k.startswith("f.layer4") for k in states[2])   # a ResNet-18
    from replication.run.datasets import dataset_for
    method = method_from_state(cfg, states[2], record["n_data"], record["n_classes"])
    evaluation = evaluate_method(method, cfg, dataset_for("imagefolder", data), params.evaluate, 0)
    assert evaluation["protocol"]["n_labelled"] == 18 and 0 <= evaluation["h"]["wknn"] <= 1 and len(evaluation["h"]) > 5


TORCHRUN_SCRIPT = """
import torch
from contrastive.distributed import init_from_env, rank, select_device, world_size
from contrastive.methods import build_method
from contrastive.train import TrainSettings, train
from helpers import run_config
init_from_env(select_device("cpu"))
torch.manual_seed(0)
method = build_method(run_config(batch=8), n_data=16, n_classes=2)
record = train(method, torch.rand(16, 3, 16, 16), torch.arange(16) % 2, torch.Generator().manual_seed(0),
               TrainSettings(steps=2, batch=8), progress=False)
print(f"rank {rank()} of {world_size()}: {record['status']} {record['steps_done']}")
"""


def test_torchrun_launches_two_gloo_ranks(tmp_path):
    script = tmp_path / "two_ranks.py"
    script.write_text(TORCHRUN_SCRIPT)
    torchrun = Path(sys.executable).parent / "torchrun"
    result = subprocess.run([str(torchrun), "--standalone", "--nproc-per-node", "2", str(script)],
                            capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parent)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rank 0 of 2: ok 2" in result.stdout and "rank 1 of 2: ok 2" in result.stdout
