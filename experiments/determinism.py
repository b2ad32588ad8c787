"""Stage determinism: one short run of a condition, trained and evaluated twice at the first thread
count and once at every other, compared field by field (src/replication/run/train.py: differences).

Reads resolved/determinism.json. Writes results/determinism.json: whether the repeat is
bit-identical, and every figure that moves with the thread count, with both values.
"""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import sys

from contrastive.train import PrecisionError
from replication.run.config import DeterminismConfig, read_resolved
from replication.run.datasets import dataset_for
from replication.io import stage_outputs, write_json
from replication.run.evaluate import evaluate_method, method_from_state
from replication.run.train import differences, train_run

OUT = "results/determinism.json"


def run(config, threads):
    """The training record and the end-of-training evaluation of one run at `threads` threads."""
    p, execution = config.determinism, config.execution.model_copy(update={"threads": threads})
    record, states = train_run(p.seed, p.condition, config.run, execution, config.data)
    method = method_from_state(config.run, states[config.run.steps], record["n_data"], record["n_classes"])
    data = dataset_for(config.run.dataset, config.data)
    return {**record, "eval": evaluate_method(method, config.run, data, config.evaluate, p.seed)}


if __name__ == "__main__":
    config = read_resolved("determinism", DeterminismConfig)
    first, *others = config.determinism.thread_counts
    try:
        reference, repeat = run(config, first), run(config, first)
        by_threads = {threads: differences(reference, run(config, threads)) for threads in others}
    except PrecisionError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    results = {"params": config.determinism.model_dump(), "reference": reference,
               "repeat_differences": [list(d) for d in differences(reference, repeat)],
               "thread_differences": {str(t): [list(d) for d in diff] for t, diff in by_threads.items()}}
    with stage_outputs(OUT):
        write_json(OUT, results)
