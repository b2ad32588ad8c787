"""`make repro`: bring every result up to date with the code and params, and never retrain silently.

    python -m replication repro [--retrain]                               # `make repro`
    python -m replication exp --set KEY=VALUE [--set ...] [--retrain]     # `make exp SET=KEY=VALUE`
    python -m replication status                                          # `make status`: runs nothing

A clone carries the results, the report and dvc.lock (git), but not the datasets and checkpoints
(DVC's cache). Plain `dvc repro` would take them for stale and retrain for hours. This runs
`dvc repro --allow-missing` instead, which skips a stage whose only change is that its outputs or
inputs are missing here; so on a clone whose committed results are current it does nothing, and
says how to regenerate them.

After an edit, the stages whose code, parameters or inputs changed rerun. When one of them needs a
file the clone lacks (an evaluation needs its checkpoints), the stages that would recreate it are
named with the time they took last (reports/stage_times.json), and nothing runs unless --retrain
is given (`make repro RETRAIN=1`); `dvc pull` from a team remote fetches them instead (README).

`--set` is `dvc exp run -S` behind the same guard: the values are applied to params.yaml, planned,
and params.yaml, resolved/ and dvc.lock are put back before anything else happens; the experiment
runs (`dvc exp run --allow-missing -S ...`) only when it retrains nothing the clone lacks, or when
--retrain asks for it. Raw `dvc exp run` has no guard: on a fresh clone it retrains every study.
"""
import contextlib
import hashlib
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import yaml

from replication.committed import FileError, read_lock, read_stage_times
from replication.io import WriteError, atomic_path, load_yaml, require_inside
from .check import INSIDE
from .workspace import Stopped, one_at_a_time, saved, signals_stop

MISSING = {"deleted", "not in cache"}
RUN_COST = "reports/pilot/run_cost.json"     # cli.run_cost: the registered run's estimate
SUMMARY = "reports/summary.json"


INTERRUPTED = ("interrupted (Ctrl-C): stopped, DVC with it; every output keeps its previous file or a whole new "
               "one (`make status` says what is stale)")


def interrupted(e):
    """The one line for Ctrl-C, or for SIGTERM or SIGHUP (Stopped)."""
    return INTERRUPTED.replace("Ctrl-C", str(e)) if isinstance(e, Stopped) else INTERRUPTED


