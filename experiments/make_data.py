"""Stage data: generate glyphs100, shapes, shapes4 and digits into data/<name>.pt with manifests
(data/<name>.json: shapes, classes, counts, sha256, glyphs100's superclasses, the same-class share of
in-batch negatives).

One torch thread: make_shapes' last float bits depend on the thread count (two threads give other
bytes for data/shapes.pt than one), and the committed datasets were made with one, so a rerun of
this stage on any core count writes the same files and reruns nothing downstream.
"""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import torch

from replication.run.config import DataParams, read_resolved
from replication.io import stage_outputs
from replication.run.datasets import GENERATED, save_dataset
from contrastive.data import build_dataset

if __name__ == "__main__":
    torch.set_num_threads(1)
    params = read_resolved("data", DataParams)
    with stage_outputs("data"):
        for name in GENERATED:
            path = save_dataset(build_dataset(name, params), name, same_class=params.same_class)
            print(f"wrote {path}")
