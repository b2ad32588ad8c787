"""Atomic file output: write to a temporary file beside the target, then rename.

An interrupted stage therefore leaves either the old file or the new one, never half of one; a write
that fails (disk full, no permission) leaves the old file too, and raises WriteError, whose text is
the one line to print. The YAML loader refuses a key given twice and aliases that expand without
bound ("billion laughs").

Nothing is read or written through a symlink that leads out of the repository (`inside`): every
stage checks the pipeline's files on start (experiments/_interpreter.py), and so do the tools and
`make` (`python -m replication.io`) before DVC runs.
"""
import errno
import hashlib
import json
import os
import platform
import re
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import yaml


class WriteError(OSError):
    """A file that could not be written; str(e) is one line naming it and what to do. The old file,
    if any, is intact."""
    def __str__(self):
        return self.strerror


def _write_error(path, error):
    """The one line for an OSError met while writing `path`."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        todo = "free some disk space and rerun the stage"
    elif isinstance(error, PermissionError) or error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        todo = f"make {path.parent}/ writable (chmod, chattr -i, a read-only mount?) and rerun the stage"
    else:
        todo = "fix the cause and rerun the stage"
    return WriteError(error.errno, f"{path}: cannot write ({error.strerror or error}); its old content is "
                                   f"kept; {todo}")


class OutsideError(WriteError):
    """A path under the repository that a symlink leads out of it; str(e) is the one line."""


PIPELINE = ("params.yaml", "results", "resolved", "reports", "data", "artifacts")   # what the pipeline reads, writes
STAGE_TWO_SUFFIX = "_stage2"   # <study>_stage2[_a, _b, ...]: a stage-2 study, its DVC stages and record folders


def is_stage_two(study):
    """Whether a study (a record folder) is a stage-2 study (run/stage_two.py): <study>_stage2[_a, _b, ...]."""
    return re.search(rf"{STAGE_TWO_SUFFIX}(_[a-z])?$", study) is not None


def inside(path):
    """`path`, when it stays inside the repository (the working directory: every stage and tool runs
    at its root) with every symlink followed; else OutsideError naming the link. Writing through such
    a link would change files elsewhere (and a prune delete them), reading it would judge a file the
    repository does not hold. A path outside the repository to begin with is the caller's own (a
    test's temporary folder)."""
    root, path = Path.cwd(), Path(os.path.abspath(path))
    if not path.is_relative_to(root) or Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root)):
        return path
    link = next((p for p in [*reversed(path.parents), path] if p.is_relative_to(root) and p.is_symlink()
                 and not Path(os.path.realpath(p)).is_relative_to(os.path.realpath(root))), path)
    shown = link.relative_to(root)
    raise OutsideError(errno.EXDEV, f"{shown}: a symlink out of the repository (to {os.path.realpath(link)}); "
                                    f"nothing was read or written: replace it with a real "
                                    f"{'folder' if link.is_dir() else 'file'} (rm {shown}) and rerun")


def check_tree(paths=PIPELINE):
    """`inside` for each of `paths` (relative to the repository root) and everything under them, before
    a stage or tool reads or writes any of it. Folders are walked without following links: a linked
    folder is checked as one path."""
    for top in map(Path, paths):
        inside(top)
        for folder, dirs, files in os.walk(top) if top.is_dir() and not top.is_symlink() else ():
            for name in dirs + files:
                inside(Path(folder, name))


def require_inside(paths=PIPELINE):
    """check_tree as an entry point's first step: a path out of the repository is one line on stderr
    and exit status 2."""
    try:
        check_tree(paths)
    except OutsideError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


_written = set()     # the files atomic_path put in place in this process, for stage_outputs(prune=...)
_deferred = None     # under stage_outputs(together=True): [(temporary file, target)] renamed at the end


@contextmanager
def atomic_path(path):
    """Yield a temporary path in the target's folder; rename it onto `path` on success. Any OSError
    while making, writing or renaming the temporary file raises WriteError naming `path`."""
    path = Path(path)
    inside(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())    # mkstemp makes 0600; give the file normal permissions
        if _deferred is not None:
            _deferred.append((tmp, path))
            tmp = None                       # kept until the stage's outputs are put in place together
            return
        os.replace(tmp, path)
        _written.add(path.resolve())
    except WriteError:
        raise
    except OSError as e:
        raise _write_error(path, e) from None
    finally:
        if tmp and os.path.exists(tmp):
            os.remove(tmp)


