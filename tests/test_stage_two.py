"""Stage 2 of a registered run (run/stage_two.py, src/replication/cli/sequential.py --write): the rule's choice
becomes stage-2 studies that train only the chosen conditions at the further seeds, split where a
stage would pass the stage limit, and DVC stages of their own; before the look nothing changes."""
import hashlib
import json
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from replication.run import stage_two
from replication.run.config import ParamsError, read_params, resolve
from replication.cli import look
from replication.cli import sequential as tool

from helpers import ROOT

SEEDS = list(range(5, 15))
CHOSEN = [{"id": "simclr-temperature", "a": "tau 0.1", "b": "tau 0.05", "seeds_needed": 9, "capped": False,
           "conditions": ["simclr_tau01", "simclr_tau005"]},
          {"id": "moco-momentum-long", "a": "m 0.99", "b": "m 0.999", "seeds_needed": 12, "capped": False,
           "conditions": ["moco_m099", "simclr_tau01"]},
          {"id": "other", "a": "x", "b": "y", "seeds_needed": 14, "capped": True, "conditions": ["simclr"]}]
STUDY_OF = {"simclr_tau01": "temperature", "simclr_tau005": "temperature_low", "moco_m099": "moco_momentum",
            "simclr": "simclr_mocov2"}
DESIGN = {"stage_one_seeds": 5, "further_seeds": 10}


def part(study, conditions, seeds=SEEDS):
    return stage_two.Part(study=study, conditions=conditions, seeds=seeds)


@pytest.fixture(scope="module")
def stage_one():
    return resolve(read_params())


NOTHING_CHOSEN = "stage_two:\n  seeds: []\n  studies: {}\n"      # the file before the look


def test_before_the_look_resolve_writes_stage_one_alone(stage_one, tmp_path):
    """A selection that chooses nothing (the file as committed before the look): resolve's files are
    exactly stage 1's."""
    (tmp_path / "stage_two.yaml").write_text(NOTHING_CHOSEN)
    selection = stage_two.read_selection(tmp_path / "stage_two.yaml")
    assert (selection.seeds, selection.studies) == ([], {})
    assert stage_two.extend(stage_one, selection) is stage_one


def test_a_chosen_study_trains_only_its_chosen_conditions_at_its_seeds(stage_one):
    chosen = stage_two.StageTwo(seeds=SEEDS, studies={"temperature_stage2_a": part("temperature", ["simclr_tau01"], SEEDS[:5]),
                                                      "temperature_stage2_b": part("temperature", ["simclr_tau01"], SEEDS[5:])})
    files = stage_two.extend(stage_one, chosen)
    study = files["pretrain/temperature_stage2_b.json"]
    assert study["study"] == "temperature_stage2_b" and study["seeds"] == SEEDS[5:]
    assert study["conditions"] == {"simclr_tau01": stage_one["pretrain/temperature.json"]["conditions"]["simclr_tau01"]}
    assert {k: v for k, v in study.items() if k not in ("study", "seeds", "conditions")} == \
        {k: v for k, v in stage_one["pretrain/temperature.json"].items() if k not in ("study", "seeds", "conditions")}
    runs = files["conditions.json"]["conditions"]["simclr_tau01"]["runs"]
    assert runs == {"temperature": stage_one["conditions.json"]["seeds"], "temperature_stage2_a": SEEDS[:5],
                    "temperature_stage2_b": SEEDS[5:]}
    assert "runs" not in files["conditions.json"]["conditions"]["simclr_tau1"]          # not chosen
    assert "runs" not in stage_one["conditions.json"]["conditions"]["simclr_tau01"]     # stage 1's untouched
    assert files["pretrain/temperature.json"] == stage_one["pretrain/temperature.json"]


