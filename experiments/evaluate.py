"""Stage evaluate@<study>: evaluate every checkpoint of every run of one study with every probe.

    python experiments/evaluate.py <study>

Reads resolved/evaluate.json (the probes), resolved/pretrain/<study>.json (which runs exist) and
each run's training record and checkpoints; a checkpoint whose sha256 differs from its record stops
the stage with one line naming the file and how to restore it. Writes
results/evaluate/<study>/<condition>/seed_<k>.json: the untrained control (step 0) and the end of
training, on h and on z.
"""
import sys
from pathlib import Path

from replication.config import EvaluateConfig, StudyConfig, read_resolved
from replication.io import write_json
from replication.evaluation import CheckpointError, evaluate_run
from replication.runs import map_runs, run_name

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: evaluate.py STUDY (a study of params.yaml: pretrain.studies)", file=sys.stderr)
        raise SystemExit(2)
    study = read_resolved(f"pretrain/{sys.argv[1]}", StudyConfig)
    config = read_resolved("evaluate", EvaluateConfig)
    runs = [run_name(study.study, name, seed) for name in study.conditions for seed in study.seeds]
    for run in runs:
        if not Path(f"results/pretrain/{run}.json").exists():
            print(f"error: results/pretrain/{run}.json: missing training record; "
                  f"run `dvc repro pretrain@{study.study}`", file=sys.stderr)
            raise SystemExit(1)
    tasks = [(f"results/pretrain/{run}.json", config, study.data) for run in runs]
    try:
        evaluations = map_runs(evaluate_run, tasks, read_resolved("workers")["workers"])
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    for run, evaluation in zip(runs, evaluations):
        write_json(f"results/evaluate/{run}.json", evaluation)
