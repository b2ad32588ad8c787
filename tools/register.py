"""Freeze the rules before a full run: write analysis/registration.json (the date, the sha256 of
params.yaml, the registry and the judging code, and every claim as registered) and make the analyze
stage depend on it. Commit both before the first stage of the run.

    python -m tools.register
"""
import sys

from replication.config import read_resolved
from replication.registration import RECORD, add_to_analysis_deps, register
from replication.registry import RegistryError, load_registry

if __name__ == "__main__":
    try:
        rules, claims = load_registry("analysis/claims.yaml", read_resolved("conditions")["conditions"])
    except RegistryError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    record = register(rules, claims)
    deps = " and added it to the analyze and report stages' deps in dvc.yaml" if add_to_analysis_deps() else ""
    print(f"wrote {RECORD}{deps}: {len(claims)} claims registered on {record['date']}; commit it before the run")
