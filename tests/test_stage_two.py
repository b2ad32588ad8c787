"""Stage 2 of a registered run (run/stage_two.py, tools/sequential.py --write): the rule's choice
becomes stage-2 studies that train only the chosen conditions at the further seeds, split where a
stage would pass the stage limit, and DVC stages of their own; before the look nothing changes."""
import json
import shutil
import subprocess
import sys

import pytest

from replication.run import stage_two
from replication.run.config import ParamsError, read_params, resolve
from tools import sequential as tool

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
    assert selection.model_dump() == content
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
    assert "already chosen" in tool.ready_to_look("2026-12-04")


def test_the_judge_reads_a_conditions_stage_two_seeds_beside_stage_one(tmp_path):
    """A chosen condition's stage-2 seeds, in their own folder, are checked and read with its stage-1
    seeds, and counted under its study; without `runs` naming them they are unexpected files."""
    from test_registry import SEEDS as FIRST, write_world
    from replication.judge.dvc_files import loss_rows
    from replication.judge.measure import InputError, check_inputs, record_paths
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
    assert [json.loads((tmp_path / p).read_text())["seed"] for p in record_paths("cb", "evaluation", tmp_path)] == \
        [*FIRST, 9]
    assert list(loss_rows(tmp_path)) == ["s"]
    (tmp_path / "results" / "evaluate" / "s_stage2" / "cb" / "seed_9.json").write_text("")
    with pytest.raises(InputError, match=r"rewrite it with `dvc repro -f evaluate_stage2@s_stage2`"):
        check_inputs(conditions, tmp_path)
