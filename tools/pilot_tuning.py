"""Tuning parity (issue 53): every method a literature claim compares, tuned alike on the pilot draw
of glyphs100 by the rule in reports/pilot/tuning_rule.md, committed before the first run (the
constants below are the rule's).

    python -m tools.pilot_tuning [--workers 1]     # train what is missing, then write the report
    python -m tools.pilot_tuning --report          # the report from the runs so far

Each method: stage 1 trains the learning-rate grid LRS at the method's default knobs; stage 2 two more
configurations at stage 1's rate: its own knobs' alternatives (METHODS), or, for a method with no knob
of its own, a finer rate (stage 1's x FINER^-1 and x FINER). Five configurations per method, each over
SEEDS. Each finished run is added to reports/pilot/tuning_runs.json at once (pilot_protocol.run_all),
a rerun skips the runs already there, and the report (tuning.md, tuning.json) is written from that
file alone, a partial one included.
"""
import argparse
import math
import time

import numpy as np
import torch

from contrastive.evaluate import CHUNK, embed, labelled_set, linear_probe_accuracy
from contrastive.train import cpu_capabilities
from replication.io import cpu_model, read_json
from replication.run.config import EvaluateConfig, StudyConfig, read_resolved
from replication.run.datasets import dataset_for
from replication.run.train import train_run
from tools.pilot_protocol import OUT, PILOT_DATA_SEED, calibrated, pilot_data, publish, run_all

RUNS = OUT / "tuning_runs.json"
LRS = (3e-4, 1e-3, 3e-3)          # Adam's rate at batch 128 (the square-root rule at other batches), for all
DEFAULT_LR = 1e-3
FINER = 10 ** 0.25                # a method with no knob of its own: stage 1's rate x FINER^-1 and x FINER
STEPS, STEPS_BATCH = 1200, 128    # at batch 128; a method at batch b trains STEPS x 128 / b steps (same images)
SEEDS = (0, 1)
PRECISION = "fp32"
TIE_POINTS = 0.5                  # figures within this many points of the best are tied
FIGURE, BESIDE = "linear_full", "linear"    # the all-label linear probe on h decides; the 20-label one is shown

# method -> its reference condition (study, condition), its default knobs (stage 1) and stage 2's two
# alternatives (None: a finer rate), and the knob a claim is about, which is never tuned
METHODS = {
    "SimCLR (NT-Xent)": {"at": ("simclr_mocov2", "simclr"), "default": {}, "alternatives": None,
                         "fixed": "tau 0.2 (the temperature claims)"},
    "MoCo v1": {"at": ("moco_momentum", "moco_m0999"), "default": {"queue": 1024},
                "alternatives": [{"queue": 512}, {"queue": 2048}], "fixed": "m 0.999 (the momentum claims)"},
    "MoCo v2": {"at": ("simclr_mocov2", "mocov2"), "default": {"momentum": 0.999, "queue": 4096},
                "alternatives": [{"momentum": 0.99}, {"queue": 2048}], "fixed": "T 0.2 (mocov2-tau-02-best)"},
    "memory bank": {"at": ("moco_bn", "memory_bank"), "default": {"momentum": 0.5, "queue": 4096},
                    "alternatives": [{"momentum": 0.0}, {"queue": 1024}], "fixed": ""},
    "align-uniform": {"at": ("rotation", "align_uniform"), "default": {"lam": 1.0},
                      "alternatives": [{"lam": 0.5}, {"lam": 2.0}], "fixed": ""},
    "SupCon L_out": {"at": ("supcon", "supcon_out"), "default": {"tau": 0.1},
                     "alternatives": [{"tau": 0.05}, {"tau": 0.2}], "fixed": ""},
    "SupCon L_in": {"at": ("supcon", "supcon_in"), "default": {"tau": 0.1},
                    "alternatives": [{"tau": 0.05}, {"tau": 0.2}], "fixed": ""},
    "cross-entropy": {"at": ("supervised", "supervised"), "default": {}, "alternatives": None, "fixed": ""},
    "NT-Logistic": {"at": ("losses", "simclr_logistic_tau1"), "default": {"tau": 1.0},
                    "alternatives": [{"tau": 0.5}, {"tau": 2.0}], "fixed": ""},
    "margin triplet": {"at": ("losses", "simclr_triplet_m01"), "default": {"margin": 0.2},
                       "alternatives": [{"margin": 0.1}, {"margin": 0.4}], "fixed": ""},
    "SigLIP": {"at": ("batch_sqrt", "siglip_b32"), "default": {"siglip_t": 10.0, "siglip_b": -10.0},
               "alternatives": [{"siglip_t": 5.0, "siglip_b": -5.0}, {"siglip_t": 20.0, "siglip_b": -20.0}],
               "fixed": "batch 32 (siglip-beats-softmax-small-batch)"},
}


