"""Stage data: generate shapes, shapes4 and digits into data/<name>.pt with manifests."""
from replication.config import DataParams, read_resolved
from replication.datasets import GENERATED, save_dataset
from contrastive.data import build_dataset

if __name__ == "__main__":
    params = read_resolved("data", DataParams)
    for name in GENERATED:
        path = save_dataset(build_dataset(name, params), name)
        print(f"wrote {path}")
