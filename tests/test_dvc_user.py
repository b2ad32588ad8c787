"""The repository as a DVC user meets it: a fresh clone is up to date offline, a team shares
checkpoints through a remote, `dvc plots show` draws every plot, `dvc metrics diff` names the
claim that moved, and a bad params.yaml under `dvc repro` deletes nothing."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from replication.io import is_stage_two
from replication.judge.dvc_files import claim_metrics, write_dvc_files
from replication.judge.results import Results
from replication.cli.repro import RUN_COST, in_run_order, plan, registered_run_in_progress, report_progress
from helpers import judged_claims
from smoke_run import smoke_copy

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GIT = {"GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.org", "GIT_COMMITTER_NAME": "test",
       "GIT_COMMITTER_EMAIL": "test@example.org"}


def environment(tree):
    """The venv first on PATH, and the tree's own code imported (not this checkout's)."""
    return {**os.environ, **GIT, "DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}:{os.environ['PATH']}",
            "PYTHONPATH": f"{tree / 'src'}:{tree}"}


def run(args, cwd, **kwargs):
    return subprocess.run(args, cwd=cwd, env=environment(Path(cwd)), capture_output=True, text=True, **kwargs)


def git_commit(tree, message):
    run(["git", "add", "-A", "."], tree, check=True)
    run(["git", "commit", "-qm", message], tree, check=True)


def clone_of_this_tree(dest):
    """What a fresh clone holds: every file git tracks (or would, untracked but not ignored), so
    results, reports and dvc.lock but no dataset or checkpoint; committed, with this venv linked."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    (dest / ".venv").symlink_to(BIN.parent)
    run(["git", "init", "-q"], dest, check=True)
    git_commit(dest, "clone")
    return dest


def network_blocked(args):
    """args run in a new network namespace with no interface up, or None where that is not allowed."""
    if not shutil.which("unshare") or subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode:
        return None
    return ["unshare", "-n", *args]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    return clone_of_this_tree(tmp_path_factory.mktemp("clone"))


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- a fresh clone

def test_make_repro_on_a_fresh_clone_offline_runs_nothing_and_says_so(clone):
    command = network_blocked(["make", "-o", ".venv/.installed", "repro"])    # the venv is there already
    if command is None:
        pytest.skip("cannot block the network here (unshare -n needs root or user namespaces)")
    result = run(command, clone)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Running stage" not in output, re.findall(r"Running stage '[^']+'", output)
    if registered_run_in_progress(clone):    # between the registration and the run's last stage
        assert re.search(r"Registered run \d+ \(rules registered on [-0-9]+\) is in progress: \d+ stages done", output) and "make repro-stage STAGE=" in output, output[-3000:]
    else:
        assert "The committed results are current" in output and "make repro-all" in output
    assert run(["git", "status", "--porcelain"], clone).stdout == ""      # nothing rewritten


def test_an_edit_that_needs_missing_checkpoints_names_them_and_runs_nothing(clone, tmp_path):
    tree = tmp_path / "edited"
    shutil.copytree(clone, tree, symlinks=True)
    params = tree / "params.yaml"
    params.write_text(params.read_text().replace("  probe_steps: 300", "  probe_steps: 301", 1))
    result = run(["make", "-o", ".venv/.installed", "repro"], tree)
    assert result.returncode != 0
    assert "retrains data" in result.stdout and re.search(r"pretrain@head \(\d+ min last time\)", result.stdout)
    assert "make repro RETRAIN=1" in result.stdout and "dvc pull" in result.stdout
    assert "Running stage 'pretrain@" not in result.stdout + result.stderr
    assert not list(tree.glob("artifacts/pretrain/*/*/*/*.pt"))


