"""Pilots of the training protocol, before the second registered run adopts it (short runs, never the
pipeline; reports/pilot/):

    python -m tools.pilot_protocol precision [--steps 1200] [--seeds 0 1 2 3 4]
    python -m tools.pilot_protocol schedule  [--rungs 1200 2400] [--seeds 0 1]
    python -m tools.pilot_protocol losses    [--steps 1200] [--seeds 0 1]
    python -m tools.pilot_protocol embedding [--steps 1200] [--seeds 0 1]
    python -m tools.pilot_protocol evaluation [--steps 1200] [--seeds 0 1]

precision: the default arm and three registered contrasts (h - z; tau 0.1 - tau 1.0; SupCon L_out - L_in,
each on the linear probe the claim reads) trained at `steps` over the seeds, once in float32 and once
with the encoder and head under bfloat16 autocast (the loss in float32), evaluated in float32 as
evaluate@ does (BatchNorm calibrated). bf16 is adopted only if every effect moves by less than half its
float32 interval (its half-width), and never mixed within a run.

schedule: the default arm on the constant learning rate with a checkpoint at each rung, against a run
decayed to each rung (warmup-stable-decay: the constant run until the last 20% of the rung's steps,
then linear to 0, contrastive.train.wsd_factor); decayed rungs are adopted only if they gain more than
the seed-to-seed spread of the gain.

losses: each alternative loss at the three settings of its own knob (NT-Logistic's tau 0.2, 0.5, 1.0;
the margin triplet's margin 0.2, 0.5, 1.0), as SimCLR tuned each loss, on a pilot draw of glyphs100
(its generator at seed PILOT_DATA_SEED: other glyphs and other images than the run's, so the choice never
sees the data that judges it), in the run's precision. The setting with the highest mean 20-label linear
probe on h over the seeds is the one the registered run trains.

embedding: the precision pilot's arms trained in bf16 (the run's precision), each checkpoint probed on
features from float32 forward passes and from forward passes under bfloat16 autocast (the probes in
float32): bf16 forward passes are adopted for evaluation only under EMBEDDING_*_POINTS.

evaluation: the same arms, each checkpoint evaluated with every probe of the budget checkpoint twice,
as run 2 did (float32) and cheap (contrastive.evaluate.evaluate_representation's `cheap`, described by
contrastive.evaluate.CHEAP); the cheap evaluation is adopted for the next registered run only under
EVALUATION_*.
Earlier candidates are kept in evaluation_first.* (the rotation probes on bf16 features too) and
evaluation_second.* (the linear probes' gradient unblocked, torch's unfused Adam).

Runs go to two worker processes of one torch thread each; each finished run is added to
reports/pilot/<pilot>_runs.json at once, and a rerun skips the runs already there, so an interrupted
pilot goes on where it stopped.
"""
import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import torch

from contrastive.train import DECAY_SHARE, cpu_capabilities
from replication.io import cpu_model, read_json, write_json
from replication.judge.probes import EMBEDDING_FIGURES
from replication.judge.registry import load_registry
from replication.judge.stats import t_interval
from replication.judge.verdicts import level, level_label
from replication.run.calibration import recalibrate_bn
from replication.run.config import EvaluateConfig, StudyConfig, read_resolved
from contrastive.data import build_dataset
from replication.run.config import DataParams
from replication.run.datasets import dataset_for, save_dataset
from replication.run.evaluate import evaluate_method, method_from_state
from contrastive.evaluate import CHEAP, CHUNK, embed, knn_accuracy, labelled_set, linear_probe_accuracy
from replication.run.train import train_run

OUT = Path("reports/pilot")

# arm -> (study, condition) of the resolved configuration
ARMS = {"simclr": ("simclr_mocov2", "simclr"), "simclr_tau01": ("temperature", "simclr_tau01"),
        "simclr_tau1": ("temperature_high", "simclr_tau1"), "supcon_out": ("supcon", "supcon_out"),
        "supcon_in": ("supcon", "supcon_in")}
