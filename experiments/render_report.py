"""Stage report: execute analysis/report.py (jupytext percent format) into reports/report.html, and
write the claims table for GitHub readers to reports/claims.md."""
import json
from pathlib import Path

from replication.io import atomic_path
from replication.render import claims_markdown, render_notebook

if __name__ == "__main__":
    render_notebook("analysis/report.py", "reports/report.html")
    with atomic_path("reports/claims.md") as tmp:
        tmp.write_text(claims_markdown(json.loads(Path("reports/claims.json").read_text())))
