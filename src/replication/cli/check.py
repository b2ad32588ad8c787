"""`make`'s check before DVC or a tool reads anything (every DVC command reads params.yaml and
analysis/stage_two.yaml: dvc.yaml's foreach and vars, with a YAML reader that expands an alias bomb
without end). The first problem is one line on stderr and exit status 2; nothing is written.

    python -m replication check

- no file that the pipeline or a make entry reads or writes leads out of the repository through a
  symlink (replication.io.inside): the pipeline's folders, and dvc.yaml, dvc.lock, README.md, docs/
  (cli/readme.py writes both), analysis/;
- no other make entry is running in this clone, and what a killed one left changed is put back first
  (cli/workspace.py);
- params.yaml passes the config check, device: cuda only where torch sees a GPU (replication.run.config);
- analysis/stage_two.yaml passes the same YAML checks, its types and the one name pattern
  (replication.run.stage_two.read_selection), and a choice in it is the sequential rule's on the
  interim analysis it names (cli.look.check_look);
- dvc.lock passes the same YAML checks and is a mapping of stages (replication.committed.read_lock);
- every committed JSON file under results/ and reports/ parses, and the times and steps of
  reports/stage_times.json and of the training records are in range (replication.committed).
"""
import sys

from replication.committed import FileError, check_committed, read_lock
from replication.io import PIPELINE, require_inside
from replication.run.config import ParamsError, load_params
from .look import check_look
from .workspace import one_at_a_time

INSIDE = (*PIPELINE, "dvc.yaml", "dvc.lock", "README.md", "docs", "analysis")   # what DVC and the tools read or write


def run(args=None):
    require_inside(INSIDE)
    one_at_a_time()                 # none while another make entry changes the workspace; after a killed one, put back
    params = load_params()
    try:
        check_look()                # reads it first (read_selection)
        check_committed()
        read_lock()                 # DVC reads it next
    except (ParamsError, FileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"params ok (profile {params.profile})")
    return 0

