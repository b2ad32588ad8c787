"""Running a condition over seeds: train it, saving a checkpoint at every rung, then evaluate every
checkpoint. The rungs today are step 0 (the untrained control: the same initialisation, never
trained) and the end of training.

Training and evaluation are separate pipeline stages (pretrain@<study>, evaluate@<study>): the
training record (results/pretrain/...) holds what training did; the evaluation record
(results/evaluate/...) what the probes found at each rung. Runs (condition x seed) go to parallel
worker processes (spawned, one torch thread each by default): on a 2-core machine two
single-threaded runs use both cores better than one two-threaded run.
"""
import math
import multiprocessing
import platform
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from contrastive.augment import augment
from contrastive.distributed import run_on_ranks, select_device, world_size
from contrastive.evaluate import contrastive_top1, evaluate_representation
from contrastive.methods import build_method
from contrastive.train import Timer, peak_rss_mb, train

from .config import RunConfig
from .datasets import dataset_for
from .io import read_json, save_torch, sha256, write_json


class CheckpointError(Exception):
    """A run's checkpoint is missing or does not match the sha256 recorded in its training record."""


def map_runs(fn, tasks, workers):
    """[fn(*task) for task in tasks], in up to `workers` spawned processes, results in task order.
    Tasks are handed out in the given order, so put the longest first."""
    if workers <= 1 or len(tasks) <= 1:
        return [fn(*task) for task in tasks]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context) as pool:
        return list(pool.map(fn, *zip(*tasks)))


def rungs(cfg):
    """The steps at which a run of `cfg` saves a checkpoint: 0 (the untrained control) and the end."""
    return [0, cfg.steps]


def run_name(study, condition, seed):
    return f"{study}/{condition}/seed_{seed}"


# ---------------------------------------------------------------- training

def training_tasks(study):
    """(seed, condition, config, execution, data settings) for every condition of a resolved study
    (a StudyConfig) and every seed, the most expensive first (images processed: steps x batch), so
    that parallel workers finish together."""
    tasks = [(seed, name, cfg, study.execution, study.data)
             for name, cfg in study.conditions.items() for seed in study.seeds]
    return sorted(tasks, key=lambda t: -t[2].steps * t[2].batch)


def train_run(seed, condition, cfg, execution, data_settings, data_dir="data"):
    """One training run: (record, {step: state_dict} at each rung reached). A diverged or collapsed
    run stops early and keeps the checkpoints of the rungs it reached. A condition with ranks > 1
    runs in that many gloo processes (unless already launched by torchrun)."""
    if cfg.ranks > 1 and world_size() == 1:
        return run_on_ranks(cfg.ranks, train_run, seed, condition, cfg, execution, data_settings, data_dir)
    torch.set_num_threads(execution.threads)
    device = select_device(execution.device)
    data = dataset_for(cfg.dataset, data_settings, data_dir)
    states, wanted = {}, set(rungs(cfg))

    def snapshot(step, method):
        if step in wanted:
            states[step] = {k: v.detach().cpu().clone() for k, v in method.state_dict().items()}

    with Timer() as clock:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        method = build_method(cfg, n_data=len(data["x_train"]), n_classes=len(data["classes"]))
        record = train(method, data["x_train"], data["y_train"], gen, cfg, device=device, amp=execution.amp,
                       snapshot=snapshot, desc=f"{condition} seed {seed}")
    if cfg.method == "moco":   # the key encoder averages over about 1 / (1 - m) steps
        horizon = math.inf if cfg.momentum == 1 else 1 / (1 - cfg.momentum)
        record["key_horizon_steps"] = None if math.isinf(horizon) else horizon
        record["horizon_over_steps"] = None if math.isinf(horizon) else horizon / cfg.steps
    record = {"condition": condition, "seed": seed, "config": cfg.model_dump(),
              "n_data": len(data["x_train"]), "n_classes": len(data["classes"]), **record,
              "wall_s": clock.seconds, "peak_rss_mb": peak_rss_mb(), "threads": execution.threads,
              "world_size": world_size(), "device": device.type, "torch": torch.__version__,
              "machine": platform.machine()}
    return record, states


def save_run(study, record, states, root="."):
    """Write a run's checkpoints to artifacts/pretrain/<study>/<condition>/seed_<k>/step_<n>.pt, then
    its training record (with each checkpoint's sha256) to results/pretrain/: a record exists only
    beside complete checkpoints."""
    run = run_name(study, record["condition"], record["seed"])
    checkpoints = []
    for step, state in sorted(states.items()):
        path = f"artifacts/pretrain/{run}/step_{step}.pt"
        save_torch(Path(root, path), state)
        checkpoints.append({"step": step, "path": path, "sha256": sha256(Path(root, path))})
    write_json(Path(root, f"results/pretrain/{run}.json"), {**record, "checkpoints": checkpoints})


NOT_RESULTS = {"wall_s", "peak_rss_mb", "threads", "checkpoints", "path"}   # what may differ between equal runs


def differences(a, b, path=""):
    """[(field, value in a, value in b)] for every leaf where two records differ, skipping the
    bookkeeping in NOT_RESULTS."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b), key=str) if key not in NOT_RESULTS
                for d in differences(a.get(key), b.get(key), f"{path}.{key}".lstrip("."))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


# ---------------------------------------------------------------- evaluation

def evaluate_method(method, cfg, data, eval_params, seed):
    """Every frozen-feature metric of a method's encoder, and how often it solves its pretext task.
    Draws only from generators seeded here, never from the training generator."""
    views = lambda x, gen: augment(x, gen, blur=cfg.blur)
    evaluation = evaluate_representation(method.f, method.g, data, eval_params, seed, views)
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
    study = Path(checkpoint["path"]).parts[2]
    fix = f"restore it with `dvc checkout {checkpoint['path']}` or retrain with `dvc repro -f pretrain@{study}`"
    if not path.exists():
        raise CheckpointError(f"{checkpoint['path']}: missing checkpoint; {fix}")
    if sha256(path) != checkpoint["sha256"]:
        raise CheckpointError(f"{checkpoint['path']}: contents do not match the sha256 in {record_path} "
                              f"(corrupted or truncated); {fix}")
    return torch.load(path, weights_only=True, map_location="cpu")


def evaluate_run(record_path, evaluate_config, data_settings, data_dir="data", root="."):
    """Evaluate every checkpoint of one training record. Returns the evaluation record: `control`
    (step 0, the untrained encoder), `eval` (the end of training; None for a failed run, which
    is listed as failed and never averaged) and `rungs` (the steps evaluated)."""
    record = read_json(Path(root, record_path))
    torch.set_num_threads(evaluate_config.execution.threads)
    cfg = RunConfig(**record["config"])
    device = select_device(evaluate_config.execution.device)
    data = dataset_for(cfg.dataset, data_settings, data_dir)
    with Timer() as clock:
        by_step = {}
        for checkpoint in record["checkpoints"]:
            state = load_checkpoint(checkpoint, record_path, root)
            method = method_from_state(cfg, state, record["n_data"], record["n_classes"]).to(device)
            by_step[checkpoint["step"]] = evaluate_method(method, cfg, data, evaluate_config.evaluate,
                                                          record["seed"])
    finished = record["status"] == "ok"
    return {"condition": record["condition"], "seed": record["seed"], "status": record["status"],
            "reason": record["reason"], "rungs": sorted(by_step), "control": by_step.get(0),
            "eval": by_step.get(cfg.steps) if finished else None, "wall_s": clock.seconds,
            "threads": evaluate_config.execution.threads}
