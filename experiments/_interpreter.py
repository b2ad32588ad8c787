"""The first import of every stage: a stage started by an interpreter without the project's packages
(a shell where .venv is not active, so DVC's `python` is the system one) says so in one line and
exits with status 2 before anything is read or written, instead of a traceback; so does a pipeline
file that a symlink leads out of the repository (replication.io.require_inside); a Ctrl-C ends it
with exit status 130 and no traceback. The standard library until the packages are found, and no
stage depends on it in dvc.yaml: it changes no result."""
import importlib.util
import sys

NEEDED = ("torch", "numpy", "pydantic", "yaml", "contrastive", "replication")

missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
if missing:
    print(f"error: {sys.executable} is not the project's interpreter (it lacks {', '.join(missing)}); run "
          "stages with `make repro`, or `source .venv/bin/activate` first", file=sys.stderr)
    raise SystemExit(2)

from replication.io import require_inside  # noqa: E402  (only once the packages are found)

require_inside()

# Ctrl-C stops the stage at once, its cleanup (`finally`: temporary files removed, old outputs kept)
# run, without a traceback: the make entry that ran it says the one line.
import signal  # noqa: E402
signal.signal(signal.SIGINT, lambda signum, frame: sys.exit(130))
