"""Record a code edit that changes no result in dvc.lock, without rerunning the stages it touches.

    python -m replication relock            # list what it would record, change nothing
    python -m replication relock --write    # record it
    python -m replication relock --moved --write
                                            # also code at paths dvc.lock does not know yet (modules moved)

Every stage depends on the modules it imports, so a new check in src/replication/run/config.py makes
every stage stale, and on a clone without DVC's cache `dvc commit` refuses (the checkpoints are not
there to hash). This tool records the new hashes of the edited code and keeps the recorded hashes of
the outputs that are missing. It only touches a stage whose every change is edited code (a Python
file, or a folder of modules, under src/, experiments/, analysis/, tools/) or an output or dependency
missing from this clone; a stage with an edited parameter, configuration, registered file
(analysis/claims.yaml, analysis/registration*.json, or judging code that differs from the latest
registration or its code amendment) or result is left stale for `dvc repro`, and the file that keeps
it stale is named. Judging code is recorded only after `python -m replication register --code-moved`.

Use it only when the edit provably changes no result, e.g. after checking that `resolve` writes the
same files for every profile; otherwise rerun the stages (`make repro-stage STAGE=...`).
"""
import sys
from pathlib import Path

from replication.committed import FileError, read_lock
from replication.io import require_inside
from replication.judge.registration import RegistrationError, unregistered_changes
from .check import INSIDE
from .repro import MISSING, recorded, stage_status
from .workspace import one_at_a_time

CODE = ("src/", "experiments/", "analysis/", "tools/")


def is_code(path):
    """A Python file or a folder of modules under CODE: analysis/claims.yaml, the registration records
    and every other data or configuration file there are not code, whatever their folder."""
    return path.startswith(CODE) and (path.endswith(".py") or Path(path).is_dir())


def blocker(changes, known, moved=False, registered=frozenset()):
    """Why a stage may not be relocked (one short phrase), or None when its changes are edited code
    or files this clone lacks that dvc.lock records (a new output or dependency is not: the stage
    must run to make it). moved: code at a path dvc.lock does not know counts as edited code (a
    module moved to a new house). registered: judging code that differs from the registration,
    which is never edited code to relock."""
    for change in changes:
        if not isinstance(change, dict):
            return str(change)                  # e.g. "changed command", "always changed"
        for kind, entries in change.items():
            if kind not in ("changed deps", "changed outs") or not isinstance(entries, dict):
                return kind
            for path, state in entries.items():
                held = sorted(r for r in registered if r == path or r.startswith(path.rstrip("/") + "/"))
                if held:
                    return (f"{held[0]} differs from the registration: amend it first with "
                            "`python -m replication register --code-moved` (or --rules-changed)")
                missing = isinstance(state, str) and state in MISSING and path in known
                edited_code = kind == "changed deps" and state == "modified" and is_code(path) \
                    and (path in known or moved)
                if not (missing or edited_code):
                    return f"{path} {state}" if is_code(path) or kind == "changed outs" else \
                        f"{path} {state}, which is not code"
    return None


def relockable(status, lock, moved=False, registered=frozenset()):
    """The stages whose dvc.lock entries may be updated, and {stage left stale: why}."""
    known = recorded(lock)
    why = {s: blocker(changes, known.get(s, set()), moved, registered) for s, changes in status.items()}
    fits = [s for s in sorted(status) if why[s] is None]
    return [s for s in fits if _edited(status[s])], {s: reason for s, reason in sorted(why.items()) if reason}


def _edited(changes):
    return any(state == "modified" for change in changes if isinstance(change, dict)
               for entries in change.values() if isinstance(entries, dict) for state in entries.values())


def relock(stages):
    """`dvc commit` with missing files allowed (DVC's own Stage.save; its command line has no such
    flag): each dependency that exists is hashed again, each missing one keeps its recorded hash.
    No run-cache entry is written, since that would need every dependency on disk."""
    from dvc.repo import Repo
    with Repo() as repo, repo.lock:
        for name in stages:
            for info in repo.stage.collect_granular(name):
                info.stage.save(allow_missing=True, run_cache=False)
                info.stage.dump(update_pipeline=False)


def add_arguments(parser):
    parser.add_argument("--write", action="store_true", help="record it (without: list what it would record, "
                        "change nothing)")
    parser.add_argument("--moved", action="store_true", help="also code at paths dvc.lock does not know yet "
                        "(modules moved)")


def run(args):
    require_inside(INSIDE)          # it writes dvc.lock
    one_at_a_time()
    try:
        registered = unregistered_changes()
        lock = read_lock()
    except (RegistrationError, FileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    ok, left = relockable(stage_status(), lock, moved=args.moved, registered=registered)
    for stage in ok:
        print(f"{'recorded' if args.write else 'would record'}: {stage} (edited code only)")
    for stage, why in left.items():
        print(f"left stale: {stage} ({why}: rerun it)")
    if args.write and ok:
        relock(ok)
    return 0

