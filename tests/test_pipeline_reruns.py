"""Reruns in copies of the shared smoke pipeline (tests/smoke_run.py): a run killed with SIGKILL and
resumed, evaluation redone from checked checkpoints, a parameter edit that reruns exactly what it
changes, and queued experiments run in parallel."""
import json
import os
import signal
import subprocess
import time

import pytest
import yaml

from replication.run.train import differences
from smoke_run import BIN, copy_of, dvc, environment, result_files, run_script, status

pytestmark = [pytest.mark.slow, pytest.mark.copies_smoke_run]


def test_sigkill_mid_stage_then_repro_gives_the_same_results(smoke, tmp_path):
    """Force a pretraining stage to run again, kill `dvc repro` (its whole process group) while the
    stage is writing runs, then run `dvc repro`: every result file equals the uninterrupted run's,
    bar wall time and memory, and the pipeline is up to date."""
    copy = copy_of(smoke, tmp_path / "killed")
    first = copy / "results/pretrain/simclr_mocov2/simclr/seed_0.json"
    written = first.stat().st_mtime_ns
    repro = subprocess.Popen([str(BIN / "dvc"), "repro", "-f", "pretrain@simclr_mocov2"], cwd=copy, env=environment(),
                             start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not (first.exists() and first.stat().st_mtime_ns != written) and repro.poll() is None:
        assert time.time() < deadline
        time.sleep(0.02)
    os.killpg(repro.pid, signal.SIGKILL)
    repro.wait(timeout=60)
    assert repro.returncode != 0                                     # it was killed mid-way
    assert list(status(copy)) != []
    result = dvc(["repro"], copy)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result_files(copy) == result_files(smoke)
    for f in result_files(copy):
        a, b = json.loads((copy / f).read_text()), json.loads((smoke / f).read_text())
        assert differences(a, b) == [], f
    assert dvc(["status", "--quiet"], copy).returncode == 0


def test_evaluation_reproduces_from_the_checkpoints_and_checks_them(smoke, tmp_path):
    """The evaluate stage run again from the checkpoints gives the same records; a truncated or a
    missing checkpoint stops it with one line naming the file and how to restore it."""
    copy = copy_of(smoke, tmp_path / "checked")
    before = {p: p.read_text() for p in copy.glob("results/evaluate/simclr_mocov2/*/seed_*.json")}
    result = run_script(["experiments/evaluate.py", "simclr_mocov2"], copy)
    assert result.returncode == 0, result.stderr[-2000:]
    for path, text in before.items():
        assert differences(json.loads(text), json.loads(path.read_text())) == [], path
    record = json.loads((copy / "results/pretrain/simclr_mocov2/simclr/seed_1.json").read_text())
    assert [c["step"] for c in record["checkpoints"]] == [0, 3, 12, 24, 48]     # the ladder's rungs, smoke-scaled
    checkpoint = copy / record["checkpoints"][-1]["path"]
    good = checkpoint.read_bytes()
    checkpoint.unlink()                                  # never write through a link into DVC's cache
    checkpoint.write_bytes(good[: len(good) // 2])
    result = run_script(["experiments/evaluate.py", "simclr_mocov2"], copy)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "seed_1/step_48.pt: contents do not match the sha256" in result.stderr
    assert "dvc checkout artifacts/pretrain/simclr_mocov2/simclr/seed_1/step_48.pt" in result.stderr
    assert "dvc repro -f pretrain@simclr_mocov2" in result.stderr
    checkpoint.unlink()
    result = run_script(["experiments/evaluate.py", "simclr_mocov2"], copy)
    assert result.returncode == 1 and "missing checkpoint" in result.stderr


def edited(copy, change):
    """params.yaml of `copy` with change(params dict) applied."""
    path = copy / "params.yaml"
    raw = yaml.safe_load(path.read_text())
    change(raw)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))


def test_edits_rerun_exactly_what_they_change(smoke, tmp_path):
    """An inactive profile's edit is validated (resolve depends on the whole file) and changes no
    stage's configuration; a probe setting reruns evaluation (after the cheap resolve stage), never
    training."""
    copy = copy_of(smoke, tmp_path / "edits")
    edited(copy, lambda p: p["profiles"]["cifar10"]["pretrain"].update(seeds=[0]))
    assert list(status(copy)) == ["resolve"]
    assert dvc(["repro", "resolve"], copy).returncode == 0
    assert status(copy) == {}
    edited(copy, lambda p: p["profiles"]["smoke"]["evaluate"].update(probe_steps=60))
    assert list(status(copy)) == ["resolve"]
    result = dvc(["repro", "resolve"], copy)
    assert result.returncode == 0, result.stderr
    stale = sorted(status(copy))
    # evaluation, the determinism check (it compares evaluation figures too), the analysis (it checks
    # every evaluation record against resolved/evaluate.json) and the report (it prints the resolved
    # configuration's hash); never training
    studies = yaml.safe_load((copy / "params.yaml").read_text())["pretrain"]["studies"]
    stage_two = yaml.safe_load((copy / "analysis" / "stage_two.yaml").read_text())["stage_two"]["studies"]
    expected = ([f"evaluate@{s}" for s in studies] + [f"evaluate_stage2@{s}" for s in stage_two]
                + ["determinism", "analyze", "report"])
    assert stale == sorted(expected), stale


def test_queued_experiments_run_in_parallel(smoke, tmp_path):
    """`dvc exp run --queue` twice, then `dvc queue start -j 2`: both experiments finish, each with
    its own parameter value, and the workspace's results are left as they were. Each runs the stage
    its parameter feeds (as a user targets one); the whole chain under DVC is the build's."""
    copy = copy_of(smoke, tmp_path / "queue")
    git = {**environment(), "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.org",
           "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.org"}
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True, env=git)
    subprocess.run(["git", "commit", "-qm", "smoke results"], cwd=copy, check=True, env=git)
    for tau in ("0.3", "0.5"):
        queued = dvc(["exp", "run", "--queue", "--name", f"tau{tau[-1]}", "-S", f"examples.ntxent_numpy.loss_tau={tau}",
                      "ntxent_example"], copy)
        assert queued.returncode == 0, queued.stderr
    started = dvc(["queue", "start", "-j", "2"], copy)
    assert started.returncode == 0, started.stderr
    deadline = time.time() + 900
    while True:
        queue = dvc(["queue", "status"], copy).stdout
        if "Queued" not in queue and "Running" not in queue:
            break
        assert time.time() < deadline, queue
        time.sleep(3)
    dvc(["queue", "stop", "--kill"], copy)          # its idle workers too, so that none outlives the test
    assert queue.count("Success") == 2, queue
    shown = json.loads(dvc(["exp", "show", "--json"], copy).stdout)
    taus = sorted(exp["data"]["params"]["params.yaml"]["data"]["examples"]["ntxent_numpy"]["loss_tau"]
                  for commit in shown for exp in (commit.get("experiments") or []) for exp in exp["revs"])
    assert taus == [0.3, 0.5], shown
    assert (copy / "results/examples/ntxent_numpy.json").read_text() == \
        (smoke / "results/examples/ntxent_numpy.json").read_text()
