"""The whole chain under the smoke profile, in a temporary copy: a fresh `dvc repro`, a well-formed
report and claims.json, a no-op second run, the report opened in a real headless browser, a run
killed with SIGKILL and resumed, a checked re-evaluation from a checkpoint, and failed runs."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contrastive.study import differences
from contrastive.timing import copy_project

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


def environment(home=None):
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}:{os.environ['PATH']}"}
    if home:    # an empty home folder: whatever the pipeline writes outside the repository shows up there
        env = {k: v for k, v in env.items() if not k.startswith(("XDG_", "JUPYTER", "IPYTHON", "MPLCONFIG"))}
        env["HOME"] = str(home)
    return env


def dvc(args, cwd, home=None):
    return subprocess.run([str(BIN / "dvc"), *args], cwd=cwd, env=environment(home), capture_output=True, text=True)


def smoke_tree(folder):
    """The project's files (no results) in `folder`, with the smoke profile selected."""
    return copy_project(ROOT, folder, profile="smoke")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def smoke_copy(tmp_path_factory, home):
    copy = smoke_tree(tmp_path_factory.mktemp("smoke"))
    result = dvc(["repro"], copy, home=home)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return copy


def result_files(root):
    return sorted(p.relative_to(root) for pattern in ("results/**/*.json", "data/*.json", "reports/claims.json")
                  for p in root.glob(pattern))


def test_smoke_pipeline_writes_report_and_claims(smoke_copy):
    claims = json.loads((smoke_copy / "reports" / "claims.json").read_text())
    registry_ids = re.findall(r"(?m)^- id: (\S+)", (smoke_copy / "analysis" / "claims.yaml").read_text())
    assert [c["id"] for c in claims] == registry_ids                 # nothing dropped
    allowed = {"reproduced", "contradicted", "no meaningful effect", "inconclusive", "exact match",
               "mismatch", "not tested"}
    for c in claims:
        assert {"id", "source", "statement", "published", "metric", "arms", "contrast", "verdict", "note"} <= set(c)
        assert c["verdict"] in allowed
        for arm in c["arms"].values():
            assert arm["n"] == len(arm["values"])
    html = (smoke_copy / "reports" / "report.html").read_text()
    assert '<table class="claims">' in html and "data:image/png;base64" in html
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=\"?https?:", html), "the report must work offline"
    for stage_output in ("results/examples/ntxent_numpy.json", "results/pretrain/simclr/simclr/seed_1.json",
                         "data/shapes.json"):
        assert (smoke_copy / stage_output).exists()