# loss -> {setting: arm}: the candidates of the loss tuning pilot, each the default arm with its loss
# and knob (OVERRIDES); the registered run keeps only the chosen one of each
LOSS_SETTINGS = {"NT-Logistic": {"tau 0.2": "simclr_logistic", "tau 0.5": "simclr_logistic_tau05",
                                 "tau 1.0": "simclr_logistic_tau1"},
                 "margin triplet": {"margin 0.2": "simclr_triplet_m02", "margin 0.5": "simclr_triplet",
                                    "margin 1.0": "simclr_triplet_m1"}}
OVERRIDES = {"simclr_logistic": {"loss": "logistic", "tau": 0.2},
             "simclr_logistic_tau05": {"loss": "logistic", "tau": 0.5},
             "simclr_logistic_tau1": {"loss": "logistic", "tau": 1.0},
             "simclr_triplet_m02": {"loss": "margin_triplet", "margin": 0.2},
             "simclr_triplet": {"loss": "margin_triplet", "margin": 0.5},
             "simclr_triplet_m1": {"loss": "margin_triplet", "margin": 1.0}}
PILOT_DATA_SEED = 1                   # the run's glyphs100 is drawn at seed 0
PILOT_DATA = Path(".cache/pilot_data")
# contrast -> ((arm, probe key), (arm, probe key)): a minus b, paired by seed
CONTRASTS = {"h - z (simclr-h-beats-z)": (("simclr", "h.linear"), ("simclr", "z.linear")),
             "tau 0.1 - tau 1.0 (simclr-temperature)": (("simclr_tau01", "h.linear"), ("simclr_tau1", "h.linear")),
             "L_out - L_in (supcon-out-beats-in)": (("supcon_out", "h.linear"), ("supcon_in", "h.linear"))}


def leaf(metrics, key):
    for part in key.split("."):
        metrics = metrics[part]
    return metrics


def train_arm(arm, seed, steps, schedule, precision, data_dir="data"):
    """One arm trained on the datasets in `data_dir` to steps[0] (checkpoints at every step in `steps`):
    (its configuration, training record, states by step, training seconds, the dataset), on one torch
    thread."""
    torch.set_num_threads(1)
    study_name, condition = ARMS.get(arm, ARMS["simclr"])       # an arm of OVERRIDES: the default's
    study = read_resolved(f"pretrain/{study_name}", StudyConfig)
    top, ladder = steps[0], list(steps[1:])
    cfg = study.conditions[condition].model_copy(update={"checkpoints": [], "steps": top, "ladder": ladder,
                                                         "schedule": schedule, **OVERRIDES.get(arm, {})})
    execution = study.execution.model_copy(update={"precision": precision})
    start = time.perf_counter()
    record, states = train_run(seed, arm, cfg, execution, study.data, data_dir)
    seconds = time.perf_counter() - start
    return cfg, record, states, seconds, dataset_for(cfg.dataset, study.data, data_dir)


def calibrated(cfg, record, state, data, bn):
    """The method of a checkpoint with its BatchNorm statistics re-estimated as evaluate@ does."""
    method = method_from_state(cfg, state, record["n_data"], record["n_classes"])
    recalibrate_bn([method.f, method.g], data["x_train"], bn.bn_batches, bn.bn_batch_size)
    return method


def run_one(arm, seed, steps, schedule, precision, full_labels=False, data_dir="data"):
    """Train one arm on the datasets in `data_dir` to `steps` (checkpoints at every step in `steps`),
    evaluate each checkpoint (full_labels: with the all-label linear probe too)."""
    cfg, record, states, train_s, data = train_arm(arm, seed, steps, schedule, precision, data_dir)
    ev = read_resolved("evaluate", EvaluateConfig)
    at = {}
    for step in steps:
        method = calibrated(cfg, record, states[step], data, ev.control)
        metrics = evaluate_method(method, cfg, data, ev.evaluate, seed, budget=full_labels)
        at[str(step)] = {"h": metrics["h"], "z": metrics["z"]}
    return {"arm": arm, "seed": seed, "schedule": schedule, "precision": precision, "status": record["status"],
            "steps": list(steps), "train_s": round(train_s, 1), "loss_curve": record["loss_curve"], "at": at}


