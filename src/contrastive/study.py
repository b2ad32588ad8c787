"""Running a condition over seeds: pretrain, evaluate, record.

Seeds run in parallel worker processes (spawned, one torch thread each by default): on a 2-core
machine two single-threaded runs use both cores better than one two-threaded run.
"""
import multiprocessing
import platform
from concurrent.futures import ProcessPoolExecutor

import torch

from .augment import augment
from .data import dataset_for
from .evaluate import evaluate_representation
from .methods import build_method
from .train import Timer, peak_rss_mb, train


def map_seeds(fn, seeds, workers, *args):
    """[fn(seed, *args) for seed in seeds], in up to `workers` spawned processes, in seed order."""
    if workers <= 1 or len(seeds) <= 1:
        return [fn(seed, *args) for seed in seeds]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(seeds)), mp_context=context) as pool:
        return list(pool.map(fn, seeds, *[[a] * len(seeds) for a in args]))


def pretrain_seed(seed, condition, cfg, params, data_dir="data"):
    """One run of a condition: returns (metrics, state_dict). A diverged or collapsed run is
    recorded with its status and reason and not evaluated."""
    threads, eval_params = params.threads, params.evaluate
    torch.set_num_threads(threads)
    data = dataset_for(cfg.dataset, params.data, data_dir)
    with Timer() as clock:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        method = build_method(cfg, n_data=len(data["x_train"]), n_classes=len(data["classes"]))
        record = train(method, data["x_train"], data["y_train"], gen, steps=cfg.steps, batch=cfg.batch,
                       lr=cfg.lr, schedule=cfg.schedule, blur=cfg.blur, rotate=cfg.rotate,
                       desc=f"{condition} seed {seed}")
        evaluation = None
        if record["status"] == "ok":
            evaluation = evaluate_representation(method.f, method.g, data, eval_params, seed,
                                                 lambda x, g: augment(x, g, blur=cfg.blur))
    metrics = {"condition": condition, "seed": seed, "config": cfg.model_dump(), **record,
               "eval": evaluation, "wall_s": clock.seconds, "peak_rss_mb": peak_rss_mb(),
               "threads": threads, "torch": torch.__version__, "machine": platform.machine()}
    return metrics, method.state_dict()
