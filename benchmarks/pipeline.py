"""The pipeline's own speed: a no-op `dvc repro`, the smoke profile end to end, and the share of
wall time spent in DVC itself (not in stage commands), here and in the last full default run.

    python benchmarks/pipeline.py

The smoke run happens in a temporary copy of the project; the full default run is read from
reports/repro_timing.json (written by `make repro-all` when every stage ran in one go) and from
reports/stage_times.json (written by `make repro-stage`, one stage at a time: the sum over the
current stages, with the CPU of each). Rows read from those records carry their own machine and
date; the others were measured here, now.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))      # this checkout's package (replication.cli.timing)

from common import header, record    # noqa: E402
from replication.cli.timing import copy_project  # noqa: E402
BIN = Path(sys.executable).parent


def run(args, cwd):
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}:{os.environ['PATH']}"}
    start = time.perf_counter()
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"{' '.join(map(str, args))} failed:\n{result.stderr[-2000:]}")
    return time.perf_counter() - start, result.stdout


def main():
    header("pipeline wall time and DVC's share of it")
    noop_times = []
    for _ in range(3):
        seconds, out = run([BIN / "dvc", "repro"], ROOT)
        if "up to date" not in out and "didn't change" not in out:
            raise SystemExit("the pipeline is not up to date here: run `make repro` first")
        noop_times.append(seconds)
    noop = statistics.median(noop_times)
    stages = len(run([BIN / "dvc", "stage", "list", "--name-only"], ROOT)[1].split())
    with tempfile.TemporaryDirectory() as tmp:
        copy = copy_project(ROOT, tmp, profile="smoke")
        # forced: repro-all (replication.cli.timing) records only a forced run (a fresh copy reruns everything anyway)
        smoke_wall, _ = run([sys.executable, "-m", "replication", "repro-all", "--dvc", BIN / "dvc"], copy)
        smoke = json.loads((copy / "reports" / "repro_timing.json").read_text())
    rows = [{"run": "no-op `dvc repro`", "stages": stages, "seconds": noop, "seconds_in_dvc": noop},
            {"run": "smoke profile, every stage", "stages": len(smoke["stages_run"]), "seconds": smoke["seconds"],
             "seconds_in_dvc": smoke["seconds_in_dvc"]}]
    full_path, by_stage_path = ROOT / "reports" / "repro_timing.json", ROOT / "reports" / "stage_times.json"
    if full_path.exists():
        full = json.loads(full_path.read_text())
        rows.append({"run": "default profile, every stage in one go",
                     "stages": len(full["stages_run"]), "seconds": full["seconds"],
                     "seconds_in_dvc": full.get("seconds_in_dvc"), "machine": full["cpu"], "date": full["date"]})
    if by_stage_path.exists():
        names = run([BIN / "dvc", "stage", "list", "--name-only"], ROOT)[1].split()
        by_stage = json.loads(by_stage_path.read_text())
        done = [by_stage[n] for n in names if n in by_stage]
        dates = sorted({s["date"] for s in done})
        rows.append({"run": f"default profile, one stage at a time ({len(done)} of {len(names)} stages)",
                     "stages": len(done), "seconds": sum(s["seconds"] for s in done),
                     "seconds_in_dvc": sum(s["seconds_in_dvc"] for s in done),
                     "machine": ", ".join(sorted({s["cpu"] for s in done})),
                     "date": dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"})
    print(f"{'run':60s} {'stages':>6s} {'wall s':>8s} {'in DVC s':>9s} {'DVC share':>10s}")
    for r in rows:
        share = f"{r['seconds_in_dvc'] / r['seconds']:9.1%}" if r["seconds_in_dvc"] is not None else "      n/a"
        dvc_s = f"{r['seconds_in_dvc']:9.1f}" if r["seconds_in_dvc"] is not None else "      n/a"
        print(f"{r['run']:60s} {r['stages']:6d} {r['seconds']:8.1f} {dvc_s} {share}")
    record("pipeline", {"rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
