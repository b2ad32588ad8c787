"""Where runs execute: runs done ahead of their stage, on any number of workers, handed to the stage.

A run (training or evaluating one condition at one seed) is a pure function of its task: the
resolved settings, the seed, the files it reads (named by path, hashed by content) and the code that
runs it. `run_key` names a run by all of these. The scheduler (run/schedule.py) executes every stale
run of the study at once on a Dask cluster and keeps each result in RUNS (.cache/runs/<key>.pt,
outside DVC's outputs) as soon as it arrives; the stage that owns the run then finds it there
(`map_runs`), writes its outputs as it would have, and removes the entries it used. DVC stays the
only writer of outputs and dvc.lock, and a result is the same bytes whichever worker or machine
computed it: the record's timing and machine fields aside, it depends on nothing but the key.

A worker that dies mid-run loses only that run: Dask runs it again elsewhere, and every finished run
is already on disk here. Without a scheduler the stage runs what it does not find, as before.
"""
import hashlib
import io
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import torch
from pydantic import BaseModel
from tqdm import tqdm

import contrastive.train

from ..io import atomic_path, sha256

RUNS = Path(".cache/runs")       # results of runs done ahead of their stage, by run_key
CODE = ("src/contrastive", "src/replication/run", "src/replication/io.py", "src/replication/schema.py")


def code_digest(root="."):
    """The sha256 of every source file a run may execute (CODE): any edit there names new runs."""
    files = sorted(p for top in CODE for p in ([Path(root, top)] if top.endswith(".py") else
                                               Path(root, top).rglob("*.py")))
    listing = "".join(f"{p.relative_to(root).as_posix()} {sha256(p)}\n" for p in files)
    return hashlib.sha256(listing.encode()).hexdigest()


INPUTS = ("results/",)    # an argument naming a file there is a record the run reads: named by its content


def _as_json(value, root):
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, str) and value.startswith(INPUTS):
        path = Path(root, value)
        return {"file": value, "sha256": sha256(path) if path.is_file() else None}
    if isinstance(value, Path):
        return str(value)
    return value


def run_key(fn, task, code, root="."):
    """The name of a run: the function, every argument (settings as JSON, a record it reads by its
    content: an evaluation's training record, which holds its checkpoints' sha256) and the code's
    digest (code_digest). The datasets are named by their settings, which with the code fix them."""
    named = {"fn": f"{fn.__module__}.{fn.__qualname__}", "task": [_as_json(v, root) for v in task], "code": code}
    return hashlib.sha256(json.dumps(named, sort_keys=True).encode()).hexdigest()


def as_bytes(result):
    """A run's result as torch.save writes it: what a worker sends back, so that every tensor keeps
    its layout (Dask's own transfer of a tensor makes it contiguous, and a checkpoint written from it
    would then differ in bytes from one written where the run ran)."""
    buffer = io.BytesIO()
    torch.save(result, buffer)
    return buffer.getvalue()


def _run_to_bytes(fn, *task):
    return as_bytes(fn(*task))


def keep(key, result, folder=RUNS):
    """Store a run's result (or its bytes: as_bytes) under its key, atomically: a killed writer
    leaves no entry."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / f"{key}.pt") as tmp:
        tmp.write_bytes(result if isinstance(result, bytes) else as_bytes(result))


def kept(key, folder=RUNS):
    """The result stored under a key, or None."""
    path = Path(folder, f"{key}.pt")
    if not path.exists():
        return None
    with torch.serialization.safe_globals([torch.torch_version.TorchVersion]):    # a record's `torch` field
        return torch.load(path, weights_only=True)


def release(keys, folder=RUNS):
    """Remove the entries a stage has written its outputs from."""
    for key in keys:
        Path(folder, f"{key}.pt").unlink(missing_ok=True)


def _take_line(lines):
    """Worker initialiser: claim the next terminal line below the stage's bar for this worker's own
    progress bar, so that parallel runs' bars do not overwrite each other."""
    with lines.get_lock():
        lines.value += 1
        contrastive.train.PROGRESS_LINE = lines.value


def _run_locally(fn, tasks, workers, desc):
    if workers <= 1 or len(tasks) <= 1:
        return [fn(*task) for task in tqdm(tasks, desc=desc, leave=False, disable=None if len(tasks) > 1 else True)]
    context = multiprocessing.get_context("spawn")
    lines = context.Value("i", 0)
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context, initializer=_take_line,
                             initargs=(lines,)) as pool:
        futures = [pool.submit(fn, *task) for task in tasks]
        for _ in tqdm(as_completed(futures), total=len(futures), desc=desc, leave=False, disable=None):
            pass
        return [future.result() for future in futures]


def map_runs(fn, tasks, workers, desc="runs", taken=None, folder=RUNS):
    """[fn(*task) for task in tasks]: a run the scheduler did ahead is taken from `folder` (its key
    appended to `taken`: release them once the outputs are written), the others run here in up to
    `workers` spawned processes (one torch thread each, as the settings say), handed out in the given
    order (put the longest first), with a progress bar of the runs done on a terminal."""
    code = code_digest() if taken is not None and Path(folder).is_dir() else None
    keys = [run_key(fn, task, code) for task in tasks] if code else []
    found = {i: result for i, result in ((i, kept(key, folder)) for i, key in enumerate(keys)) if result is not None}
    missing = [i for i in range(len(tasks)) if i not in found]
    computed = dict(zip(missing, _run_locally(fn, [tasks[i] for i in missing], workers, desc)))
    if taken is not None:
        taken += [keys[i] for i in sorted(found)]
    return [found[i] if i in found else computed[i] for i in range(len(tasks))]


# ---------------------------------------------------------------- a cluster of workers

def cluster_client(address=None, workers=None):
    """A Dask client: of the scheduler at `address` (a cluster: `dask scheduler` and `dask worker`
    started from clones of this repository at the same commit, with its data), else of a local
    cluster of `workers` processes (default: as many as the cores and memory allow, one torch
    thread each: workers_here)."""
    from distributed import Client, LocalCluster        # only the scheduler needs Dask
    if address:
        return Client(address)
    cluster = LocalCluster(n_workers=workers or workers_here(), threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit=0)
    return Client(cluster)


RUN_MEMORY = 1.5e9       # bytes a run needs at most (run 3's records: about 1.2 GB peak)


def workers_here():
    """As many workers as this machine has cores, fewer where its memory would not hold them."""
    import psutil
    return max(1, min(os.cpu_count() or 1, int(psutil.virtual_memory().total // RUN_MEMORY)))


def run_ahead(client, fn, tasks, costs, code, folder=RUNS, on_done=None):
    """Run every task not yet in `folder` on the cluster at once, the costliest first (`costs`, one
    number per task: the scheduler's priority), keeping each result as it arrives; returns how many
    ran. A task whose worker dies is run again by Dask on another worker (up to its
    allowed-failures); a task that raises stops the scheduling with its error, the finished runs kept."""
    from distributed import as_completed as arrived
    keys = [run_key(fn, task, code) for task in tasks]
    todo = [(key, task, cost) for key, task, cost in zip(keys, tasks, costs) if not Path(folder, f"{key}.pt").exists()]
    futures = {client.submit(_run_to_bytes, fn, *task, key=f"run-{key}", priority=cost, pure=False): key
               for key, task, cost in todo}
    for future in arrived(futures):
        keep(futures[future], future.result(), folder)
        if on_done:
            on_done(futures[future])
        future.release()
    return len(todo)