@contextmanager
def stage_outputs(*outputs, prune=(), together=False):
    """The body of a stage that writes `outputs` (files or folders): stray temporary files of a
    killed earlier run are removed first, and a failed write ends the process with one line on
    stderr and exit status 1 (the file it would have replaced stays as it was). Outputs are
    persistent in dvc.yaml (DVC does not delete them before the stage runs, so a stage that fails
    keeps the committed ones): the folders in `prune` lose the files this run did not write (a
    condition removed from a study) only once the body has succeeded. together: every file is
    written to its temporary first and all are renamed into place only when the whole body has
    succeeded, so a stage that fails or is killed midway leaves all its old outputs, never a new
    file beside an old one (the renames take microseconds)."""
    global _deferred
    require_inside([*outputs, *prune])
    for output in outputs:
        remove_stray_tmp(output)
    _written.clear()
    _deferred = [] if together else None
    try:
        yield
        for tmp, path in _deferred or []:
            try:
                os.replace(tmp, path)
            except OSError as e:
                raise _write_error(path, e) from None
            _written.add(path.resolve())
    except WriteError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    finally:
        for tmp, _ in _deferred or []:
            if os.path.exists(tmp):
                os.remove(tmp)
        _deferred = None
    for folder in prune:
        remove_unwritten(folder, _written)


def remove_unwritten(folder, written):
    """Delete the files under `folder` that are not in `written` (resolved paths), then its empty
    folders. Returns how many files."""
    folder = Path(folder)
    check_tree([folder])
    stale = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.resolve() not in written] \
        if folder.is_dir() else []
    for path in stale:
        path.unlink()
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True) if folder.is_dir() else []:
        if not any(sub.iterdir()):
            sub.rmdir()
    return len(stale)


def remove_stray_tmp(output):
    """Delete the temporary files atomic_path leaves when its process is killed mid-write (SIGKILL
    skips the cleanup above): every one under a folder, or a file's own beside it. A stage calls it
    on start for its outputs (stage_outputs) so none accumulate. Returns how many."""
    output = inside(output)
    if output.is_dir():
        stray = sorted(output.rglob(".*.tmp"))
    else:
        stray = sorted(output.parent.glob(f".{output.name}.*.tmp")) if output.parent.is_dir() else []
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
    return json.loads(inside(path).read_text())


class DuplicateKeyError(yaml.YAMLError):
    """A mapping that names one key twice (YAML would keep the last silently)."""


class ExpansionError(yaml.YAMLError):
    """A document whose aliases expand to more than MAX_NODES values ("billion laughs"): each alias
    is one more copy of its anchor's whole tree, so a few hundred bytes can stand for billions."""


MAX_NODES = 100_000     # params.yaml expands to about 1,400 values, analysis/claims.yaml to about 6,000


def expanded_size(node, sizes=None):
    """How many values the composed document stands for with every alias written out (at most
    MAX_NODES + 1). Counted on the node graph, where an alias is its anchor's node object, each node
    once, so in linear time; an anchor inside itself expands without end."""
    sizes = {} if sizes is None else sizes
    if id(node) in sizes:
        return sizes[id(node)] or MAX_NODES + 1         # None: still being counted, a cycle
    sizes[id(node)] = None
    total = 1
    for child in _children(node):
        total = min(total + expanded_size(child, sizes), MAX_NODES + 1)
    sizes[id(node)] = total
    return total


def _children(node):
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _short(text, shown=80):
    """Text cut to `shown` characters, so that an error line stays short (schema.excerpt's rule;
    io imports nothing of the project, so that every stage's deps stay as they are)."""
    return text if len(text) <= shown else text[:shown - 3] + "..."


class _UniqueKeyLoader(yaml.SafeLoader):
    def get_single_node(self):
        node = super().get_single_node()
        if node is not None and expanded_size(node) > MAX_NODES:
            raise ExpansionError(f"its aliases (*name) expand to more than {MAX_NODES:,} values; write the "
                                 "values out, or use fewer aliases of aliases")
        return node

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":   # `<<: *anchor`: its mapping is checked on its own
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {_short(repr(key))} at line {key_node.start_mark.line + 1}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text):
    """yaml.safe_load that rejects a key repeated in one mapping (DuplicateKeyError) and aliases that
    expand to more than MAX_NODES values (ExpansionError). Merge keys (`<<: *anchor`) still let a
    mapping override what it merges."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except RecursionError:              # [[[[...]]]] thousands deep: the composer recurses per level
        raise ExpansionError("nested too deeply; flatten it") from None


def save_torch(path, obj):
    """torch.save through a file handle: given a path, torch names the archive's folder after the
    file, and the temporary name would then make equal contents differ byte for byte."""
    import torch                        # only here: `python -m replication.io` stays quick
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


if __name__ == "__main__":             # `make`'s check before DVC reads anything
    require_inside()


def digest(value):
    """The sha256 of a JSON value with its keys sorted: the same for a configuration and for its copy
    read back from resolved/."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def run_digest(run, execution, data):
    """The `config_sha256` a training record carries: the digest of what its run read from
    resolved/pretrain/<study>.json (its condition's settings, the study's execution and data), as
    JSON dicts. An evaluation record carries the digest of resolved/evaluate.json."""
    return digest({"run": run, "execution": execution, "data": data})
