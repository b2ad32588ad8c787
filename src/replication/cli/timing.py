"""Run `dvc repro`, timing it and each stage it runs.

    python -m replication repro-all [--dvc DVC]             # dvc repro -f
    python -m replication repro-stage STAGE [--dvc DVC]     # dvc repro -f -s STAGE

After a forced run in which every stage ran, writes reports/repro_timing.json (command, seconds,
the stages that ran, date, CPU, profile) so README and the report can quote a measured figure for
a run from scratch. After any forced run (-f, whole or one stage with -s), writes each stage that
ran into reports/stage_times.json (seconds, its share of time in DVC, CPU, precision, date, and the
registered run it belongs to: the latest registration's): a full run done stage by stage, across
sessions and CPUs, is the sum of its stages that carry its run number. A run that
reused results (not forced) records nothing: it never stands for a full one.
The time spent in DVC itself is the wall time during which no stage command (a child process of
dvc running experiments/) was alive, sampled every 100 ms.

repro-stage's STAGE must name a stage that `dvc stage list` lists (an empty or unknown STAGE is refused in one
line before DVC starts). One Ctrl-C stops DVC, its stage and the sampler, records nothing, and exits
130 with one line.

`copy_project` gives the tests and benchmarks a fresh copy of the project (no results) to run in.
"""
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from contrastive.train import cpu_capabilities
from replication.committed import FileError, read_stage_times
from replication.io import cpu_model, require_inside, write_json
from replication.run.config import NAME
from .check import INSIDE
from .repro import dvc_command, interrupted, stop
from .workspace import one_at_a_time, signals_stop

RECORD = "reports/repro_timing.json"
STAGE_RECORD = "reports/stage_times.json"
STAGE = re.compile(rf"{NAME.pattern}(@{NAME.pattern})?")     # a DVC stage: <kind> or <kind>@<study>
SAMPLE_S = 0.1          # seconds between samples: finer costs a tenth of a core on 2 cores


def time_in_stage_commands(pid, done):
    """Seconds during which process `pid` had a child running a stage command, until `done` is set."""
    seconds, parent = 0.0, psutil.Process(pid)
    last = time.perf_counter()
    while not done.wait(SAMPLE_S):
        now = time.perf_counter()
        try:
            busy = any("experiments/" in " ".join(c.cmdline()) for c in parent.children())
        except psutil.Error:
            busy = False
        seconds += (now - last) if busy else 0.0
        last = now
    return seconds


OUTPUTS = {"results", "reports", "data", "artifacts", "resolved"}