def embedding_one(arm, seed, steps, schedule, precision):
    """Train one arm to steps[0] and probe its checkpoint on two sets of features of the same images:
    the forward passes in float32 (as evaluate@ computes them) and under bfloat16 autocast; the 20-label
    linear probe and the kNN classifier on h and z, fitted in float32 on each. Seconds of the forward
    passes of each."""
    cfg, record, states, train_s, data = train_arm(arm, seed, steps, schedule, precision)
    ev = read_resolved("evaluate", EvaluateConfig)
    p = ev.evaluate
    method = calibrated(cfg, record, states[steps[0]], data, ev.control)
    x_lab, y_lab = labelled_set(data["x_train"], data["y_train"], p)
    x_test, y_test = data["x_test"][:p.n_test], data["y_test"][:p.n_test]
    probe = dict(steps=p.probe_steps, lr=p.probe_lr, l2=p.probe_l2, standardize=p.probe_standardize)
    out = {}
    for features in ("fp32", "bf16"):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=features == "bf16"):
            lab, test = embed(method.f, method.g, x_lab, CHUNK), embed(method.f, method.g, x_test, CHUNK)
        out[features] = {"forward_s": time.perf_counter() - start}
        for i, name in enumerate(("h", "z")):
            out[features][name] = {"linear": linear_probe_accuracy(lab[i], y_lab, test[i], y_test, **probe),
                                   "knn": knn_accuracy(lab[i], y_lab, test[i], y_test, k=p.knn_k)}
    return {"arm": arm, "seed": seed, "schedule": schedule, "precision": precision, "status": record["status"],
            "steps": list(steps), "train_s": round(train_s, 1), "features": out}


def run_key(task):
    arm, seed, steps, schedule, precision = task[:5]
    return f"{arm}|{seed}|{'-'.join(map(str, steps))}|{schedule}|{precision}"


def run_all(tasks, path, workers=2, run=run_one):
    """Every task's `run`, the ones already in `path` kept, each new one written as it finishes."""
    done = read_json(path) if path.exists() else {}
    todo = [t for t in tasks if run_key(t) not in done]
    print(f"{len(tasks) - len(todo)} runs already in {path}, {len(todo)} to go", flush=True)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(run, *task): task for task in todo}
        for future in as_completed(futures):
            done[run_key(futures[future])] = future.result()
            write_json(path, done)
            print(f"done {run_key(futures[future])} ({len(done)}/{len(tasks)})", flush=True)
    return [done[run_key(t)] for t in tasks]


def interval(diffs):
    """Mean and the t-interval's half-width of paired differences, in points, at the registry's level."""
    lo, hi = t_interval(100 * np.asarray(diffs), level(load_registry().rules))
    return (lo + hi) / 2, (hi - lo) / 2


def publish(pilot, out, markdown):
    """reports/pilot/<pilot>.json, with this CPU's native capabilities beside its model, and .md, the
    markdown also printed."""
    write_json(OUT / f"{pilot}.json", {**out, "capabilities": cpu_capabilities()})
    (OUT / f"{pilot}.md").write_text(markdown)
    print(markdown)


def precision_pilot(args):
    tasks = [(arm, seed, (args.steps,), "constant", precision)
             for precision in ("fp32", "bf16") for arm in ARMS for seed in args.seeds]
    runs = run_all(tasks, OUT / "precision_runs.json")
    value = {(r["arm"], r["seed"], r["precision"]): r["at"][str(args.steps)] for r in runs}
    seconds = {p: sum(r["train_s"] for r in runs if r["precision"] == p) for p in ("fp32", "bf16")}
    contrasts = {}
    for name, ((arm_a, key_a), (arm_b, key_b)) in CONTRASTS.items():
        row = {}
        for precision in ("fp32", "bf16"):
            diffs = [leaf(value[arm_a, s, precision], key_a) - leaf(value[arm_b, s, precision], key_b) for s in args.seeds]
            mean, half = interval(diffs)
            row[precision] = {"effect_points": mean, "half_width_points": half, "per_seed_points": [100 * d for d in diffs]}
        row["moved_points"] = row["bf16"]["effect_points"] - row["fp32"]["effect_points"]
        row["within_half_interval"] = abs(row["moved_points"]) < row["fp32"]["half_width_points"]
        contrasts[name] = row
    arms = {arm: {p: {"h.linear_mean": float(np.mean([value[arm, s, p]["h"]["linear"] for s in args.seeds]))}
                  for p in ("fp32", "bf16")} for arm in ARMS}
    out = {"pilot": "precision", "steps": args.steps, "seeds": args.seeds, "cpu": cpu_model(), "threads": 1,
           "workers": 2, "train_seconds": seconds, "bf16_speedup": seconds["fp32"] / seconds["bf16"],
           "contrasts": contrasts, "arms": arms, "adopt_bf16": all(c["within_half_interval"] for c in contrasts.values())}
    publish("precision", out, precision_markdown(out))


