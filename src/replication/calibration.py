"""The calibrated untrained control: the step-0 encoder of a run, its BatchNorm statistics
re-estimated on training images, no weight changed.

A step-0 checkpoint holds BatchNorm's initial running statistics (mean 0, variance 1). Probed in
eval mode, every feature is then normalised with statistics no network would use, which biases
the control low. The calibrated control keeps every weight of the step-0 encoder and replaces only
the running statistics.

The rule (recalibrate_bn): reset every BatchNorm's running statistics and switch it to a
cumulative average (momentum None); pass `batches` fixed, consecutive batches of `batch_size`
training images (x[0:b], x[b:2b], ..., no augmentation) through the modules in train mode without
gradients; restore each BatchNorm's momentum and each module's mode. Each running mean is then the
average of the batches' means, each running variance the average of their unbiased variances.

untrained_encoder(record, where) rebuilds the step-0 method of a training record as training built
it (torch.manual_seed(seed), build_method, channels_last) and checks the sha256 of its saved state
against the record's step-0 checkpoint: the control is the training run's own initialisation, with
no checkpoint needed. control_run writes one run's control record
(results/control/<study>/<condition>/seed_<k>.json), probed with evaluate@'s evaluation.
"""
import tempfile
from pathlib import Path

import torch
import torch.nn as nn

from contrastive.distributed import select_device
from contrastive.methods import build_method
from contrastive.train import Timer

from .config import RunConfig
from .datasets import dataset_for
from .evaluation import evaluate_method
from .io import cpu_model, read_json, save_torch, sha256

RULE = ("BatchNorm running statistics reset, then re-estimated as the cumulative average (momentum None) "
        "over fixed consecutive batches of un-augmented training images (the first batches x batch_size), "
        "train mode, no gradient; weights untouched; eval-mode probes as in evaluate@")


class ControlError(Exception):
    """The rebuilt untrained encoder is not the training run's step-0 checkpoint; str(e) is one line."""


def batch_norms(modules):
    """Every BatchNorm layer (1-D, 2-D, 3-D) inside `modules`."""
    return [m for module in modules for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


@torch.no_grad()
def recalibrate_bn(modules, x, batches, batch_size):
    """Re-estimate the running statistics of every BatchNorm in `modules` (applied in turn: the
    output of one is the input of the next, e.g. (f, g)) from `batches` consecutive batches of
    `batch_size` images of x, cumulative average; parameters are untouched (the rule above)."""
    if batches * batch_size > len(x):
        raise ValueError(f"{batches} batches of {batch_size} images need {batches * batch_size} images; "
                         f"the training set has {len(x)}")
    norms, modes = batch_norms(modules), [module.training for module in modules]
    momenta = [bn.momentum for bn in norms]
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None                      # running statistic = mean over the batches seen
    device = next(modules[0].parameters()).device
    for module in modules:
        module.train()
    for i in range(batches):
        out = x[i * batch_size:(i + 1) * batch_size].to(device)
        for module in modules:
            out = module(out)
    for bn, momentum in zip(norms, momenta):
        bn.momentum = momentum
    for module, mode in zip(modules, modes):
        module.train(mode)


def state_sha256(method):
    """The sha256 of a method's state saved as training saves a checkpoint (CPU copies, save_torch)."""
    state = {k: v.detach().cpu().clone() for k, v in method.state_dict().items()}
    with tempfile.TemporaryDirectory() as tmp:
        save_torch(Path(tmp, "step_0.pt"), state)
        return sha256(Path(tmp, "step_0.pt"))


def untrained_encoder(record, where):
    """The step-0 method of a training record, rebuilt as train_run and train built it; ControlError
    (one line naming `where`, the record) when its saved bytes differ from the step-0 checkpoint's."""
    cfg = RunConfig(**record["config"])
    torch.manual_seed(record["seed"])
    method = build_method(cfg, n_data=record["n_data"], n_classes=record["n_classes"])
    if cfg.channels_last:
        method.to(memory_format=torch.channels_last)
    expected = next(c["sha256"] for c in record["checkpoints"] if c["step"] == 0)
    if state_sha256(method) != expected:
        raise ControlError(f"{where}: the rebuilt untrained encoder differs from the training run's step-0 "
                           f"checkpoint (sha256 {expected[:12]}...)")
    return method


def control_run(record_path, config, data_settings, data_dir="data", root="."):
    """The calibrated control of one training record (a ControlConfig gives the probes and the
    calibration): its untrained encoder, BN recalibrated on training images, probed with
    evaluate_method. Returns the control record."""
    record = read_json(Path(root, record_path))
    torch.set_num_threads(config.execution.threads)
    cfg = RunConfig(**record["config"])
    data = dataset_for(cfg.dataset, data_settings, data_dir)
    bn = config.control
    with Timer() as clock:
        method = untrained_encoder(record, record_path).to(select_device(config.execution.device))
        recalibrate_bn([method.f, method.g], data["x_train"], bn.bn_batches, bn.bn_batch_size)
        calibrated = evaluate_method(method, cfg, data, config.evaluate, record["seed"])
    return {"condition": record["condition"], "seed": record["seed"], "calibrated": calibrated,
            "uncalibrated_sha_match": True,
            "bn": {"batches": bn.bn_batches, "batch_size": bn.bn_batch_size,
                   "images": bn.bn_batches * bn.bn_batch_size, "rule": RULE},
            "wall_s": clock.seconds, "threads": config.execution.threads, "cpu": cpu_model()}
