"""Stage report: execute analysis/report.py (jupytext percent format) into reports/report.html, and
write the one-minute summary for GitHub readers to reports/claims.md, with the setup table of
analysis/deviations.yaml, and the levels table's data to reports/levels.csv (`dvc plots show`). The setup table and the latest registration record are checked first: a
bad entry or an unreadable record is one line (exit 2) and nothing is written."""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import sys

from replication.io import atomic_path, stage_outputs
from replication.judge import registration, verdicts
from replication.judge.record import RecordError
from replication.judge.registry import load_registry
from replication.report.claims_view import compute, load_claims, replication_summary
from replication.report.notebook import render_notebook
from replication.report.deviations import (DeviationError, derived_facts, deviations_markdown, load_deviations,
                                           miniature, resolve_deviations)
from replication.report.levels import LevelsError, level_points, load_methods
from replication.report.markdown import claims_markdown

if __name__ == "__main__":
    try:
        claims = load_claims("reports/claims.json")
        deviations = resolve_deviations(load_deviations(), {c["id"] for c in claims}, derived=derived_facts())
        methods = load_methods()
        registration.load()
        registration.load_code_amendments()
    except (DeviationError, LevelsError, RecordError, registration.RegistrationError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    # together: a render that fails midway leaves all three as they were, never a new page beside old notes
    with stage_outputs("reports/report.html", "reports/claims.md", "reports/levels.csv", together=True):
        render_notebook("analysis/report.py", "reports/report.html")
        registry = load_registry("analysis/claims.yaml")
        with atomic_path("reports/claims.md") as tmp:
            summary = replication_summary(claims, f"in miniature on a CPU: {miniature()}", compute())
            tmp.write_text(claims_markdown(claims, registry.sections, summary, registry.rules) + "\n"
                           + deviations_markdown(deviations))
        with atomic_path("reports/levels.csv") as tmp:
            level_points(methods, verdicts.level(registry.rules)).to_csv(tmp, index=False, float_format="%.2f")