def precision_markdown(out):
    lines = ["# Pilot: bfloat16 autocast against float32", "",
             f"{out['steps']} steps at batch 128, seeds {out['seeds']}, glyphs100, one torch thread per run, two runs "
             f"at a time ({out['cpu']}). The encoder and head under bf16 autocast, the loss in fp32; every probe in "
             f"fp32 with BatchNorm calibrated. Effects in points, {level_label(load_registry().rules)} t-intervals over "
             "the paired seeds.", "",
             "| contrast | fp32 | bf16 | moved | half of the fp32 interval | within |", "|---|---|---|---|---|---|"]
    for name, c in out["contrasts"].items():
        f, b = c["fp32"], c["bf16"]
        lines.append(f"| {name} | {f['effect_points']:+.2f} ± {f['half_width_points']:.2f} | {b['effect_points']:+.2f} ± "
                     f"{b['half_width_points']:.2f} | {c['moved_points']:+.2f} | {f['half_width_points']:.2f} | "
                     f"{'yes' if c['within_half_interval'] else 'no'} |")
    lines += ["", "| arm | h linear, fp32 | h linear, bf16 |", "|---|---|---|"]
    lines += [f"| {arm} | {100 * a['fp32']['h.linear_mean']:.1f}% | {100 * a['bf16']['h.linear_mean']:.1f}% |"
              for arm, a in out["arms"].items()]
    lines += ["", f"Training time summed over the runs: fp32 {out['train_seconds']['fp32'] / 60:.1f} min, bf16 "
              f"{out['train_seconds']['bf16'] / 60:.1f} min: bf16 at {out['bf16_speedup']:.2f}x the speed of fp32 "
              "(whole training loop, two runs sharing the machine).", "",
              f"Decision rule (fixed before the runs): adopt bf16 only if every effect moves by less than half its fp32 "
              f"interval. Adopt: **{'yes' if out['adopt_bf16'] else 'no'}**.", ""]
    return "\n".join(lines)


def schedule_pilot(args):
    rungs = tuple(args.rungs)
    tasks = [("simclr", seed, rungs, "constant", "fp32", True) for seed in args.seeds]
    tasks += [("simclr", seed, (rung,), "wsd", "fp32", True) for rung in reversed(rungs) for seed in args.seeds]
    runs = run_all(tasks, OUT / "schedule_runs.json")
    by = {(r["schedule"], r["seed"], rung): r["at"][str(rung)] for r in runs for rung in r["steps"]}
    table = {}
    for rung in rungs:
        for probe in ("linear", "linear_full", "knn"):
            const = [by["constant", s, rung]["h"][probe] for s in args.seeds]
            decayed = [by["wsd", s, rung]["h"][probe] for s in args.seeds]
            gains = [100 * (d - c) for d, c in zip(decayed, const)]
            table[f"{rung}|{probe}"] = {"rung": rung, "probe": probe, "constant": const, "decayed": decayed,
                                        "gain_points": gains, "mean_gain_points": float(np.mean(gains)),
                                        "seed_spread_points": float(np.ptp(gains)) if len(gains) > 1 else None}
    linear = [row for row in table.values() if row["probe"] == "linear"]
    adopt = all(row["mean_gain_points"] > (row["seed_spread_points"] or 0) for row in linear)
    out = {"pilot": "schedule", "arm": "simclr", "seeds": args.seeds, "rungs": list(rungs), "decay_share": DECAY_SHARE,
           "cpu": cpu_model(), "threads": 1, "rows": table, "adopt_decayed_rungs": adopt}
    publish("schedule", out, schedule_markdown(out))