def test_the_plan_retrains_only_what_a_stale_stage_needs():
    """An evaluation made stale by an edit needs its study's checkpoints, which need the data."""
    lock = {"stages": {
        "data": {"outs": [{"path": "data/shapes.pt"}]},
        "pretrain@a": {"deps": [{"path": "data/shapes.pt"}], "outs": [{"path": "artifacts/pretrain/a"}]},
        "pretrain@b": {"deps": [{"path": "data/shapes.pt"}], "outs": [{"path": "artifacts/pretrain/b"}]},
        "evaluate@a": {"deps": [{"path": "resolved/evaluate.json"}, {"path": "artifacts/pretrain/a"}],
                       "outs": [{"path": "results/evaluate/a"}]}}}
    status = {"data": [{"changed outs": {"data/shapes.pt": "not in cache"}}],
              "pretrain@a": [{"changed deps": {"data/shapes.pt": "deleted"}},
                             {"changed outs": {"artifacts/pretrain/a": "not in cache"}}],
              "pretrain@b": [{"changed deps": {"data/shapes.pt": "deleted"}},
                             {"changed outs": {"artifacts/pretrain/b": "not in cache"}}],
              "evaluate@a": [{"changed deps": {"resolved/evaluate.json": "modified",
                                               "artifacts/pretrain/a/seed_0/step_0.pt": "deleted"}}]}
    assert plan(status, lock) == (["evaluate@a"], ["data", "pretrain@a"])
    status.pop("evaluate@a")
    assert plan(status, lock) == ([], [])                       # a fresh clone: nothing to run
    status["pretrain@b"][0]["changed deps"]["src/replication/run/config.py"] = "modified"    # a code edit
    assert plan(status, lock) == (["pretrain@b"], ["data", "pretrain@b"])
    status["pretrain@b"][0]["changed deps"].pop("src/replication/run/config.py")
    status["pretrain@b"][1]["changed outs"]["artifacts/pretrain/new"] = "deleted"   # an output dvc.lock lacks
    assert plan(status, lock)[0] == ["pretrain@b"]
    status["resolve"] = [{"changed deps": {"params.yaml": {"evaluate.probe_steps": "modified"}}}]
    assert "resolve" in plan(status, lock)[0]                   # a parameter edit is a change, not a missing file


def test_a_bad_params_file_under_dvc_repro_deletes_nothing(clone, tmp_path):
    """An unknown profile used to let DVC empty resolved/ before the error; a top-level typo used
    to pass as 'up to date'. Both now stop the resolve stage, with resolved/ as it was."""
    tree = tmp_path / "bad"
    shutil.copytree(clone, tree, symlinks=True)
    params = tree / "params.yaml"
    good = params.read_text()
    before = snapshot(tree / "resolved")
    for bad, named in ((good.replace("profile: default", "profile: nope", 1), "unknown profile 'nope'"),
                       (good + "thredas: 2\n", "thredas: unknown key")):
        params.write_text(bad)
        result = run(["dvc", "repro", "--allow-missing"], tree)
        assert result.returncode != 0 and named in result.stderr + result.stdout, result.stderr[-2000:]
        assert snapshot(tree / "resolved") == before


# ---------------------------------------------------------------- sharing checkpoints