def copy_project(source, dest, profile=None):
    """The project's files as git sees them (tracked and not ignored), without the pipeline's
    outputs and dvc.lock, into a fresh git repository at `dest`; optionally with another profile."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=source,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    for f in listed:
        if f and Path(f).parts[0] not in OUTPUTS and f != "dvc.lock" and (Path(source) / f).is_file():
            (Path(dest) / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(source) / f, Path(dest) / f)
    if profile:
        params = Path(dest) / "params.yaml"
        params.write_text(re.sub(r"(?m)^profile: \w+", f"profile: {profile}", params.read_text()))
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return Path(dest)


def stage_refusal(argv, every_stage):
    """The one line refusing `-s STAGE` when STAGE is empty or not a stage of dvc.yaml; else None."""
    if "-s" not in argv:
        return None
    stage = (argv[argv.index("-s") + 1:] or [""])[0]
    if not stage:
        return ("error: STAGE is empty: name one stage, e.g. `make repro-stage STAGE=pretrain@head` (`dvc stage "
                "list` names them; `make repro-all` runs every stage)")
    if not STAGE.fullmatch(stage) or stage not in every_stage:
        return f"error: STAGE={stage!r} is not a stage of dvc.yaml: `dvc stage list` names them"
    return None


def add_dvc_argument(parser):
    parser.add_argument("--dvc", metavar="DVC", help="the dvc to run (default: the one on PATH, else the one "
                        "beside this Python)")


def add_stage_arguments(parser):
    parser.add_argument("stage", metavar="STAGE", help="a stage that `dvc stage list` names, e.g. pretrain@head")
    add_dvc_argument(parser)


def dvc_path(given):
    """The dvc to run: `given`, else the one repro.dvc_command finds, shown relative to the repository
    when it lies in it (reports/repro_timing.json quotes the command: `.venv/bin/dvc repro -f`)."""
    if given:
        return str(given)
    found = dvc_command()
    inside = os.path.relpath(found)
    return inside if not inside.startswith("..") else found


def run_all(args):
    """`make repro-all`: every stage, forced."""
    return timed([dvc_path(args.dvc), "repro", "-f"])


def run_stage(args):
    """`make repro-stage STAGE=...`: one stage, forced."""
    return timed([dvc_path(args.dvc), "repro", "-f", "-s", args.stage])


def timed(argv):
    """`argv` (dvc repro ...) run and timed; its exit status, and 130 with one line after Ctrl-C."""
    try:
        return time_repro(argv)
    except KeyboardInterrupt as e:
        print(f"{interrupted(e)}; no time recorded", file=sys.stderr)
        return 130


def time_repro(argv):
    """Run `argv` (dvc repro ...), timing it and its stages; its exit status."""
    signals_stop()                  # SIGTERM and SIGHUP stop it as Ctrl-C does
    require_inside(INSIDE)          # DVC writes dvc.lock
    one_at_a_time()
    try:
        read_stage_times()          # a damaged record refused now, not after hours of a stage
    except FileError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    every_stage = subprocess.run([argv[0], "stage", "list", "--name-only"], capture_output=True,
                                 text=True).stdout.split()
    if refusal := stage_refusal(argv, every_stage):
        print(refusal, file=sys.stderr)
        return 2
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=None, text=True)
    done, in_commands = threading.Event(), []
    sampler = threading.Thread(target=lambda: in_commands.append(time_in_stage_commands(process.pid, done)))
    sampler.start()
    started = {}
    try:
        for line in process.stdout:
            sys.stdout.write(line)
            for stage in re.findall(r"Running stage '([^']+)'", line):
                started[stage] = time.perf_counter()
        code = process.wait()
        end = time.perf_counter()
    except KeyboardInterrupt:
        stop(process)
        raise
    finally:
        done.set()
        sampler.join()
    seconds = end - start
    stages = list(started)
    forced = "-f" in argv or "--force" in argv
    if code == 0 and forced and stages:
        record_stages(started, end, seconds - in_commands[0], seconds, cpu_model())
    if code == 0 and forced and stages and set(every_stage) <= set(stages):
        from replication.run.config import read_params
        write_json(RECORD, {"command": " ".join(argv), "seconds": round(seconds, 1),
                            "seconds_in_dvc": round(seconds - in_commands[0], 1), "stages_run": stages,
                            "date": datetime.date.today().isoformat(), "cpu": cpu_model(),
                            "profile": read_params().profile})
    return code


def record_stages(started, end, in_dvc, total, cpu):
    """Add each stage's wall time (from its start to the next stage's) to STAGE_RECORD, with its
    share of the invocation's time in DVC, this CPU's model, the stage's precision and the
    registered run (None before the first registration)."""
    from replication.judge.registration import load
    registered = load()
    path = Path(STAGE_RECORD)
    record = read_stage_times(path)
    names = list(started)
    ends = [started[n] for n in names[1:]] + [end]
    for name, finished in zip(names, ends):
        seconds = finished - started[name]
        record[name] = {"seconds": round(seconds, 1), "seconds_in_dvc": round(in_dvc * seconds / total, 1),
                        "cpu": cpu, "capabilities": cpu_capabilities(), "precision": stage_precision(name),
                        "date": datetime.date.today().isoformat(),
                        "run": registered["run"] if registered else None}
    write_json(path, dict(sorted(record.items())))


TRAINING = {"pretrain": "pretrain/{}.json", "determinism": "determinism.json"}   # stages that train, their config


def stage_precision(stage, resolved="resolved"):
    """The precision of a stage that trains (pretrain@<study>, determinism), from its resolved
    execution; 'fp32' for every other stage: none autocasts (the NumPy examples and analytic checks
    compute in float64)."""
    kind, _, study = stage.partition("@")
    if kind not in TRAINING:
        return "fp32"
    return json.loads(Path(resolved, TRAINING[kind].format(study)).read_text())["execution"]["precision"]