def test_second_repro_does_nothing(smoke_copy):
    result = dvc(["repro"], smoke_copy)
    assert result.returncode == 0 and "up to date" in result.stdout, result.stdout
    assert dvc(["status", "--quiet"], smoke_copy).returncode == 0


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(not chromium(), reason="Debian's chromium is not installed (make browser)")
def test_report_renders_offline_in_headless_chromium(smoke_copy, tmp_path):
    report = smoke_copy / "reports" / "report.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
             "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]   # no network at all
    dom = subprocess.run([chromium(), *flags, "--dump-dom", report.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    n_claims = len(json.loads((smoke_copy / "reports" / "claims.json").read_text()))
    table = dom.split('<table class="claims">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr") == n_claims + 1                         # header + one row per claim
    shot = tmp_path / "report.png"
    subprocess.run([chromium(), *flags, "--window-size=1200,900", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


def test_nothing_is_written_outside_the_repository(smoke_copy, home):
    written = [str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()]
    assert written == [], f"the pipeline wrote into $HOME: {written[:10]}"


def test_sigkill_mid_pipeline_then_repro_gives_the_same_results(smoke_copy, tmp_path):
    """Kill `dvc repro` (its whole process group) while a pretraining stage is writing runs, then
    run it again: every result file equals the uninterrupted run's, bar wall time and memory."""
    copy = smoke_tree(tmp_path / "killed")
    repro = subprocess.Popen([str(BIN / "dvc"), "repro"], cwd=copy, env=environment(), start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not list(copy.glob("results/pretrain/*/*/seed_*.json")) and repro.poll() is None:
        assert time.time() < deadline
        time.sleep(0.05)
    os.killpg(repro.pid, signal.SIGKILL)
    repro.wait()
    assert not (copy / "reports" / "claims.json").exists()          # it was killed mid-way
    result = dvc(["repro"], copy)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result_files(copy) == result_files(smoke_copy)
    for f in result_files(copy):
        a, b = json.loads((copy / f).read_text()), json.loads((smoke_copy / f).read_text())
        assert differences(a, b) == [], f
    assert dvc(["status", "--quiet"], copy).returncode == 0


def study_module(args, cwd):
    return subprocess.run([sys.executable, "-m", "contrastive.study", *args], cwd=cwd, env=environment(),
                          capture_output=True, text=True)


def test_checkpoint_is_checked_and_reproduces_its_evaluation(smoke_copy):
    run = "results/pretrain/simclr/simclr/seed_1.json"
    result = study_module([run], smoke_copy)
    assert result.returncode == 0 and "identical to the recorded evaluation" in result.stdout, result.stderr
    checkpoint = smoke_copy / json.loads((smoke_copy / run).read_text())["checkpoint"]["path"]
    good = checkpoint.read_bytes()
    try:
        checkpoint.unlink()                                  # never write through a link into DVC's cache
        checkpoint.write_bytes(good[: len(good) // 2])
        result = study_module([run], smoke_copy)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert "seed_1.pt: contents do not match the sha256" in result.stderr
        assert "dvc checkout artifacts/pretrain/simclr/simclr/seed_1.pt" in result.stderr
        assert "dvc repro -f pretrain@simclr" in result.stderr
        checkpoint.unlink()
        result = study_module([run], smoke_copy)
        assert result.returncode == 1 and "missing checkpoint" in result.stderr
    finally:
        checkpoint.write_bytes(good)


def test_failed_runs_are_shown_as_failed_never_averaged(smoke_copy, tmp_path):
    """Mark one run as diverged, re-analyse and re-render outside DVC: the claim counts it as failed,
    its arm has one value fewer, and the report names it."""
    copy = tmp_path / "failed"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    run = copy / "results/pretrain/simclr/simclr_tau01/seed_1.json"
    metrics = json.loads(run.read_text())
    run.write_text(json.dumps({**metrics, "status": "diverged", "reason": "loss nan at step 4", "eval": None}))
    for stage in ("analyze", "render_report"):
        result = subprocess.run([sys.executable, f"experiments/{stage}.py"], cwd=copy, env=environment(),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]
    claims = {c["id"]: c for c in json.loads((copy / "reports/claims.json").read_text())}
    touched = [c for c in claims.values() if any(a.get("failed") for a in c["arms"].values())]
    assert touched, "no claim reports the failed run"
    for claim in touched:
        arm = next(a for a in claim["arms"].values() if a.get("failed"))
        assert arm["failed"][0]["status"] == "diverged" and arm["n"] == len(arm["values"]) == 1
        assert "failed" in claim["note"]
    html = (copy / "reports/report.html").read_text()
    assert "diverged" in html and "loss nan at step 4" in html


def test_queued_experiments_run_in_parallel(smoke_copy, tmp_path):
    """`dvc exp run --queue` twice, then `dvc queue start -j 2`: both experiments finish, each with
    its own parameter value, and the workspace's results are left as they were."""
    copy = tmp_path / "queue"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    git = {**environment(), "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.org",
           "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.org"}
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True, env=git)
    subprocess.run(["git", "commit", "-qm", "smoke results"], cwd=copy, check=True, env=git)
    for tau in ("0.3", "0.5"):
        queued = dvc(["exp", "run", "--queue", "--name", f"tau{tau[-1]}", "-S", f"examples.ntxent_numpy.loss_tau={tau}"], copy)
        assert queued.returncode == 0, queued.stderr
    started = dvc(["queue", "start", "-j", "2"], copy)
    assert started.returncode == 0, started.stderr
    deadline = time.time() + 900
    while True:
        status = dvc(["queue", "status"], copy).stdout
        if "Queued" not in status and "Running" not in status:
            break
        assert time.time() < deadline, status
        time.sleep(3)
    dvc(["queue", "stop"], copy)
    assert status.count("Success") == 2, status
    shown = json.loads(dvc(["exp", "show", "--json"], copy).stdout)
    taus = sorted(exp["data"]["params"]["params.yaml"]["data"]["examples"]["ntxent_numpy"]["loss_tau"]
                  for commit in shown for exp in (commit.get("experiments") or []) for exp in exp["revs"])
    assert taus == [0.3, 0.5], shown
    assert (copy / "results/examples/ntxent_numpy.json").read_text() == \
        (smoke_copy / "results/examples/ntxent_numpy.json").read_text()
