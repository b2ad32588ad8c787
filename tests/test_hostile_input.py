"""Hostile and huge input is refused at once: a YAML alias bomb, counts that would train for years or
fail to allocate, and a disk that is full or a folder that may not be written. Each gives one line
naming the file or key and what to do, a non-zero exit, and every old file as it was."""
import errno
import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from replication.io import ExpansionError, load_yaml, remove_stray_tmp, write_json
from test_registry import run_analyze, write_world

ROOT = Path(__file__).resolve().parents[1]
GOOD = (ROOT / "params.yaml").read_text()

# "Billion laughs": nine lines of nine aliases each stand for 9^9 (387 million) strings.
BOMB = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
               for prev, name in zip("abcdefgh", "bcdefghi"))
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + BOMB


def test_an_alias_bomb_is_refused_by_the_loader():
    with pytest.raises(ExpansionError, match="aliases"):
        load_yaml(BOMB)


def test_the_project_files_stay_far_under_the_loaders_cap():
    """params.yaml's anchors (&ladder, &moco) and the registry load as they are."""
    for path in ("params.yaml", "analysis/claims.yaml", "analysis/rules.yaml", "analysis/deviations.yaml"):
        assert load_yaml((ROOT / path).read_text()) == yaml.safe_load((ROOT / path).read_text())


def test_an_anchor_inside_itself_is_refused():
    with pytest.raises(ExpansionError):
        load_yaml("a: &a [1, *a]\n")


def params_with_bomb():
    """params.yaml with the bomb's anchors first and a condition's label the 9^9 strings: checking
    that label once quoted the whole expanded value."""
    text = GOOD.replace('simclr_head_none: {label: "no head",', 'simclr_head_none: {label: *i,', 1)
    assert text != GOOD
    return BOMB + text


def project(tmp_path, params_text):
    (tmp_path / "params.yaml").write_text(params_text)
    shutil.copytree(ROOT / "resolved", tmp_path / "resolved")
    (tmp_path / "analysis").mkdir()
    shutil.copy(ROOT / "analysis" / "stage_two.yaml", tmp_path / "analysis")
    return tmp_path


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", [["experiments/resolve.py"], ["-m", "replication.run.config", "params.yaml"]],
                         ids=["resolve stage", "make repro's check"])
def test_an_alias_bomb_in_params_stops_with_one_line(tmp_path, command):
    folder = project(tmp_path, params_with_bomb())
    before = snapshot(folder)
    args = [sys.executable, *(str(ROOT / c) if c.endswith(".py") else c for c in command)]
    result = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=120)   # a hang guard
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr[-500:]
    assert result.stderr.startswith("error: params.yaml: ") and "aliases" in result.stderr
    assert snapshot(folder) == before


def edited(path, value, text=GOOD):
    raw = load_yaml(text)
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node[key]
    node[last] = value
    return raw


# (case, key, value, ladders on): each would train for years or fail to allocate minutes later
HUGE = [
    ("1e12 steps, ladders off", "pretrain.defaults.steps", 10 ** 12, False),
    ("1e12 steps, ladders on", "pretrain.defaults.steps", 10 ** 12, True),
    ("a batch of 10^9", "pretrain.defaults.batch", 10 ** 9, True),
    ("1e12 training images", "data.glyphs100.n_train", 10 ** 12, True),
    ("1e12 test images", "data.shapes.n_test", 10 ** 12, True),
    ("a queue of 10^12 keys", "pretrain.defaults.queue", 10 ** 12, True),
    ("10^12 probe steps", "evaluate.probe_steps", 10 ** 12, True),
    ("10^12 tiny SimCLR steps", "examples.tiny_simclr.steps", 10 ** 12, True),
    ("a toy batch of 10^9", "examples.toy2d.batch", 10 ** 9, True),
    ("10^9 BatchNorm batches", "control.bn_batches", 10 ** 9, True),
    ("a ladder rung at 10^12", "pretrain.studies.head.simclr_head_linear.ladder", [1200, 10 ** 12], True),
]


