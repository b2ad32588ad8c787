"""Stage resolve: validate params.yaml, apply the active profile, and write the configuration each
stage uses to resolved/ (one file per stage; see src/replication/config.py: resolve).

A file whose content is unchanged is not rewritten, so the stages that read it stay up to date.
"""
import json
import shutil
from pathlib import Path

from replication.config import RESOLVED, load_params, resolve
from replication.io import write_json

if __name__ == "__main__":
    files = resolve(load_params())
    for name, content in files.items():
        path = RESOLVED / name
        if not path.exists() or json.loads(path.read_text()) != content:
            write_json(path, content)
    for path in sorted(RESOLVED.rglob("*.json")):        # a study that was removed or renamed
        if str(path.relative_to(RESOLVED)) not in files:
            path.unlink()
    for folder in sorted((p for p in RESOLVED.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            shutil.rmtree(folder)
    print(f"resolved {len(files)} files into {RESOLVED}/")
