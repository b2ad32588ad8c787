"""Stage pretrain@<study>: train every condition of one study over every seed, with a checkpoint at
every rung (step 0, the untrained control, and the end of training).

    python experiments/pretrain.py <study>

Reads resolved/pretrain/<study>.json. Writes the training records
results/pretrain/<study>/<condition>/seed_<k>.json (loss curve, status, time, memory, each
checkpoint's path and sha256) and the checkpoints under artifacts/pretrain/; evaluate@<study>
evaluates them.

On GPUs, one process per device: `torchrun --nproc-per-node N experiments/pretrain.py <study>`
(every rank runs every run on its slice of each batch; rank 0 writes).
"""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import sys

from contrastive.data import DataError
from contrastive.distributed import init_from_env, rank, select_device, world_size
from contrastive.train import PrecisionError
from replication.run.config import ParamsError, StudyConfig, check_name, read_resolved
from replication.io import stage_outputs
from replication.run.engine import map_runs, release
from replication.run.train import save_run, train_run, training_tasks

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: pretrain.py STUDY (a study of params.yaml: pretrain.studies)", file=sys.stderr)
        raise SystemExit(2)
    try:
        check_name(sys.argv[1], "study")
    except ParamsError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    study = read_resolved(f"pretrain/{sys.argv[1]}", StudyConfig)
    init_from_env(select_device(study.execution.device))
    workers = read_resolved("workers")["workers"] if world_size() == 1 else 1
    # what a run killed mid-save left behind (ignored by DVC, see .dvcignore): rank 0's to remove
    outputs = (f"artifacts/pretrain/{study.study}", f"results/pretrain/{study.study}") if rank() == 0 else ()
    taken = []          # the runs the scheduler did ahead (run/engine.py), released once written
    with stage_outputs(*outputs, prune=outputs):
        try:
            for record, states in map_runs(train_run, training_tasks(study), workers, desc=f"pretrain@{study.study}",
                                           taken=taken if world_size() == 1 else None):
                if rank() == 0:
                    save_run(study.study, record, states)
        except (DataError, PrecisionError) as e:
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(1) from None
    release(taken)
