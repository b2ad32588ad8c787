"""Stage pretrain@<study>: pretrain and evaluate every condition of one study over every seed.

    python experiments/pretrain.py <study>

Writes results/pretrain/<study>/<condition>/seed_<k>.json and the checkpoints under
artifacts/pretrain/. The metrics record the checkpoint's sha256; `python -m contrastive.study
RUN.json` checks a checkpoint and re-evaluates its run.

On GPUs, one process per device: `torchrun --nproc-per-node N experiments/pretrain.py <study>`
(every rank runs every run on its slice of each batch; rank 0 writes).
"""
import sys

from contrastive.config import load_params
from contrastive.distributed import init_from_env, select_device, world
from contrastive.study import map_runs, pretrain_seed, save_run, study_tasks

if __name__ == "__main__":
    params = load_params()
    if len(sys.argv) != 2 or sys.argv[1] not in params.pretrain.studies:
        print(f"usage: pretrain.py STUDY (one of: {', '.join(params.pretrain.studies)})", file=sys.stderr)
        raise SystemExit(2)
    study = sys.argv[1]
    init_from_env(select_device(params.device))
    workers = params.workers if world()[1] == 1 else 1
    for metrics, state in map_runs(pretrain_seed, study_tasks(params, study), workers):
        if world()[0] == 0:
            save_run(study, metrics, state)
