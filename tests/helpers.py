"""Configurations for tests, built from the committed params.yaml (the one place defaults live)."""
from pathlib import Path

from replication.run.config import DataParams, RunConfig, read_params

ROOT = Path(__file__).resolve().parents[1]
PARAMS = read_params(ROOT / "params.yaml")


def run_config(**overrides):
    """A validated RunConfig: params.yaml's pretraining defaults with `overrides`."""
    return RunConfig(**{**PARAMS.pretrain.defaults.model_dump(), **overrides})


def data_params(**overrides):
    """params.yaml's data section with some datasets' settings replaced, e.g. shapes={"n_train": 20}."""
    raw = PARAMS.data.model_dump()
    for name, value in overrides.items():
        raw[name] = {**raw[name], **value} if isinstance(value, dict) else value
    return DataParams(**raw)
