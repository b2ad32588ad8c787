"""Where one run's evaluation spends its time, and how far the cheaper evaluation can go while it
keeps every probe the registry reads.

    python benchmarks/evaluation_cost.py [--steps 20] [--repeats 2]

The run: the default SimCLR condition (resolved/pretrain/simclr_mocov2.json) trained for --steps
steps with two ladder rungs before the budget, so that its checkpoints are the set every run of the
first registered run had: the untrained control, two rungs and the budget (with the probes only the
budget gets). Its evaluation (replication.run.evaluate.evaluate_run, the study's probes, 1 thread) is
timed with each part of contrastive.evaluate clocked: the forward passes (embed), the probes' fitting
(linear and MLP), the neighbour classifiers, the tolerances, alignment and uniformity, the pretext
accuracy, the BatchNorm calibration and the rest.

Two cheaper ways to compute parts that the registry does not need computed as they are today are
timed beside them, on this checkpoint's own features: the forward passes under bfloat16 autocast, and
the tolerances from per-class sums (sum over same-class pairs of h_i . h_j = ||sum_c h||^2 - sum ||h||^2,
exact in float64) instead of the n x n similarity matrix. The projection replaces those two parts by
their cheaper versions; the probes' fitting stays, so it bounds what any evaluation that keeps every
probe can save. Writes reports/benchmarks/evaluation_cost.json.
"""
import collections
import tempfile
import time
from pathlib import Path

import torch

import contrastive.evaluate as ev
from common import alternate, header, record, run_args
from replication.run import evaluate as run_evaluate
from replication.run.config import EvaluateConfig, StudyConfig, read_resolved
from replication.run.datasets import dataset_for
from replication.run.train import save_run, train_run

ROOT = Path(__file__).resolve().parents[1]
# part of the evaluation -> the functions it consists of, as (module, name): none calls another
PARTS = {"forward passes": [(ev, "embed")],
         "probe fitting": [(ev, "linear_probe_accuracy"), (ev, "mlp_probe_accuracy")],
         "neighbours": [(ev, "knn_accuracy"), (ev, "weighted_knn_accuracy")],
         "tolerances": [(ev, "tolerances")],
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


def tolerances_from_class_sums(h, y):
    """(tolerance, centred tolerance) of l2-normalised h without the n x n matrix: the sums over
    ordered pairs of distinct samples, same-class and all, from per-class sums, in float64."""
    h = h.double()
    counts = torch.bincount(y).double()
    sums = torch.zeros(len(counts), h.shape[1], dtype=torch.float64).index_add_(0, y, h)
    norms = (h * h).sum()
    same = (sums * sums).sum() - norms
    every = h.sum(0) @ h.sum(0) - norms
    within = same / (counts * (counts - 1)).sum()
    different = (every - same) / (len(y) ** 2 - (counts ** 2).sum())
    return within.item(), (within - different).item()


def embed_bf16(f, g, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return ev.embed(f, g, x, chunk=1000)


def main(argv=None):
    args = run_args(argv, __doc__)
    header("Where one run's evaluation spends its time")
    study = read_resolved("pretrain/simclr_mocov2", StudyConfig, root=ROOT)
    config = read_resolved("evaluate", EvaluateConfig, root=ROOT)
    rungs = [args.steps // 4, args.steps // 2]
    cfg = study.conditions["simclr"].model_copy(update={"steps": args.steps, "checkpoints": rungs, "ladder": []})
    seconds = collections.defaultdict(float)
    with tempfile.TemporaryDirectory() as tmp:
        run_record, states = train_run(0, "simclr", cfg, study.execution, study.data, data_dir=ROOT / "data")
        save_run("bench", run_record, states, root=tmp)
        undo = clocked(seconds)
        try:
            totals = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                run_evaluate.evaluate_run("results/pretrain/bench/simclr/seed_0.json", config, study.data,
                                          data_dir=ROOT / "data", root=tmp)
                totals.append(time.perf_counter() - start)
        finally:
            undo()
    total = sum(totals) / args.repeats
    parts = {part: s / args.repeats for part, s in seconds.items()}
    parts["the rest"] = total - sum(parts.values())

    # the two cheaper computations, on the budget checkpoint's own test features
    method = run_evaluate.method_from_state(cfg, states[args.steps], run_record["n_data"], run_record["n_classes"])
    data = dataset_for(cfg.dataset, study.data, ROOT / "data")
    p = config.evaluate
    x, y = data["x_test"][:p.n_test], data["y_test"][:p.n_test]
    h, _ = ev.embed(method.f, method.g, x, chunk=1000)
    pairs, sums = ev.tolerances(h, ev.class_masks(y)), tolerances_from_class_sums(h, y)
    if max(abs(a - b) for a, b in zip(pairs, sums)) > 1e-5:      # the pair matrix sums in float32
        raise SystemExit(f"the tolerances from class sums {sums} differ from the pair matrix's {pairs}")
    h_bf16, _ = embed_bf16(method.f, method.g, x)
    timed = alternate({"fp32": lambda: ev.embed(method.f, method.g, x, chunk=1000),
                       "bf16": lambda: embed_bf16(method.f, method.g, x),
                       "pairs": lambda: ev.tolerances(h, ev.class_masks(y)),
                       "class sums": lambda: tolerances_from_class_sums(h, y)}, repeats=3)
    embed_ratio = timed["bf16"] / timed["fp32"]
    tolerance_ratio = timed["class sums"] / timed["pairs"]
    projected = total - parts["forward passes"] * (1 - embed_ratio) - parts["tolerances"] * (1 - tolerance_ratio)
    floor = parts["probe fitting"] + parts["neighbours"]

    print(f"checkpoints: steps 0, {rungs[0]}, {rungs[1]} and {args.steps} (the budget); {total:.1f} s per evaluation "
          f"(mean of {args.repeats})")
    for part, s in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"  {part:24s} {s:6.2f} s  {s / total:5.1%}")
    print(f"forward passes under bf16 autocast: {embed_ratio:.2f}x the fp32 time "
          f"(largest |h| difference {(h - h_bf16).abs().max():.1e})")
    print(f"tolerances from class sums: {tolerance_ratio:.3f}x the pair matrix; values {pairs} and {sums}")
    print(f"projected with both: {projected / total:.2f}x today's evaluation; the probes' fitting and the "
          f"neighbours alone are {floor / total:.2f}x")
    record("evaluation_cost", {"steps": [0, *rungs, args.steps], "repeats": args.repeats, "threads": 1,
                               "total_s": round(total, 2), "parts_s": {k: round(v, 2) for k, v in parts.items()},
                               "embed_bf16_over_fp32": round(embed_ratio, 3),
                               "tolerance_class_sums_over_pairs": round(tolerance_ratio, 4),
                               "tolerance_pairs": pairs, "tolerance_class_sums": sums,
                               "projected_over_today": round(projected / total, 3),
                               "probes_and_neighbours_over_today": round(floor / total, 3)})


if __name__ == "__main__":
    main()
