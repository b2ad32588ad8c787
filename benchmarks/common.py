"""Shared by the benchmarks: timings taken side by side, in alternation, so that a noisy machine
slows every contender alike. Only ratios measured in one run are meant to be compared."""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def alternate(contenders, repeats=5, warmup=1):
    """Median seconds per call of each no-argument callable in `contenders` (name -> fn), calling
    them in turn (A, B, C, A, B, C, ...) after `warmup` untimed rounds."""
    times = {name: [] for name in contenders}
    for round_ in range(warmup + repeats):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            if round_ >= warmup:
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def peak_mb_of(code):
    """Peak resident memory (MB) of a fresh Python process running `code`, minus that of one that
    only imports torch: the memory the code itself needed. Read from VmHWM, which starts afresh at
    exec (ru_maxrss would carry over the parent's peak)."""
    def peak(body):
        probe = (f"import torch\n{body}\nprint([l.split()[1] for l in open('/proc/self/status') "
                 "if l.startswith('VmHWM')][0])")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
        return int(out.stdout.split()[-1]) / 1024
    return peak(code) - peak("pass")


def machine():
    """The CPU model and the cores this process may use."""
    from replication.io import cpu_model
    return f"{cpu_model()}, {len(os.sched_getaffinity(0))} cores"


RESULTS = Path(__file__).resolve().parents[1] / "reports" / "benchmarks"


def record(name, figures):
    """Write a benchmark's figures, with the machine, its native capabilities and the date, to
    reports/benchmarks/<name>.json (README's benchmark table is generated from these files)."""
    import torch
    from contrastive.train import cpu_capabilities
    from replication.io import write_json
    write_json(RESULTS / f"{name}.json", {"machine": machine(), "capabilities": cpu_capabilities(),
                                          "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), **figures})


def header(title):
    import torch
    print(f"# {title}\n# {machine()}; torch {torch.__version__}; {time.strftime('%Y-%m-%d')}")


def run_args(argv, doc):
    """--steps and --repeats for a benchmark that evaluates a short run of the default arm; one torch
    thread, as evaluate@ runs."""
    import argparse

    import torch
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    return args


def step_args(argv, doc, batch):
    """--threads and --batch for a benchmark of one training step; sets the thread count and seed."""
    import argparse

    import torch
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=batch)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    return args
