"""Stage toy2d: the 2-D circle experiment over seeds and temperatures, without negatives, and again
at each view noise of the sweep (class spread re-fitted to the calibration target)."""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
from replication.run.config import Toy2D, read_resolved
from replication.examples import toy2d
from replication.io import stage_outputs, write_json

OUT = "results/examples/toy2d.json"

if __name__ == "__main__":
    p = read_resolved("examples/toy2d", Toy2D)
    results = {
        "params": p.model_dump(),
        "gradient_check_max_error": toy2d.gradient_check(),
        "runs": [toy2d.run(seed, tau, p) for tau in p.taus for seed in p.seeds],
        "pull_only": [toy2d.run(seed, min(p.taus), p, objective=toy2d.pull_only_objective)
                      for seed in p.seeds],
        "view_noise_sweep": toy2d.view_noise_sweep(p),
    }
    with stage_outputs(OUT):
        write_json(OUT, results)