@pytest.mark.parametrize("key,value,ladders", [c[1:] for c in HUGE], ids=[c[0] for c in HUGE])
def test_huge_counts_are_refused_in_one_short_line(key, value, ladders):
    from replication.run.config import ParamsError, parse_params
    raw = edited(key, value)
    raw["pretrain"]["ladders"] = ladders
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    line = str(e.value)
    assert key.rsplit(".", 1)[-1] in line and "less than or equal" in line, line
    assert "\n" not in line and len(line) < 300, line


def test_every_profile_passes_the_bounds():
    from replication.run.config import parse_params, resolve
    raw = load_yaml(GOOD)
    for name in raw["profiles"]:
        resolve(parse_params({**raw, "profile": name}))


def test_a_rejected_value_is_quoted_as_a_short_excerpt():
    from replication.run.config import ParamsError, parse_params
    raw = edited("pretrain.studies.head.simclr_head_none.label", list(range(100_000)))
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    assert "simclr_head_none.label" in str(e.value) and len(str(e.value)) < 250, str(e.value)[:300]


# ---------------------------------------------------------------- disk full, no permission

FAILURES = {"disk full": OSError(errno.ENOSPC, "No space left on device"),
            "no permission": PermissionError(errno.EACCES, "Permission denied")}


def failing(error):
    def replace(src, dst):
        raise error
    return replace


@pytest.mark.parametrize("case", FAILURES)
def test_a_failed_write_keeps_the_old_file_and_names_it(tmp_path, monkeypatch, case):
    target = tmp_path / "out.json"
    target.write_text('{"old": true}\n')
    monkeypatch.setattr(os, "replace", failing(FAILURES[case]))
    with pytest.raises(OSError) as e:
        write_json(target, {"new": True})
    assert str(target) in str(e.value) and "\n" not in str(e.value)
    assert ("disk space" if case == "disk full" else "writable") in str(e.value)
    assert target.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]       # no temporary file left


@pytest.mark.parametrize("case", FAILURES)
def test_analyze_on_a_full_disk_stops_with_one_line_and_keeps_the_reports(tmp_path, monkeypatch, capsys, case):
    write_world(tmp_path)
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 0, err
    before = snapshot(tmp_path)
    monkeypatch.setattr(os, "replace", failing(FAILURES[case]))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 1 and err.count("\n") == 1, err
    assert err.startswith("error: reports/claims.json: cannot write"), err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("case", FAILURES)
def test_resolve_on_a_full_disk_stops_with_one_line_and_keeps_resolved(tmp_path, monkeypatch, capsys, case):
    folder = project(tmp_path, GOOD.replace("probe_steps: 300", "probe_steps: 301"))
    before = snapshot(folder)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(os, "replace", failing(FAILURES[case]))
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(str(ROOT / "experiments" / "resolve.py"), run_name="__main__")
    err = capsys.readouterr().err
    assert stop.value.code == 1 and err.count("\n") == 1, err
    assert err.startswith("error: resolved/") and "cannot write" in err, err
    assert snapshot(folder) == before


def test_the_report_stage_removes_stray_temporary_files_of_a_killed_write(tmp_path, monkeypatch):
    """analyze and report write into reports/; a write killed there leaves .claims.json.*.tmp."""
    write_world(tmp_path)
    stray = tmp_path / "reports" / ".claims.json.x1y2.tmp"
    stray.parent.mkdir()
    stray.write_text("half")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(ROOT / "experiments" / "analyze.py"), run_name="__main__")
    assert not stray.exists() and (tmp_path / "reports" / "claims.json").exists()


def test_a_file_output_removes_only_its_own_stray_files(tmp_path):
    (tmp_path / ".determinism.json.ab.tmp").write_text("half")
    (tmp_path / "pretrain").mkdir()
    (tmp_path / "pretrain" / ".seed_0.json.cd.tmp").write_text("another stage's, mid-write")
    assert remove_stray_tmp(tmp_path / "determinism.json") == 1
    assert (tmp_path / "pretrain" / ".seed_0.json.cd.tmp").exists()


