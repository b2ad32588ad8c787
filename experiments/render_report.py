"""Stage report: execute analysis/report.py (jupytext percent format) into reports/report.html, and
write the one-minute summary for GitHub readers to reports/claims.md, with the setup table of
analysis/deviations.yaml. The setup table and the latest registration record are checked first: a
bad entry or an unreadable record is one line (exit 2) and nothing is written."""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import sys

from replication.io import atomic_path, stage_outputs
from replication.judge import registration
from replication.judge.record import RecordError
from replication.judge.registry import load_registry
from replication.report.claims_view import compute, load_claims, replication_summary
from replication.report.notebook import render_notebook
from replication.report.deviations import (DeviationError, derived_facts, deviations_markdown, load_deviations,
                                           miniature, resolve_deviations)
from replication.report.levels import LevelsError, load_methods
from replication.report.markdown import claims_markdown

if __name__ == "__main__":
    try:
        claims = load_claims("reports/claims.json")
        deviations = resolve_deviations(load_deviations(), {c["id"] for c in claims}, derived=derived_facts())
        load_methods()
        registration.load()
        registration.load_code_amendments()
    except (DeviationError, LevelsError, RecordError, registration.RegistrationError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    with stage_outputs("reports/report.html", "reports/claims.md"):
        render_notebook("analysis/report.py", "reports/report.html")
        with atomic_path("reports/claims.md") as tmp:
            summary = replication_summary(claims, f"in miniature on a CPU: {miniature()}", compute())
            registry = load_registry("analysis/claims.yaml")
            tmp.write_text(claims_markdown(claims, registry.sections, summary, registry.rules) + "\n"
                           + deviations_markdown(deviations))