def schedule_markdown(out):
    lines = ["# Pilot: decayed rungs against constant-rate rungs", "",
             f"The default arm (SimCLR, tau 0.2, batch 128, Adam at 1e-3), seeds {out['seeds']}, glyphs100 ({out['cpu']}). "
             "Constant: the constant-rate run's checkpoint at the rung. Decayed: a run to the rung whose learning rate "
             f"falls linearly to 0 over the last {out['decay_share']:.0%} of its steps (the constant run until then). "
             "Probes on h, BatchNorm calibrated.", "",
             "| rung | probe | constant (per seed) | decayed (per seed) | gain, points (per seed) | mean gain | spread |",
             "|---|---|---|---|---|---|---|"]
    pct = lambda xs: ", ".join(f"{100 * x:.1f}%" for x in xs)
    for row in out["rows"].values():
        spread = "-" if row["seed_spread_points"] is None else f"{row['seed_spread_points']:.2f}"
        lines.append(f"| {row['rung']:,} | {row['probe']} | {pct(row['constant'])} | {pct(row['decayed'])} | "
                     f"{', '.join(f'{g:+.2f}' for g in row['gain_points'])} | {row['mean_gain_points']:+.2f} | {spread} |")
    lines += ["", "Decision rule (fixed before the runs): decayed rungs are adopted only if, on the 20-label linear probe "
              "the claims read, the mean gain at every rung exceeds the seed-to-seed spread of the gain. Adopt: "
              f"**{'yes' if out['adopt_decayed_rungs'] else 'no'}**.", ""]
    return "\n".join(lines)


def contrast_moves(value, seeds, before, after):
    """Each of CONTRASTS per seed in points, measured `before` and `after` (value: (arm, seed, mode) ->
    metrics), with the move of its mean."""
    contrasts = {}
    for name, ((arm_a, key_a), (arm_b, key_b)) in CONTRASTS.items():
        row = {mode: [100 * (leaf(value[arm_a, s, mode], key_a) - leaf(value[arm_b, s, mode], key_b)) for s in seeds]
               for mode in (before, after)}
        row["moved_points"] = float(np.mean(row[after]) - np.mean(row[before]))
        contrasts[name] = row
    return contrasts


def contrast_table(contrasts, before, after, columns):
    """contrast_moves' rows as Markdown table lines; columns: the headings of `before` and `after`."""
    signed = lambda points: ", ".join(f"{x:+.2f}" for x in points)
    return [f"| contrast | {columns[0]} | {columns[1]} | moved |", "|---|---|---|---|",
            *(f"| {name} | {signed(c[before])} | {signed(c[after])} | {c['moved_points']:+.2f} |"
              for name, c in contrasts.items())]


# the embedding pilot's rule, fixed before its runs: every probe of every checkpoint within this many
# points of its float32 value, and every contrast within this many points of its float32 effect
EMBEDDING_PROBE_POINTS, EMBEDDING_CONTRAST_POINTS = 1.0, 0.5


def embedding_pilot(args):
    tasks = [(arm, seed, (args.steps,), "constant", "bf16") for arm in ARMS for seed in args.seeds]
    runs = run_all(tasks, OUT / "embedding_runs.json", run=embedding_one)
    value = {(r["arm"], r["seed"], f): r["features"][f] for r in runs for f in ("fp32", "bf16")}
    moves = [100 * abs(r["features"]["bf16"][e][probe] - r["features"]["fp32"][e][probe])
             for r in runs for e in ("h", "z") for probe in ("linear", "knn")]
    contrasts = contrast_moves(value, args.seeds, "fp32", "bf16")
    forward = {f: sum(r["features"][f]["forward_s"] for r in runs) for f in ("fp32", "bf16")}
    out = {"pilot": "embedding", "steps": args.steps, "seeds": args.seeds, "training": "bf16", "cpu": cpu_model(),
           "threads": 1, "workers": 2, "largest_probe_move_points": max(moves),
           "mean_probe_move_points": float(np.mean(moves)), "contrasts": contrasts, "forward_seconds": forward,
           "bf16_over_fp32_forward": forward["bf16"] / forward["fp32"],
           "adopt_bf16_forward_passes": max(moves) < EMBEDDING_PROBE_POINTS and
           all(abs(c["moved_points"]) < EMBEDDING_CONTRAST_POINTS for c in contrasts.values())}
    publish("embedding", out, embedding_markdown(out))


