"""Stage determinism: one short pretraining of a condition, run twice at the first thread count
and once at every other, compared field by field (src/contrastive/study.py: differences).

Writes results/determinism.json: whether the repeat is bit-identical, and every metric that
moves with the thread count, with both values.
"""
from contrastive.config import load_params
from contrastive.io import write_json
from contrastive.study import differences, pretrain_seed

if __name__ == "__main__":
    params = load_params()
    p = params.determinism
    cfg = params.pretrain.run_config(p.condition).model_copy(update={"steps": p.steps})
    run = lambda threads: pretrain_seed(p.seed, p.condition, cfg, params.model_copy(update={"threads": threads}))[0]
    first, *others = p.thread_counts
    reference, repeat = run(first), run(first)
    by_threads = {threads: differences(reference, run(threads)) for threads in others}
    write_json("results/determinism.json", {
        "params": p.model_dump(), "reference": reference,
        "repeat_differences": [list(d) for d in differences(reference, repeat)],
        "thread_differences": {str(t): [list(d) for d in diff] for t, diff in by_threads.items()}})
