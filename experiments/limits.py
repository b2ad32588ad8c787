"""Stage limits: the loss's limits on constructed data with exact answers (the InfoNCE bound's gap,
the floor of a class-collapsed encoder, Wang & Isola's decomposition at finite M)."""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import torch

from replication.run.config import Limits, read_resolved
from replication.examples import limits
from replication.io import stage_outputs, write_json

OUT = "results/examples/limits.json"

if __name__ == "__main__":
    torch.set_num_threads(1)          # small float64 work; one thread keeps the sums' order fixed
    with stage_outputs(OUT):
        write_json(OUT, limits.run(read_resolved("examples/limits", Limits)))