@pytest.mark.parametrize("seeds, studies, named", [
    ([4, 5], {"temperature_stage2": part("temperature", ["simclr_tau01"], [5])}, "stage_two.seeds"),  # stage 1's
    ([5, 5], {"temperature_stage2": part("temperature", ["simclr_tau01"], [5])}, "stage_two.seeds"),
    (SEEDS, {"temperature": part("temperature", ["simclr_tau01"])}, "a study of params.yaml already has this name"),
    (SEEDS, {"x_stage2": part("nope", ["simclr_tau01"])}, "stage_two.studies.x_stage2.study: nope"),
    (SEEDS, {"x_stage2": part("temperature", ["simclr_tau1"])}, "simclr_tau1 is not a condition of temperature"),
    (SEEDS, {"x_stage2": part("temperature", [])}, "conditions: none"),
    (SEEDS, {"x_stage2": part("temperature", ["simclr_tau01"], [15])}, "x_stage2.seeds"),          # not a further seed
    (SEEDS, {"x_stage2_a": part("temperature", ["simclr_tau01"], [5, 6]),
             "x_stage2_b": part("temperature", ["simclr_tau01"], [6, 7])}, "simclr_tau01 seed 6 is in another part"),
])
def test_a_bad_selection_is_one_line_naming_its_key(stage_one, seeds, studies, named):
    with pytest.raises(ParamsError, match=named) as e:
        stage_two.extend(stage_one, stage_two.StageTwo(seeds=seeds, studies=studies))
    assert str(e.value).startswith("analysis/stage_two.yaml: ") and "\n" not in str(e.value)


@pytest.mark.parametrize("text, named", [
    ("stage_two:\n  seeds: [5]\n  studies: {}\n  extra: 1\n", "stage_two.extra: unknown key"),
    ("stage_two:\n  seeds: [-1]\n  studies: {}\n", "stage_two.seeds.0"),
    ("stage_two:\n  seeds: [5]\n  studies: {x_stage2: [simclr]}\n", "stage_two.studies.x_stage2"),
    ("seeds: [5]\n", "expected one key, stage_two"),
    ("stage_two: [\n", "not valid YAML at line 2"),
])
def test_a_malformed_file_is_one_line_naming_it(tmp_path, text, named):
    (tmp_path / "s.yaml").write_text(text)
    with pytest.raises(ParamsError, match=named):
        stage_two.read_selection(tmp_path / "s.yaml")
    with pytest.raises(ParamsError, match="missing"):
        stage_two.read_selection(tmp_path / "absent.yaml")


def test_a_study_splits_into_the_fewest_parts_that_keep_each_stage_within_the_limit():
    """Two workers; a run of 4 training minutes here is 10 on a CPU 2.5x slower: 10 seeds of one
    condition are 5 rounds of 10 minutes there (50, over 40), so two parts of 5 seeds (30 each)."""
    assert tool.parts_needed([(4.0, 1.0)], 10, 2.5, 2) == 2
    assert tool.parts_needed([(1.0, 1.0)], 10, 2.5, 2) == 1                      # 5 x 2.5 = 12.5
    assert tool.parts_needed([(4.0, 1.0), (4.0, 1.0)], 10, 2.5, 2) == 3          # 4 seeds: 4 rounds of 10
    assert tool.parts_needed([(1.0, 20.0)], 10, 2.5, 2) == 10                    # the evaluation binds too


