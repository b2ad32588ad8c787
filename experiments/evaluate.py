"""Stage evaluate@<study>: evaluate every checkpoint of every run of one study with every probe.

    python experiments/evaluate.py <study>

Reads resolved/evaluate.json (the probes and the BatchNorm re-estimation before them),
resolved/pretrain/<study>.json (which runs exist) and each run's training record and checkpoints.
A training record that is missing or unreadable, a dataset or a checkpoint whose sha256 differs
from its record, or a dataset too small for the label budget or the BatchNorm re-estimation stops
the stage, before anything is written, with one line naming the file or key and how to fix it.
Writes results/evaluate/<study>/<condition>/seed_<k>.json: every rung, BatchNorm calibrated
(step 0 the untrained control, the budget with the full-label probe too), and the uncalibrated
linear probes of the control and the budget (src/replication/run/evaluate.py: the record).
"""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import json
import sys
from pathlib import Path

from contrastive.data import DataError
from pydantic import ValidationError

from replication.run.config import EvaluateConfig, ParamsError, RunConfig, StudyConfig, check_name, read_resolved
from replication.io import stage_outputs, write_json
from replication.run.evaluate import CheckpointError, evaluate_run, evaluation_tasks
from replication.run.engine import map_runs, release
from replication.run.train import run_name


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def check_records(study, runs):
    """Every run's training record exists and parses, so that a bad one is named here, not as a
    traceback from inside a worker process."""
    for run in runs:
        path = Path(f"results/pretrain/{run}.json")
        retrain = f"run `dvc repro -f pretrain@{study}`"
        if not path.exists():
            fail(f"{path}: missing training record; {retrain}")
        try:
            config = json.loads(path.read_text())["config"]
        except (ValueError, UnicodeDecodeError, KeyError, TypeError):
            fail(f"{path}: not a readable training record (truncated?); restore it with "
                 f"`git checkout -- {path}` or {retrain}")
        try:
            RunConfig(**config)
        except ValidationError:
            fail(f"{path}: its config does not match this code's settings (a record of an older run?); {retrain}")


def main(argv):
    if len(argv) != 2:
        print("usage: evaluate.py STUDY (a study of params.yaml: pretrain.studies)", file=sys.stderr)
        raise SystemExit(2)
    try:
        check_name(argv[1], "study")
    except ParamsError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    study = read_resolved(f"pretrain/{argv[1]}", StudyConfig)
    config = read_resolved("evaluate", EvaluateConfig)
    runs = [run_name(study.study, name, seed) for name in study.conditions for seed in study.seeds]
    check_records(study.study, runs)
    folder, taken = f"results/evaluate/{study.study}", []
    with stage_outputs(folder, prune=[folder]):
        try:
            evaluations = map_runs(evaluate_run, evaluation_tasks(study, config), read_resolved("workers")["workers"],
                                   desc=f"evaluate@{study.study}", taken=taken)
        except (CheckpointError, DataError) as e:
            fail(e)
        for run, evaluation in zip(runs, evaluations):
            write_json(f"results/evaluate/{run}.json", evaluation)
    release(taken)


if __name__ == "__main__":
    main(sys.argv)
