"""The Makefile's entries that run DVC, as a user meets them with DVC replaced by a stand-in: each runs
the checks first, a make variable is one argument that the tools check (never shell text), an empty
STAGE or SET says what to give, and one Ctrl-C stops make, the tool, DVC and its stage command with
one line, recording nothing and putting params.yaml back."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
DVC_ENTRIES = ("repro", "exp", "status", "repro-all", "repro-stage", "relock", "readme")

# DVC's stand-in: `stage list` names two stages; any other command says a stage runs and starts a
# stage command (experiments/, as the timing sampler looks for) that runs until it is interrupted.
FAKE_DVC = f"""#!{sys.executable}
import subprocess, sys
from pathlib import Path
if sys.argv[1:3] == ["stage", "list"]:
    print("slow\\nfast")
    raise SystemExit(0)
try:
    print("Running stage 'slow':", flush=True)
    child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, "
                              "signal.SIG_DFL); time.sleep(600)", "experiments/slow.py"])
    Path("stage_started").write_text(str(child.pid))
    raise SystemExit(child.wait())
except KeyboardInterrupt:
    child.wait()
    raise SystemExit(130)
"""


@pytest.fixture
def tree(tmp_path):
    return stand_in_tree(tmp_path, FAKE_DVC)


def stand_in_tree(folder, fake_dvc):
    """The Makefile and params.yaml, with this interpreter as .venv/bin/python and DVC's stand-in."""
    for name in ("Makefile", "params.yaml"):
        (folder / name).write_bytes((ROOT / name).read_bytes())
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (bin_dir / "dvc").write_text(fake_dvc)
    for script in bin_dir.iterdir():
        script.chmod(0o755)
    return folder


def own_make_env(**extra):
    """This environment as a user's shell has it: without the variables of a make that runs the tests
    (`make test`), which would make every make here a sub-make (its lines 'make[1]: ...')."""
    return {**{k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}, **extra}


def make(tree, *args, **kwargs):
    env = own_make_env(PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")     # this checkout's package
    return subprocess.Popen(["make", "-s", "-o", ".venv/.installed", *args], cwd=tree, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def files(tree):
    return {p.relative_to(tree): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("entry", DVC_ENTRIES)
def test_every_entry_that_runs_dvc_checks_first(entry):
    """`make -n`: the entry's first command is the check (src/replication/cli/check.py: paths inside the repository,
    params.yaml, analysis/stage_two.yaml, the committed results)."""
    shown = subprocess.run(["make", "-n", "-o", ".venv/.installed", entry, "STAGE=x", "SET=a=1"], cwd=ROOT,
                           env=own_make_env(), capture_output=True, text=True, check=True).stdout.splitlines()
    assert re.search(r"^\S+python -m replication check$", shown[0]), shown


@pytest.mark.parametrize("variable,value,said", [
    ("STAGE", "x;touch INJECTED", "error: STAGE='x;touch INJECTED' is not a stage of dvc.yaml"),
    ("STAGE", "slow $(touch INJECTED)", "is not a stage of dvc.yaml"),
    ("STAGE", "", "error: STAGE is empty: name one stage"),
    ("SET", "a=1;touch INJECTED", "error: SET=INJECTED: expected KEY=VALUE"),
    ("SET", "", "error: SET is empty: give KEY=VALUE"),
    ("SET", "evaluate.probe_steps=!!python/object:os.system x", "could not determine a constructor for the tag"),
], ids=["STAGE with ;", "STAGE with $()", "no STAGE", "SET with ;", "no SET", "SET with a YAML tag"])
def test_a_make_variable_is_one_checked_argument(tree, variable, value, said):
    before = files(tree)
    entry = "repro-stage" if variable == "STAGE" else "exp"
    result = make(tree, entry, f"{variable}={value}", "CHECK=true")
    out, err = result.communicate(timeout=300)
    ours = [line for line in err.splitlines() if not line.startswith("make: ***")]
    assert result.returncode != 0 and len(ours) == 1 and said in ours[0], err
    assert files(tree) == before and "Running stage" not in out


def session(pid):
    """Command lines of the processes still running in session `pid`."""
    alive = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == pid and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process.cmdline())
        except (psutil.Error, ProcessLookupError):
            pass
    return alive


def wait_for_stage(tree, started):
    """Block until DVC's stand-in in `tree` has started its stage command (it leaves stage_started),
    then take the marker away; the test fails, and `started` is killed, if it never does."""
    deadline = time.monotonic() + 120
    while not (tree / "stage_started").exists() and time.monotonic() < deadline and started.poll() is None:
        time.sleep(0.05)
    if not (tree / "stage_started").exists():
        os.killpg(started.pid, signal.SIGKILL)
        pytest.fail(f"the stage never started: {started.communicate(timeout=60)}")
    (tree / "stage_started").unlink()


def interrupted(tree, *args):
    """make run until DVC's stand-in has started its stage command, then one Ctrl-C at the terminal
    (SIGINT to the whole foreground process group): (make's status, stderr, what is left running)."""
    # a terminal's Ctrl-C reaches processes whose SIGINT is not ignored; a test runner started in the
    # background (`make test &`) ignores it, and every child would inherit that
    started = make(tree, *args, "CHECK=true", start_new_session=True,
                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_stage(tree, started)
    time.sleep(0.3)
    os.killpg(started.pid, signal.SIGINT)
    _, err = started.communicate(timeout=120)
    return started.returncode, err, session(started.pid)


@pytest.mark.parametrize("entry,variable", [("repro-stage", "STAGE=slow"), ("exp", "SET=evaluate.probe_steps=1000")])
def test_one_ctrl_c_stops_everything_with_one_line(tree, entry, variable):
    before = files(tree)
    status, err, left = interrupted(tree, entry, variable)
    assert status in (-signal.SIGINT, 2, 130) and left == [], (status, left)
    ours = [line for line in err.splitlines() if not line.startswith("make: ***")]
    assert len(ours) == 1 and ours[0].startswith("interrupted (Ctrl-C): stopped, DVC with it"), err
    assert files(tree) == before            # params.yaml put back, no reports/stage_times.json