def reference(method):
    study_name, condition = METHODS[method]["at"]
    study = read_resolved(f"pretrain/{study_name}", StudyConfig)
    return study, study.conditions[condition]


def label(lr, knobs):
    return ", ".join([f"lr {lr:.2g}", *(f"{k} {v:g}" for k, v in knobs.items())])


def task(method, stage, lr, knobs, seed):
    """A run of pilot_protocol.run_all: (name, seed, steps, schedule, precision, what to train)."""
    steps = STEPS * STEPS_BATCH // reference(method)[1].batch
    spec = {"method": method, "stage": stage, "lr": lr, "knobs": knobs}
    return f"{method}: {label(lr, knobs)}", seed, (steps,), "constant", PRECISION, spec


def stage_configs(method, stage, lr=None):
    """(rate, knobs) of stage 1 (the rate grid at the default knobs) or of stage 2 (at stage 1's rate
    `lr`), in the rule's order of preference after stage 1's choice."""
    m = METHODS[method]
    if stage == 1:
        return [(rate, m["default"]) for rate in LRS]
    if m["alternatives"] is None:
        return [(lr / FINER, m["default"]), (lr * FINER, m["default"])]
    return [(lr, {**m["default"], **alt}) for alt in m["alternatives"]]


def stage_tasks(method, stage, lr=None):
    return [task(method, stage, rate, knobs, seed) for rate, knobs in stage_configs(method, stage, lr)
            for seed in SEEDS]


def tuning_one(name, seed, steps, schedule, precision, spec):
    """Train one configuration on the pilot draw and probe h at its last step (BatchNorm calibrated):
    the all-label and 20-label linear probes."""
    torch.set_num_threads(1)
    study, base = reference(spec["method"])
    cfg = base.model_copy(update={"checkpoints": [], "ladder": [], "steps": steps[0], "schedule": schedule,
                                  "lr": spec["lr"], **spec["knobs"]})
    execution = study.execution.model_copy(update={"precision": precision})
    data_dir = pilot_data()
    start = time.perf_counter()
    record, states = train_run(seed, name, cfg, execution, study.data, data_dir)
    train_s, start = time.perf_counter() - start, time.perf_counter()
    h = probe_h(cfg, record, states[steps[0]], dataset_for(cfg.dataset, study.data, data_dir)) \
        if steps[0] in states else None
    return {**spec, "seed": seed, "steps": steps[0], "batch": cfg.batch, "lr_used": cfg.batch_lr,
            "status": record["status"], "reason": record["reason"], "loss": record["loss"], "h": h,
            "train_s": round(train_s, 1), "eval_s": round(time.perf_counter() - start, 1), "cpu": cpu_model(),
            "config": cfg.model_dump()}


def probe_h(cfg, record, state, data):
    """The linear probes on h of one checkpoint: every training image (FIGURE) and 20 a class (BESIDE)."""
    ev = read_resolved("evaluate", EvaluateConfig)
    p = ev.evaluate
    method = calibrated(cfg, record, state, data, ev.control)
    h_train, _ = embed(method.f, method.g, data["x_train"], CHUNK)
    h_test, _ = embed(method.f, method.g, data["x_test"][:p.n_test], CHUNK)
    y_test = data["y_test"][:p.n_test]
    index, y_lab = labelled_set(torch.arange(len(h_train)), data["y_train"], p)    # the labelled images' rows
    probe = dict(steps=p.probe_steps, lr=p.probe_lr, l2=p.probe_l2, standardize=p.probe_standardize)
    return {FIGURE: linear_probe_accuracy(h_train, data["y_train"], h_test, y_test, **probe),
            BESIDE: linear_probe_accuracy(h_train[index], y_lab, h_test, y_test, **probe)}


# ---------------------------------------------------------------- the rule, on the runs file