def stop(process, grace=30):
    """After Ctrl-C: let `process` and the processes it started (DVC and its stage) finish their own
    cleanup (a Ctrl-C at the terminal reached them too), forward the SIGINT to those still running
    a second later (only this process got it), and kill them only when they outlast `grace` seconds.
    A second Ctrl-C (or SIGTERM, SIGHUP) meanwhile is ignored, so the cleanup that follows cannot stop
    halfway."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    try:
        family = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    except psutil.Error:
        family = []
    for sent, wait in ((None, 1), (signal.SIGINT, grace), (signal.SIGKILL, grace)):
        for member in family if sent else ():
            with contextlib.suppress(psutil.Error):
                member.send_signal(sent)
        deadline = time.monotonic() + wait
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=wait)           # drains its pipes, so it never blocks on them
        family = psutil.wait_procs(family, timeout=max(0, deadline - time.monotonic()))[1]
        if process.returncode is not None and not family:
            return


def dvc_command():
    """The dvc on PATH (make puts .venv/bin first), else the one beside this interpreter (the
    project's .venv/bin, for `.venv/bin/python -m replication relock`); one line when there is neither."""
    beside = Path(sys.executable).with_name("dvc")
    found = shutil.which("dvc") or (str(beside) if beside.exists() else None)
    if not found:
        raise SystemExit("error: dvc is neither beside this Python nor on PATH: run `make setup`, then use "
                         ".venv/bin/python (or the make targets)")
    return found


def dvc(*args, capture=False):
    pipe = subprocess.PIPE if capture else None
    process = subprocess.Popen([dvc_command(), *args], stdout=pipe, stderr=pipe, text=True)
    try:
        stdout, stderr = process.communicate()
    except KeyboardInterrupt:
        stop(process)
        raise
    if process.returncode:
        if capture:                     # what went wrong (a bad value's one line) is in the output
            lines = (stderr or stdout).splitlines()
            print("\n".join([line for line in lines if line.startswith("error:")] or lines), file=sys.stderr)
        raise SystemExit(process.returncode)
    return stdout


def run_resolve(quiet=False):
    """`dvc repro resolve` (validates params.yaml; rewrites only files whose content changed). True
    when it changed something: dvc.lock, and the resolved/ files it records."""
    before = Path("dvc.lock").read_bytes() if Path("dvc.lock").exists() else None
    dvc("repro", "resolve", capture=quiet)
    return (Path("dvc.lock").read_bytes() if Path("dvc.lock").exists() else None) != before


def stage_status():
    """{stage: [change, ...]} from `dvc status --json`; a change is a dict of one kind of change."""
    return json.loads(dvc("status", "--json", capture=True) or "{}")


def recorded(lock):
    """{stage: paths of its deps and outs with a hash in dvc.lock}: a file missing here that the lock
    records was made before and lives in DVC's cache; one it does not record is new and must be made."""
    return {name: {entry["path"] for key in ("deps", "outs") for entry in stage.get(key, [])}
            for name, stage in lock.get("stages", {}).items()}


def missing_only(changes, known):
    """True when every change DVC reports for a stage is a recorded file (in `known`) this clone lacks."""
    return all(isinstance(change, dict) and all(isinstance(entries, dict) and all(
        isinstance(state, str) and state in MISSING and path in known for path, state in entries.items())
        for entries in change.values()) for change in changes)


def missing_deps(changes):
    return [path for change in changes if isinstance(change, dict)
            for path, state in (change.get("changed deps") or {}).items() if state == "deleted"]


def missing_outs(changes):
    return [path for change in changes if isinstance(change, dict)
            for path, state in (change.get("changed outs") or {}).items() if isinstance(state, str) and state in MISSING]


def producers(lock):
    """{output path: stage} from dvc.lock."""
    return {out["path"]: name for name, stage in lock.get("stages", {}).items() for out in stage.get("outs", [])}


def producer_of(path, made_by):
    """The stage whose output is `path` or holds it (a file inside an output folder)."""
    for out, stage in made_by.items():
        if path == out or path.startswith(out.rstrip("/") + "/"):
            return stage
    return None


def plan(status, lock):
    """(stale, retrain): the stages an edit changed, and the stages that would recreate data or
    checkpoints this clone lacks: stale ones whose outputs are missing here, and those upstream that
    must rerun only to recreate a file a stale stage needs (recursively)."""
    known, made_by = recorded(lock), producers(lock)
    stale = sorted(name for name, changes in status.items() if not missing_only(changes, known.get(name, set())))
    retrain = {name for name in stale if set(missing_outs(status[name])) & known.get(name, set())}
    todo = [path for name in stale for path in missing_deps(status[name])]
    while todo:
        stage = producer_of(todo.pop(), made_by)
        if stage and stage not in retrain:
            retrain.add(stage)
            todo += missing_deps(status.get(stage, []))
    return stale, sorted(retrain)


def minutes(stages, times):
    """'name (N min last time)' for each stage, and the total in minutes (unknown stages count 0)."""
    last = lambda s: f"{times[s]['seconds'] / 60:.0f} min" if times[s]["seconds"] >= 60 else f"{times[s]['seconds']:.0f} s"
    named = [f"{s} ({last(s)} last time)" if s in times else f"{s} (no time recorded)" for s in stages]
    return ", ".join(named), sum(times.get(s, {}).get("seconds", 0) for s in stages) / 60


def stage_two_to_go(root="."):
    """Whether the sequential rule has chosen stage 2's studies (analysis/stage_two.yaml) and one of
    them has not been evaluated yet (no evaluate_stage2@ entry in dvc.lock)."""
    from replication.run.stage_two import SELECTION, read_selection    # imports torch: only when asked
    chosen = read_selection(Path(root, SELECTION)).studies if Path(root, SELECTION).exists() else {}
    done = read_lock(Path(root, "dvc.lock")).get("stages", {})
    return any(f"evaluate_stage2@{name}" not in done for name in chosen)


def registered_run_in_progress(root="."):
    """The latest registration's date while its registered run is under way: rules registered
    (registration.record_path), params.yaml as registered, and the committed analysis not yet
    judged under them (reports/summary.json's registered_on), or its second stage of seeds chosen
    and not yet run (stage_two_to_go); else None."""
    from replication.judge.registration import record_path      # imports torch: only when asked
    record, summary = Path(root, record_path(root)), Path(root, SUMMARY)
    if not record.exists():
        return None
    registered = json.loads(record.read_text())
    if hashlib.sha256(Path(root, "params.yaml").read_bytes()).hexdigest() != registered["sha256"]["params.yaml"]:
        return None                     # params edited since: the edit's stages, not the run's, are stale
    date = registered["date"]
    judged_on = json.loads(summary.read_text()).get("registered_on") if summary.exists() else None
    return date if judged_on != date or stage_two_to_go(root) else None


def in_run_order(stages):
    """Stages in the order a run takes them: each study's evaluation right after its pretraining
    (a session may not keep the checkpoints for a later one), stage 2's studies after stage 1's,
    analysis and report last."""
    group = {"resolve": 0, "data": 1, "pretrain": 3, "evaluate": 3, "pretrain_stage2": 4, "evaluate_stage2": 4,
             "analyze": 5, "report": 6}     # stage 2's seeds (run/stage_two.py) after all of stage 1
    def rank(name):
        kind, _, study = name.partition("@")
        return (group.get(kind, 2), study, kind.startswith("evaluate"), name)
    return sorted(stages, key=rank)


def run_estimates(path=RUN_COST, root="."):
    """{stage: seconds} of the registered run's estimate (cli.run_cost) for its pretrain and
    evaluate stages; a stage-2 study's (analysis/stage_two.yaml) is its study's, in proportion to
    the runs (conditions x seeds) it has of the study's. Empty without an estimate."""
    if not Path(path).exists():
        return {}
    studies = json.loads(Path(path).read_text())["stages"]
    out = {f"{kind}@{study}": 60 * minutes[f"{kind}_min"]
           for study, minutes in studies.items() for kind in ("pretrain", "evaluate")}
    selection = Path(root, "analysis/stage_two.yaml")
    if not selection.exists():
        return out
    from replication.run.stage_two import read_selection     # imports torch: only when asked
    for name, part in read_selection(selection).studies.items():
        resolved = Path(root, f"resolved/pretrain/{part.study}.json")
        if part.study not in studies or not resolved.exists():
            continue
        study = json.loads(resolved.read_text())
        share = len(part.conditions) * len(part.seeds) / (len(study["conditions"]) * len(study["seeds"]))
        for kind in ("pretrain", "evaluate"):
            out[f"{kind}_stage2@{name}"] = share * out[f"{kind}@{part.study}"]
    return out


def kind_of(stage):
    """pretrain or evaluate (stage 2's pretrain_stage2@ and evaluate_stage2@ too), else the stage's name."""
    return stage.partition("@")[0].removesuffix("_stage2")


def pace(done, estimate):
    """{kind: seconds taken / seconds estimated} over the done stages of each kind (pretrain,
    evaluate) that the estimate times: how far the run's estimate is off so far."""
    taken, planned = {}, {}
    for stage, seconds in done.items():
        if stage in estimate:
            kind = kind_of(stage)
            taken[kind], planned[kind] = taken.get(kind, 0) + seconds, planned.get(kind, 0) + estimate[stage]
    return {kind: taken[kind] / planned[kind] for kind in taken if planned[kind] > 0}


def report_progress(date, stale, times):
    """What a clone in the middle of the registered run says, instead of retraining: the stages to go,
    timed by the run's cost estimate (the previous run's times would mislead: its budgets differ),
    each kind scaled by the pace its done stages kept, and what the stages of this run took so far."""
    from replication.judge.registration import load        # imports torch: only when asked
    run = load()["run"]
    done = {s: r["seconds"] for s, r in times.items() if r.get("run") == run}
    estimate = run_estimates()
    scale = pace(done, estimate)
    ahead = {s: {"seconds": estimate[s] * scale.get(kind_of(s), 1)} if s in estimate else times[s]
             for s in stale if s in estimate or s in times}
    _, total = minutes(stale, ahead)
    paced = ", ".join(f"{kind} stages x {ratio:.2f}" for kind, ratio in sorted(scale.items()))
    print(f"Registered run {run} (rules registered on {date}) is in progress: {len(done)} stages done in "
          f"{sum(done.values()) / 60:.0f} minutes, {len(stale)} to go, about {total:.0f} minutes more by the run's "
          f"estimate ({RUN_COST.replace('.json', '.md')}"
          f"{f'; {paced}, as the done ones ran' if paced else ''}): {', '.join(stale)}. The committed report is still "
          f"the previous run's. Continue it stage by stage, committing each: `make repro-stage STAGE={stale[0]}`; "
          "or run every remaining stage with `make repro RETRAIN=1`.")


def what_ran(resolved):
    """The truth about what `make repro` ran before refusing to retrain."""
    if resolved:
        return "Only `resolve` ran: it rewrote resolved/ and dvc.lock for the edit; no other stage was run."
    return "Nothing was run."


def report_status(status, lock, times):
    """`make status`: in a few lines, what is truly stale, unlike `dvc status`, which on a clone
    lists every dataset and checkpoint it lacks (some 250 lines of `not in cache`)."""
    stale, retrain = plan(status, lock)
    lacking = sorted(set(status) - set(stale))
    in_progress = registered_run_in_progress()
    if in_progress and stale:
        report_progress(in_progress, in_run_order(stale), times)
    elif stale:
        edited = " (params.yaml edited: the stages it changes show once `resolve` has run)" if "resolve" in stale else ""
        print(f"Stale (an edit changed them; `make repro` reruns them): {minutes(stale, times)[0]}{edited}.")
    else:
        print("Current: every committed result matches the code and params.yaml.")
    if retrain and not in_progress:
        named, total = minutes(retrain, times)
        print(f"Rerunning them needs what this clone lacks, which retrains {named}: about {total:.0f} minutes "
              "(`make repro RETRAIN=1`, or `dvc pull`).")
    if lacking:
        print(f"{len(lacking)} stages lack only their datasets or checkpoints here (in DVC's cache: `dvc pull`); "
              "they count as current.")


def add_arguments(parser):
    parser.add_argument("--retrain", action="store_true",
                        help="retrain what this clone lacks (datasets, checkpoints) where a stale stage needs it "
                             "(`make repro RETRAIN=1`); without it nothing runs then, and the stages are named")


def add_exp_arguments(parser):
    parser.add_argument("--set", action="append", required=True, metavar="KEY=VALUE",
                        help="a value of params.yaml, as `dvc exp run -S` takes it (`make exp SET=KEY=VALUE`); "
                             "several separated by spaces, or --set again")
    parser.add_argument("--retrain", action="store_true",
                        help="run it even when it retrains what this clone lacks (`make exp SET=... RETRAIN=1`)")


def guarded(work):
    """`work()`'s exit status, run as a make entry: SIGTERM and SIGHUP stop it as Ctrl-C does, one
    line and exit status 130; a damaged committed file or a refused write is one line and 2."""
    try:
        signals_stop()                  # SIGTERM and SIGHUP stop it as Ctrl-C does
        require_inside(INSIDE)          # DVC writes dvc.lock, and reads analysis/stage_two.yaml
        one_at_a_time()                 # one make entry at a time in this clone
        return work()
    except KeyboardInterrupt as e:
        print(interrupted(e), file=sys.stderr)
        return 130
    except (FileError, WriteError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run_status(args):
    """`make status`: what is truly stale; runs nothing."""
    def status():
        times = read_stage_times()
        report_status(stage_status(), read_lock(), times)
        return 0
    return guarded(status)


def run_exp(args):
    """`make exp SET=...`: its words, split here."""
    def exp():
        sets = [item for value in args.set for item in value.split()]
        if not sets:
            raise SystemExit("error: SET is empty: give KEY=VALUE, e.g. `make exp SET=evaluate.probe_steps=1000`")
        return experiment(sets, args.retrain)
    return guarded(exp)


def run(args):
    """`make repro`."""
    return guarded(lambda: bring_up_to_date(args.retrain))


def bring_up_to_date(retrain_allowed):
    resolved = run_resolve()
    status, lock = stage_status(), read_lock()
    times = read_stage_times()
    stale, retrain = plan(status, lock)
    in_progress = registered_run_in_progress()
    if in_progress and stale and not retrain_allowed:
        report_progress(in_progress, in_run_order(stale), times)
        return 0
    if stale:
        print(f"The edits rerun: {minutes(stale, times)[0]}.")
    if retrain:
        named, total = minutes(retrain, times)
        print(f"This clone lacks data or checkpoints these need; recreating them retrains {named}: "
              f"about {total:.0f} minutes in all.")
        if not retrain_allowed:
            print(f"{what_ran(resolved)} Fetch them from a team remote with `dvc pull` (README: Sharing "
                  "checkpoints), or retrain with `make repro RETRAIN=1`.")
            return 1
        dvc("repro", *retrain)
    dvc("repro", "--allow-missing")
    if not stale and not retrain:
        absent = sorted(status)
        total = minutes(sorted(times), times)[1]
        print(f"The committed results are current.{_absent_note(absent)} To regenerate them on this machine: "
              f"`make repro-all` (every stage, about {total / 60:.1f} hours summed over the last runs), or one "
              "stage at a time: `make repro-stage STAGE=pretrain@head`.")
    return 0


# ---------------------------------------------------------------- `make exp SET=KEY=VALUE`

PUT_BACK = ("params.yaml", "dvc.lock", "resolved")


def with_values(text, sets):
    """params.yaml's text with each KEY=VALUE applied (VALUE read as YAML, as `dvc exp run -S` does);
    for planning only: comments and anchors are not kept. A VALUE that is not plain YAML (a tag such
    as !!python/object) is refused."""
    raw = load_yaml(text)
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"error: SET={item}: expected KEY=VALUE, e.g. `make exp SET=evaluate.probe_steps=1000`")
        *parents, last = key.split(".")
        node = raw
        for part in parents:
            if not isinstance(node.get(part) if isinstance(node, dict) else None, dict):
                raise SystemExit(f"error: SET={item}: params.yaml has no section {key.rsplit('.', 1)[0]}")
            node = node[part]
        try:
            node[last] = load_yaml(value)
        except yaml.YAMLError as e:
            raise SystemExit(f"error: SET={item}: {getattr(e, 'problem', None) or 'not plain YAML'}; give a "
                             "number, a string or a list, e.g. `make exp SET=evaluate.probe_steps=1000`") from None
    return yaml.safe_dump(raw, sort_keys=False)


def plan_experiment(sets):
    """(stale, retrain) of the experiment, planned with its values applied to params.yaml, which,
    resolved/ and dvc.lock are then put back as they were, whatever happens (an error, Ctrl-C,
    SIGTERM, SIGHUP; after SIGKILL, by the next make entry: cli/workspace.py)."""
    text = with_values(Path("params.yaml").read_text(), sets)
    with saved(PUT_BACK):
        with atomic_path("params.yaml") as tmp:
            tmp.write_text(text)
        run_resolve(quiet=True)
        return plan(stage_status(), read_lock())


def experiment(sets, retrain_allowed):
    """`dvc exp run -S ...` only when it retrains nothing this clone lacks, or when asked to."""
    shown = " ".join(f"SET={s}" for s in sets)
    stale, retrain = plan_experiment(sets)
    times = read_stage_times()
    if retrain and not retrain_allowed:
        named, total = minutes(retrain, times)
        print(f"`make exp {shown}` would retrain what this clone lacks: {named}, about {total:.0f} minutes; "
              f"nothing was run and nothing changed. Allow it with `make exp {shown} RETRAIN=1`, or fetch the "
              "checkpoints with `dvc pull` (README: Sharing checkpoints).")
        return 1
    if not stale:
        print(f"`make exp {shown}` changes no stage's configuration: nothing to run.")
        return 0
    print(f"The experiment reruns: {minutes(stale, times)[0]}.")
    if retrain:
        dvc("repro", *retrain)          # recreate what the clone lacks, as committed, first
    dvc("exp", "run", "--allow-missing", *(arg for s in sets for arg in ("-S", s)))
    return 0


def _absent_note(absent):
    if not absent:
        return ""
    return (f" {len(absent)} stages have their datasets or checkpoints in DVC's cache, not in this clone "
            "(`dvc pull` fetches them from a team remote); they count as current.")

