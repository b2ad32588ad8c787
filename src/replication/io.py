"""Atomic file output: write to a temporary file beside the target, then rename.

An interrupted stage therefore leaves either the old file or the new one, never half of one.
"""
import hashlib
import json
import os
import platform
import tempfile
from contextlib import contextmanager
from pathlib import Path

import torch
import yaml


@contextmanager
def atomic_path(path):
    """Yield a temporary path in the target's folder; rename it onto `path` on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())    # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def remove_stray_tmp(folder):
    """Delete the temporary files atomic_path leaves when its process is killed mid-write (SIGKILL
    skips the cleanup above); a stage calls it on start so none accumulate. Returns how many."""
    stray = sorted(Path(folder).rglob(".*.tmp")) if Path(folder).is_dir() else []
    for path in stray:
        path.unlink()
    return len(stray)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def json_text(obj):
    """The text write_json writes: indented, keys in insertion order, no NaN."""
    return json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_json(path, obj):
    with atomic_path(path) as tmp:
        tmp.write_text(json_text(obj))


def read_json(path):
    return json.loads(Path(path).read_text())


class DuplicateKeyError(yaml.YAMLError):
    """A mapping that names one key twice (YAML would keep the last silently)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":   # `<<: *anchor`: its mapping is checked on its own
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {key!r} at line {key_node.start_mark.line + 1}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text):
    """yaml.safe_load that rejects a key repeated in one mapping (DuplicateKeyError). Merge keys
    (`<<: *anchor`) still let a mapping override what it merges."""
    return yaml.load(text, Loader=_UniqueKeyLoader)


def save_torch(path, obj):
    """torch.save through a file handle: given a path, torch names the archive's folder after the
    file, and the temporary name would then make equal contents differ byte for byte."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        torch.save(obj, f)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cpu_model():
    """The CPU's model name (float results and times depend on it), or the architecture."""
    try:
        with open("/proc/cpuinfo") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()
