"""Record a code edit that changes no result in dvc.lock, without rerunning the stages it touches.

    python -m tools.relock            # list what it would record, change nothing
    python -m tools.relock --write    # record it
    python -m tools.relock --moved --write
                                      # also code at paths dvc.lock does not know yet (modules moved)

Every stage depends on the modules it imports, so a new check in src/replication/run/config.py makes
every stage stale, and on a clone without DVC's cache `dvc commit` refuses (the checkpoints are not
there to hash). This tool records the new hashes of the edited code and keeps the recorded hashes of
the outputs that are missing. It only touches a stage whose every change is an edited source file
(src/, experiments/, analysis/, tools/) or an output or dependency missing from this clone; a stage
with an edited parameter, configuration or result is left stale for `dvc repro`.

Use it only when the edit provably changes no result, e.g. after checking that `resolve` writes the
same files for every profile; otherwise rerun the stages (`make repro-stage STAGE=...`).
"""
import sys

from tools.repro import MISSING, read_lock, recorded, stage_status

CODE = ("src/", "experiments/", "analysis/", "tools/")


def code_only(changes, known, moved=False):
    """True when a stage's changes are edited source files, or files this clone lacks that dvc.lock
    records (a new output or dependency is not: the stage must run to make it). moved: a source
    file at a path dvc.lock does not know counts as edited code (a module moved to a new house)."""
    for change in changes:
        if not isinstance(change, dict):
            return False                        # e.g. "changed command", "always changed"
        for kind, entries in change.items():
            if kind not in ("changed deps", "changed outs") or not isinstance(entries, dict):
                return False
            for path, state in entries.items():
                missing = isinstance(state, str) and state in MISSING and path in known
                edited_code = kind == "changed deps" and state == "modified" and path.startswith(CODE) \
                    and (path in known or moved)
                if not (missing or edited_code):
                    return False
    return True


def relockable(status, lock, moved=False):
    """The stages whose dvc.lock entries may be updated, and those left stale."""
    known = recorded(lock)
    fits = {s for s, changes in status.items() if code_only(changes, known.get(s, set()), moved)}
    return sorted(s for s in fits if _edited(status[s])), sorted(set(status) - fits)


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


def main(argv):
    ok, left = relockable(stage_status(), read_lock(), moved="--moved" in argv)
    for stage in ok:
        print(f"{'recorded' if '--write' in argv else 'would record'}: {stage} (edited code only)")
    for stage in left:
        print(f"left stale: {stage} (a parameter, configuration, result or new file: rerun it)")
    if "--write" in argv and ok:
        relock(ok)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
