"""One count everywhere: every count of claims (judged, by verdict, by label) comes from
judge.judge.summary, the function that writes reports/summary.json; README, metrics.json, the report
and claims.md read the same numbers. Checked on the committed files."""
import html
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from replication.judge.judge import summary
from replication.report import claims_view as rc, markdown

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
pytestmark = pytest.mark.skipif(not (REPORTS / "claims.json").exists(), reason="no committed reports/claims.json")


@pytest.fixture(scope="module")
def claims():
    return rc.load_claims(REPORTS / "claims.json")


def test_summary_json_is_what_the_one_function_gives(claims):
    written = json.loads((REPORTS / "summary.json").read_text())
    written.pop("registered_on", None)
    assert written == summary(claims)


def test_metrics_json_holds_the_same_verdicts(claims):
    metrics = json.loads((REPORTS / "metrics.json").read_text())
    assert set(metrics) == {c["id"] for c in claims}
    for origin in ("literature", "document"):
        counted = rc.counts(claims)[origin]
        judged = [c for c in claims if rc.origin(c) == origin and c["verdict"] != "not tested"
                  and not rc.is_calibrated(c)]
        assert Counter(metrics[c["id"]]["verdict"] for c in judged) == Counter(counted["verdicts"])
        assert len(judged) == counted["judged"]


def test_readme_the_report_and_claims_md_print_the_same_counts(claims):
    counted = rc.counts(claims)
    readme = (ROOT / "README.md").read_text()
    for origin in rc.ORIGINS:
        part = counted[origin]
        line = next(line for line in rc.counts_text(claims) if line.startswith(f"{part['claims']} {rc.ORIGINS[origin]}:"))
        assert all(f"{n} {verdict}" in line for verdict, n in part["verdicts"].items()), line
    assert f"Labels: {counted['labels']['robust']} robust, {counted['labels']['depends_on']} depending" in readme
    labels = rc.counts_text(claims)[-1]
    assert set(rc.LABEL_COUNTS) == set(counted["labels"])                 # every label summary.json counts
    assert all(f"{counted['labels'][key]} {words}" in labels for key, words in rc.LABEL_COUNTS.items()), labels
    page = html.unescape(re.sub(r"<[^>]+>", "", (REPORTS / "report.html").read_text()))     # its text
    claims_md = (REPORTS / "claims.md").read_text()
    for line in rc.counts_text(claims):
        assert f"- {line}" in readme, line
        assert line in page, line
        assert markdown.cell(line) in claims_md, line
