import sys
from pathlib import Path

import pytest

from smoke_run import shared_build

# A stage's script run in this process (runpy) imports experiments/_interpreter.py as
# `python experiments/<stage>.py` does, from the script's own folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))


@pytest.fixture(scope="session")
def smoke_build(tmp_path_factory):
    """The record of the smoke pipeline's build (tests/smoke_run.py), built once per session."""
    record = shared_build(tmp_path_factory.getbasetemp())
    assert record["returncode"] == 0, record["output"]
    return {**record, "tree": Path(record["tree"]), "home": Path(record["home"])}


@pytest.fixture
def smoke(smoke_build):
    """The built smoke tree: read it, or change a copy of it (smoke_run.copy_of)."""
    return smoke_build["tree"]


def pytest_collection_modifyitems(items):
    """Under `-n 2` (one file per worker at a time) the file that reads the smoke run goes first, so
    that its build starts at once; the files that only copy it go last, so that the other worker
    spends the build on every other file and then shares the reruns."""
    def order(item):
        if item.get_closest_marker("copies_smoke_run"):
            return 2
        return 0 if item.get_closest_marker("reads_smoke_run") else 1
    items.sort(key=order)
