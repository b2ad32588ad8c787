"""Pilot of the glyphs100 dataset before anything is registered (issue 28, point 1).

    .venv/bin/python tools/pilot_dataset.py run NAME --change "what changed" [--set knob=value ...]
                                            [--arms simclr supcon supervised] [--seeds 0 1] [--steps 2400]
    .venv/bin/python tools/pilot_dataset.py time          # generation time on 2 threads

Each `run` is one pilot iteration, recorded (replacing an iteration of the same name) in
reports/pilot/glyphs100.json with the CPU model, the date, the generator's knobs and every number:

- the untrained control per seed: the step-0 encoder of the seed (as training builds it), its
  BatchNorm statistics re-estimated on the first 10 x 128 un-augmented training images
  (replication.run.calibration.recalibrate_bn, the rule of the control stage), and also without;
- each arm (params.yaml pretrain.defaults with the arm's overrides) trained with the study's loop
  (contrastive.train.train) to `--steps`, with checkpoints at 300, 1,200 and the last step;
- at every checkpoint, the linear probe on h exactly as evaluate@ runs it (l2-normalised h,
  eval-mode BN, params.yaml evaluate: probe settings, standardised) with the first k x 100
  training images as the labelled set (k = 10 and 20 labels per class: the labels come in balanced
  blocks, so these hold exactly k per class) and with all training images (full labels), tested on
  all test images;
- the share of same-class negatives in a batch of 128: analytic (sum of squared class
  frequencies) and measured on 200 batches drawn as training draws them.

The four targets are replication.report.headroom's, which the report also reads from the registered run.
Pilot runs use seeds as given and at most two worker processes. Nothing here is a pipeline stage.
"""
import argparse
import datetime
import os
import tempfile
import time
from pathlib import Path

import torch
import yaml

from contrastive.evaluate import embed, linear_probe_accuracy
from contrastive.glyphs import CLASSES, build_glyphs
from contrastive.methods import build_method
from contrastive.train import Timer, train
from replication.run.calibration import recalibrate_bn
from replication.run.config import GlyphsData, RunConfig
from replication.run.datasets import same_class_negatives
from replication.report.headroom import ARM_AT_MOST, CONTROL_AT_MOST, GAIN_AT_LEAST, SAME_CLASS_AT_MOST
from replication.io import cpu_model, read_json, sha256, write_json
from replication.run.engine import map_runs

REPORT = Path("reports/pilot/glyphs100.json")
ARMS = {"simclr": {}, "supcon": {"method": "supcon", "tau": 0.1}, "supervised": {"method": "supervised"}}
BUDGETS = (10, 20)              # labels per class for the probe; "full" is every training image


def params():
    with open("params.yaml") as f:
        return yaml.safe_load(f)


def run_config(arm, steps):
    """The study's default condition with the arm's overrides, checkpoints at 300, 1,200, steps.
    `dataset` stays the default's name: the pilot hands the images to the loop itself."""
    rungs = [r for r in (300, 1200) if r < steps] + [steps]
    return RunConfig(**{**params()["pretrain"]["defaults"], **ARMS[arm], "steps": rungs[0], "ladder": rungs[1:]})


def probes(f, g, data):
    """Linear probe on h (evaluate@'s settings) at each label budget and with full labels."""
    p = params()["evaluate"]
    settings = dict(steps=p["probe_steps"], lr=p["probe_lr"], l2=p["probe_l2"], standardize=p["probe_standardize"])
    h_train = embed(f, g, data["x_train"], chunk=1000)[0]
    h_test = embed(f, g, data["x_test"], chunk=1000)[0]
    out = {}
    for k in BUDGETS:
        n = k * len(CLASSES)
        out[f"k{k}"] = linear_probe_accuracy(h_train[:n], data["y_train"][:n], h_test, data["y_test"], **settings)
    out["full"] = linear_probe_accuracy(h_train, data["y_train"], h_test, data["y_test"], **settings)
    return out


def control(seed, data_path):
    """The untrained control of a seed, probed with and without re-estimated BN statistics."""
    torch.set_num_threads(1)
    data = torch.load(data_path, weights_only=True)
    c = params()["control"]
    torch.manual_seed(seed)
    method = build_method(run_config("simclr", 300), n_data=len(data["x_train"]), n_classes=len(CLASSES))
    method.to(memory_format=torch.channels_last)
    raw = probes(method.f, method.g, data)
    recalibrate_bn([method.f, method.g], data["x_train"], c["bn_batches"], c["bn_batch_size"])
    return {"seed": seed, "calibrated": probes(method.f, method.g, data), "uncalibrated": raw}


def pilot_run(arm, seed, steps, data_path):
    """Train one arm on one seed as train_run does; probe every checkpoint after training."""
    torch.set_num_threads(1)
    data = torch.load(data_path, weights_only=True)
    cfg = run_config(arm, steps)
    states = {}

    def snapshot(step, method, recent_loss):
        if step in cfg.rungs[1:]:
            states[step] = {k: v.detach().clone() for k, v in method.state_dict().items()}

    with Timer() as clock:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        method = build_method(cfg, n_data=len(data["x_train"]), n_classes=len(CLASSES))
        to_top = cfg.model_copy(update={"steps": cfg.rungs[-1], "ladder": []})
        record = train(method, data["x_train"], data["y_train"], gen, to_top, snapshot=snapshot,
                       desc=f"{arm} seed {seed}")
    at = {}
    for step, state in sorted(states.items()):
        method.load_state_dict(state)
        at[str(step)] = probes(method.f, method.g, data)
    return {"arm": arm, "seed": seed, "status": record["status"], "final_loss": record["loss"],
            "train_s": round(clock.seconds, 1), "at": at}


