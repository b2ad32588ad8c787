"""One front door (issue 71, item 3): `python -m replication VERB`. Its --help lists every verb; each
verb's --help says what it does and lists its options; an unknown verb is one line and exit status 2;
make's entries, the documents and the code's own messages name only verbs that exist."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from replication.cli.main import VERBS, main

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}       # this checkout's package
EVERY = ("check", "repro", "status", "exp", "repro-all", "repro-stage", "register", "relock", "sequential",
         "compare", "readme", "schedule", "run-cost")


def replication(*args):
    return subprocess.run([sys.executable, "-m", "replication", *args], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=300)


def test_help_lists_every_verb():
    result = replication("--help")
    assert result.returncode == 0, result.stderr
    assert tuple(VERBS) == EVERY
    for verb in EVERY:
        assert re.search(rf"^\s+{re.escape(verb)}(\s|$)", result.stdout, re.M), (verb, result.stdout)


@pytest.mark.parametrize("verb", EVERY)
def test_each_verb_says_what_it_does_and_lists_its_options(verb, capsys):
    with pytest.raises(SystemExit) as stop:
        main([verb, "--help"])
    out = capsys.readouterr().out
    said = " ".join(VERBS[verb][-1].split())
    assert stop.value.code == 0 and out.startswith(f"usage: python -m replication {verb} "), out
    assert "".join(said.split()) in "".join(out.split()), out       # its description, however argparse wraps it
    assert said.endswith(".") and said.count(". ") <= 1, said            # one or two sentences


@pytest.mark.parametrize("verb,options", [
    ("repro", ["--retrain"]), ("exp", ["--set KEY=VALUE", "--retrain"]), ("repro-all", ["--dvc DVC"]),
    ("repro-stage", ["STAGE", "--dvc DVC"]), ("register", ["--code-moved WHAT", "--rules-changed WHAT", "--why WHY"]),
    ("relock", ["--write", "--moved"]), ("sequential", ["--write"]), ("compare", ["OLD", "NEW", "--causes"]),
    ("readme", ["--check"]), ("run-cost", ["--reference COMMIT", "--precision PRECISION", "--measure"])])
def test_a_verbs_help_lists_its_options(verb, options, capsys):
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    out = capsys.readouterr().out
    for option in options:
        assert option in out, (option, out)


def test_a_verbs_help_through_the_front_door():
    result = replication("exp", "--help")
    assert result.returncode == 0 and "--set KEY=VALUE" in result.stdout and "dvc exp run -S" in result.stdout, \
        result.stderr


@pytest.mark.parametrize("args", [["frobnicate"], [], ["relock", "--frobnicate"]],
                         ids=["unknown verb", "no verb", "unknown option"])
def test_a_usage_error_is_one_line_and_exit_status_2(args):
    result = replication(*args)
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: python -m replication"), result.stderr


def named_verbs(text):
    return re.findall(r"python -m replication ([a-z][\w-]*)", text)


def test_make_the_documents_and_the_messages_name_only_verbs_that_exist():
    """Every `python -m replication VERB` in the Makefile, README.md, docs/ and the code names a verb,
    and no `python -m tools.X` is left for a module that moved into the package."""
    moved = [p.stem for p in (ROOT / "src" / "replication" / "cli").glob("*.py")]
    files = [ROOT / "Makefile", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "src" / "replication" / "cli").glob("*.py")), *sorted((ROOT / "tools").glob("*.py"))]
    for path in files:
        text = path.read_text()
        assert set(named_verbs(text)) <= set(VERBS), (path, named_verbs(text))
        left = re.findall(rf"python -m tools\.({'|'.join(moved)})\b", text)
        assert not left, (path, left)
    entries = named_verbs((ROOT / "Makefile").read_text())
    assert {"check", "repro", "status", "exp", "repro-all", "repro-stage", "relock", "compare", "readme"} <= \
        set(entries), entries