def embedding_markdown(out):
    lines = ["# Pilot: the evaluation's forward passes under bfloat16 autocast", "",
             f"Each arm trained {out['steps']} steps in {out['training']} (seeds {out['seeds']}, glyphs100, "
             f"{out['cpu']}, one thread per run, two at a time); its checkpoint, BatchNorm calibrated, probed twice on "
             "the same images: features from float32 forward passes (as evaluate@ computes them) and from forward "
             "passes under bfloat16 autocast, every probe fitted in float32. Probes: the 20-label linear probe and "
             "kNN, on h and on z.", "",
             *contrast_table(out["contrasts"], "fp32", "bf16", ("fp32, per seed (points)", "bf16 features, per seed"))]
    lines += ["", f"Largest change of one probe on one checkpoint: {out['largest_probe_move_points']:.2f} points (mean "
              f"{out['mean_probe_move_points']:.2f}). Forward passes: {out['forward_seconds']['bf16']:.0f} s under "
              f"bf16 against {out['forward_seconds']['fp32']:.0f} s in fp32 ({out['bf16_over_fp32_forward']:.2f}x).", "",
              f"Decision rule (fixed before the runs): bf16 forward passes are adopted for evaluation only if every "
              f"probe of every checkpoint moves by less than {EMBEDDING_PROBE_POINTS:g} point and every contrast by "
              f"less than {EMBEDDING_CONTRAST_POINTS:g} points. Adopt: **{'yes' if out['adopt_bf16_forward_passes'] else 'no'}**"
              " (for the next registered run: run 2 was evaluated in fp32).", ""]
    return "\n".join(lines)


# the evaluation pilot's rule, fixed before its runs: every accuracy of every checkpoint within this
# many points of its float32 value, every contrast within this many points of its float32 effect, and
# every other metric (alignment, uniformity, the tolerances) within this much of its float32 value
EVALUATION_ACCURACY_POINTS, EVALUATION_CONTRAST_POINTS, EVALUATION_OTHER = 1.0, 0.5, 0.01


# the evaluation pilot's earlier candidates (reports/pilot/<name>.*): how each differed from the latest
EARLIER_EVALUATIONS = {
    "evaluation_first": "the rotation probes read features from bf16 forward passes too; rounding the features to "
                        "bf16's 8 significant bits moved the MLP rotation probe beyond the rule, so the later "
                        "candidates keep those features in float32",
    "evaluation_second": f"forward passes of {CHUNK:,} images (which changes no feature), the linear probes' gradient "
                         "over every row at once and torch's unfused Adam"}


def evaluation_one(arm, seed, steps, schedule, precision):
    """Train one arm to steps[0] and evaluate its checkpoint (every probe the budget gets) as run 2 did
    and cheap, on the same calibrated encoder; each one's metrics and seconds."""
    cfg, record, states, train_s, data = train_arm(arm, seed, steps, schedule, precision)
    ev = read_resolved("evaluate", EvaluateConfig)
    method = calibrated(cfg, record, states[steps[0]], data, ev.control)
    out = {}
    for mode in ("float32", "cheap"):
        start = time.perf_counter()
        metrics = evaluate_method(method, cfg, data, ev.evaluate, seed, budget=True, cheap=mode == "cheap")
        out[mode] = {"seconds": time.perf_counter() - start, "h": metrics["h"], "z": metrics["z"],
                     "contrastive_top1": metrics["contrastive_top1"]}
    return {"arm": arm, "seed": seed, "schedule": schedule, "precision": precision, "status": record["status"],
            "steps": list(steps), "train_s": round(train_s, 1), "evaluations": out}


def evaluation_moves(run):
    """(accuracy moves in points, other metrics' moves) of one run: cheap minus float32, absolute."""
    today, cheap = run["evaluations"]["float32"], run["evaluations"]["cheap"]
    accuracy = {"contrastive_top1": 100 * abs(cheap["contrastive_top1"] - today["contrastive_top1"])}
    other = {}
    for e in ("h", "z"):
        for metric, value in today[e].items():
            moved = abs(cheap[e][metric] - value)
            if metric in EMBEDDING_FIGURES:
                other[f"{e}.{metric}"] = moved
            else:
                accuracy[f"{e}.{metric}"] = 100 * moved
    return accuracy, other


