"""Every way a make entry can end leaves the workspace as it was, and a second one in the same clone
refuses in one line (issue 75, item 3). `make exp` is stopped while it plans (params.yaml edited, DVC's
stand-in has rewritten dvc.lock and resolved/ and runs its stage): after SIGTERM or SIGHUP to the whole
process group (a closed terminal) params.yaml, dvc.lock and resolved/ are byte-identical, with one
line; after SIGKILL the next make entry puts them back first and says so."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_make_entries import files, own_make_env, session, stand_in_tree, wait_for_stage

ROOT = Path(__file__).resolve().parents[1]

# DVC's stand-in: `status` finds nothing stale; any other command rewrites dvc.lock and resolved/ (as
# `dvc repro resolve` does for an experiment's values) and runs a stage command until it is stopped.
FAKE_DVC = f"""#!{sys.executable}
import subprocess, sys
from pathlib import Path
if sys.argv[1:2] == ["status"]:
    print("{{}}")
    raise SystemExit(0)
Path("dvc.lock").write_text("schema: '2.0'\\nstages: {{changed: {{}}}}\\n")
Path("resolved/evaluate.json").write_text('{{"probe_steps": 1000}}')
Path("resolved/new.json").write_text("{{}}")
print("Running stage 'resolve':", flush=True)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "experiments/resolve.py"])
Path("stage_started").write_text(str(child.pid))
raise SystemExit(child.wait())
"""


@pytest.fixture
def tree(tmp_path):
    """test_make_entries' tree with a dvc.lock and resolved/, and this file's stand-in for DVC."""
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    (tmp_path / "resolved").mkdir()
    (tmp_path / "resolved" / "evaluate.json").write_text('{"probe_steps": 300}')
    return stand_in_tree(tmp_path, FAKE_DVC)


def make(tree, *args):
    return subprocess.Popen(["make", "-s", "-o", ".venv/.installed", *args, "CHECK=true"], cwd=tree, text=True,
                            env=own_make_env(PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def planning(tree):
    """`make exp` started and held in its planning, DVC's stand-in running its stage."""
    started = make(tree, "exp", "SET=evaluate.probe_steps=1000")
    wait_for_stage(tree, started)
    assert (tree / "params.yaml").read_bytes() != (ROOT / "params.yaml").read_bytes()     # mid-plan: edited
    return started


def ended(started, signum):
    """The process group sent `signum`; (stderr lines that are not make's, what is left running)."""
    time.sleep(0.3)
    os.killpg(started.pid, signum)
    _, err = started.communicate(timeout=120)
    deadline = time.monotonic() + 60
    while session(started.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [line for line in err.splitlines() if not line.startswith("make")], session(started.pid)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_during_make_exp_leaves_the_workspace_as_it_was(tree, signum):
    before = files(tree)
    ours, left = ended(planning(tree), signum)
    assert left == [] and len(ours) == 1, (ours, left)
    name = "Ctrl-C" if signum == signal.SIGINT else signum.name
    assert ours[0].startswith(f"interrupted ({name}): stopped, DVC with it"), ours
    assert files(tree) == before


def test_after_sigkill_the_next_make_entry_puts_the_workspace_back(tree):
    before = files(tree)
    ours, left = ended(planning(tree), signal.SIGKILL)
    assert ours == [] and left == []
    assert files(tree) != before and (tree / ".dvc/tmp/saved_workspace.json").exists()   # killed outright
    status = make(tree, "status")
    out, err = status.communicate(timeout=120)
    assert status.returncode == 0 and "put back as they were before a command that was killed" in err, err
    assert files(tree) == before


@pytest.mark.parametrize("second", [("exp", "SET=evaluate.probe_steps=1000"), ("status",), ("repro",)],
                         ids=lambda args: args[0])
def test_a_second_make_entry_in_the_clone_refuses_in_one_line(tree, second):
    before = files(tree)
    first = planning(tree)
    other = make(tree, *second)
    try:
        _, err = other.communicate(timeout=60)
    finally:
        for started in (other, first):              # nothing left running, whatever the outcome
            if started.poll() is None:
                ended(started, signal.SIGINT)
    ours = [line for line in err.splitlines() if not line.startswith("make")]
    assert other.returncode != 0 and len(ours) == 1, err
    assert ours[0].startswith("error: another make entry (exp, repro, status, ...) is running in this clone"), ours
    assert files(tree) == before


def test_ctrl_c_stops_a_stage_without_a_traceback(tmp_path):
    """A stage's first import (experiments/_interpreter.py) turns Ctrl-C into exit status 130, its
    cleanup run: the make entry's one line is all a user reads."""
    script = tmp_path / "stage.py"
    script.write_text("import _interpreter\nimport time\ntry:\n    print('started', flush=True)\n    time.sleep(60)\n"
                      "finally:\n    open('cleaned', 'w').close()\n")
    stage = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                             env={**os.environ, "PYTHONPATH": f"{ROOT / 'experiments'}:{ROOT / 'src'}"})
    assert stage.stdout.readline() == "started\n"
    stage.send_signal(signal.SIGINT)
    _, err = stage.communicate(timeout=60)
    assert stage.returncode == 130 and err == "" and (tmp_path / "cleaned").exists(), err
