"""`make compare`: verdict changes and effect shifts between two judged claim files."""
import copy
import json
import subprocess
import sys
from pathlib import Path

from tools.compare import compare

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = json.loads((ROOT / "reports" / "claims.json").read_text())


def test_a_rerun_that_moved_one_effect_and_flipped_one_verdict():
    rerun = copy.deepcopy(CLAIMS)
    moved = next(c for c in rerun if c.get("contrast") and c["contrast"].get("diff_mean") is not None
                 and "contrasts" not in c)
    lo, hi = moved["contrast"]["diff_ci95"]
    moved["contrast"]["diff_mean"] += 2 * (hi - lo) / 2          # two half-widths
    flipped = next(c for c in rerun if c["verdict"] == "exact match")
    flipped["verdict"] = "mismatch"
    lines = compare(CLAIMS, rerun)
    assert lines[0] == f"verdicts: 1 of {len(CLAIMS)} shared claims changed"
    assert f"  {flipped['id']}: exact match -> mismatch" in lines
    shifted = [line for line in lines if moved["id"] in line and "2.00 of the old half-width" in line]
    assert len(shifted) == 1 and shifted[0].lstrip().startswith("!")


def test_identical_files_report_nothing_moved():
    assert compare(CLAIMS, CLAIMS)[:2] == [f"verdicts: 0 of {len(CLAIMS)} shared claims changed",
                                           "effects: 0 moved; 0 by more than the old 95% half-width (marked !)"]


def test_the_command_reads_files_and_git_revisions(tmp_path):
    other = tmp_path / "claims.json"
    other.write_text(json.dumps(CLAIMS))
    result = subprocess.run([sys.executable, "-m", "tools.compare", "HEAD:reports/claims.json", str(other)],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("verdicts: "), result.stderr
