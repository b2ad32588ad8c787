"""Pretraining throughput: this project's SimCLR against the encyclopedia article's tiny-SimCLR
script, at the script's configuration (2,000 images of 32 x 32, batch 128, 300 steps, tau 0.2),
for a sweep of seeds on all cores. Wall time per sweep, from process start to exit.

    python benchmarks/throughput.py [--seeds 10] [--repeats 1]

Reads the article's script from ../shared/seeds (the documents are not part of the project: the
benchmark says so and stops when they are absent). Contenders, run in alternation:
  script as written   one process, seeds in turn, the script's own torch.set_num_threads(4)
  script, 2 x 1       the same script in one single-threaded process per core, seeds split
  ours, NCHW, 2 x 1   replication.examples.tiny_simclr (same draws and layout as the script)
  ours, NHWC, 2 x 1   the same with channels_last convolutions, as the studies run
The NCHW run must print the script's losses at one thread, seed for seed (checked).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import header, record

DOCUMENT = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "004_984cbe9e788e5d0d.txt"
STEPS, BATCH = 300, 128
# The script fixes 4 threads; this wrapper pins it to one (its own call becomes a no-op).
ONE_THREAD = ("import runpy, sys, torch; torch.set_num_threads(1); torch.set_num_threads = lambda n: None; "
              "sys.argv = ['script', *sys.argv[2:]]; runpy.run_path({path!r}, run_name='__main__')")
OURS = ("import json, sys; from replication.run.train import map_runs; from replication.examples.tiny_simclr import run; "
        "seeds = [int(s) for s in sys.argv[1:]]; "
        "print(json.dumps(map_runs(run, [(s, 300, 128, 0.2, 1, {channels_last}) for s in seeds], 2)))")


def article_script():
    """The tiny-SimCLR script as printed in the article: from `import sys` to its sample output."""
    lines = DOCUMENT.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line == "import sys" and "def make_images" in
                 "\n".join(lines[i:i + 40]))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("PyTorch 2."))
    return "\n".join(lines[start:end]).rstrip() + "\n"


def timed(commands):
    """Run the commands in parallel; (wall seconds, their stdout joined)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, text=True, env=env) for c in commands]
    outs = [p.communicate()[0] for p in procs]
    seconds = time.perf_counter() - start
    if any(p.returncode for p in procs):
        raise SystemExit(f"a contender failed: {commands}")
    return seconds, "\n".join(outs)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=1)
    a = parser.parse_args(argv)
    if not DOCUMENT.exists():
        print(f"skipped: the article's script is read from {DOCUMENT}, which is not here")
        return 0
    seeds = [str(s) for s in range(a.seeds)]
    halves = [seeds[0::2], seeds[1::2]]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "tiny_simclr_article.py"
        script.write_text(article_script())
        py = sys.executable
        contenders = {
            "script as written": [[py, str(script), *seeds]],
            "script, 2 x 1 thread": [[py, "-c", ONE_THREAD.format(path=str(script)), "x", *h] for h in halves],
            "ours, NCHW, 2 x 1 thread": [[py, "-c", OURS.format(channels_last=False), *seeds]],
            "ours, NHWC, 2 x 1 thread": [[py, "-c", OURS.format(channels_last=True), *seeds]],
        }
        header(f"tiny SimCLR sweep of {a.seeds} seeds x {STEPS} steps x {BATCH} images, wall time per sweep")
        walls = {name: [] for name in contenders}
        outputs = {}
        for _ in range(a.repeats):
            for name, commands in contenders.items():
                seconds, outputs[name] = timed(commands)
                walls[name].append(seconds)
    check_same_losses(outputs["script, 2 x 1 thread"], outputs["ours, NCHW, 2 x 1 thread"])
    base = min(walls["script as written"])
    print(f"{'contender':28s} {'sweep s':>8s} {'images/s':>9s} {'vs script':>10s}")
    rows = []
    for name, w in walls.items():
        rows.append({"contender": name, "sweep_s": min(w), "images_per_s": a.seeds * STEPS * BATCH / min(w),
                     "vs_script": base / min(w)})
        print(f"{name:28s} {min(w):8.1f} {rows[-1]['images_per_s']:9.0f} {base / min(w):9.2f}x")
    record("throughput", {"seeds": a.seeds, "steps": STEPS, "batch": BATCH, "repeats": a.repeats, "rows": rows})
    return 0


def check_same_losses(script_output, ours_output):
    """The script at one thread and our NCHW rebuild must print the same loss for every seed."""
    import json
    printed = {int(s): float(v) for s, v in re.findall(r"seed (\d+): NT-Xent after 300 steps ([\d.]+)", script_output)}
    ours = {r["seed"]: round(r["loss"], 3) for r in json.loads(ours_output.strip().splitlines()[-1])}
    mismatched = {s for s in printed if abs(printed[s] - ours[s]) > 5e-4}
    print(f"# same configuration: losses of the script and of our NCHW rebuild agree for "
          f"{len(printed) - len(mismatched)} of {len(printed)} seeds (3 decimals)")
    if mismatched:
        raise SystemExit(f"losses differ for seeds {sorted(mismatched)}: the configurations are not the same")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
