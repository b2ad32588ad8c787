"""Runs done ahead of their stage (src/replication/run/engine.py): named by everything they depend
on, kept as they finish, taken by the stage, and the same bytes whichever worker ran them, on a real
local Dask cluster of two workers over the loopback, a worker killed mid-run included."""
import os
from pathlib import Path

import pytest

from replication.io import save_torch
from replication.run import engine
from replication.run.train import differences, train_run
from test_train import EXECUTION, on_shapes, tiny_study  # noqa: F401  (tiny_study: a fixture)


def square(x):
    return {"value": x * x}


def test_a_runs_key_changes_with_its_settings_its_files_and_the_code(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.json").write_text("{}")
    cfg = on_shapes("simclr", steps=6)
    key = engine.run_key(train_run, (0, "simclr", cfg), "code", tmp_path)
    assert key == engine.run_key(train_run, (0, "simclr", cfg.model_copy()), "code", tmp_path)
    assert key != engine.run_key(train_run, (1, "simclr", cfg), "code", tmp_path)
    assert key != engine.run_key(train_run, (0, "simclr", cfg.model_copy(update={"steps": 7})), "code", tmp_path)
    assert key != engine.run_key(train_run, (0, "simclr", cfg), "other code", tmp_path)
    with_file = engine.run_key(square, ("results/a.json",), "code", tmp_path)
    (tmp_path / "results" / "a.json").write_text('{"changed": 1}')
    assert engine.run_key(square, ("results/a.json",), "code", tmp_path) != with_file


def test_the_code_digest_follows_every_source_file_a_run_executes(tmp_path):
    for top in engine.CODE:
        path = tmp_path / top if top.endswith(".py") else tmp_path / top / "m.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    before = engine.code_digest(tmp_path)
    (tmp_path / "src" / "contrastive" / "m.py").write_text("x = 2\n")
    assert engine.code_digest(tmp_path) != before


def test_a_stage_takes_the_runs_done_ahead_and_runs_the_others(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = engine.code_digest(Path(__file__).resolve().parents[1])
    monkeypatch.setattr(engine, "code_digest", lambda root=".": code)
    folder = tmp_path / "runs"
    engine.keep(engine.run_key(square, (3,), code), {"value": "done ahead"}, folder)
    taken = []
    assert engine.map_runs(square, [(2,), (3,)], 1, taken=taken, folder=folder) == [{"value": 4}, {"value": "done ahead"}]
    assert taken == [engine.run_key(square, (3,), code)]
    engine.release(taken, folder)
    assert list(folder.iterdir()) == []
    assert engine.map_runs(square, [(3,)], 1, folder=folder) == [{"value": 9}]     # no entry: run here


def kill_the_first_attempt(marker, seed, condition, cfg, execution, data, data_dir):
    """train_run, but the worker process dies the first time (the marker file tells a retry)."""
    if not os.path.exists(marker):
        Path(marker).write_text("killed once\n")
        os._exit(9)                      # as a worker lost to the OOM killer or a node gone
    return train_run(seed, condition, cfg, execution, data, data_dir)


@pytest.mark.timeout(600)
def test_a_local_cluster_of_two_workers_gives_the_single_process_bytes_and_survives_a_killed_worker(
        tiny_study, tmp_path):  # noqa: F811
    data, _, data_dir = tiny_study
    tasks = [(seed, name, on_shapes(name, steps=6, batch=16, queue=32, ladder=[]), EXECUTION, data, data_dir)
             for name in ("simclr", "moco_m099") for seed in (0, 1)]
    alone = [train_run(*task) for task in tasks]
    marker = str(tmp_path / "killed")
    folder = tmp_path / "runs"
    client = engine.cluster_client(workers=2)
    try:
        assert len(client.scheduler_info()["workers"]) == 2
        ran = engine.run_ahead(client, train_run, tasks[1:], [1] * 3, "code", folder)
        killed = [(marker, *tasks[0])]
        ran += engine.run_ahead(client, kill_the_first_attempt, killed, [2], "code", folder)
    finally:
        client.close()
        client.cluster.close()
    assert ran == 4 and Path(marker).exists()                    # the killed run ran again, and finished
    for task, (record, states), key_task, fn in zip(tasks, alone, [killed[0], *tasks[1:]],
                                                    [kill_the_first_attempt, train_run, train_run, train_run]):
        ahead, ahead_states = engine.kept(engine.run_key(fn, key_task, "code"), folder)
        assert differences(record, ahead) == []                  # every result but time, memory, machine
        assert sorted(states) == sorted(ahead_states)
        for step in states:                                      # the checkpoints a stage writes: the same bytes
            save_torch(tmp_path / "alone.pt", states[step])
            save_torch(tmp_path / "ahead.pt", ahead_states[step])
            assert (tmp_path / "alone.pt").read_bytes() == (tmp_path / "ahead.pt").read_bytes()
