"""Stage data: generate shapes, shapes4 and digits into data/<name>.pt with manifests."""
from contrastive.config import load_params
from contrastive.data import build_dataset, save_dataset

if __name__ == "__main__":
    params = load_params()
    for name in ("shapes", "shapes4", "digits"):
        path = save_dataset(build_dataset(name, params.data), name)
        print(f"wrote {path}")
