"""Regenerate the study at the speed of the workers it is given: every stale training run of every
stage at once, then every stale evaluation, on a Dask cluster; DVC then runs the stages, which take
the runs done ahead (replication/run/engine.py) and write their outputs and dvc.lock as always.

    python -m replication schedule [--force] [--workers N] [--scheduler ADDRESS]

--force regenerates every stage, as `dvc repro -f`; without it, what `dvc status` finds stale.
Without --scheduler a local cluster runs on this machine: as many single-threaded workers as its
cores and memory allow (--workers to choose). On a cluster, start `dask scheduler` somewhere and
`dask worker ADDRESS --nthreads 1` in clones of this repository at the same commit, with its data
(`make repro` of the data stage, or `dvc pull`), and pass --scheduler ADDRESS. A worker lost mid-run
costs that run only; rerunning this command takes every finished run from .cache/runs.
"""
import json

from replication.run.config import EvaluateConfig, StudyConfig, read_resolved
from replication.run.engine import cluster_client, code_digest, run_ahead
from replication.run.evaluate import evaluate_run, evaluation_tasks
from replication.run.train import train_run, training_tasks
from .repro import dvc

RUN_STAGES = ("pretrain", "pretrain_stage2", "evaluate", "evaluate_stage2")


def stages(force):
    """Every stage of the pipeline in dvc.yaml's order (forced), else the stale ones (`dvc status`)."""
    if force:
        return [line.split()[0] for line in dvc("stage", "list", capture=True).splitlines() if line.strip()]
    return list(json.loads(dvc("status", "--json", capture=True) or "{}"))


def of_kind(names, kinds):
    return [name for name in names if name.split("@")[0] in kinds and "@" in name]


def cost(config):
    """A run's relative cost: the images it trains on (steps x batch x ranks)."""
    return config.rungs[-1] * config.batch * config.ranks


def training(names):
    """(tasks, costs) of every run of these pretrain stages but those of several ranks: they start
    their own processes, which a Dask worker (a daemon process) may not, so their stage runs them."""
    tasks = [task for name in names for task in training_tasks(read_resolved(f"pretrain/{name.split('@')[1]}", StudyConfig))
             if task[2].ranks == 1]
    return tasks, [cost(task[2]) for task in tasks]


def evaluation(names):
    """(tasks, costs) of every run of these evaluate stages."""
    config = read_resolved("evaluate", EvaluateConfig)
    studies = [read_resolved(f"pretrain/{name.split('@')[1]}", StudyConfig) for name in names]
    tasks, costs = [], []
    for study in studies:
        tasks += evaluation_tasks(study, config)
        costs += [cost(study.conditions[name]) for name in study.conditions for _ in study.seeds]
    return tasks, costs


def repro(names, force):
    for name in names:
        dvc("repro", *(["-f"] if force else []), "-s", name)


def add_arguments(parser):
    parser.add_argument("--force", action="store_true", help="regenerate every stage (dvc repro -f)")
    parser.add_argument("--workers", type=int, help="local workers (default: as many as cores and memory allow)")
    parser.add_argument("--scheduler", help="the address of a running Dask scheduler (a cluster)")


def run(args):
    dvc("repro", *(["-f"] if args.force else []), "data")          # resolve, then the datasets the runs read
    client = cluster_client(args.scheduler, args.workers)
    try:
        for kinds, plan, fn in ((RUN_STAGES[:2], training, train_run), (RUN_STAGES[2:], evaluation, evaluate_run)):
            names = of_kind(stages(args.force), kinds)
            tasks, costs = plan(names)
            ran = run_ahead(client, fn, tasks, costs, code_digest())
            print(f"{fn.__name__}: {ran} runs done ahead on {len(client.scheduler_info()['workers'])} workers, "
                  f"{len(tasks) - ran} found done; the stages take them")
            repro(names, args.force)
    finally:
        cluster = client.cluster            # the local one this command started, else None
        client.close()
        if cluster:
            cluster.close()
    rest = [name for name in stages(args.force) if name.split("@")[0] not in RUN_STAGES and name not in ("resolve", "data")]
    if args.force:
        repro(rest, force=True)
    else:
        dvc("repro")                        # whatever else is stale: the examples, analyze, report
    return 0
