"""Where one run's evaluation spends its time, today and in the cheap evaluation piloted for the next
registered run, with every probe the registry reads kept.

    python benchmarks/evaluation_cost.py [--steps 20] [--repeats 2]

The run: the default SimCLR condition (resolved/pretrain/simclr_mocov2.json) trained for --steps
steps with two ladder rungs before the budget, so that its checkpoints are the set every run of the
first registered run had: the untrained control, two rungs and the budget (with the probes only the
budget gets). Its evaluation (replication.run.evaluate.evaluate_run, the study's probes, 1 thread) is
timed as run 2 computed it (float32) and cheap (contrastive.evaluate.evaluate_representation's
`cheap`: forward passes CHEAP_CHUNK images at a time (run 2: CHUNK), under bfloat16 autocast but for
the rotation probes, linear probes fitted in bfloat16 with the gradient written out, the tolerances from class
sums), the two in alternation, with each part of contrastive.evaluate clocked: the forward passes
(embed), the probes' fitting (linear and MLP), the neighbour classifiers, the tolerances, alignment and
uniformity, the pretext accuracy, the BatchNorm calibration and the rest. The ratio of the mean times
is the result; the ratio of each alternated pair shows how much it varies. Writes
reports/benchmarks/evaluation_cost.json.
"""
import collections
import tempfile
import time
from pathlib import Path

import contrastive.evaluate as ev
from common import header, record, run_args
from replication.run import evaluate as run_evaluate
from replication.run.config import EvaluateConfig, StudyConfig, read_resolved
from replication.run.train import save_run, train_run

ROOT = Path(__file__).resolve().parents[1]
# part of the evaluation -> the functions it consists of, as (module, name): none calls another
PARTS = {"forward passes": [(ev, "embed")],
         "probe fitting": [(ev, "linear_probe_accuracy"), (ev, "mlp_probe_accuracy")],
         "neighbours": [(ev, "knn_accuracy"), (ev, "weighted_knn_accuracy")],
         "tolerances": [(ev, "tolerances"), (ev, "tolerances_exact")],
         "alignment, uniformity": [(ev, "alignment"), (ev, "uniformity")],
         "pretext accuracy": [(run_evaluate, "contrastive_top1")],
         "BN calibration": [(run_evaluate, "recalibrate_bn")]}


def clocked(seconds):
    """Wrap every function of PARTS so that its time adds to seconds[part]; returns an undo."""
    saved = []
    for part, functions in PARTS.items():
        for module, name in functions:
            fn = getattr(module, name)
            saved.append((module, name, fn))

            def timed(*args, _fn=fn, _part=part, **kwargs):
                start = time.perf_counter()
                try:
                    return _fn(*args, **kwargs)
                finally:
                    seconds[_part] += time.perf_counter() - start
            setattr(module, name, timed)
    return lambda: [setattr(module, name, fn) for module, name, fn in saved]


def timed_evaluations(record_path, config, data_settings, root, repeats):
    """Seconds of evaluate_run as run 2 computed it ("float32") and cheap, alternated: each one's
    seconds per repeat, and its seconds per part (mean over repeats)."""
    seconds = {"float32": [], "cheap": []}
    parts = {mode: collections.defaultdict(float) for mode in seconds}
    for _ in range(repeats):
        for mode in seconds:
            undo = clocked(parts[mode])
            try:
                start = time.perf_counter()
                run_evaluate.evaluate_run(record_path, config, data_settings, data_dir=ROOT / "data", root=root,
                                          cheap=mode == "cheap")
                seconds[mode].append(time.perf_counter() - start)
            finally:
                undo()
    for mode, each in seconds.items():
        parts[mode]["the rest"] = sum(each) - sum(parts[mode].values())
    return seconds, {mode: {part: s / repeats for part, s in p.items()} for mode, p in parts.items()}


def main(argv=None):
    args = run_args(argv, __doc__)
    header("Where one run's evaluation spends its time, today and cheap")
    study = read_resolved("pretrain/simclr_mocov2", StudyConfig, root=ROOT)
    config = read_resolved("evaluate", EvaluateConfig, root=ROOT)
    rungs = [args.steps // 4, args.steps // 2]
    cfg = study.conditions["simclr"].model_copy(update={"steps": args.steps, "checkpoints": rungs, "ladder": []})
    with tempfile.TemporaryDirectory() as tmp:
        run_record, states = train_run(0, "simclr", cfg, study.execution, study.data, data_dir=ROOT / "data")
        save_run("bench", run_record, states, root=tmp)
        seconds, parts = timed_evaluations("results/pretrain/bench/simclr/seed_0.json", config, study.data, tmp,
                                           args.repeats)
    totals = {mode: sum(each) / len(each) for mode, each in seconds.items()}
    ratio = totals["cheap"] / totals["float32"]
    pair_ratios = [round(c / f, 3) for c, f in zip(seconds["cheap"], seconds["float32"])]
    print(f"checkpoints: steps 0, {rungs[0]}, {rungs[1]} and {args.steps} (the budget); mean of {args.repeats}, "
          "alternated")
    print(f"  {'part':24s} {'float32':>9s} {'share':>6s} {'cheap':>9s} {'ratio':>6s}")
    for part, s in sorted(parts["float32"].items(), key=lambda kv: -kv[1]):
        cheap = parts["cheap"][part]
        print(f"  {part:24s} {s:8.2f}s {s / totals['float32']:6.1%} {cheap:8.2f}s {cheap / s:6.2f}")
    print(f"  {'evaluation':24s} {totals['float32']:8.2f}s {'':6s} {totals['cheap']:8.2f}s {ratio:6.2f}")
    print(f"  cheap / float32 per alternated pair: {', '.join(f'{r:.2f}' for r in pair_ratios)}")
    record("evaluation_cost", {"steps": [0, *rungs, args.steps], "repeats": args.repeats, "threads": 1,
                               "float32_s": round(totals["float32"], 2), "cheap_s": round(totals["cheap"], 2),
                               "cheap_over_float32": round(ratio, 3), "pair_ratios": pair_ratios,
                               "images_per_forward_pass": {"float32": ev.CHUNK, "cheap": ev.CHEAP_CHUNK},
                               "parts_s": {mode: {k: round(v, 2) for k, v in p.items()} for mode, p in parts.items()}})


if __name__ == "__main__":
    main()
