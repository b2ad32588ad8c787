from pathlib import Path

import pytest

from smoke_run import shared_build


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
    """Files that only copy the smoke run go last: under `-n 2` the worker that is not building it
    spends the build on the other files rather than waiting for it."""
    items.sort(key=lambda item: item.get_closest_marker("copies_smoke_run") is not None)
