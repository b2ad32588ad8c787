"""The whole chain under the smoke profile, built once in a temporary copy (tests/smoke_run.py): a
fresh `dvc repro` writes a well-formed report and claims.json and nothing outside the repository, a
second run does nothing, and the report opens offline in a real headless browser. The tests that
rerun parts of it or feed it bad input work on copies (tests/test_pipeline_reruns.py and
tests/test_pipeline_checks.py)."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from replication.report import claims_view as rc
from replication.report.claims_view import slug
from smoke_run import ROOT, dvc
from test_report_browser import chromium, flags, measure
from helpers import judged_claims

pytestmark = [pytest.mark.slow, pytest.mark.reads_smoke_run]


def test_smoke_pipeline_writes_report_and_claims(smoke):
    claims = judged_claims(smoke)
    registry_ids = re.findall(r"(?m)^- id: (\S+)", (smoke / "analysis" / "claims.yaml").read_text())
    assert [c["id"] for c in claims] == registry_ids                 # nothing dropped
    allowed = {"reproduced", "contradicted", "no meaningful effect", "inconclusive", "exact match",
               "within bound", "mismatch", "not testable here", "not tested"}
    for c in claims:
        assert {"id", "source", "statement", "published", "metric", "arms", "contrast", "verdict", "note"} <= set(c)
        assert c["verdict"] in allowed
        for arm in c["arms"].values():
            assert arm["n"] == len(arm["values"])
    html = (smoke / "reports" / "report.html").read_text()
    assert 'class="index"' in html and re.search(r'<svg[^>]*role="img"', html) and "<img" not in html
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=\"?https?:", html), "the report must work offline"
    for stage_output in ("results/examples/ntxent_numpy.json", "results/pretrain/simclr_mocov2/simclr/seed_1.json",
                         "results/evaluate/simclr_mocov2/simclr/seed_1.json", "artifacts/pretrain/simclr_mocov2/simclr/seed_1/step_0.pt",
                         "data/shapes.json", "resolved/pretrain/simclr_mocov2.json"):
        assert (smoke / stage_output).exists()


def test_claims_markdown_has_one_row_per_claim_with_its_verdict(smoke):
    claims = judged_claims(smoke)
    rows = [line for line in (smoke / "reports" / "claims.md").read_text().splitlines()
            if line.startswith("| `")]
    shown = {re.match(r"\| `([^`]+)`", r).group(1): re.search(r"\*\*([^*]+)\*\*", r).group(1) for r in rows}
    assert len(rows) == len(claims) and shown == {c["id"]: rc.verdict_words(c) for c in claims}


def test_second_repro_does_nothing(smoke_build):
    second = smoke_build["second"]                     # run by the build, before any test could touch the tree
    assert second["returncode"] == 0 and "up to date" in second["stdout"], second["stdout"]
    assert dvc(["status", "--quiet"], smoke_build["tree"]).returncode == 0


@pytest.mark.skipif(not chromium(), reason="Debian's chromium is not installed (make browser)")
def test_report_renders_offline_in_headless_chromium(smoke, tmp_path):
    report, offline = smoke / "reports" / "report.html", flags(tmp_path / "profile")     # no network at all
    dom = subprocess.run([chromium(), *offline, "--dump-dom", report.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    ids = [c["id"] for c in judged_claims(smoke)]
    anchors = re.findall(r'id="claim-([^"]+)"', dom)
    assert sorted(anchors) == sorted(slug(i) for i in ids)           # one unique anchor per claim
    shot = tmp_path / "report.png"
    subprocess.run([chromium(), *offline, f"--screenshot={shot}", report.as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


@pytest.mark.skipif(not chromium(), reason="Debian's chromium is not installed (make browser)")
def test_the_first_screen_holds_the_summary_and_the_studies(smoke, tmp_path):
    """Measured in a real browser at 1,366 x 768 px (tests/test_report_browser.py) on the smoke report;
    screenshots of the first screen and of the MoCo section for review."""
    measured = measure(smoke / "reports" / "report.html", tmp_path)
    assert measured["summary"] < 768 and measured["first_screen"], measured
    assert measured["figures"] >= 8 and measured["svg_with_alt"] == measured["figures"] and measured["raster"] == 0
    assert len(measured["ids"]) == len(set(measured["ids"]))
    shots = Path(os.environ.get("REPORT_SCREENSHOTS", tmp_path))   # a folder to keep them in, for review
    page = (smoke / "reports" / "report.html").read_text()
    head, body = page.split("<body>", 1)
    section = tmp_path / "moco.html"       # headless screenshots ignore a #fragment: the section on its own
    section.write_text(head + "<body>" + body[body.index('<h2 id="sec-moco"'):])
    for name, source in (("first-screen", smoke / "reports" / "report.html"), ("moco-section", section)):
        shot = shots / f"{name}.png"
        subprocess.run([chromium(), *flags(tmp_path / "p"), f"--screenshot={shot}", source.as_uri()],
                       capture_output=True, timeout=120)
        assert shot.stat().st_size > 20_000, name


def test_nothing_is_written_outside_the_repository(smoke_build):
    home = smoke_build["home"]                      # the build's empty home folder
    written = [str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()]
    assert written == [], f"the pipeline wrote into $HOME: {written[:10]}"


def test_the_control_is_the_untrained_encoder(smoke):
    """Every evaluation record holds the step-0 control beside the end of training, and the control
    is the same for conditions that share an initialisation (same seed, encoder and head)."""
    a = json.loads((smoke / "results/evaluate/simclr_mocov2/simclr/seed_0.json").read_text())
    b = json.loads((smoke / "results/evaluate/temperature_high/simclr_tau1/seed_0.json").read_text())
    assert a["rungs"] == [0, 3, 12, 24, 48]
    assert all(0 <= record["h"]["linear"] <= 1 for record in (a["control"], a["eval"]))    # 300 test images, 100 classes: 0 is possible
    assert all(0 <= at[name]["linear_full"] <= 1 for at in a["at"].values() for name in "hz")   # the published protocol, every rung
    assert a["control"] == a["at"]["0"] and a["eval"] == a["at"]["24"]        # the budget: 2,400 steps, smoke-scaled
    assert a["control"]["h"] == b["control"]["h"] and a["eval"]["h"] != b["eval"]["h"]


def stages_run(output):
    return re.findall(r"Running stage '([^']+)'", output)


def test_the_from_scratch_command_reruns_every_stage(smoke):
    every = dvc(["stage", "list", "--name-only"], smoke).stdout.split()
    result = dvc(["repro", "-f", "--dry"], smoke)
    assert result.returncode == 0, result.stderr
    assert sorted(stages_run(result.stdout)) == sorted(every) and len(every) >= 18
    assert "repro-all:" in (ROOT / "Makefile").read_text() and "dvc repro -f" in (ROOT / "Makefile").read_text()


def test_a_benchmark_row_read_from_an_older_record_names_that_records_machine(tmp_path, monkeypatch):
    """The pipeline benchmark quotes the last one-go run, maybe made elsewhere: its README row shows
    the machine and date of that run, not those of the benchmark that quoted it."""
    from replication.cli.readme import benchmarks_block
    folder = tmp_path / "reports" / "benchmarks"
    folder.mkdir(parents=True)
    (folder / "pipeline.json").write_text(json.dumps({
        "machine": "CPU B", "torch": "2.14.1", "date": "2026-11-30",
        "rows": [{"run": "no-op", "stages": 3, "seconds": 3.0, "seconds_in_dvc": 3.0},
                 {"run": "one go", "stages": 3, "seconds": 90.0, "seconds_in_dvc": 1.0,
                  "machine": "CPU A", "date": "2026-11-29"}]}))
    monkeypatch.chdir(tmp_path)
    rows = benchmarks_block().splitlines()[2:]
    assert rows[0].endswith("| CPU B, torch 2.14.1, 2026-11-30 |")
    assert rows[1].startswith("| one go, 3 stages |") and rows[1].endswith("| CPU A, 2026-11-29 |")