def tied_first(means, preferred):
    """Of `preferred` (labels), the first within TIE_POINTS of the best mean; None (no figure) never."""
    scored = {k: v for k, v in means.items() if v is not None}
    if not scored:
        return None
    best = max(scored.values())
    return next(k for k in preferred if k in scored and scored[k] >= best - TIE_POINTS / 100)


def configurations(method, runs):
    """The method's configurations in the runs file, in the order trained: label -> row."""
    rows = {}
    for r in runs.values():
        if r["method"] == method:
            row = rows.setdefault(label(r["lr"], r["knobs"]), {"stage": r["stage"], "lr": r["lr"],
                                                               "knobs": r["knobs"], "runs": {}})
            row["runs"][r["seed"]] = r
    for row in rows.values():
        seeds = [row["runs"][s] for s in SEEDS if s in row["runs"]]
        complete = len(seeds) == len(SEEDS)
        stopped = any(r["status"] != "ok" or r["h"] is None for r in seeds)
        row["per_seed"] = [r["h"][FIGURE] if r["h"] else None for r in seeds]
        row["per_seed_beside"] = [r["h"][BESIDE] if r["h"] else None for r in seeds]
        row["mean"] = float(np.mean(row["per_seed"])) if complete and not stopped else None
        row["mean_beside"] = float(np.mean(row["per_seed_beside"])) if complete and not stopped else None
        row["complete"], row["stopped"] = complete, stopped
        row["status"] = ", ".join(f"seed {r['seed']} {r['status']}" for r in seeds if r["status"] != "ok")
        row["horizon"] = horizon(method, row["knobs"], seeds[0]["batch"], seeds[0]["steps"]) if seeds else ""
    return rows


def horizon(method, knobs, batch, steps):
    """MoCo's queue span K / N and key horizon 1 / (1 - m), in steps, against the pilot's length."""
    if method.startswith("MoCo"):
        m = knobs.get("momentum", reference(method)[1].momentum)
        return (f"K/N = {knobs['queue'] / batch:g} steps; 1/(1-m) = {1 / (1 - m):,.0f} steps "
                f"({100 / (1 - m) / steps:.0f}% of {steps:,})")
    if method == "memory bank":
        epoch = 20_000 / batch
        return f"bank: 1/(1-m) = {1 / (1 - knobs['momentum']):g} epoch(s) of {steps / epoch:.1f}"
    return ""


def decide(method, runs):
    """The rule on one method's runs: its rows, stage 1's rate, the chosen label, and its state."""
    rows = configurations(method, runs)
    out = {"configurations": rows, "count": len(rows), "lr": None, "chosen": None}
    for stage in (1, 2):
        wanted = [label(rate, knobs) for rate, knobs in stage_configs(method, stage, out["lr"])]
        trained = sum(len(rows[k]["runs"]) for k in wanted if k in rows)
        if trained < len(wanted) * len(SEEDS):
            out["state"] = f"stage {stage} in progress ({trained} of {len(wanted) * len(SEEDS)} runs)"
            return out
        if stage == 1:     # ties: the rate closest to the default, then the smaller
            wanted.sort(key=lambda k: (abs(math.log(rows[k]["lr"] / DEFAULT_LR)), rows[k]["lr"]))
            first = tied_first({k: rows[k]["mean"] for k in wanted}, wanted)
            if first is None:
                out["state"] = "every stage-1 configuration stopped early"
                return out
            out["lr"] = rows[first]["lr"]
    preferred = [first, *wanted]       # ties: stage 1's choice, then stage 2's in the rule's order
    out["chosen"], out["state"] = tied_first({k: rows[k]["mean"] for k in preferred}, preferred), "done"
    return out


