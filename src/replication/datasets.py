"""Generated datasets on disk: data/<name>.pt beside a manifest data/<name>.json (shapes, classes,
counts, sha256). `load_dataset` refuses a file whose sha256 does not match its manifest."""
from pathlib import Path

import torch

from contrastive.data import DataError, load_cifar10, load_imagefolder

from .io import read_json, save_torch, sha256, write_json

DATA_DIR = Path("data")

GENERATED = ("shapes", "shapes4", "digits")


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


def manifest_of(dataset, path):
    counts = {split: torch.bincount(dataset[f"y_{split}"], minlength=len(dataset["classes"])).tolist()
              for split in ("train", "test")}
    return {"file": str(path), "sha256": sha256(path), "classes": dataset["classes"],
            "shape": {s: list(dataset[f"x_{s}"].shape) for s in ("train", "test")},
            "counts": counts}


def save_dataset(dataset, name, data_dir=DATA_DIR):
    path = Path(data_dir) / f"{name}.pt"
    save_torch(path, dataset)
    write_json(Path(data_dir) / f"{name}.json", manifest_of(dataset, path))
    return path


def load_dataset(name, data_dir=DATA_DIR):
    """data/<name>.pt after checking it against data/<name>.json; DataError names what to do."""
    path, manifest_path = Path(data_dir) / f"{name}.pt", Path(data_dir) / f"{name}.json"
    regenerate = "regenerate it with `dvc repro -f data`"
    if not path.exists() or not manifest_path.exists():
        raise DataError(f"{path}: missing dataset or manifest; {regenerate}")
    expected = read_json(manifest_path)["sha256"]
    if sha256(path) != expected:
        raise DataError(f"{path}: contents do not match the sha256 in {manifest_path} "
                        f"(corrupted or truncated); {regenerate}")
    return torch.load(path, weights_only=True)