def evaluation_pilot(args):
    tasks = [(arm, seed, (args.steps,), "constant", "bf16") for arm in ARMS for seed in args.seeds]
    runs = run_all(tasks, OUT / "evaluation_runs.json", run=evaluation_one)
    value = {(r["arm"], r["seed"], mode): r["evaluations"][mode] for r in runs for mode in ("float32", "cheap")}
    largest_accuracy, largest_other = {}, {}
    for run in runs:
        accuracy, other = evaluation_moves(run)
        for largest, moves in ((largest_accuracy, accuracy), (largest_other, other)):
            for key, moved in moves.items():
                largest[key] = max(largest.get(key, 0.0), moved)
    contrasts = contrast_moves(value, args.seeds, "float32", "cheap")
    seconds = {mode: sum(r["evaluations"][mode]["seconds"] for r in runs) for mode in ("float32", "cheap")}
    out = {"pilot": "evaluation", "steps": args.steps, "seeds": args.seeds, "training": "bf16", "cpu": cpu_model(),
           "threads": 1, "workers": 2, "largest_accuracy_move_points": largest_accuracy,
           "largest_other_move": largest_other, "contrasts": contrasts, "evaluation_seconds": seconds,
           "cheap_over_float32": seconds["cheap"] / seconds["float32"],
           "adopt_cheap_evaluation": max(largest_accuracy.values()) < EVALUATION_ACCURACY_POINTS
           and max(largest_other.values()) < EVALUATION_OTHER
           and all(abs(c["moved_points"]) < EVALUATION_CONTRAST_POINTS for c in contrasts.values())}
    publish("evaluation", out, evaluation_markdown(out))


def evaluation_markdown(out):
    lines = ["# Pilot: the cheap evaluation against the float32 evaluation", "",
             f"Each arm trained {out['steps']} steps in {out['training']} (seeds {out['seeds']}, glyphs100, "
             f"{out['cpu']}, one thread per run, two at a time); its checkpoint, BatchNorm calibrated, evaluated "
             f"with every probe the budget checkpoint gets, twice: as run 2 did (float32) and cheap ({CHEAP}; the MLP "
             "probe and the kNN classifiers as they are).", "",
             *contrast_table(out["contrasts"], "float32", "cheap", ("float32, per seed (points)", "cheap, per seed"))]
    lines += ["", "| accuracy (h and z) | largest move over the checkpoints (points) |", "|---|---|"]
    for key, moved in sorted(out["largest_accuracy_move_points"].items()):
        lines.append(f"| {key} | {moved:.2f} |")
    lines += ["", "| other metric | largest move |", "|---|---|"]
    for key, moved in sorted(out["largest_other_move"].items()):
        lines.append(f"| {key} | {moved:.4f} |")
    lines += ["", f"Evaluation of these checkpoints: {out['evaluation_seconds']['cheap']:.0f} s cheap against "
              f"{out['evaluation_seconds']['float32']:.0f} s in float32 ({out['cheap_over_float32']:.2f}x; "
              "benchmarks/evaluation_cost.py times a whole run's evaluation alone).", "",
              f"Decision rule (fixed before the runs): the cheap evaluation is adopted only if every accuracy of "
              f"every checkpoint moves by less than {EVALUATION_ACCURACY_POINTS:g} point, every contrast by less "
              f"than {EVALUATION_CONTRAST_POINTS:g} points and every other metric by less than "
              f"{EVALUATION_OTHER:g}. Adopt: **{'yes' if out['adopt_cheap_evaluation'] else 'no'}** (for the "
              "next registered run: run 2 was evaluated in float32).", ""]
    failing = [f"{key} ({moved:.2f} points)" for key, moved in sorted(out["largest_accuracy_move_points"].items())
               if moved >= EVALUATION_ACCURACY_POINTS]
    if failing:
        lines += [f"Accuracies beyond the rule: {', '.join(failing)}.", ""]
    for name, differed in EARLIER_EVALUATIONS.items():
        if (OUT / f"{name}.json").exists():
            earlier = read_json(OUT / f"{name}.json")
            key, moved = max(earlier["largest_accuracy_move_points"].items(), key=lambda kv: kv[1])
            lines += [f"Earlier candidate ({name}.md): {differed}. Under the same rule: adopt "
                      f"**{'yes' if earlier['adopt_cheap_evaluation'] else 'no'}**; its largest accuracy move "
                      f"{key} {moved:.2f} points; {earlier['cheap_over_float32']:.2f}x the float32 time.", ""]
    return "\n".join(lines)