def test_outputs_written_together_are_all_new_or_all_old(tmp_path):
    """stage_outputs(together=True), as analyze uses it: a body that fails after writing some of its
    files leaves every old file, with no temporary left; a body that succeeds replaces them all."""
    from replication.io import stage_outputs
    old = {name: tmp_path / name for name in ("claims.json", "summary.json")}
    for path in old.values():
        write_json(path, {"run": "old"})
    with pytest.raises(RuntimeError):
        with stage_outputs(tmp_path, together=True):
            write_json(old["claims.json"], {"run": "new"})
            assert json.loads(old["claims.json"].read_text()) == {"run": "old"}    # not yet in place
            raise RuntimeError("killed between the two files")
    assert {p.name: json.loads(p.read_text())["run"] for p in old.values()} == {"claims.json": "old", "summary.json": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.json", "summary.json"]
    with stage_outputs(tmp_path, together=True):
        for path in old.values():
            write_json(path, {"run": "new"})
    assert {json.loads(p.read_text())["run"] for p in old.values()} == {"new"}


# ---------------------------------------------------------------- one line from every tool

def tool(args, cwd):
    """`python -m replication <verb> ...` in `cwd` with this checkout's package."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("text", [(ROOT / "reports" / "claims.json").read_text()[:500], "not json\n", "\x00\xff"],
                         ids=["truncated", "not JSON", "binary"])
def test_compare_on_a_broken_claims_file_says_one_line(tmp_path, text):
    (tmp_path / "broken.json").write_text(text, errors="surrogateescape")
    result = tool(["replication", "compare", "broken.json", str(ROOT / "reports" / "claims.json")], tmp_path)
    assert result.returncode != 0 and result.stderr.count("\n") == 1, result.stderr[-2000:]
    assert result.stderr.startswith("error: broken.json: not readable JSON"), result.stderr


def test_compare_causes_with_a_tab_in_params_says_one_line(tmp_path):
    for name in ("reports/claims.json", "analysis/claims.yaml", "params.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    git = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=tmp_path, env=git, check=True)
    (tmp_path / "params.yaml").write_text(GOOD.replace("\n  probe_steps:", "\n\tprobe_steps:", 1))
    result = tool(["replication", "compare", "HEAD", "--causes"], tmp_path)
    assert result.returncode != 0 and result.stderr.count("\n") == 1, result.stderr[-2000:]
    assert result.stderr.startswith("error: params.yaml: not valid YAML (found character '\\t'"), result.stderr


@pytest.mark.parametrize("argv,said", [
    (["--rules-changed", ""], "--rules-changed needs a text"),
    (["--code-moved", "  ", "--why", "x"], "--code-moved needs a text"),
    (["--rules-changed", "a rule", "--why", ""], "--why needs a text"),
    (["--code-moved", "moved", "--rules-changed", "a rule", "--why", "x"], "exclude each other"),
    (["--why", "x"], "--why goes with"),
], ids=["empty rules", "blank code", "empty why", "both flags", "why alone"])
def test_register_refuses_empty_texts_and_conflicting_flags_in_one_line(capsys, argv, said):
    from replication.cli.register import main
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and said in err, err


def test_relock_never_records_a_registered_or_data_file():
    """A registered margin edited, then `python -m replication relock --write`: the analysis stays stale, and says why;
    an edited module (a file or a folder of them) is still relocked."""
    from replication.cli.relock import relockable
    status = {"analyze": [{"changed deps": {"analysis/claims.yaml": "modified",
                                            "src/replication/judge": "modified"}}],
              "report": [{"changed deps": {"analysis/registration_2.json": "modified"}}],
              "evaluate@head": [{"changed deps": {"src/replication/run/evaluate.py": "modified"}}],
              "pretrain@head": [{"changed deps": {"src/contrastive": "modified"}}]}
    lock = {"stages": {name: {"deps": [{"path": p} for change in changes for p in change["changed deps"]]}
                       for name, changes in status.items()}}
    ok, left = relockable(status, lock)
    assert ok == ["evaluate@head", "pretrain@head"]
    assert left == {"analyze": "analysis/claims.yaml modified, which is not code",
                    "report": "analysis/registration_2.json modified, which is not code"}


def test_relock_never_records_judging_code_that_differs_from_the_registration():
    """Judging code edited under a registration stays stale for relock, as a file or inside a folder
    dependency, until `python -m replication register --code-moved` has amended it; other edited code is relocked."""
    from replication.cli.relock import relockable
    status = {"analyze": [{"changed deps": {"src/replication/judge": "modified"}}],
              "report": [{"changed deps": {"experiments/analyze.py": "modified"}}],
              "evaluate@head": [{"changed deps": {"src/replication/run/evaluate.py": "modified"}}]}
    lock = {"stages": {name: {"deps": [{"path": p} for change in changes for p in change["changed deps"]]}
                       for name, changes in status.items()}}
    registered = {"src/replication/judge/verdicts.py", "experiments/analyze.py"}
    ok, left = relockable(status, lock, registered=registered)
    assert ok == ["evaluate@head"]
    assert left["analyze"].startswith("src/replication/judge/verdicts.py differs from the registration")
    assert left["report"].startswith("experiments/analyze.py differs from the registration")
    assert "python -m replication register --code-moved" in left["analyze"]
    assert relockable(status, lock)[0] == ["analyze", "evaluate@head", "report"]     # once amended


@pytest.mark.parametrize("date,said", [("2999-01-01", "in the future"), ("yesterday", "not a date")])
def test_readme_leaves_out_a_timing_with_a_future_or_false_date(tmp_path, monkeypatch, capsys, date, said):
    from replication.cli import readme
    monkeypatch.chdir(tmp_path)
    write_json(tmp_path / "reports" / "repro_timing.json",
               {"command": "dvc repro -f", "seconds": 60.0, "seconds_in_dvc": 1.0, "stages_run": ["resolve"],
                "date": date, "cpu": "a CPU", "profile": "default"})
    block = readme.figures_block()
    err = capsys.readouterr().err
    assert date not in block and "a CPU" not in block, block
    assert err.count("\n") == 1 and err.startswith(f"warning: reports/repro_timing.json: date '{date}' is {said}"), err


@pytest.mark.slow
def test_the_report_notebook_writes_no_ipython_profile_into_the_system_temp_folder(tmp_path):
    """IPython puts its profile in a temporary folder when IPYTHONDIR's parent does not exist."""
    (tmp_path / "temp").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notebook.py").write_text("# %%\nprint(1)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR",
                                                              "MPLCONFIGDIR")}
    code = "from replication.report.notebook import render_notebook; render_notebook('notebook.py', 'out.html')"
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "work", env={**env, "TMPDIR": str(tmp_path / "temp")},
                   check=True, capture_output=True, timeout=600)
    assert list((tmp_path / "temp").iterdir()) == []
    assert (tmp_path / "work" / ".cache" / "ipython").is_dir() and (tmp_path / "work" / "out.html").exists()


def test_a_tool_that_needs_dvc_finds_the_one_beside_python_or_says_one_line(tmp_path, monkeypatch):
    from replication.cli import repro
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SystemExit) as stopped:
        repro.dvc("status")
    assert str(stopped.value).startswith("error: dvc is neither beside this Python nor on PATH") and "\n" not in str(stopped.value)
    (python.parent / "dvc").write_text("")
    assert repro.dvc_command() == str(python.parent / "dvc")
    on_path = tmp_path / "path" / "dvc"                   # one on PATH comes first (a stand-in, say)
    on_path.parent.mkdir()
    on_path.write_text("")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert repro.dvc_command() == str(on_path)
