"""The whole chain under the smoke profile, in a temporary copy: a fresh `dvc repro`, a well-formed
report and claims.json, a no-op second run, the report opened in a real headless browser, a run
killed with SIGKILL and resumed, checked checkpoints, failed runs, what an edit makes stale, and
bad input that stops the analysis with one line."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from replication.runs import differences
from replication.render_claims import slug
from test_dvc_deps import closure, only_a_docstring
from test_report_browser import flags, measure
from tools.timing import copy_project

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


def environment(home=None):
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}:{os.environ['PATH']}"}
    if home:    # an empty home folder: whatever the pipeline writes outside the repository shows up there
        env = {k: v for k, v in env.items() if not k.startswith(("XDG_", "JUPYTER", "IPYTHON", "MPLCONFIG"))}
        env["HOME"] = str(home)
    return env


def dvc(args, cwd, home=None):
    return subprocess.run([str(BIN / "dvc"), *args], cwd=cwd, env=environment(home), capture_output=True, text=True)


def smoke_tree(folder):
    """The project's files (no results) in `folder`, with the smoke profile selected. The registration
    record is left out: it freezes the default params, which the smoke profile changes, so the
    registered analysis would rightly refuse to judge the smoke run."""
    copy = copy_project(ROOT, folder, profile="smoke")
    (copy / "analysis" / "registration.json").unlink(missing_ok=True)
    dvc_yaml = copy / "dvc.yaml"
    dvc_yaml.write_text(dvc_yaml.read_text().replace("      - analysis/registration.json\n", ""))
    return copy


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def smoke_copy(tmp_path_factory, home):
    copy = smoke_tree(tmp_path_factory.mktemp("smoke"))
    result = dvc(["repro"], copy, home=home)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return copy


def result_files(root):
    return sorted(p.relative_to(root) for pattern in ("results/**/*.json", "data/*.json", "reports/claims.json",
                                                      "resolved/**/*.json")
                  for p in root.glob(pattern))


def test_smoke_pipeline_writes_report_and_claims(smoke_copy):
    claims = json.loads((smoke_copy / "reports" / "claims.json").read_text())
    registry_ids = re.findall(r"(?m)^- id: (\S+)", (smoke_copy / "analysis" / "claims.yaml").read_text())
    assert [c["id"] for c in claims] == registry_ids                 # nothing dropped
    allowed = {"reproduced", "contradicted", "no meaningful effect", "inconclusive", "exact match",
               "within bound", "mismatch", "not testable here", "not tested"}
    for c in claims:
        assert {"id", "source", "statement", "published", "metric", "arms", "contrast", "verdict", "note"} <= set(c)
        assert c["verdict"] in allowed
        for arm in c["arms"].values():
            assert arm["n"] == len(arm["values"])
    html = (smoke_copy / "reports" / "report.html").read_text()
    assert 'class="index"' in html and re.search(r'<svg[^>]*role="img"', html) and "<img" not in html
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=\"?https?:", html), "the report must work offline"
    for stage_output in ("results/examples/ntxent_numpy.json", "results/pretrain/simclr_mocov2/simclr/seed_1.json",
                         "results/evaluate/simclr_mocov2/simclr/seed_1.json", "artifacts/pretrain/simclr_mocov2/simclr/seed_1/step_0.pt",
                         "data/shapes.json", "resolved/pretrain/simclr_mocov2.json"):
        assert (smoke_copy / stage_output).exists()


def test_claims_markdown_has_one_row_per_claim_with_its_verdict(smoke_copy):
    claims = json.loads((smoke_copy / "reports" / "claims.json").read_text())
    rows = [line for line in (smoke_copy / "reports" / "claims.md").read_text().splitlines()
            if line.startswith("| `")]
    shown = {re.match(r"\| `([^`]+)`", r).group(1): re.search(r"\*\*([^*]+)\*\*", r).group(1) for r in rows}
    assert len(rows) == len(claims) and shown == {c["id"]: c["verdict"] for c in claims}


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
    ids = [c["id"] for c in json.loads((smoke_copy / "reports" / "claims.json").read_text())]
    anchors = re.findall(r'id="claim-([^"]+)"', dom)
    assert sorted(anchors) == sorted(slug(i) for i in ids)           # one unique anchor per claim
    shot = tmp_path / "report.png"
    subprocess.run([chromium(), *flags, "--window-size=1200,900", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


@pytest.mark.skipif(not chromium(), reason="Debian's chromium is not installed (make browser)")
def test_the_first_screen_holds_the_key_findings_and_the_counts(smoke_copy, tmp_path):
    """Measured in a real browser at 1,400 x 1,000 px (tests/test_report_browser.py) on the smoke report;
    screenshots of the first screen and of the MoCo section for review."""
    measured = measure(smoke_copy / "reports" / "report.html", tmp_path)
    assert measured["findings"] < 1000 and measured["counts"] < 1000, measured
    assert measured["figures"] >= 8 and measured["svg_with_alt"] == measured["figures"] and measured["raster"] == 0
    assert len(measured["ids"]) == len(set(measured["ids"]))
    shots = Path(os.environ.get("REPORT_SCREENSHOTS", tmp_path))   # a folder to keep them in, for review
    page = (smoke_copy / "reports" / "report.html").read_text()
    head, body = page.split("<body>", 1)
    section = tmp_path / "moco.html"       # headless screenshots ignore a #fragment: the section on its own
    section.write_text(head + "<body>" + body[body.index('<h2 id="sec-moco"'):])
    for name, source in (("first-screen", smoke_copy / "reports" / "report.html"), ("moco-section", section)):
        shot = shots / f"{name}.png"
        subprocess.run([chromium(), *flags(tmp_path / "p"), f"--screenshot={shot}", source.as_uri()],
                       capture_output=True, timeout=120)
        assert shot.stat().st_size > 20_000, name


def test_nothing_is_written_outside_the_repository(smoke_copy, home):
    written = [str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()]
    assert written == [], f"the pipeline wrote into $HOME: {written[:10]}"


def test_sigkill_mid_stage_then_repro_gives_the_same_results(smoke_copy, tmp_path):
    """Force a pretraining stage to run again, kill `dvc repro` (its whole process group) while the
    stage is writing runs, then run `dvc repro`: every result file equals the uninterrupted run's,
    bar wall time and memory, and the pipeline is up to date."""
    copy = tmp_path / "killed"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    first = copy / "results/pretrain/simclr_mocov2/simclr/seed_0.json"
    written = first.stat().st_mtime_ns
    repro = subprocess.Popen([str(BIN / "dvc"), "repro", "-f", "pretrain@simclr_mocov2"], cwd=copy, env=environment(),
                             start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not (first.exists() and first.stat().st_mtime_ns != written) and repro.poll() is None:
        assert time.time() < deadline
        time.sleep(0.02)
    os.killpg(repro.pid, signal.SIGKILL)
    repro.wait()
    assert repro.returncode != 0                                     # it was killed mid-way
    assert list(status(copy)) != []
    result = dvc(["repro"], copy)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result_files(copy) == result_files(smoke_copy)
    for f in result_files(copy):
        a, b = json.loads((copy / f).read_text()), json.loads((smoke_copy / f).read_text())
        assert differences(a, b) == [], f
    assert dvc(["status", "--quiet"], copy).returncode == 0


def run_script(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environment(), capture_output=True, text=True)


def test_evaluation_reproduces_from_the_checkpoints_and_checks_them(smoke_copy, tmp_path):
    """The evaluate stage run again from the checkpoints gives the same records; a truncated or a
    missing checkpoint stops it with one line naming the file and how to restore it."""
    copy = tmp_path / "checked"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    before = {p: p.read_text() for p in copy.glob("results/evaluate/simclr_mocov2/*/seed_*.json")}
    result = run_script(["experiments/evaluate.py", "simclr_mocov2"], copy)
    assert result.returncode == 0, result.stderr[-2000:]
    for path, text in before.items():
        assert differences(json.loads(text), json.loads(path.read_text())) == [], path
    record = json.loads((copy / "results/pretrain/simclr_mocov2/simclr/seed_1.json").read_text())
    assert [c["step"] for c in record["checkpoints"]] == [0, 3, 12, 24]     # the ladder's rungs, smoke-scaled
    checkpoint = copy / record["checkpoints"][-1]["path"]
    good = checkpoint.read_bytes()
    checkpoint.unlink()                                  # never write through a link into DVC's cache
    checkpoint.write_bytes(good[: len(good) // 2])
    result = run_script(["experiments/evaluate.py", "simclr_mocov2"], copy)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "seed_1/step_24.pt: contents do not match the sha256" in result.stderr
    assert "dvc checkout artifacts/pretrain/simclr_mocov2/simclr/seed_1/step_24.pt" in result.stderr
    assert "dvc repro -f pretrain@simclr_mocov2" in result.stderr
    checkpoint.unlink()
    result = run_script(["experiments/evaluate.py", "simclr_mocov2"], copy)
    assert result.returncode == 1 and "missing checkpoint" in result.stderr


def test_the_control_is_the_untrained_encoder(smoke_copy):
    """Every evaluation record holds the step-0 control beside the end of training, and the control
    is the same for conditions that share an initialisation (same seed, encoder and head)."""
    a = json.loads((smoke_copy / "results/evaluate/simclr_mocov2/simclr/seed_0.json").read_text())
    b = json.loads((smoke_copy / "results/evaluate/temperature_high/simclr_tau1/seed_0.json").read_text())
    assert a["rungs"] == [0, 3, 12, 24] and a["control"]["h"]["linear"] > 0 and a["eval"]["h"]["linear"] > 0
    assert a["control"] == a["at"]["0"] and a["eval"] == a["at"]["3"]
    assert a["control"]["h"] == b["control"]["h"] and a["eval"]["h"] != b["eval"]["h"]


def status(cwd, *targets):
    result = dvc(["status", "--json", *targets], cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout or "{}")


def test_editing_any_module_a_pretraining_stage_imports_makes_it_stale(smoke_copy):
    files = sorted(p.relative_to(ROOT) for p in closure(ROOT / "experiments/pretrain.py") if not only_a_docstring(p))
    assert len(files) >= 10
    for relative in files:
        path = smoke_copy / relative
        original = path.read_text()
        try:
            path.write_text(original + "\n# edited\n")
            assert "pretrain@simclr_mocov2" in status(smoke_copy, "pretrain@simclr_mocov2"), relative
        finally:
            path.write_text(original)
    assert status(smoke_copy) == {}


def edited(copy, change):
    """params.yaml of `copy` with change(params dict) applied."""
    path = copy / "params.yaml"
    raw = yaml.safe_load(path.read_text())
    change(raw)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))


def stages_run(output):
    return re.findall(r"Running stage '([^']+)'", output)


def test_edits_rerun_exactly_what_they_change(smoke_copy, tmp_path):
    """An inactive profile's edit is validated (resolve depends on the whole file) and changes no
    stage's configuration; a probe setting reruns evaluation (after the cheap resolve stage), never
    training."""
    copy = tmp_path / "edits"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    edited(copy, lambda p: p["profiles"]["cifar10"]["pretrain"].update(seeds=[0]))
    assert list(status(copy)) == ["resolve"]
    assert dvc(["repro", "resolve"], copy).returncode == 0
    assert status(copy) == {}
    edited(copy, lambda p: p["profiles"]["smoke"]["evaluate"].update(probe_steps=60))
    assert list(status(copy)) == ["resolve"]
    result = dvc(["repro", "resolve"], copy)
    assert result.returncode == 0, result.stderr
    stale = sorted(status(copy))
    # evaluation, the determinism check (it compares evaluation figures too) and the report (it
    # prints the resolved configuration's hash); analysis follows once evaluation has rerun; never
    # training
    studies = yaml.safe_load((copy / "params.yaml").read_text())["pretrain"]["studies"]
    expected = [f"evaluate@{s}" for s in studies] + ["determinism", "report"]
    assert stale == sorted(expected), stale


def test_the_from_scratch_command_reruns_every_stage(smoke_copy):
    every = dvc(["stage", "list", "--name-only"], smoke_copy).stdout.split()
    result = dvc(["repro", "-f", "--dry"], smoke_copy)
    assert result.returncode == 0, result.stderr
    assert sorted(stages_run(result.stdout)) == sorted(every) and len(every) >= 18
    assert "repro-all:" in (ROOT / "Makefile").read_text() and "dvc repro -f" in (ROOT / "Makefile").read_text()


def test_a_claim_naming_an_unknown_condition_stops_the_analysis(smoke_copy, tmp_path):
    copy = tmp_path / "typo"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    registry = copy / "analysis/claims.yaml"
    registry.write_text(registry.read_text().replace("/simclr_tau005/", "/simclr_tau0005/", 1))
    before = (copy / "reports/claims.json").read_text()
    result = run_script(["experiments/analyze.py"], copy)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "'simclr_tau0005' is not defined in params.yaml" in result.stderr and "claims.yaml: claim " in result.stderr
    assert (copy / "reports/claims.json").read_text() == before          # nothing written


def test_a_truncated_result_file_names_the_stage_that_regenerates_it(smoke_copy, tmp_path):
    copy = tmp_path / "truncated"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    for path, stage in (("results/evaluate/temperature/simclr_tau01/seed_1.json", "evaluate@temperature"),
                        ("results/pretrain/moco_bn/moco_bn4/seed_0.json", "pretrain@moco_bn")):
        original = (copy / path).read_text()
        (copy / path).write_text(original[: len(original) // 3])
        result = run_script(["experiments/analyze.py"], copy)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert path in result.stderr and f"dvc repro -f {stage}" in result.stderr
        (copy / path).write_text(original)


def test_failed_runs_are_shown_as_failed_never_averaged(smoke_copy, tmp_path):
    """Mark one run as diverged, re-analyse and re-render outside DVC: the claim counts it as failed,
    its arm has one value fewer, and the report names it."""
    copy = tmp_path / "failed"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    failure = {"status": "diverged", "reason": "loss nan at step 4"}
    for kind in ("pretrain", "evaluate"):
        run = copy / f"results/{kind}/temperature/simclr_tau01/seed_1.json"
        record = json.loads(run.read_text())
        run.write_text(json.dumps({**record, **failure, **({"eval": None} if kind == "evaluate" else {})}))
    for stage in ("analyze", "render_report"):
        result = subprocess.run([sys.executable, f"experiments/{stage}.py"], cwd=copy, env=environment(),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]
    claims = {c["id"]: c for c in json.loads((copy / "reports/claims.json").read_text())}
    touched = [c for c in claims.values() if any(a.get("failed") for a in c["arms"].values())]
    assert touched, "no claim reports the failed run"
    for claim in touched:
        arm = next(a for a in claim["arms"].values() if a.get("failed"))
        assert arm["failed"][0]["status"] == "diverged" and arm["n"] == len(arm["values"]) == 1
        assert "failed" in claim["note"]
    html = (copy / "reports/report.html").read_text()
    assert "diverged" in html and "loss nan at step 4" in html


def test_queued_experiments_run_in_parallel(smoke_copy, tmp_path):
    """`dvc exp run --queue` twice, then `dvc queue start -j 2`: both experiments finish, each with
    its own parameter value, and the workspace's results are left as they were."""
    copy = tmp_path / "queue"
    shutil.copytree(smoke_copy, copy, symlinks=True)
    git = {**environment(), "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.org",
           "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.org"}
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True, env=git)
    subprocess.run(["git", "commit", "-qm", "smoke results"], cwd=copy, check=True, env=git)
    for tau in ("0.3", "0.5"):
        queued = dvc(["exp", "run", "--queue", "--name", f"tau{tau[-1]}", "-S", f"examples.ntxent_numpy.loss_tau={tau}"], copy)
        assert queued.returncode == 0, queued.stderr
    started = dvc(["queue", "start", "-j", "2"], copy)
    assert started.returncode == 0, started.stderr
    deadline = time.time() + 900
    while True:
        status = dvc(["queue", "status"], copy).stdout
        if "Queued" not in status and "Running" not in status:
            break
        assert time.time() < deadline, status
        time.sleep(3)
    dvc(["queue", "stop"], copy)
    assert status.count("Success") == 2, status
    shown = json.loads(dvc(["exp", "show", "--json"], copy).stdout)
    taus = sorted(exp["data"]["params"]["params.yaml"]["data"]["examples"]["ntxent_numpy"]["loss_tau"]
                  for commit in shown for exp in (commit.get("experiments") or []) for exp in exp["revs"])
    assert taus == [0.3, 0.5], shown
    assert (copy / "results/examples/ntxent_numpy.json").read_text() == \
        (smoke_copy / "results/examples/ntxent_numpy.json").read_text()


def test_a_benchmark_row_read_from_an_older_record_names_that_records_machine(tmp_path, monkeypatch):
    """The pipeline benchmark quotes the last one-go run, maybe made elsewhere: its README row shows
    the machine and date of that run, not those of the benchmark that quoted it."""
    from tools.readme import benchmarks_block
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
