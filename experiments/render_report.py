"""Stage report: execute analysis/report.py (jupytext percent format) and write reports/report.html."""
from contrastive.config import load_params
from contrastive.report import render_notebook

if __name__ == "__main__":
    load_params()
    render_notebook("analysis/report.py", "reports/report.html")
