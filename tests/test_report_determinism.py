"""Two renders of the same inputs give the same bytes: report.html, claims.md and levels.csv (no random cell id,
no jitter drawn from NumPy's global generator, no figure id that changes between runs)."""
import pytest

from test_report_escaping import render, report_inputs


@pytest.mark.slow
def test_two_renders_of_the_same_inputs_are_byte_identical(tmp_path):
    folders = [tmp_path / "first", tmp_path / "second"]       # two places: no path leaks into the page
    for folder in folders:
        report_inputs(folder)
        result = render(folder)
        assert result.returncode == 0, result.stderr[-3000:]
    for output in ("reports/report.html", "reports/claims.md", "reports/levels.csv"):
        first, second = ((folder / output).read_bytes() for folder in folders)
        assert first == second, output
