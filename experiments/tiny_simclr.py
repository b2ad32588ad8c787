"""Stage tiny_simclr: the article's tiny SimCLR for every seed (each followed by the shape test), a
repeat of one seed, and that seed at several thread counts (run one at a time, so their wall times
are comparable)."""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
from functools import partial

from replication.run.config import TinySimCLR, read_resolved
from replication.examples import tiny_simclr
from replication.io import stage_outputs, write_json
from replication.run.engine import map_runs

OUT = "results/examples/tiny_simclr.json"

if __name__ == "__main__":
    p = read_resolved("examples/tiny_simclr", TinySimCLR)
    budget = (p.steps, p.batch, p.tau)
    with_shape_test = partial(tiny_simclr.run, shape_test=p.shape_test)
    runs = map_runs(with_shape_test, [(seed, *budget, p.threads) for seed in p.seeds],
                    read_resolved("workers")["workers"])
    repeat = tiny_simclr.run(p.thread_check_seed, *budget, p.threads)
    by_threads = [tiny_simclr.run(p.thread_check_seed, *budget, t) for t in p.thread_counts]
    results = {"params": p.model_dump(), "runs": runs, "repeat": repeat, "by_threads": by_threads,
               "repeat_identical": any(tiny_simclr.same_output(r, repeat) for r in runs
                                       if r["seed"] == p.thread_check_seed)}
    with stage_outputs(OUT):
        write_json(OUT, results)
