"""Stage resolve: validate params.yaml, apply the active profile, and write the configuration each
stage uses to resolved/ (one file per stage; see src/replication/run/config.py: resolve).

Stage 2 of a registered run (analysis/stage_two.yaml, once its rule has chosen) adds a study
<study>_stage2 for each study some of whose conditions get further seeds (run/stage_two.py).

The stage depends on the whole of params.yaml, so any edit, a typo included, is validated here. Its
output folder is persistent (DVC does not empty it first): a bad file stops with one line and exit
status 2 before anything is written, and every file is serialised before the first one is. Only
files whose content changed are rewritten, so the stages that read the others stay up to date; a
file no longer produced (a study removed or renamed) is deleted.
"""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import json
import shutil
import sys

from replication.run import stage_two
from replication.run.config import RESOLVED, ParamsError, load_params, resolve
from replication.io import stage_outputs, write_json


def changed_files(files):
    """{path: content} of the resolved files whose content differs from what is on disk. Raises
    ValueError before anything is written if a content cannot be stored as JSON."""
    for name, content in files.items():
        json.dumps(content, allow_nan=False)
    return {RESOLVED / name: content for name, content in files.items() if on_disk(RESOLVED / name) != content}


def on_disk(path):
    """A resolved file's content, or None when it is missing or unreadable (then it is rewritten)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def remove_stale(files):
    """Delete resolved files that no longer correspond to any stage, then empty folders."""
    for path in sorted(RESOLVED.rglob("*.json")):
        if str(path.relative_to(RESOLVED)) not in files:
            path.unlink()
    for folder in sorted((p for p in RESOLVED.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            shutil.rmtree(folder)


def main():
    try:
        files = stage_two.extend(resolve(load_params()), stage_two.read_selection())
    except ParamsError as e:
        print(f"error: {e}; nothing written", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        changed = changed_files(files)
    except ValueError as e:
        print(f"error: params.yaml: {e}; nothing written", file=sys.stderr)
        raise SystemExit(2) from None
    with stage_outputs(RESOLVED):
        for path, content in changed.items():
            write_json(path, content)
        remove_stale(files)
    print(f"resolved {len(files)} files into {RESOLVED}/ ({len(changed)} changed)")


if __name__ == "__main__":
    main()