def pilot_data():
    """glyphs100 drawn at PILOT_DATA_SEED into PILOT_DATA (made once): the loss pilot's data."""
    if not (PILOT_DATA / "glyphs100.pt").exists():
        params = read_resolved("data", DataParams)
        params = params.model_copy(update={"glyphs100": params.glyphs100.model_copy(update={"seed": PILOT_DATA_SEED})})
        torch.set_num_threads(1)
        save_dataset(build_dataset("glyphs100", params), "glyphs100", PILOT_DATA, params.same_class)
    return str(PILOT_DATA)


def losses_pilot(args):
    precision = read_resolved("pretrain/simclr_mocov2", StudyConfig).execution.precision
    data_dir = pilot_data()
    tasks = [(arm, seed, (args.steps,), "constant", precision, False, data_dir)
             for settings in LOSS_SETTINGS.values() for arm in settings.values() for seed in args.seeds]
    runs = run_all(tasks, OUT / "losses_tuning_runs.json")
    value = {(r["arm"], r["seed"]): r["at"][str(args.steps)]["h"]["linear"] for r in runs}
    losses = {}
    for loss, settings in LOSS_SETTINGS.items():
        rows = {setting: {"condition": arm, "per_seed": [value[arm, s] for s in args.seeds],
                          "mean": float(np.mean([value[arm, s] for s in args.seeds]))}
                for setting, arm in settings.items()}
        losses[loss] = {"settings": rows, "chosen": max(rows, key=lambda k: rows[k]["mean"])}
    out = {"pilot": "losses", "steps": args.steps, "seeds": args.seeds, "precision": precision, "cpu": cpu_model(),
           "threads": 1, "data": f"glyphs100 drawn at seed {PILOT_DATA_SEED}", "losses": losses}
    publish("losses_tuning", out, losses_markdown(out))


def losses_markdown(out):
    lines = ["# Pilot: each alternative loss tuned on its own knob", "",
             f"{out['steps']} steps at batch 128, seeds {out['seeds']}, {out['precision']}, on a pilot draw of the "
             f"dataset ({out['data']}; the registered run trains and tests on the draw at seed 0), {out['cpu']}. "
             "20-label linear probe on h, BatchNorm calibrated, on the pilot draw's test images.", "",
             "| loss | setting | per seed | mean | chosen |", "|---|---|---|---|---|"]
    for loss, row in out["losses"].items():
        for setting, r in row["settings"].items():
            lines.append(f"| {loss} | {setting} | {', '.join(f'{100 * v:.1f}%' for v in r['per_seed'])} | "
                         f"{100 * r['mean']:.1f}% | {'yes' if setting == row['chosen'] else ''} |")
    lines += ["", "Decision rule (fixed before the runs): each loss trains in the registered run at its setting with "
              "the highest mean over the seeds in the claim that compares the losses; the other settings leave the run "
              "unless another claim reads them.", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="pilot", required=True)
    precision = sub.add_parser("precision")
    precision.add_argument("--steps", type=int, default=1200)
    precision.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    schedule = sub.add_parser("schedule")
    schedule.add_argument("--rungs", type=int, nargs="+", default=[1200, 2400])
    schedule.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    losses = sub.add_parser("losses")
    losses.add_argument("--steps", type=int, default=1200)
    losses.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    embedding = sub.add_parser("embedding")
    embedding.add_argument("--steps", type=int, default=1200)
    embedding.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    evaluation = sub.add_parser("evaluation")
    evaluation.add_argument("--steps", type=int, default=1200)
    evaluation.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    {"precision": precision_pilot, "schedule": schedule_pilot, "losses": losses_pilot,
     "embedding": embedding_pilot, "evaluation": evaluation_pilot}[args.pilot](args)


if __name__ == "__main__":
    main()
