"""Evaluation of one run's checkpoints before and after the shared tolerance computation
(contrastive.evaluate.tolerances: one similarity matrix and one set of class masks for both
tolerances, masked_select for the gathers), timed in alternation on the same checkpoints, and the
two evaluation records compared: they must be equal but for the timing field.

    python benchmarks/evaluation.py [--steps 20] [--repeats 2]

The run: the default SimCLR condition (resolved/pretrain/simclr_mocov2.json), trained for --steps
steps, so its checkpoints are the untrained control (step 0) and a budget rung (every probe,
the full-label one included), evaluated with the study's probes (resolved/evaluate.json) on
glyphs100. "before" is src/contrastive/evaluate.py as of BASE, loaded from git.
Writes reports/benchmarks/evaluation.json.
"""
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from common import alternate, header, record, run_args
from replication.run import evaluate as run_evaluate
from replication.run.config import EvaluateConfig, StudyConfig, read_resolved
from replication.run.train import save_run, train_run

ROOT = Path(__file__).resolve().parents[1]
BASE = "efff25a"        # the last commit with the per-function tolerances


def module_at(commit, path, name):
    """The module at `path` as of `commit`, imported under `name` (a sibling in its package)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True,
                            check=True).stdout
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = name.rpartition(".")[0]
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def evaluator(module, record_path, config, data_settings, root):
    """evaluate_run with the probes of `module` (contrastive.evaluate or its earlier version)."""
    def run():
        saved = run_evaluate.evaluate_representation, run_evaluate.linear_probes
        run_evaluate.evaluate_representation, run_evaluate.linear_probes = module.evaluate_representation, \
            module.linear_probes
        try:
            return run_evaluate.evaluate_run(record_path, config, data_settings, data_dir=ROOT / "data", root=root)
        finally:
            run_evaluate.evaluate_representation, run_evaluate.linear_probes = saved
    return run


def main(argv=None):
    args = run_args(argv, __doc__)
    header("Evaluation of one run's checkpoints: after / before (shared tolerances)")
    import contrastive.evaluate as after
    before = module_at(BASE, "src/contrastive/evaluate.py", "contrastive.evaluate_before")
    study = read_resolved("pretrain/simclr_mocov2", StudyConfig, root=ROOT)
    config = read_resolved("evaluate", EvaluateConfig, root=ROOT)
    cfg = study.conditions["simclr"].model_copy(update={"steps": args.steps, "ladder": []})
    with tempfile.TemporaryDirectory() as tmp:
        run_record, states = train_run(0, "simclr", cfg, study.execution, study.data, data_dir=ROOT / "data")
        save_run("bench", run_record, states, root=tmp)
        record_path = "results/pretrain/bench/simclr/seed_0.json"
        runs = {"before": evaluator(before, record_path, config, study.data, tmp),
                "after": evaluator(after, record_path, config, study.data, tmp)}
        outputs = {name: [] for name in runs}
        timed = {name: (lambda name=name: outputs[name].append(runs[name]())) for name in runs}
        seconds = alternate(timed, repeats=args.repeats, warmup=0)
    # the changed part alone, on the first checkpoint's own test features (5,000 images, h and z)
    with torch.no_grad():
        cfg_state = run_evaluate.method_from_state(cfg, states[0], run_record["n_data"], run_record["n_classes"])
    from replication.run.datasets import dataset_for
    data = dataset_for(cfg.dataset, study.data, ROOT / "data")
    p = config.evaluate
    features = after.embed(cfg_state.f, cfg_state.g, data["x_test"][:p.n_test], chunk=1000)
    y_test = data["y_test"][:p.n_test]
    old_tol = lambda: [(before.tolerance(h, y_test), before.centred_tolerance(h, y_test)) for h in features]
    new_tol = lambda: [after.tolerances(h, after.class_masks(y_test)) for h in features]
    assert old_tol() == new_tol()
    tol_seconds = alternate({"before": old_tol, "after": new_tol}, repeats=5)
    print(f"the tolerances alone (h and z, {p.n_test} test images): before {tol_seconds['before']:.2f} s, "
          f"after {tol_seconds['after']:.2f} s, after/before {tol_seconds['after'] / tol_seconds['before']:.2f}")
    timing = {"wall_s"}
    strip = lambda r: {k: v for k, v in r.items() if k not in timing}
    identical = all(strip(r) == strip(outputs["before"][0]) for rs in outputs.values() for r in rs)
    ratio = seconds["after"] / seconds["before"]
    print(f"checkpoints: steps 0 and {args.steps}; median of {args.repeats} alternated evaluations")
    print(f"before {seconds['before']:.1f} s, after {seconds['after']:.1f} s, after/before {ratio:.2f}")
    print(f"evaluation records equal but for {sorted(timing)}: {identical}")
    record("evaluation", {"steps": [0, args.steps], "repeats": args.repeats, "before_s": round(seconds["before"], 2),
                          "after_s": round(seconds["after"], 2), "ratio_after_over_before": round(ratio, 3),
                          "records_identical_but_timing": identical, "threads": 1,
                          "tolerances_before_s": round(tol_seconds["before"], 3),
                          "tolerances_after_s": round(tol_seconds["after"], 3)})
    if not identical:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
