"""Generated datasets on disk: data/<name>.pt beside a manifest data/<name>.json (shapes, classes,
counts, sha256, the superclasses where the dataset has them, and the share of an anchor's in-batch
negatives that share its class). `load_dataset` refuses a file whose sha256 does not match its
manifest."""
from pathlib import Path

import torch

from contrastive.data import DataError, load_cifar10, load_imagefolder

from ..io import read_json, save_torch, sha256, write_json

DATA_DIR = Path("data")

GENERATED = ("glyphs100", "shapes", "shapes4", "digits")


def dataset_for(name, params, data_dir=DATA_DIR):
    """What a pretraining run trains on: a generated dataset from data/ (checked against its
    manifest), or a user's imagefolder / CIFAR-10 read from params.<name>.root."""
    if name in GENERATED:
        return load_dataset(name, data_dir)
    folder = getattr(params, name, None)
    if folder is None or not folder.root:
        raise DataError(f"{name}: set data.{name}.root in params.yaml to the folder that holds it")
    if name == "imagefolder":
        return load_imagefolder(folder.root, params.image_size, folder.n_test, folder.seed)
    return load_cifar10(folder.root, params.image_size)


def same_class_share(labels):
    """Share of ordered pairs (i, j), i != j, of a batch's positions whose labels agree: how many of
    an anchor's in-batch negatives (the other draws) share its class."""
    same = labels[:, None] == labels[None, :]
    n = len(labels)
    return (same.sum().item() - n) / (n * (n - 1))


def same_class_negatives(labels, batch, batches, seed):
    """The share of an anchor's in-batch negatives that share its class, for batches of `batch`
    indices drawn uniformly with replacement, as contrastive.train.draw_batch draws them.

    analytic = sum_c p_c^2, p_c = n_c / n: two independent draws agree in class (an image drawn twice
    counts, as it does in training); measured: the mean of `batches` batches' same_class_share, drawn
    from a generator seeded with `seed`, with its standard error; per_anchor = (batch - 1) x analytic,
    the expected number of an anchor's batch - 1 other draws that share its class.
    """
    p = torch.bincount(labels).double() / len(labels)
    analytic = (p**2).sum().item()
    gen = torch.Generator().manual_seed(seed)
    shares = torch.tensor([same_class_share(labels[torch.randint(0, len(labels), (batch,), generator=gen)])
                           for _ in range(batches)], dtype=torch.float64)
    return {"batch": batch, "batches": batches, "seed": seed, "analytic": analytic,
            "measured": shares.mean().item(), "measured_se": shares.std().item() / batches**0.5,
            "per_anchor": (batch - 1) * analytic}


def manifest_of(dataset, path, same_class=None):
    """The manifest of a saved dataset; `same_class` (params.yaml data.same_class) adds the
    same-class share of in-batch negatives on the training labels."""
    counts = {split: torch.bincount(dataset[f"y_{split}"], minlength=len(dataset["classes"])).tolist()
              for split in ("train", "test")}
    manifest = {"file": str(path), "sha256": sha256(path), "classes": dataset["classes"],
                "shape": {s: list(dataset[f"x_{s}"].shape) for s in ("train", "test")},
                "counts": counts}
    for key in ("superclass", "superclasses"):     # glyphs100: each class's family, the families' names
        if key in dataset:
            manifest[key] = dataset[key]
    if same_class is not None:
        manifest["same_class_negatives"] = same_class_negatives(dataset["y_train"], same_class.batch,
                                                                same_class.batches, same_class.seed)
    return manifest


def save_dataset(dataset, name, data_dir=DATA_DIR, same_class=None):
    path = Path(data_dir) / f"{name}.pt"
    save_torch(path, dataset)
    write_json(Path(data_dir) / f"{name}.json", manifest_of(dataset, path, same_class))
    return path


def load_dataset(name, data_dir=DATA_DIR):
    """data/<name>.pt after checking it against data/<name>.json; DataError names what to do."""
    path, manifest_path = Path(data_dir) / f"{name}.pt", Path(data_dir) / f"{name}.json"
    regenerate = "regenerate it with `dvc repro -f data`"
    for required in (path, manifest_path):
        if not required.exists():
            raise DataError(f"{required}: missing; {regenerate}")
    try:
        expected = read_json(manifest_path)["sha256"]
    except (ValueError, KeyError, TypeError):
        raise DataError(f"{manifest_path}: not a dataset manifest (unreadable, or no sha256); {regenerate}") from None
    if sha256(path) != expected:
        raise DataError(f"{path}: contents do not match the sha256 in {manifest_path} "
                        f"(corrupted or truncated); {regenerate}")
    return torch.load(path, weights_only=True)
