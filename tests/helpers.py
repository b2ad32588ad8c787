"""Configurations for tests, built from the committed params.yaml (the one place defaults live)."""
from pathlib import Path

from replication.judge.record import as_dicts, read_claims
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


def a_judged_claim(**fields):
    """The committed reports/claims.json's first claim with `fields` replaced: a claim its reader takes."""
    return {**judged_claims(ROOT)[0], **fields}


def judged_claims(root):
    """<root>/reports/claims.json read through its one reader (checked field by field), as dicts."""
    return as_dicts(read_claims(Path(root) / "reports" / "claims.json"))
