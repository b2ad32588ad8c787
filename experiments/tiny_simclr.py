"""Stage tiny_simclr: the article's tiny SimCLR for every seed, a repeat of one seed, and that
seed at several thread counts (run one at a time, so their wall times are comparable)."""
from contrastive.config import load_params
from contrastive.examples import tiny_simclr
from contrastive.io import write_json
from contrastive.study import map_runs

if __name__ == "__main__":
    params = load_params()
    p = params.examples.tiny_simclr
    budget = (p.steps, p.batch, p.tau)
    runs = map_runs(tiny_simclr.run, [(seed, *budget, p.threads) for seed in p.seeds], params.workers)
    repeat = tiny_simclr.run(p.thread_check_seed, *budget, p.threads)
    by_threads = [tiny_simclr.run(p.thread_check_seed, *budget, t) for t in p.thread_counts]
    write_json("results/examples/tiny_simclr.json", {
        "params": p.model_dump(), "runs": runs, "repeat": repeat, "by_threads": by_threads,
        "repeat_identical": any(tiny_simclr.same_output(r, repeat) for r in runs
                                if r["seed"] == p.thread_check_seed)})
