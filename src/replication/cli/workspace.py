"""One make entry at a time in a clone, and a workspace that no way of stopping one can leave changed.

- one_at_a_time(): an exclusive lock on the repository's folder (flock: the kernel releases it however
  the process ends, SIGKILL included, and it leaves no file behind). A second `make exp`, `make repro`,
  `make status`, ... in the same clone stops with one line instead of reading or writing a workspace
  that the first one is changing.
- signals_stop(): SIGTERM and SIGHUP (a closed terminal) raise Stopped where the process is, a
  KeyboardInterrupt, so that the cleanup of a Ctrl-C runs for them too: DVC and its stage stopped,
  params.yaml, dvc.lock and resolved/ put back.
- saved(paths): the files at `paths` kept in JOURNAL while a block edits them and put back at its
  end, whatever happens, with every signal held back while they are written; only SIGKILL can stop
  that, and then the next make entry finds JOURNAL and puts them back first (restore).
"""
import base64
import contextlib
import fcntl
import json
import os
import signal
import sys
from pathlib import Path

from replication.io import atomic_path

JOURNAL = Path(".dvc/tmp/saved_workspace.json")     # .dvc/tmp is git-ignored (.dvc/.gitignore)
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_held = None                                          # this process's lock: the repository folder, open


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as a Ctrl-C is; str(e) is the signal's name."""


def _stop(signum, frame):
    raise Stopped(signal.Signals(signum).name)


def signals_stop():
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)


def one_at_a_time():
    """Hold the clone's lock until this process ends; exit 1 with one line when another holds it.
    Then put back what a killed earlier command left changed (restore)."""
    global _held
    if _held is None:
        folder = os.open(".", os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(folder)
            print("error: another make entry (exp, repro, status, ...) is running in this clone; wait for it to "
                  "end, then run this one again (nothing was read or changed)", file=sys.stderr)
            raise SystemExit(1) from None
        _held = folder
    restore()


def snapshot(paths):
    """{file: bytes} of every file at `paths` (files or folders)."""
    files = {}
    for path in map(Path, paths):
        for f in sorted(path.rglob("*")) if path.is_dir() else [path] if path.exists() else []:
            if f.is_file():
                files[f] = f.read_bytes()
    return files


def put_back(saved, paths):
    """The files at `paths` exactly as `saved`: changed ones rewritten (atomically), new ones removed."""
    for f, content in saved.items():
        if not f.exists() or f.read_bytes() != content:
            with atomic_path(f) as tmp:
                tmp.write_bytes(content)
    for f in snapshot(paths):
        if f not in saved:
            f.unlink()


@contextlib.contextmanager
def held_signals():
    """The stopping signals held back (delivered once the block ends), so that a write is never cut short."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


@contextlib.contextmanager
def saved(paths):
    """The block may change the files at `paths`: they are kept in JOURNAL first and put back at its
    end, whatever ends it (an error, Ctrl-C, SIGTERM, SIGHUP); after SIGKILL, by the next make entry."""
    with held_signals():
        files = snapshot(paths)
        with atomic_path(JOURNAL) as tmp:
            tmp.write_text(json.dumps({"paths": list(map(str, paths)), "files": {
                str(f): base64.b64encode(content).decode() for f, content in files.items()}}))
    try:
        yield
    finally:
        with held_signals():
            put_back(files, paths)
            JOURNAL.unlink()


def restore():
    """Put back the files a command killed outright (SIGKILL) left changed, from JOURNAL, and say so."""
    if not JOURNAL.exists():
        return
    with held_signals():
        journal = json.loads(JOURNAL.read_text())
        put_back({Path(f): base64.b64decode(content) for f, content in journal["files"].items()}, journal["paths"])
        JOURNAL.unlink()
    print(f"note: {', '.join(journal['paths'])} put back as they were before a command that was killed while it "
          "had changed them", file=sys.stderr)
