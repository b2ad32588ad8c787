"""Run `dvc repro`, timing it; when every stage of the pipeline ran, record the wall time.

    python -m contrastive.timing dvc repro [-f]

Writes reports/repro_timing.json (seconds, the stages that ran, date, CPU, profile) so README and
the report can quote a measured figure for a full run. A partial or no-op run leaves it alone.
"""
import datetime
import re
import subprocess
import sys
import time

from .io import write_json

RECORD = "reports/repro_timing.json"


def main(argv):
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=None, text=True)
    lines = []
    for line in process.stdout:
        sys.stdout.write(line)
        lines.append(line)
    code = process.wait()
    seconds = time.perf_counter() - start
    stages = re.findall(r"Running stage '([^']+)'", "".join(lines))
    every_stage = subprocess.run([argv[0], "stage", "list", "--name-only"], capture_output=True,
                                 text=True).stdout.split()
    if code == 0 and stages and set(every_stage) <= set(stages):
        from .config import read_params
        from .report import cpu_model
        write_json(RECORD, {"command": " ".join(argv), "seconds": round(seconds, 1), "stages_run": stages,
                            "date": datetime.date.today().isoformat(), "cpu": cpu_model(),
                            "profile": read_params().profile})
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
