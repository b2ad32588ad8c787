"""Stage pretrain@<condition>: pretrain and evaluate every seed of one condition.

    python experiments/pretrain.py <condition>

Writes results/pretrain/<condition>/seed_<k>.json and artifacts/pretrain/<condition>/seed_<k>.pt.
"""
import sys

from contrastive.config import load_params
from contrastive.io import save_torch, write_json
from contrastive.study import map_seeds, pretrain_seed

if __name__ == "__main__":
    params = load_params()
    if len(sys.argv) != 2 or sys.argv[1] not in params.pretrain.conditions:
        print(f"usage: pretrain.py CONDITION (one of: {', '.join(params.pretrain.conditions)})",
              file=sys.stderr)
        raise SystemExit(2)
    condition = sys.argv[1]
    cfg = params.pretrain.run_config(condition)
    runs = map_seeds(pretrain_seed, params.pretrain.seeds, params.workers, condition, cfg, params)
    for metrics, state in runs:
        seed = metrics["seed"]
        save_torch(f"artifacts/pretrain/{condition}/seed_{seed}.pt", state)
        write_json(f"results/pretrain/{condition}/seed_{seed}.json", metrics)