def test_the_written_choice_reads_back_as_the_rule_chose(stage_one, tmp_path):
    """Capped contrasts get nothing; a condition two contrasts read is listed once, under its study;
    a study too long for one stage is split into parts with disjoint seeds."""
    minutes = {"simclr_tau01": (5.0, 1.0), "simclr_tau005": (2.0, 1.0), "moco_m099": (1.5, 1.0)}
    content = tool.selection(CHOSEN, STUDY_OF, DESIGN, minutes.get, 2.53)
    assert content == {"seeds": SEEDS, "studies": {
        "temperature_stage2_a": {"study": "temperature", "conditions": ["simclr_tau01"], "seeds": SEEDS[:5]},
        "temperature_stage2_b": {"study": "temperature", "conditions": ["simclr_tau01"], "seeds": SEEDS[5:]},
        "temperature_low_stage2": {"study": "temperature_low", "conditions": ["simclr_tau005"], "seeds": SEEDS},
        "moco_momentum_stage2": {"study": "moco_momentum", "conditions": ["moco_m099"], "seeds": SEEDS}}}
    text = tool.as_yaml(CHOSEN, content)
    assert "#   moco-momentum-long: m 0.99 vs m 0.999" in text and "other" not in text
    (tmp_path / "s.yaml").write_text(text)
    selection = stage_two.read_selection(tmp_path / "s.yaml")
    assert selection.model_dump(exclude_none=True) == content
    interim = {"commit": "a" * 40, "claims_json_sha256": "b" * 64}            # --write names the interim analysis
    (tmp_path / "s.yaml").write_text(tool.as_yaml(CHOSEN, {"chosen_from": interim, **content}))
    assert stage_two.read_selection(tmp_path / "s.yaml").model_dump() == {"chosen_from": interim, **content}
    files = stage_two.extend(stage_one, selection)
    assert {p for p in files if "_stage2" in p} == {f"pretrain/{s}.json" for s in content["studies"]}


def test_dvc_lists_a_pretrain_and_evaluate_stage_per_stage_two_study(tmp_path):
    """dvc.yaml's stage-2 stages are stage 1's, on the stage-2 study (its own resolved file and records)."""
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis/stage_two.yaml").write_text(
        "stage_two:\n  seeds: [5, 6]\n  studies: {temperature_stage2: {study: temperature, conditions: [simclr_tau01], "
        "seeds: [5, 6]}}\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([sys.executable, "-m", "dvc", "init", "-q"], cwd=tmp_path, check=True)
    stages = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, dvc.repo; r = dvc.repo.Repo('.'); print(json.dumps({s.addressing: "
         "[str(d) for d in s.deps] + [str(o) for o in s.outs] + [s.cmd] for s in r.index.stages}))"],
        cwd=tmp_path, check=True, capture_output=True, text=True).stdout)
    for kind in ("pretrain", "evaluate"):
        assert stages[f"{kind}_stage2@temperature_stage2"] == [
            x.replace("temperature", "temperature_stage2") for x in stages[f"{kind}@temperature"]]



def test_the_look_is_made_once_after_stage_one_is_judged_and_committed(tmp_path, monkeypatch):
    """--write refuses before stage 1 is judged under the registration, while its analysis is not
    committed, and once a choice is written."""
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], check=True)
    (tmp_path / "reports").mkdir()
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis/stage_two.yaml").write_text(NOTHING_CHOSEN)
    (tmp_path / "reports/summary.json").write_text(json.dumps({"registered_on": "2026-12-01"}))
    assert "not yet judged under the registration of 2026-12-04" in tool.ready_to_look("2026-12-04")
    (tmp_path / "reports/summary.json").write_text(json.dumps({"registered_on": "2026-12-04"}))
    (tmp_path / "reports/claims.json").write_text("[]")
    assert "not committed" in tool.ready_to_look("2026-12-04")
    subprocess.run(["git", "add", "."], check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "stage 1"], check=True)
    assert tool.ready_to_look("2026-12-04") is None
    (tmp_path / "analysis/stage_two.yaml").write_text(
        "stage_two:\n  seeds: [5]\n  studies: {a_stage2: {study: a, conditions: [c], seeds: [5]}}\n")
    assert "the look was already made" in tool.ready_to_look("2026-12-04")