@pytest.mark.slow
def test_a_team_shares_checkpoints_through_a_remote(tmp_path):
    """One clone trains a study (smoke profile) and pushes to a local-folder remote; a second clone
    pulls, and an evaluation-only edit then reruns evaluation without retraining; a damaged
    checkpoint comes back with the command the checkpoint error suggests."""
    first = smoke_copy(tmp_path / "first")
    result = run(["dvc", "repro", "evaluate@head"], first)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    remote = tmp_path / "remote"
    assert run(["dvc", "remote", "add", "-d", "team", str(remote)], first).returncode == 0
    git_commit(first, "head study, smoke")
    pushed = run(["dvc", "push"], first)
    assert pushed.returncode == 0, pushed.stderr

    second = tmp_path / "second"
    run(["git", "clone", "-q", str(first), str(second)], tmp_path, check=True)
    assert not list(second.glob("artifacts/**/*.pt"))
    pulled = run(["dvc", "pull", "--with-deps", "evaluate@head"], second)     # only that study was trained
    assert pulled.returncode == 0, pulled.stderr
    params = second / "params.yaml"
    params.write_text(params.read_text().replace("probe_steps: 20", "probe_steps: 21", 1))
    rerun = run(["dvc", "repro", "evaluate@head"], second)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    ran = re.findall(r"Running stage '([^']+)'", rerun.stdout)
    assert "evaluate@head" in ran and not [s for s in ran if s.startswith(("pretrain@", "data"))], ran

    record = json.loads((second / "results/pretrain/head/simclr_head_none/seed_0.json").read_text())
    checkpoint = record["checkpoints"][-1]["path"]
    good = (second / checkpoint).read_bytes()
    (second / checkpoint).unlink()                   # never write through a link into DVC's cache
    (second / checkpoint).write_bytes(good[: len(good) // 2])
    restored = run(["dvc", "checkout", checkpoint, "--force"], second)
    assert restored.returncode == 0, restored.stderr
    assert (second / checkpoint).read_bytes() == good


# ---------------------------------------------------------------- plots and metrics

@pytest.fixture(scope="module")
def committed_claims():
    return judged_claims(ROOT)


def test_the_metrics_hold_each_claims_effect_interval_and_verdict(committed_claims):
    metrics = claim_metrics(committed_claims)
    assert list(metrics) == [c["id"] for c in committed_claims]
    assert not [key for key in metrics if " " in key]
    for claim in committed_claims:
        row = metrics[claim["id"]]
        assert row["verdict"] == claim["verdict"] and not [k for k in row if " " in k]
        contrast = claim.get("contrast") or {}
        if contrast.get("diff_mean") is not None:
            scale = claim.get("effect_scale") or 1
            assert row["effect"] == pytest.approx(contrast["diff_mean"] * scale)
            assert [row["ci_low"], row["ci_high"]] == pytest.approx([x * scale for x in contrast["diff_ci95"]])


def readme_commands(prefix):
    """The command lines that start with `prefix` in docs/changing.md (Changing a parameter, linked
    from README), comments cut."""
    lines = (ROOT / "docs" / "changing.md").read_text().splitlines()
    return [line.split("  #")[0].strip() for line in lines if line.startswith(prefix)]


def test_the_readme_commands_for_the_verdict_counts_fit_a_terminal():
    """The documented `dvc metrics show` and `dvc exp show` lines (docs/changing.md) print the
    literature's verdict counts, every verdict column present, in lines a 120-column terminal holds."""
    counts = json.loads((ROOT / "reports" / "verdicts.json").read_text())
    commands = readme_commands("dvc metrics show") + readme_commands("dvc exp show --drop")
    assert len(commands) == 2, commands
    for command in commands:
        args = [a.strip("'") for a in command.split()]
        out = subprocess.run([*args[:3], "--no-pager", *args[3:]] if args[1] == "exp" else args, cwd=ROOT,
                             env={**environment(ROOT), "COLUMNS": "120"}, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines and max(map(len, lines)) <= 120, command
        header = next(line for line in lines if "reproduced" in line)
        wanted = counts if args[1] == "metrics" else [k for k in counts if k in command]
        assert all(name in header for name in wanted), (command, header)


def test_dvc_plots_show_draws_every_plot(committed_claims, tmp_path):
    tree = tmp_path / "plots"
    tree.mkdir()
    for name in ("dvc.yaml", "params.yaml", ".dvc/config", "analysis/stage_two.yaml"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / ".dvc" / "plots", tree / ".dvc" / "plots")
    shutil.copytree(ROOT / "results" / "pretrain", tree / "results" / "pretrain")
    (tree / "reports").mkdir()
    shutil.copy(ROOT / "reports" / "levels.csv", tree / "reports" / "levels.csv")     # the report stage's
    write_dvc_files(committed_claims, Results.load(tree), root=tree)
    result = run(["dvc", "plots", "show", "-o", "shown"], tree)
    assert result.returncode == 0, result.stderr
    page = (tree / "shown" / "index.html").read_text()
    assert not re.search(r"<script[^>]+src=", page), "the page must draw offline (.dvc/config: plots.html_template)"
    assert "vegaEmbed" in page and "vega-lite" in page
    # the studies of params.yaml that have committed training records (mid-run, not every one yet); a
    # stage-2 study's runs draw in its study's plot
    planned = sorted(p.stem for p in (ROOT / "resolved" / "pretrain").glob("*.json") if not is_stage_two(p.stem))
    studies = [s for s in planned if (tree / "results" / "pretrain" / s).is_dir()]
    for name in ["forest.csv", "published_vs_ours.csv", "ladder.csv"] + [f"loss_{s}.csv" for s in studies]:
        plot_id = "reports_plots_" + name.replace(".", "_")
        assert f'<div id = "{plot_id}">' in page, name
    assert '<div id = "reports_levels_csv">' in page and "untrained encoder" in page
    ladder = [c["id"] for c in committed_claims if c.get("ladder")]
    assert ladder and all(f'"series": "{claim}"' in page for claim in ladder)
    # a title per study, axis units, each loss plot's chance line
    plots = {next(iter(entry)): next(iter(entry.values())) for entry in yaml.safe_load((ROOT / "dvc.yaml").read_text())["plots"]}
    titles = [plots[f"reports/plots/loss/{study}.csv"]["title"] for study in planned]
    assert len(set(titles)) == len(planned) and all(study in t for study, t in zip(planned, titles))
    assert all("x_label" in plot and ("y_label" in plot or plot["template"] == "forest") for plot in plots.values())
    assert '"chance"' in page and "symlog" in page
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser:             # drawn in a real browser with every network request refused
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'p'}",
                 "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=15000"]
        dom = subprocess.run([browser, *flags, "--dump-dom", (tree / "shown" / "index.html").as_uri()],
                             capture_output=True, text=True, timeout=120).stdout
        drawn = page.count('<div id = "reports_plots_') + page.count('<div id = "reports_levels_csv">')
        assert dom.count('class="vega-embed') == drawn >= 4 + len(studies), dom[-2000:]


def test_dvc_metrics_diff_shows_the_claim_whose_effect_moved(committed_claims, tmp_path):
    tree = tmp_path / "metrics"
    tree.mkdir()
    for name in ("dvc.yaml", "params.yaml", ".dvc/config", "analysis/stage_two.yaml"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    run(["git", "init", "-q"], tree, check=True)
    write_dvc_files(committed_claims, Results.load(tree), root=tree)
    git_commit(tree, "before")
    moved = next(c for c in committed_claims if (c.get("contrast") or {}).get("diff_mean") is not None)
    claims = [c if c is not moved else {**c, "contrast": {**c["contrast"], "diff_mean": c["contrast"]["diff_mean"] + 0.5}}
              for c in committed_claims]
    write_dvc_files(claims, Results.load(tree), root=tree)
    git_commit(tree, "after")
    diff = run(["dvc", "metrics", "diff", "HEAD~1", "HEAD", "--json", "--targets", "reports/metrics.json"], tree)
    assert diff.returncode == 0, diff.stderr
    changed = json.loads(diff.stdout)["reports/metrics.json"]
    assert list(changed) == [f"{moved['id']}.effect"]
    shown = run(["dvc", "metrics", "diff", "HEAD~1", "HEAD", "--targets", "reports/metrics.json"], tree).stdout
    assert f"{moved['id']}.effect" in shown


def test_a_registered_run_in_progress_is_recognised_and_ordered(tmp_path):
    """Registered rules and params, with an analysis not yet judged under them or a second stage of
    seeds chosen and not yet run: the run is in progress (an edit of params.yaml since is the user's,
    not the run's), and its stages come in run order (each study's evaluation right after its
    pretraining, stage 2's after stage 1's)."""
    import hashlib
    assert registered_run_in_progress(tmp_path) is None                   # nothing registered
    (tmp_path / "analysis").mkdir()
    (tmp_path / "reports").mkdir()
    (tmp_path / "params.yaml").write_text("profile: default\n")
    registered = hashlib.sha256(b"profile: default\n").hexdigest()
    (tmp_path / "analysis/registration.json").write_text(json.dumps({"date": "2026-12-01",
                                                                     "sha256": {"params.yaml": registered}}))
    (tmp_path / "reports/summary.json").write_text(json.dumps({"registered_on": None}))
    assert registered_run_in_progress(tmp_path) == "2026-12-01"
    (tmp_path / "params.yaml").write_text("profile: smoke\n")
    assert registered_run_in_progress(tmp_path) is None                   # an edit: not the run's stages
    (tmp_path / "params.yaml").write_text("profile: default\n")
    (tmp_path / "reports/summary.json").write_text(json.dumps({"registered_on": "2026-12-01"}))
    assert registered_run_in_progress(tmp_path) is None                   # the run is judged
    (tmp_path / "analysis/registration_2.json").write_text(json.dumps({"date": "2026-12-03",
                                                                       "sha256": {"params.yaml": registered}}))
    assert registered_run_in_progress(tmp_path) == "2026-12-03"            # the latest record's run
    (tmp_path / "reports/summary.json").write_text(json.dumps({"registered_on": "2026-12-03"}))
    (tmp_path / "analysis/stage_two.yaml").write_text("stage_two:\n  seeds: [5]\n  studies: {a_stage2: {study: a, conditions: [c], seeds: [5]}}\n")
    assert registered_run_in_progress(tmp_path) == "2026-12-03"            # stage 1 judged, stage 2 to go
    (tmp_path / "dvc.lock").write_text("stages:\n  evaluate_stage2@a_stage2: {}\n")
    assert registered_run_in_progress(tmp_path) is None                   # stage 2 run: analyze it
    assert in_run_order(["report", "evaluate@b", "analyze", "pretrain@b", "pretrain@a", "evaluate@a", "data",
                         "evaluate_stage2@a_stage2", "pretrain_stage2@a_stage2"]) == [
        "data", "pretrain@a", "evaluate@a", "pretrain@b", "evaluate@b", "pretrain_stage2@a_stage2",
        "evaluate_stage2@a_stage2", "analyze", "report"]


def test_a_run_in_progress_counts_its_own_stages_and_times_the_rest_by_its_estimate(tmp_path, monkeypatch, capsys):
    """The stages done are those stamped with the latest record's run; the stages to go are timed by
    the run's cost estimate, not by the previous run's times (other budgets)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "analysis").mkdir()
    for name in ("registration.json", "registration_2.json"):
        (tmp_path / "analysis" / name).write_text((ROOT / "analysis" / name).read_text())
    Path(RUN_COST).parent.mkdir(parents=True)
    Path(RUN_COST).write_text(json.dumps({"stages": {"b": {"pretrain_min": 20.0, "evaluate_min": 4.0}}}))
    times = {"resolve": {"seconds": 60.0, "run": 2}, "pretrain@a": {"seconds": 600.0, "run": 2},
             "pretrain@b": {"seconds": 300.0, "run": 1}, "evaluate@b": {"seconds": 60.0},
             "analyze": {"seconds": 120.0, "run": 1}}
    report_progress("2026-12-02", ["pretrain@b", "evaluate@b", "analyze"], times)
    said = capsys.readouterr().out
    assert "2 stages done in 11 minutes, 3 to go, about 26 minutes more" in said
    # the done stages of a kind that the estimate times set that kind's pace: evaluate@a took twice its 1 minute
    Path(RUN_COST).write_text(json.dumps({"stages": {"a": {"pretrain_min": 10.0, "evaluate_min": 1.0},
                                                     "b": {"pretrain_min": 20.0, "evaluate_min": 4.0}}}))
    report_progress("2026-12-02", ["pretrain@b", "evaluate@b", "analyze"], {**times, "evaluate@a": {
        "seconds": 120.0, "run": 2}})
    said = capsys.readouterr().out
    assert "3 stages done in 13 minutes, 3 to go, about 30 minutes more" in said            # 20 + 2 x 4 + 2
    assert "evaluate stages x 2.00, pretrain stages x 1.00, as the done ones ran" in said
    # a stage-2 study: its study's estimate in proportion to its runs (1 of b's 2 conditions, 2 of its 2 seeds)
    Path("resolved/pretrain").mkdir(parents=True)
    Path("resolved/pretrain/b.json").write_text(json.dumps({"conditions": {"c": {}, "d": {}}, "seeds": [0, 1]}))
    Path("analysis/stage_two.yaml").write_text(
        "stage_two:\n  seeds: [2, 3]\n  studies: {b_stage2: {study: b, conditions: [c], seeds: [2, 3]}}\n")
    report_progress("2026-12-02", ["pretrain_stage2@b_stage2", "evaluate_stage2@b_stage2"], {**times, "evaluate@a": {
        "seconds": 120.0, "run": 2}})
    assert "about 14 minutes more" in capsys.readouterr().out                               # 20 / 2 + 2 x 4 / 2
