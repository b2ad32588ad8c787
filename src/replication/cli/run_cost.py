"""What the registered run of params.yaml will cost on this CPU and on the slowest CPU seen, per
stage and with its sequential second stage at the registered cap, before it is run.

    python -m replication run-cost [--measure] [--reference COMMIT] [--precision bf16]

--measure times every condition of params.yaml here (MEASURED_STEPS steps of one condition of each
cost group, in two processes of one torch thread side by side, as the stages run) in the run's
precision, and the default arm in fp32, into reports/pilot/step_time.json. A run costs its steps times its condition's step.
Evaluation costs a fixed amount per checkpoint and more at the budget (fitted to the reference run's
evaluation records, the first registered run at COMMIT), scaled by the default arm's fp32 step here
against its step there. Stage minutes: the stage's runs handed out longest first to `workers`
processes (`makespan`). Stage 2 (rules.sequential in analysis/rules.yaml) runs at most
`conditions_at_most` conditions for `further_seeds` more seeds each: its cap is costed at the dearest
conditions. The slowest CPU seen (SLOWEST) is reached by the ratio of its fp32 step of the default arm
to this CPU's. Writes reports/pilot/run_cost.json and run_cost.md.
"""
import json
import multiprocessing
import subprocess
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from replication.io import cpu_model, read_json, write_json
from replication.judge.registry import load_registry
from replication.run.config import StudyConfig, read_resolved
from replication.run.train import train_run

REFERENCE = "cf5efd5"          # the first registered run's records, as committed
# The slowest CPU this study has seen: the default arm's fp32 step (batch 128, channels_last, one
# thread), measured there by benchmarks/bf16.py
SLOWEST = {"cpu": "AMD EPYC, AVX2 only (no AVX-512)", "float32_s": 0.136}
STAGE_LIMIT_MIN = 40           # no DVC stage over this on any CPU seen
BUDGET_MIN = 900               # the whole run's stage-minutes
OUT = Path("reports/pilot")
STEP_TIME = OUT / "step_time.json"
MEASURED_STEPS = 200


def git_json(commit, path):
    return json.loads(subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True,
                                     check=True).stdout)


def reference_records(commit, kind):
    """{condition: [record, ...]} of the reference run's training or evaluation records."""
    paths = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, f"results/{kind}/"], capture_output=True,
                           text=True, check=True).stdout.split()
    out = {}
    for path in paths:
        if path.endswith(".json") and "/seed_" in path:
            out.setdefault(path.split("/")[3], []).append(git_json(commit, path))
    return out


def step_seconds(records):
    """Mean wall seconds per step of a condition's training runs (to their last rung)."""
    return float(np.mean([r["wall_s"] / max(r["steps_done"], 1) for r in records]))


def evaluation_fit(records):
    """(seconds per checkpoint, extra seconds at the budget): least squares over evaluation records."""
    rows = [(len(r["rungs"]), 1.0, r["wall_s"]) for recs in records.values() for r in recs]
    a = np.array([[n, budget] for n, budget, _ in rows])
    seconds, extra = np.linalg.lstsq(a, np.array([w for *_, w in rows]), rcond=None)[0]
    return float(seconds), float(extra)


# fields whose value changes a step's arithmetic only, not its cost: conditions that differ in these
# alone are timed once
SCALARS = {"label", "tau", "learn_tau", "lr", "lr_rule", "lr_reference_batch", "margin", "momentum", "colour_strength",
           "crop_min_side", "tau_plus", "steps", "ladder", "checkpoints", "schedule", "lam", "siglip_t", "siglip_b",
           "drop_same_class"}


def cost_groups():
    """[[(study, condition), ...]]: the conditions of params.yaml grouped by what a step costs."""
    groups = {}
    for study in studies():
        for name, cfg in read_resolved(f"pretrain/{study}", StudyConfig).conditions.items():
            shape = json.dumps({k: v for k, v in cfg.model_dump().items() if k not in SCALARS}, sort_keys=True)
            groups.setdefault(shape, []).append((study, name))
    return list(groups.values())


def timed_steps(tasks, steps=MEASURED_STEPS):
    """[seconds per training step] of each (study, condition, precision) in `tasks`, one after the
    other on one torch thread (the run's own clock: data loading left out)."""
    out = []
    for study_name, condition, precision in tasks:
        study = read_resolved(f"pretrain/{study_name}", StudyConfig)
        cfg = study.conditions[condition].model_copy(update={"checkpoints": [], "steps": steps, "ladder": []})
        execution = study.execution.model_copy(update={"precision": precision, "threads": 1})
        record, _ = train_run(0, condition, cfg, execution, study.data)
        out.append(record["wall_s"] / steps)
    return out


def measure(precision, path=STEP_TIME):
    """Each cost group's step in `precision`, and the default arm's in fp32 (evaluation's
    precision), timed in two processes that run side by side throughout (as a stage's two workers
    do), into `path` ({condition|precision: seconds} for every condition)."""
    groups = cost_groups()
    tasks = [(*group[0], precision) for group in groups] + [("simclr_mocov2", "simclr", "fp32")]
    halves = [tasks[0::2], tasks[1::2]]
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        timed = dict(zip(halves[0] + halves[1], [t for half in pool.map(timed_steps, halves) for t in half]))
    step_s = {f"{name}|{precision}": timed[(*group[0], precision)] for group in groups for _, name in group}
    step_s["simclr|fp32"] = timed[("simclr_mocov2", "simclr", "fp32")]
    out = {"cpu": cpu_model(), "steps": MEASURED_STEPS, "runs_at_a_time": 2, "step_s": step_s}
    write_json(path, out)
    return out


