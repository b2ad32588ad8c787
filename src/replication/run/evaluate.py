"""Evaluating the checkpoints of a training run: every probe at every rung, BatchNorm calibrated.

Before its probes, each checkpoint's BatchNorm running statistics are re-estimated on training
images (replication.run.calibration: the rule; weights untouched). The evaluation record
(results/evaluate/<study>/<condition>/seed_<k>.json) holds `at` (rung step -> metrics, every
checkpoint), `control` (step 0: the untrained encoder, calibrated), `eval` (the study's budget,
`steps`, which most claims read; None for a run that failed before it, which is listed as failed
and never averaged), `rungs` (the steps evaluated), `bn` ("calibrated") with `calibration` (its
settings and rule), and the linear probe on h and z with the statistics the checkpoint was saved
with: `control_uncalibrated` and `eval_uncalibrated`, and `config_sha256`, the digest of the
resolved/evaluate.json it ran under.

The all-label linear probe `linear_full` (the published protocol, which the claims on an all-label
linear evaluation read) is fitted at every checkpoint (run 2's records hold it at the budget only).
The budget's own probes (rotation) run at every rung of an arm trained with rotations, its control
included, so that their claims see the untrained encoder and the trend.
"""
from pathlib import Path

import torch

from contrastive.augment import augment
from contrastive.distributed import select_device
from contrastive.evaluate import contrastive_top1, evaluate_representation, linear_probes
from contrastive.methods import build_method
from contrastive.train import Timer, augment_options, check_precision

from .calibration import RULE, recalibrate_bn
from .config import RunConfig
from .datasets import dataset_for
from .train import run_name
from ..io import cpu_model, digest, read_json, sha256
from ..schema import excerpt


class CheckpointError(Exception):
    """A run's checkpoint is missing or does not match the sha256 recorded in its training record."""


def evaluate_method(method, cfg, data, eval_params, seed, budget=False, cheap=False, full_labels=None):
    """Every frozen-feature metric of a method's encoder (budget: with the probes only the budget gets;
    cheap, full_labels: evaluate_representation's), and how often it solves its pretext task. Draws
    only from generators seeded here, never from the training generator."""
    views = lambda x, gen: augment(x, gen, **augment_options(cfg))     # the views the run trained on
    evaluation = evaluate_representation(method.f, method.g, data, eval_params, seed, views, budget=budget,
                                         cheap=cheap, full_labels=full_labels)
    evaluation["contrastive_top1"] = contrastive_top1(method, data["x_test"][:512], seed, views, cfg.normalize)
    return evaluation


def method_from_state(cfg, state, n_data, n_classes):
    """The method of `cfg` with a saved state, in the memory layout it was trained in."""
    method = build_method(cfg, n_data=n_data, n_classes=n_classes)
    if cfg.channels_last:
        method.to(memory_format=torch.channels_last)
    method.load_state_dict(state)
    return method


def load_checkpoint(checkpoint, record_path, root="."):
    """The state dict of one checkpoint of a training record, checked against its sha256;
    CheckpointError names the file and how to get it back."""
    path = Path(root, checkpoint["path"])
    if not path.resolve().is_relative_to(Path(root).resolve()):
        raise CheckpointError(f"{record_path}: checkpoint path {excerpt(checkpoint['path'])} leads outside the "
                              f"repository; restore the record with `git checkout -- {record_path}`")
    study = Path(checkpoint["path"]).parts[2]
    # --force: without it `dvc checkout` refuses to replace a file it finds modified
    fix = (f"restore it with `dvc checkout {checkpoint['path']} --force` (`dvc pull` it first on a clone "
           f"without DVC's cache) or retrain with `dvc repro -f pretrain@{study}`")
    if not path.exists():
        raise CheckpointError(f"{checkpoint['path']}: missing checkpoint; {fix}")
    if sha256(path) != checkpoint["sha256"]:
        raise CheckpointError(f"{checkpoint['path']}: contents do not match the sha256 in {record_path} "
                              f"(corrupted or truncated); {fix}")
    return torch.load(path, weights_only=True, map_location="cpu")


def evaluation_tasks(study, evaluate_config):
    """(training record, evaluation settings, data settings) of every run of a resolved study (a
    StudyConfig), in the order of its conditions and seeds: evaluate_run's arguments."""
    return [(f"results/pretrain/{run_name(study.study, name, seed)}.json", evaluate_config, study.data)
            for name in study.conditions for seed in study.seeds]


def evaluate_run(record_path, evaluate_config, data_settings, data_dir="data", root=".", cheap=False):
    """Evaluate every checkpoint of one training record, BatchNorm calibrated first (the uncalibrated
    linear probes of the control and the budget kept; cheap: evaluate_representation's, which run 2
    did not use, refused where its bf16 forward passes would be emulated: check_precision); returns
    the evaluation record (above). A run that stopped early (diverged, collapsed) has checkpoints
    only at the rungs it reached before the stop, so its later rungs, and `eval` if the budget is one
    of them, are missing."""
    record = read_json(Path(root, record_path))
    torch.set_num_threads(evaluate_config.execution.threads)
    cfg = RunConfig(**record["config"])
    device = select_device(evaluate_config.execution.device)
    check_precision("bf16" if cheap else "fp32", device, fix="evaluate in float32 (cheap=False)")
    data = dataset_for(cfg.dataset, data_settings, data_dir)
    probes, bn = evaluate_config.evaluate, evaluate_config.control
    with Timer() as clock:
        by_step, uncalibrated = {}, {}
        for checkpoint in record["checkpoints"]:
            step = checkpoint["step"]
            state = load_checkpoint(checkpoint, record_path, root)
            method = method_from_state(cfg, state, record["n_data"], record["n_classes"]).to(device)
            if step in (0, cfg.steps):
                uncalibrated[step] = linear_probes(method.f, method.g, data, probes, cheap)
            recalibrate_bn([method.f, method.g], data["x_train"], bn.bn_batches, bn.bn_batch_size)
            # a rotated arm gets the budget's probes (rotation) at every rung, its untrained control included
            by_step[step] = evaluate_method(method, cfg, data, probes, record["seed"],
                                            budget=step == cfg.steps or cfg.rotate,
                                            cheap=cheap, full_labels=True)
    return {"condition": record["condition"], "seed": record["seed"],
            "config_sha256": digest(evaluate_config.model_dump()), "status": record["status"],
            "reason": record["reason"], "rungs": sorted(by_step), "control": by_step.get(0),
            "eval": by_step.get(cfg.steps), "at": {str(step): metrics for step, metrics in sorted(by_step.items())},
            "bn": "calibrated", "control_uncalibrated": uncalibrated.get(0),
            "eval_uncalibrated": uncalibrated.get(cfg.steps),
            "calibration": {"batches": bn.bn_batches, "batch_size": bn.bn_batch_size,
                            "images": bn.bn_batches * bn.bn_batch_size, "rule": RULE},
            "wall_s": clock.seconds, "threads": evaluate_config.execution.threads, "cpu": cpu_model()}