def report(workers):
    runs = read_json(RUNS) if RUNS.exists() else {}
    methods = {}
    for method in METHODS:
        d = decide(method, runs)
        if not d["configurations"]:
            d["state"] = "not started"
        methods[method] = {**d, "fixed": METHODS[method]["fixed"],
                           "configurations": {k: {key: v for key, v in r.items() if key != "runs"}
                                              for k, r in d["configurations"].items()}}
    done = [m for m, d in methods.items() if d["state"] == "done"]
    out = {"pilot": "tuning", "rule": "reports/pilot/tuning_rule.md", "cpu": cpu_model(),
           "capabilities": cpu_capabilities(), "precision": PRECISION, "threads": 1, "workers": workers,
           "data": f"glyphs100 drawn at seed {PILOT_DATA_SEED}", "steps_at_batch_128": STEPS, "seeds": list(SEEDS),
           "lrs": list(LRS), "finer": FINER, "tie_points": TIE_POINTS, "figure": f"h.{FIGURE}", "beside": f"h.{BESIDE}",
           "runs": len(runs), "train_minutes": sum(r["train_s"] for r in runs.values()) / 60,
           "eval_minutes": sum(r["eval_s"] for r in runs.values()) / 60,
           "configurations_per_method": {m: methods[m]["count"] for m in done},
           "equal_counts": len({methods[m]["count"] for m in done}) <= 1, "methods": methods}
    publish("tuning", out, markdown(out))


def percent(values):
    return ", ".join("stopped" if v is None else f"{100 * v:.1f}%" for v in values)


def markdown(out):
    caps = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in out["capabilities"].items())
    lines = ["# Pilot: tuning parity", "",
             f"Every method a claim compares, tuned alike by the rule in {out['rule']} (committed before the first "
             f"run): stage 1 the learning rates {', '.join(f'{x:g}' for x in out['lrs'])} (at batch 128, the "
             "square-root rule at other batches) at the default knobs; stage 2 two alternatives of the method's own "
             f"knobs, or a finer rate (x 10^-1/4, x 10^1/4), at stage 1's rate. {out['steps_at_batch_128']:,} steps at "
             f"batch 128 (the same images at other batches), seeds {out['seeds']}, {out['precision']}, one thread, "
             f"{out['workers']} worker(s); {out['data']} (the registered run's draw is seed 0). Figure: the linear "
             f"probe on h fitted on every training image (`{out['figure']}`), BatchNorm calibrated; the 20-label probe "
             f"(`{out['beside']}`) beside it decides nothing. Ties: within {out['tie_points']:g} points of the "
             "best.", "",
             f"CPU: {out['cpu']} ({caps}). {out['runs']} runs so far: {out['train_minutes']:.0f} min of training, "
             f"{out['eval_minutes']:.0f} min of probes.", "",
             "| method | chosen | its figure | configurations | not tuned (a claim's knob) | state |",
             "|---|---|---|---|---|---|"]
    for method, d in out["methods"].items():
        figure = f"{100 * d['configurations'][d['chosen']]['mean']:.1f}%" if d["chosen"] else ""
        lines.append(f"| {method} | {d['chosen'] or ''} | {figure} | {d['count']} | {d['fixed']} | "
                     f"{d['state']} |")
    counts = out["configurations_per_method"]
    counted = ", ".join(sorted({str(c) for c in counts.values()})) or "none yet"
    lines += ["", f"Configurations per finished method: {counted} ({'equal' if out['equal_counts'] else 'NOT equal'}).",
              "",
              "| method | stage | configuration | horizons | all-label, per seed | mean | 20-label mean | chosen |",
              "|---|---|---|---|---|---|---|---|"]
    for method, d in out["methods"].items():
        for name, r in d["configurations"].items():
            mean = "" if r["mean"] is None else f"{100 * r['mean']:.1f}%"
            beside = "" if r["mean_beside"] is None else f"{100 * r['mean_beside']:.1f}%"
            stage1_choice = r["stage"] == 1 and d["lr"] == r["lr"]
            note = "yes" if name == d["chosen"] else ("stage 1's rate" if stage1_choice else "")
            lines.append(f"| {method} | {r['stage']} | {name} | {r['horizon']} | {percent(r['per_seed'])}"
                         f"{' (' + r['status'] + ')' if r['status'] else ''} | {mean} | {beside} | {note} |")
    return "\n".join(lines + [""])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="only write the report from the runs so far")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if not args.report:
        pilot_data()
        for method in METHODS:
            run_all(stage_tasks(method, 1), RUNS, args.workers, run=tuning_one)
            lr = decide(method, read_json(RUNS))["lr"]
            if lr is None:
                print(f"{method}: every stage-1 run stopped early; no stage 2", flush=True)
            else:
                run_all(stage_tasks(method, 2, lr), RUNS, args.workers, run=tuning_one)
            report(args.workers)
    report(args.workers)


if __name__ == "__main__":
    main()