def test_the_judge_reads_a_conditions_stage_two_seeds_beside_stage_one(tmp_path):
    """A chosen condition's stage-2 seeds, in their own folder, are checked and read with its stage-1
    seeds, and counted under its study; without `runs` naming them they are unexpected files."""
    from test_registry import SEEDS as FIRST, write_world
    from replication.judge.dvc_files import loss_rows
    from replication.judge.measure import InputError, record_paths
    from replication.judge.results import Results, check_inputs
    write_world(tmp_path)
    for kind in ("pretrain", "evaluate"):
        record = json.loads((tmp_path / "results" / kind / "s" / "cb" / "seed_2.json").read_text())
        record["seed"] = 9
        if kind == "pretrain":
            record["loss_curve"] = [[300, 0.25]]
        else:                                    # a run of its own (the judge refuses a copied record)
            record["eval"] = record["at"]["300"] = {"h": {"linear": 0.7, "knn": 0.7}}
        folder = tmp_path / "results" / kind / "s_stage2" / "cb"
        folder.mkdir(parents=True)
        (folder / "seed_9.json").write_text(json.dumps(record))
    path = tmp_path / "resolved" / "conditions.json"
    conditions = json.loads(path.read_text())
    with pytest.raises(InputError, match="s_stage2/cb/seed_9.json: a file the resolved configuration does not expect"):
        check_inputs(conditions, tmp_path)
    conditions["conditions"]["cb"]["runs"] = {"s": FIRST, "s_stage2": [9]}
    path.write_text(json.dumps(conditions))
    check_inputs(conditions, tmp_path)
    assert [json.loads((tmp_path / p).read_text())["seed"] for p in record_paths("cb", "evaluation", Results.load(tmp_path))] == \
        [*FIRST, 9]
    assert list(loss_rows(Results.load(tmp_path))) == ["s"]
    (tmp_path / "results" / "evaluate" / "s_stage2" / "cb" / "seed_9.json").write_text("")
    with pytest.raises(InputError, match=r"rewrite it with `dvc repro -f evaluate_stage2@s_stage2`"):
        check_inputs(conditions, tmp_path)


# ---------------------------------------------------------------- the look: made once, bound to its interim analysis

RULE = [{"id": "x", "a": "a", "b": "b", "seeds_needed": 9, "capped": False, "conditions": ["simclr_tau01"],
         "seeds": SEEDS}]          # what the rule chooses on the interim analysis (stubbed)


def git(*args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def bound(commit, digest, first=SEEDS[:5], second=SEEDS[5:], seeds=SEEDS):
    """A choice named by the interim analysis (commit, sha256): simclr_tau01 of temperature in two parts."""
    return (f"stage_two:\n  chosen_from: {{commit: '{commit}', claims_json_sha256: '{digest}'}}\n  seeds: {seeds}\n"
            "  studies:\n" + "".join(f"    temperature_stage2_{name}: {{study: temperature, conditions: [simclr_tau01], "
                                      f"seeds: {part}}}\n" for name, part in (("a", first), ("b", second))))


@pytest.fixture
def interim(tmp_path, monkeypatch):
    """A clone whose stage 1 is judged and committed (nothing chosen yet), the registry stubbed so
    that the rule chooses simclr_tau01 at the further seeds: (the interim commit, its claims.json's sha256)."""
    monkeypatch.chdir(tmp_path)
    conditions = {"conditions": {"simclr_tau01": {"study": "temperature"}}}
    for path, text in {"reports/claims.json": "[]\n", "analysis/stage_two.yaml": NOTHING_CHOSEN,
                       "resolved/conditions.json": json.dumps(conditions)}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "stage 1: interim analysis")
    registry = SimpleNamespace(rules={"sequential": {"stage_one_seeds": 5, "further_seeds": 10}}, claims=[])
    monkeypatch.setattr(look, "load_registry", lambda: registry)
    monkeypatch.setattr(look, "choose", lambda rules, claims, judged: RULE)
    return git("rev-parse", "HEAD"), hashlib.sha256(b"[]\n").hexdigest()


def test_the_rule_s_choice_bound_to_its_interim_analysis_passes(interim):
    look.check_look()                                              # before the look: nothing to bind
    stage_two.SELECTION.write_text(bound(*interim))
    look.check_look()