def here_step_seconds(condition, precision, path=STEP_TIME):
    """A condition's wall seconds per step on this CPU in `precision`, as measured by --measure."""
    measured = read_json(path) if path.exists() else {}
    if measured.get("cpu") != cpu_model() or f"{condition}|{precision}" not in measured["step_s"]:
        raise SystemExit(f"{path}: no step time of {condition} ({precision}) on this CPU; run "
                         "`python -m replication run-cost --measure`")
    return measured["step_s"][f"{condition}|{precision}"]


def studies():
    return sorted(p.stem for p in Path("resolved/pretrain").glob("*.json"))


def makespan(seconds, workers):
    """Wall seconds of runs handed out longest first to `workers` processes, each taking the next
    run as it becomes free (as replication.run.engine.map_runs does)."""
    free = [0.0] * workers
    for run in sorted(seconds, reverse=True):
        free[free.index(min(free))] += run
    return max(free)


def estimate(commit, precision):
    evaluation = reference_records(commit, "evaluate")
    default = step_seconds(reference_records(commit, "pretrain")["simclr"])
    per_checkpoint, budget_extra = evaluation_fit(evaluation)
    eval_scale = here_step_seconds("simclr", "fp32") / default   # evaluation runs in fp32
    workers = read_resolved("workers")["workers"] if Path("resolved/workers.json").exists() else 2
    stages, per_seed = {}, {}
    for study in studies():
        cfg = read_resolved(f"pretrain/{study}", StudyConfig)
        train_s, eval_s = [], []
        for name, condition in cfg.conditions.items():
            train, evaluate = (condition.rungs[-1] * here_step_seconds(name, precision),
                               (len(condition.rungs) * per_checkpoint + budget_extra) * eval_scale)
            train_s += [train] * len(cfg.seeds)
            eval_s += [evaluate] * len(cfg.seeds)
            per_seed[name] = train + evaluate
        stages[study] = {"pretrain_min": makespan(train_s, workers) / 60, "evaluate_min": makespan(eval_s, workers) / 60}
    slower = SLOWEST["float32_s"] / here_step_seconds("simclr", "fp32")
    stage_one = sum(s["pretrain_min"] + s["evaluate_min"] for s in stages.values())
    design = load_registry().rules["sequential"]
    dearest = sorted(per_seed.values(), reverse=True)[:design["conditions_at_most"]]
    stage_two = makespan([t for t in dearest for _ in range(design["further_seeds"])], workers) / 60
    return {"reference": commit, "precision": precision, "cpu": cpu_model(), "workers": workers,
            "default_step_s": {"reference": default, "here": here_step_seconds("simclr", precision)},
            "per_checkpoint_s": per_checkpoint, "budget_extra_s": budget_extra, "stages": stages,
            "stage_one_min": stage_one, "stage_two_cap_min": stage_two, "total_min": stage_one + stage_two,
            "slowest": {**SLOWEST, "ratio": slower, "total_min": (stage_one + stage_two) * slower,
                        "longest_stage_min": slower * max(max(s.values()) for s in stages.values())},
            "design": {k: design[k] for k in ("conditions_at_most", "further_seeds")}}


def markdown(out):
    slow = out["slowest"]
    lines = ["# Estimated cost of the registered run of params.yaml", "",
             f"On {out['cpu']}, {out['precision']}, {out['workers']} runs at a time. The default arm's step: "
             f"{out['default_step_s']['here']:.3f} s here against {out['default_step_s']['reference']:.3f} s in the "
             f"reference run ({out['reference']}); evaluation {out['per_checkpoint_s']:.1f} s per checkpoint and "
             f"{out['budget_extra_s']:.1f} s more at the budget there. Stage minutes of wall time, here and on the "
             f"slowest CPU seen ({slow['cpu']}: its fp32 step {slow['float32_s']:.3f} s, x {slow['ratio']:.2f}); a "
             f"stage over {STAGE_LIMIT_MIN} minutes is marked.", "",
             "| study | pretrain | evaluate | the longer, on the slowest CPU |", "|---|---|---|---|"]
    for study, s in out["stages"].items():
        longest = slow["ratio"] * max(s.values())
        lines.append(f"| {study} | {s['pretrain_min']:.1f} | {s['evaluate_min']:.1f} | {longest:.1f}"
                     f"{' (over)' if longest > STAGE_LIMIT_MIN else ''} |")
    design = out["design"]
    lines += ["", f"Stage 1 (every study): {out['stage_one_min']:.0f} minutes here. Stage 2 at its registered cap "
              f"({design['conditions_at_most']} conditions x {design['further_seeds']} seeds, the dearest "
              f"conditions): at most {out['stage_two_cap_min']:.0f}. Run 3 in all: at most {out['total_min']:.0f} "
              f"minutes here, {slow['total_min']:.0f} on the slowest CPU seen (the budget: {BUDGET_MIN}). The "
              "documents' examples, data and analysis add a few.", ""]
    return "\n".join(lines)


def add_arguments(parser):
    parser.add_argument("--reference", default=REFERENCE, metavar="COMMIT",
                        help=f"the reference run's commit, whose evaluation records fit the evaluation cost "
                             f"(default: {REFERENCE})")
    parser.add_argument("--precision", default=None, help="default: the resolved execution's")
    parser.add_argument("--measure", action="store_true", help="time every condition's step here first "
                        "(reports/pilot/step_time.json)")


def run(args):
    precision = args.precision or read_resolved("pretrain/simclr_mocov2", StudyConfig).execution.precision
    if args.measure:
        measure(precision)
    out = estimate(args.reference, precision)
    write_json(OUT / "run_cost.json", out)
    (OUT / "run_cost.md").write_text(markdown(out))
    print(markdown(out))