def same_class(labels, batch=128, batches=200, seed=0):
    """Same-class share of in-batch negatives, as the data manifest records it."""
    return same_class_negatives(labels, batch, batches, seed)


def mean(values):
    return round(sum(values) / len(values), 4)


def summary(controls, runs):
    """Means over seeds: control per probe; each arm per rung and probe."""
    out = {"control": {kind: {probe: mean([c[kind][probe] for c in controls]) for probe in controls[0][kind]}
                       for kind in ("calibrated", "uncalibrated")}}
    for arm in dict.fromkeys(r["arm"] for r in runs):
        mine = [r for r in runs if r["arm"] == arm]
        out[arm] = {step: {probe: mean([r["at"][step][probe] for r in mine]) for probe in mine[0]["at"][step]}
                    for step in mine[0]["at"]}
    return out


def targets(summary, same, probe="k20"):
    """Issue 28's four targets on `probe` (the proposed primary: 20 labels per class), in points."""
    control = summary["control"]["calibrated"][probe]
    last = lambda arm: summary[arm][max(summary[arm], key=int)][probe]
    arms = [arm for arm in summary if arm != "control"]
    out = {"probe": probe, "control": control, "control_at_most_30": control <= CONTROL_AT_MOST,
           "same_class_share": same["analytic"], "same_class_at_most_2pct": same["measured"] <= SAME_CLASS_AT_MOST}
    if arms:        # the ceiling on every probe, full labels included
        best = max((summary[arm][step][p], arm, step) for arm in arms for step in summary[arm] for p in summary[arm][step])
        out.update(highest_any_probe={"value": best[0], "arm": best[1], "step": best[2]}, no_arm_above_90=best[0] <= ARM_AT_MOST)
    if "simclr" in summary:
        out["simclr_gain_by_step"] = {step: round(v[probe] - control, 4) for step, v in summary["simclr"].items()}
        out["simclr_ends_25_above"] = last("simclr") - control >= GAIN_AT_LEAST
    return out


def record_iteration(entry):
    report = read_json(REPORT) if REPORT.exists() else {"dataset": "glyphs100", "iterations": []}
    report["iterations"] = [it for it in report["iterations"] if it["name"] != entry["name"]] + [entry]
    write_json(REPORT, report)


def glyph_params(pairs=()):
    """params.yaml's data.glyphs100 with knob=value overrides (an iteration's changes)."""
    p = params()["data"]["glyphs100"]
    values = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        values[key] = type(p[key])(value)
    return GlyphsData(**{**p, **values})


def run(args):
    p = glyph_params(args.set)
    torch.set_num_threads(2)
    with Timer() as gen_clock:
        data = build_glyphs(p)
    fd, data_path = tempfile.mkstemp(suffix=".pt", prefix="glyphs_pilot_")
    os.close(fd)
    try:
        torch.save(data, data_path)
        started = time.time()
        tasks = [("control", seed) for seed in args.seeds] + [(arm, seed) for arm in args.arms for seed in args.seeds]
        order = sorted(tasks, key=lambda t: t[0] == "control")          # long runs first
        results = map_runs(_task, [(kind, seed, args.steps, data_path) for kind, seed in order], args.workers)
    finally:
        os.remove(data_path)
    controls = [r for r in results if "calibrated" in r]
    runs = [r for r in results if "arm" in r]
    entry = {"name": args.name, "change": args.change, "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
             "cpu": cpu_model(), "settings": p.model_dump(),
             "generation_s_2_threads": round(gen_clock.seconds, 1), "steps": args.steps, "seeds": args.seeds,
             "wall_s": round(time.time() - started, 1), "same_class": same_class(data["y_train"]),
             "summary": summary(controls, runs) if controls else None, "controls": controls, "runs": runs}
    if controls:
        entry["targets"] = targets(entry["summary"], entry["same_class"])
    record_iteration(entry)
    print(yaml.safe_dump(entry["summary"], sort_keys=False), entry["same_class"], entry.get("targets"))


def _task(kind, seed, steps, data_path):
    return control(seed, data_path) if kind == "control" else pilot_run(kind, seed, steps, data_path)


def time_generation(args):
    """Generation of the dataset as params.yaml sets it (20,000 + 5,000 images) on 2 threads."""
    torch.set_num_threads(2)
    times = []
    for _ in range(args.repeats):
        with Timer() as clock:
            data = build_glyphs(glyph_params())
        times.append(round(clock.seconds, 1))
    fd, path = tempfile.mkstemp(suffix=".pt")
    os.close(fd)
    torch.save(data, path)
    digest, size = sha256(path), os.path.getsize(path)
    os.remove(path)
    report = read_json(REPORT) if REPORT.exists() else {"dataset": "glyphs100", "iterations": []}
    report["generation"] = {"seconds": times, "threads": 2, "settings": glyph_params().model_dump(),
                            "file_bytes": size, "sha256": digest,
                            "cpu": cpu_model(), "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    write_json(REPORT, report)
    print(report["generation"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("name")
    r.add_argument("--change", required=True, help="what this iteration changed, and why")
    r.add_argument("--set", nargs="*", default=[], help="knob=value: overrides of params.yaml data.glyphs100")
    r.add_argument("--arms", nargs="*", default=list(ARMS), choices=list(ARMS))
    r.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    r.add_argument("--steps", type=int, default=2400)
    r.add_argument("--workers", type=int, default=2)
    t = sub.add_parser("time")
    t.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    run(args) if args.command == "run" else time_generation(args)