@pytest.mark.parametrize("edit, said", [
    (lambda c, d: bound(c, d, second=SEEDS[5:9]), "not the rule's choice on the interim analysis of commit"),
    (lambda c, d: bound(c, d).replace("[simclr_tau01]", "[simclr_tau01, simclr_tau1]", 1),
     "(simclr_tau1 of temperature differs)"),
    (lambda c, d: bound(c, d, seeds=SEEDS + [15]), "(stage_two.seeds differs)"),
    (lambda c, d: bound(c, d).split("    temperature_stage2_a")[0].replace("studies:", "studies: {}"),
     "(simclr_tau01 of temperature differs)"),                    # emptied by hand
    (lambda c, d: bound(c, "0" * 64), "chosen_from.claims_json_sha256: not the sha256 of reports/claims.json"),
    (lambda c, d: bound("0" * 40, d), "stage_two.chosen_from.commit: 0000000 is not a commit of this branch"),
    (lambda c, d: "\n".join(line for line in bound(c, d).splitlines() if "chosen_from" not in line) + "\n",
     "stage_two.chosen_from: missing"),
], ids=["seeds of a part", "a condition added", "a further seed added", "studies emptied", "another sha256",
        "an unknown commit", "no binding"])
def test_a_hand_edited_choice_stops_make_s_check_in_one_line(interim, edit, said):
    stage_two.SELECTION.write_text(edit(*interim))
    with pytest.raises(ParamsError) as e:
        look.check_look()
    assert str(e.value).startswith("analysis/stage_two.yaml: ") and said in str(e.value) and "\n" not in str(e.value)


def test_a_choice_bound_to_an_analysis_made_after_the_look_is_refused(interim):
    """The analysis it names must be an interim one: at its commit, nothing was chosen yet."""
    stage_two.SELECTION.write_text(bound(*interim))
    git("commit", "-qam", "the look")
    stage_two.SELECTION.write_text(bound(git("rev-parse", "HEAD"), interim[1]))
    with pytest.raises(ParamsError, match="is not an interim analysis"):
        look.check_look()


def test_a_second_look_is_refused_and_the_plain_form_says_where_the_first_was_made(interim, capsys):
    """Once the file has chosen, --write is refused in one line, writing nothing, even after its studies
    were emptied by hand and committed; the print-only form names the look's commit instead of choosing."""
    commit, _ = interim
    stage_two.SELECTION.write_text(bound(*interim))
    git("commit", "-qam", "the look")
    look_commit = git("rev-parse", "--short=7", "HEAD")
    for emptied in (False, True):
        if emptied:
            stage_two.SELECTION.write_text(NOTHING_CHOSEN)
            git("commit", "-qam", "emptied by hand")
        before = stage_two.SELECTION.read_text()
        with pytest.raises(SystemExit) as e:
            tool.main(["--write"])
        said = str(e.value.code)
        assert said.startswith("error: analysis/stage_two.yaml") and "the look was already made on the interim " \
            f"analysis of commit {commit[:7]}" in said and "\n" not in said
        assert (f"(committed in {look_commit})" in said) == emptied
        assert stage_two.SELECTION.read_text() == before
        assert tool.main([]) is None
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and "the look was already made" in out and "design:" not in out


def test_a_choice_emptied_after_the_look_stops_make_s_check(interim):
    stage_two.SELECTION.write_text(bound(*interim))
    git("commit", "-qam", "the look")
    stage_two.SELECTION.write_text(NOTHING_CHOSEN)
    git("commit", "-qam", "emptied by hand")
    with pytest.raises(ParamsError, match=r"^analysis/stage_two.yaml \(committed in \w{7}\): the look was already "
                                          r"made .*; now it chooses nothing: restore that choice"):
        look.check_look()


def test_a_choice_committed_whole_without_its_history_cannot_be_checked(tmp_path, monkeypatch):
    """A copy committed anew (no version of the file before the look) has no interim analysis to read."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "analysis").mkdir()
    stage_two.SELECTION.write_text(bound("0" * 40, "0" * 64, second=SEEDS[5:9]))
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "a copy")
    look.check_look()


def test_the_committed_choice_is_the_rule_s_on_its_interim_analysis(monkeypatch):
    """This repository's analysis/stage_two.yaml passes make's check against the git history."""
    monkeypatch.chdir(ROOT)
    if stage_two.read_selection().studies:
        assert stage_two.read_selection().chosen_from is not None
    look.check_look()
