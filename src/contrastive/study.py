"""Running a condition over seeds: pretrain, evaluate, record.

Runs (condition x seed) go to parallel worker processes (spawned, one torch thread each by default): on a 2-core
machine two single-threaded runs use both cores better than one two-threaded run.
"""
import math
import multiprocessing
import platform
from concurrent.futures import ProcessPoolExecutor

import torch

from .augment import augment
from .data import dataset_for
from .evaluate import evaluate_representation
from .losses import contrastive_accuracy
from .methods import build_method
from .train import Timer, peak_rss_mb, train


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
                       channels_last=cfg.channels_last, desc=f"{condition} seed {seed}")
        evaluation = None
        if record["status"] == "ok":
            views = lambda x, g: augment(x, g, blur=cfg.blur)
            evaluation = evaluate_representation(method.f, method.g, data, eval_params, seed, views)
            evaluation["contrastive_top1"] = contrastive_top1(method, data["x_test"][:512], seed, views,
                                                              cfg.normalize)
    if cfg.method == "moco":   # the key encoder averages over about 1 / (1 - m) steps
        horizon = math.inf if cfg.momentum == 1 else 1 / (1 - cfg.momentum)
        record["key_horizon_steps"] = None if math.isinf(horizon) else horizon
        record["horizon_over_steps"] = None if math.isinf(horizon) else horizon / cfg.steps
    metrics = {"condition": condition, "seed": seed, "config": cfg.model_dump(), **record,
               "eval": evaluation, "wall_s": clock.seconds, "peak_rss_mb": peak_rss_mb(),
               "threads": threads, "torch": torch.__version__, "machine": platform.machine()}
    return metrics, method.state_dict()


@torch.no_grad()
def contrastive_top1(method, x, seed, views, normalize):
    """How often the pretext task is solved on held-out images: the share of 2N views whose most
    similar other view (by z, eval-mode BN) is their partner."""
    gen = torch.Generator().manual_seed(3_000_017 + seed)
    v1, v2 = views(x, gen), views(x, gen)
    was_training = method.training
    method.eval()
    z1, z2 = method.g(method.f(v1)), method.g(method.f(v2))
    method.train(was_training)
    return contrastive_accuracy(z1, z2, normalize=normalize)
