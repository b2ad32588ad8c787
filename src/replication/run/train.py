"""Training a condition over seeds, with a checkpoint at every rung: step 0 (the untrained
control: the same initialisation, never trained), the study's budget (`steps`) and, for a ladder
arm, every later rung (`ladder`), one run going on to the last at a constant learning rate.
src/replication/run/evaluate.py evaluates the checkpoints.

Training and evaluation are separate pipeline stages (pretrain@<study>, evaluate@<study>): the
training record (results/pretrain/...) holds what training did; the evaluation record
(results/evaluate/...) what the probes found at each rung. Runs (condition x seed) go to parallel
worker processes (spawned, one torch thread each by default): on a 2-core machine two
single-threaded runs use both cores better than one two-threaded run.
"""
import math
import platform
from pathlib import Path

import torch

from contrastive.distributed import run_on_ranks, select_device, world_size
from contrastive.methods import build_method
from contrastive.train import Timer, check_precision, peak_rss_mb, train

from .datasets import dataset_for
from ..io import cpu_model, run_digest, save_torch, sha256, write_json


def run_name(study, condition, seed):
    return f"{study}/{condition}/seed_{seed}"


# ---------------------------------------------------------------- training

def training_tasks(study):
    """(seed, condition, config, execution, data settings) for every condition of a resolved study
    (a StudyConfig) and every seed, the most expensive first (images processed: steps x batch), so
    that parallel workers finish together."""
    tasks = [(seed, name, cfg, study.execution, study.data)
             for name, cfg in study.conditions.items() for seed in study.seeds]
    return sorted(tasks, key=lambda t: -t[2].rungs[-1] * t[2].batch * t[2].ranks)


def train_run(seed, condition, cfg, execution, data_settings, data_dir="data"):
    """One training run to the condition's last rung: (record, {step: state_dict} at each rung
    reached). The record holds, per rung, the mean training loss of the steps just before it
    (`rung_loss`), and the final value of every learned scalar (SigLIP's log t and b); a learned
    temperature also as itself, at each rung (`rung_tau`) and at the end (`tau_final`), and the digest
    of the resolved settings it ran under (`config_sha256`: config.run_digest). A diverged
    or collapsed run stops early and keeps the checkpoints of the rungs it reached. A condition
    with ranks > 1 runs in that many gloo processes (unless already launched by torchrun). The
    execution's precision ("fp32", or "bf16": the encoder and head under bfloat16 autocast) holds for
    the whole run (contrastive.train.train); bf16 that this CPU would emulate is refused before
    anything else (PrecisionError: contrastive.train.check_precision)."""
    device = select_device(execution.device)
    check_precision(execution.precision, device)
    if cfg.ranks > 1 and world_size() == 1:
        return run_on_ranks(cfg.ranks, train_run, seed, condition, cfg, execution, data_settings, data_dir)
    torch.set_num_threads(execution.threads)
    data = dataset_for(cfg.dataset, data_settings, data_dir)
    states, rung_loss, rung_tau, wanted = {}, {}, {}, set(cfg.rungs)

    def snapshot(step, method, recent_loss):
        if step in wanted:
            states[step] = {k: v.detach().cpu().clone() for k, v in method.state_dict().items()}
            rung_loss[step] = recent_loss
            if cfg.learn_tau:
                rung_tau[str(step)] = method.criterion.tau().item()

    with Timer() as clock:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        method = build_method(cfg, n_data=len(data["x_train"]), n_classes=len(data["classes"]))
        to_top = cfg.model_copy(update={"steps": cfg.rungs[-1], "ladder": [], "checkpoints": []})
        record = train(method, data["x_train"], data["y_train"], gen, to_top, device=device, snapshot=snapshot,
                       desc=f"{condition} seed {seed}", precision=execution.precision)
    if cfg.method == "moco":   # the key encoder averages over about 1 / (1 - m) steps
        horizon = math.inf if cfg.momentum == 1 else 1 / (1 - cfg.momentum)
        record["key_horizon_steps"] = None if math.isinf(horizon) else horizon
        record["horizon_over_steps"] = None if math.isinf(horizon) else horizon / cfg.steps
    if cfg.learn_tau:
        record["rung_tau"], record["tau_final"] = rung_tau, method.criterion.tau().item()
    record = {"condition": condition, "seed": seed, "config": cfg.model_dump(),
              "config_sha256": run_digest(cfg.model_dump(), execution.model_dump(), data_settings.model_dump()),
              "n_data": len(data["x_train"]), "n_classes": len(data["classes"]), **record,
              "rung_loss": {str(step): loss for step, loss in sorted(rung_loss.items())},
              "learned_scalars": {name: p.item() for name, p in method.named_parameters() if p.numel() == 1},
              "wall_s": clock.seconds, "peak_rss_mb": peak_rss_mb(), "threads": execution.threads,
              "world_size": world_size(), "device": device.type, "precision": execution.precision,
              "lr_used": cfg.batch_lr, "torch": torch.__version__,
              "machine": platform.machine(), "cpu": cpu_model()}
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


# what may differ between equal runs (config_sha256 holds the thread count)
NOT_RESULTS = {"wall_s", "peak_rss_mb", "threads", "checkpoints", "path", "cpu", "config_sha256"}


def differences(a, b, path=""):
    """[(field, value in a, value in b)] for every leaf where two records differ, skipping the
    bookkeeping in NOT_RESULTS."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b), key=str) if key not in NOT_RESULTS
                for d in differences(a.get(key), b.get(key), f"{path}.{key}".lstrip("."))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]
