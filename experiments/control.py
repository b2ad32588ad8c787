"""Stage control@<study>: the calibrated untrained control of every run of one study.

    python experiments/control.py <study>

Reads resolved/control.json (the BatchNorm re-estimation and evaluate@'s probes),
resolved/pretrain/<study>.json (which runs exist) and each run's training record. Rebuilds each
run's step-0 encoder from its seed (no checkpoint needed; a rebuild whose sha256 differs from the
record's step-0 checkpoint stops the stage with one line), re-estimates its BatchNorm statistics on
training images (src/replication/calibration.py: the rule) and probes it as evaluate@ does. Writes
results/control/<study>/<condition>/seed_<k>.json; the uncalibrated control stays in
results/evaluate/ (`control`).
"""
import sys
from pathlib import Path

from replication.calibration import ControlError, control_run
from replication.config import ControlConfig, StudyConfig, read_resolved
from replication.io import write_json
from replication.runs import map_runs, run_name


def main(study_name):
    study = read_resolved(f"pretrain/{study_name}", StudyConfig)
    config = read_resolved("control", ControlConfig)
    runs = [run_name(study.study, name, seed) for name in study.conditions for seed in study.seeds]
    for run in runs:
        if not Path(f"results/pretrain/{run}.json").exists():
            print(f"error: results/pretrain/{run}.json: missing training record; "
                  f"run `dvc repro pretrain@{study.study}`", file=sys.stderr)
            raise SystemExit(1)
    tasks = [(f"results/pretrain/{run}.json", config, study.data) for run in runs]
    try:
        controls = map_runs(control_run, tasks, read_resolved("workers")["workers"])
    except ControlError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    for run, control in zip(runs, controls):
        write_json(f"results/control/{run}.json", control)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: control.py STUDY (a study of params.yaml: pretrain.studies)", file=sys.stderr)
        raise SystemExit(2)
    main(sys.argv[1])
