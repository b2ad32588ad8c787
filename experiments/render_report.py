"""Stage report: execute analysis/report.py (jupytext percent format) into reports/report.html, and
write the one-minute summary for GitHub readers to reports/claims.md."""
from replication.io import atomic_path
from replication.render import render_notebook
from replication.render_claims import load_claims
from replication.render_markdown import claims_markdown

if __name__ == "__main__":
    render_notebook("analysis/report.py", "reports/report.html")
    with atomic_path("reports/claims.md") as tmp:
        tmp.write_text(claims_markdown(load_claims("reports/claims.json")))
