"""Run `dvc repro` (or any command), timing it; when stages actually ran, record the wall time.

    python -m contrastive.timing dvc repro

Writes reports/repro_timing.json (seconds, the stages that ran, date, CPU, profile) so README and
the report can quote a measured figure. A run that changed nothing leaves the record alone.
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
    if code == 0 and stages:
        from .config import read_params
        from .report import cpu_model
        write_json(RECORD, {"command": " ".join(argv), "seconds": round(seconds, 1), "stages_run": stages,
                            "date": datetime.date.today().isoformat(), "cpu": cpu_model(),
                            "profile": read_params().profile})
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
