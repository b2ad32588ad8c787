"""The smoke-profile pipeline, built once per test session in a temporary copy of the project and
shared by the test files that read it or copy it (tests/conftest.py gives it as the `smoke_run`
fixture). Under `pytest -n 2` the first worker to ask builds it while holding a file lock; the other
waits on the lock and reuses it, and never runs `dvc` in the shared tree, only in copies."""
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from replication.cli.timing import copy_project

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TIMEOUT_S = 1200        # a DVC command or stage script that hangs fails its test (TimeoutExpired) instead of CI


def environment(home=None):
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}:{os.environ['PATH']}"}
    if home:    # an empty home folder: whatever the pipeline writes outside the repository shows up there
        env = {k: v for k, v in env.items() if not k.startswith(("XDG_", "JUPYTER", "IPYTHON", "MPLCONFIG"))}
        env["HOME"] = str(home)
    return env


def dvc(args, cwd, home=None):
    return subprocess.run([str(BIN / "dvc"), *args], cwd=cwd, env=environment(home), capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def run_script(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environment(), capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def status(cwd, *targets):
    result = dvc(["status", "--json", *targets], cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout or "{}")


def smoke_copy(folder):
    """The project's files (no results) in `folder`, with the smoke profile selected and training in
    fp32: bf16 is emulated, and so refused, on a CPU without native bf16 (an AVX2-only one), and the
    smoke run must pass on every CPU. The registered params.yaml's own precision is left as it is."""
    copy = copy_project(ROOT, folder, profile="smoke")
    params = copy / "params.yaml"
    params.write_text(re.sub(r"(?m)^precision: \w+", "precision: fp32", params.read_text()))
    first_stage_two_study_only(copy / "analysis" / "stage_two.yaml")
    return copy


def first_stage_two_study_only(path):
    """The rule's choice cut to its first stage-2 study: the smoke run still trains, evaluates and
    judges a stage-2 study, without running every one the registered run chose."""
    selection = yaml.safe_load(path.read_text())
    studies = selection["stage_two"]["studies"]
    if studies:
        first = next(iter(studies))
        selection["stage_two"]["studies"] = {first: studies[first]}
        path.write_text(yaml.safe_dump(selection, sort_keys=False))


def smoke_tree(folder):
    """smoke_copy in `folder`, without the registration record: it freezes the default params, which
    the smoke profile changes, so the registered analysis would rightly refuse to judge the smoke run."""
    copy = smoke_copy(folder)
    for record in (copy / "analysis").glob("registration*.json"):      # every record and the amendments
        record.unlink()
    dvc_yaml = copy / "dvc.yaml"
    dvc_yaml.write_text(re.sub(r"      - analysis/registration\w*\.json\n", "", dvc_yaml.read_text()))
    return copy


def build(shared):
    """`dvc repro` of the smoke tree under an empty home folder, then `dvc repro` again at once; the
    record of both, written beside the tree."""
    tree, home = smoke_tree(shared / "smoke"), shared / "home"
    home.mkdir()
    first = dvc(["repro"], tree, home=home)
    second = dvc(["repro"], tree) if first.returncode == 0 else first
    return {"tree": str(tree), "home": str(home), "returncode": first.returncode,
            "output": first.stdout[-3000:] + first.stderr[-3000:],
            "second": {"returncode": second.returncode, "stdout": second.stdout}}


def shared_build(session_folder):
    """The build's record, made by whichever process asks first. `session_folder` is this process's
    pytest temporary folder; under xdist its parent is shared by all workers."""
    shared = session_folder.parent if os.environ.get("PYTEST_XDIST_WORKER") else session_folder
    with open(shared / "smoke.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)                 # released when the file closes
        record = shared / "smoke.json"
        if not record.exists():                          # a failed build is recorded too: built once
            record.write_text(json.dumps(build(shared)))
        return json.loads(record.read_text())


def copy_of(tree, dest):
    """A copy of the built tree to change freely; DVC's temporary folder stays behind (a clone has
    none), so a `dvc` command running in the shared tree cannot leave a half-written file in it."""
    dvc_tmp = lambda folder, names: ["tmp"] if Path(folder).name == ".dvc" else []
    shutil.copytree(tree, dest, symlinks=True, ignore=dvc_tmp)
    return dest


def result_files(root):
    return sorted(p.relative_to(root) for pattern in ("results/**/*.json", "data/*.json", "reports/claims.json",
                                                      "resolved/**/*.json")
                  for p in root.glob(pattern))
