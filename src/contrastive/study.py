"""Running a condition over seeds: pretrain, evaluate, record.

Runs (condition x seed) go to parallel worker processes (spawned, one torch thread each by default): on a 2-core
machine two single-threaded runs use both cores better than one two-threaded run.
"""
import math
import multiprocessing
import platform
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from .augment import augment
from .config import RunConfig, load_params
from .data import DataError, dataset_for
from .distributed import run_on_ranks, select_device, world
from .evaluate import contrastive_top1, evaluate_representation
from .io import read_json, save_torch, sha256, write_json
from .methods import build_method
from .train import Timer, peak_rss_mb, train


class CheckpointError(Exception):
    """A run's checkpoint is missing or does not match the sha256 recorded in its metrics."""


def map_runs(fn, tasks, workers):
    """[fn(*task) for task in tasks], in up to `workers` spawned processes, results in task order.
    Tasks are handed out in the given order, so put the longest first."""
    if workers <= 1 or len(tasks) <= 1:
        return [fn(*task) for task in tasks]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context) as pool:
        return list(pool.map(fn, *zip(*tasks)))


def study_tasks(params, study):
    """(seed, condition, config, params) for every condition of a study and every seed, the most
    expensive first (images processed: steps x batch), so parallel workers finish together."""
    tasks = [(seed, name, params.pretrain.run_config(name), params)
             for name in params.pretrain.studies[study] for seed in params.pretrain.seeds]
    return sorted(tasks, key=lambda t: -t[2].steps * t[2].batch)


def pretrain_seed(seed, condition, cfg, params, data_dir="data"):
    """One run of a condition: returns (metrics, state_dict). A diverged or collapsed run is
    recorded with its status and reason and not evaluated. A condition with ranks > 1 runs in that
    many gloo processes (unless already launched by torchrun)."""
    if cfg.ranks > 1 and world()[1] == 1:
        return run_on_ranks(cfg.ranks, pretrain_seed, seed, condition, cfg, params, data_dir)
    threads, eval_params = params.threads, params.evaluate
    torch.set_num_threads(threads)
    device = select_device(params.device)
    data = dataset_for(cfg.dataset, params.data, data_dir)
    with Timer() as clock:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        method = build_method(cfg, n_data=len(data["x_train"]), n_classes=len(data["classes"]))
        record = train(method, data["x_train"], data["y_train"], gen, steps=cfg.steps, batch=cfg.batch,
                       lr=cfg.lr, schedule=cfg.schedule, blur=cfg.blur, rotate=cfg.rotate,
                       channels_last=cfg.channels_last, device=device, amp=params.amp,
                       desc=f"{condition} seed {seed}")
        evaluation = evaluate(method, cfg, data, eval_params, seed) if record["status"] == "ok" else None
    if cfg.method == "moco":   # the key encoder averages over about 1 / (1 - m) steps
        horizon = math.inf if cfg.momentum == 1 else 1 / (1 - cfg.momentum)
        record["key_horizon_steps"] = None if math.isinf(horizon) else horizon
        record["horizon_over_steps"] = None if math.isinf(horizon) else horizon / cfg.steps
    metrics = {"condition": condition, "seed": seed, "config": cfg.model_dump(),
               "n_data": len(data["x_train"]), "n_classes": len(data["classes"]), **record,
               "eval": evaluation, "wall_s": clock.seconds, "peak_rss_mb": peak_rss_mb(),
               "threads": threads, "world_size": world()[1], "device": device.type,
               "torch": torch.__version__, "machine": platform.machine()}
    return metrics, {k: v.cpu() for k, v in method.state_dict().items()}


NOT_RESULTS = {"wall_s", "peak_rss_mb", "threads", "checkpoint"}   # what may differ between equal runs


def differences(a, b, path=""):
    """[(field, value in a, value in b)] for every leaf where two runs' metrics differ, skipping
    the bookkeeping in NOT_RESULTS."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b), key=str) if key not in NOT_RESULTS
                for d in differences(a.get(key), b.get(key), f"{path}.{key}".lstrip("."))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


def evaluate(method, cfg, data, eval_params, seed):
    """Every frozen-feature metric of a pretrained method, and how often it solves its pretext task."""
    views = lambda x, gen: augment(x, gen, blur=cfg.blur)
    evaluation = evaluate_representation(method.f, method.g, data, eval_params, seed, views)
    evaluation["contrastive_top1"] = contrastive_top1(method, data["x_test"][:512], seed, views, cfg.normalize)
    return evaluation


def save_run(study, metrics, state, root="."):
    """Write a run's checkpoint to artifacts/pretrain/, then its metrics (with the checkpoint's
    sha256) to results/pretrain/: a metrics file exists only beside a complete checkpoint."""
    run = f"{study}/{metrics['condition']}/seed_{metrics['seed']}"
    checkpoint = f"artifacts/pretrain/{run}.pt"
    save_torch(Path(root, checkpoint), state)
    metrics = {**metrics, "checkpoint": {"path": checkpoint, "sha256": sha256(Path(root, checkpoint))}}
    write_json(Path(root, f"results/pretrain/{run}.json"), metrics)


def load_run(metrics_path, root="."):
    """(metrics, method) of a finished run, its checkpoint checked against the sha256 recorded
    in its metrics; CheckpointError says what is wrong and how to get the file back."""
    metrics = read_json(metrics_path)
    if metrics.get("checkpoint") is None:
        raise CheckpointError(f"{metrics_path}: no checkpoint recorded (an older or failed run)")
    path, study = Path(root, metrics["checkpoint"]["path"]), Path(metrics["checkpoint"]["path"]).parts[2]
    fix = f"restore it with `dvc checkout {path.relative_to(root)}` or retrain with `dvc repro -f pretrain@{study}`"
    if not path.exists():
        raise CheckpointError(f"{path}: missing checkpoint; {fix}")
    if sha256(path) != metrics["checkpoint"]["sha256"]:
        raise CheckpointError(f"{path}: contents do not match the sha256 in {metrics_path} "
                              f"(corrupted or truncated); {fix}")
    cfg = RunConfig(**metrics["config"])
    torch.manual_seed(metrics["seed"])
    method = build_method(cfg, n_data=metrics["n_data"], n_classes=metrics["n_classes"])
    if cfg.channels_last:       # the layout it was trained and evaluated in
        method.to(memory_format=torch.channels_last)
    method.load_state_dict(torch.load(path, weights_only=True, map_location="cpu"))
    return metrics, method


def reevaluate(metrics_path):
    """Re-run the evaluation of a finished run from its checkpoint: the figures must equal the
    recorded ones (same params, threads and data). Prints recorded and recomputed probes on h."""
    params = load_params()
    metrics, method = load_run(metrics_path)
    torch.set_num_threads(metrics["threads"])
    cfg = RunConfig(**metrics["config"])
    data = dataset_for(cfg.dataset, params.data)
    again = evaluate(method, cfg, data, params.evaluate, metrics["seed"])
    recorded = metrics["eval"]
    for probe in ("linear", "knn", "wknn"):
        print(f"{probe:7s} on h: recorded {recorded['h'][probe]:.4f}, recomputed {again['h'][probe]:.4f}")
    same = again == recorded
    print("identical to the recorded evaluation" if same else "differs from the recorded evaluation")
    return 0 if same else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m contrastive.study results/pretrain/<study>/<condition>/seed_<k>.json",
              file=sys.stderr)
        raise SystemExit(2)
    try:
        raise SystemExit(reevaluate(sys.argv[1]))
    except (CheckpointError, DataError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1)
