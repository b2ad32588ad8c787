"""The whole chain under the smoke profile, in a temporary copy: a fresh `dvc repro`, a well-formed
report and claims.json, a no-op second run, and the report opened in a real headless browser."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SKIP_PARTS = {"results", "reports", "data", "artifacts"}
pytestmark = pytest.mark.slow


def project_files():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [f for f in out if f and Path(f).parts[0] not in SKIP_PARTS and f != "dvc.lock"
            and (ROOT / f).is_file()]


def dvc(args, cwd):
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}:{os.environ['PATH']}"}
    return subprocess.run([str(BIN / "dvc"), *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def smoke_copy(tmp_path_factory):
    copy = tmp_path_factory.mktemp("smoke")
    for f in project_files():
        (copy / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, copy / f)
    params = copy / "params.yaml"
    params.write_text(re.sub(r"(?m)^profile: \w+", "profile: smoke", params.read_text()))
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    result = dvc(["repro"], copy)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return copy


def test_smoke_pipeline_writes_report_and_claims(smoke_copy):
    claims = json.loads((smoke_copy / "reports" / "claims.json").read_text())
    registry_ids = re.findall(r"(?m)^- id: (\S+)", (smoke_copy / "analysis" / "claims.yaml").read_text())
    assert [c["id"] for c in claims] == registry_ids                 # nothing dropped
    allowed = {"reproduced", "contradicted", "no meaningful effect", "inconclusive", "exact match",
               "mismatch", "not tested"}
    for c in claims:
        assert {"id", "source", "statement", "published", "metric", "arms", "contrast", "verdict", "note"} <= set(c)
        assert c["verdict"] in allowed
        for arm in c["arms"].values():
            assert arm["n"] == len(arm["values"])
    html = (smoke_copy / "reports" / "report.html").read_text()
    assert '<table class="claims">' in html and "data:image/png;base64" in html
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=\"?https?:", html), "the report must work offline"
    for stage_output in ("results/examples/ntxent_numpy.json", "results/pretrain/simclr/simclr/seed_1.json",
                         "data/shapes.json"):
        assert (smoke_copy / stage_output).exists()


def test_second_repro_does_nothing(smoke_copy):
    result = dvc(["repro"], smoke_copy)
    assert result.returncode == 0 and "up to date" in result.stdout, result.stdout
    assert dvc(["status", "--quiet"], smoke_copy).returncode == 0


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(not chromium(), reason="Debian's chromium is not installed (make browser)")
def test_report_renders_offline_in_headless_chromium(smoke_copy, tmp_path):
    report = smoke_copy / "reports" / "report.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
             "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]   # no network at all
    dom = subprocess.run([chromium(), *flags, "--dump-dom", report.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    n_claims = len(json.loads((smoke_copy / "reports" / "claims.json").read_text()))
    table = dom.split('<table class="claims">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr") == n_claims + 1                         # header + one row per claim
    shot = tmp_path / "report.png"
    subprocess.run([chromium(), *flags, "--window-size=1200,900", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
