"""The strict registry and complete inputs: every mistake gives one line and a non-zero exit, and
nothing is written. Each case is a small, valid world (a registry, a resolved configuration and
the records it expects) with one thing broken."""
import json
import runpy
from pathlib import Path

import pytest
import yaml
from helpers import judged_claims

from replication.judge.registry import RegistryError, load_registry

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "analysis" / "claims.yaml"
SEEDS = [0, 1, 2]

RULES = """rules:
  control_error_removed: 0.05
  max_seeds: 50
  failure_loss_fraction: 0.8
  alpha: 0.025
  convergence_fraction: 0.5
  robustness: {probes: [linear, knn], rungs: last doubling, bases: [equal images], multiplicity: [bh]}
sections:
  - {id: demo, title: "A demo section", short: Demo, origin: literature}
"""
PAIRED = """- id: a-beats-b
  section: demo
  source: "test"
  statement: "a beats b"
  published: "+10 points"
  metric: "linear probe on h"
  kind: paired
  a: a
  b: b
  reference: [b]
  outcome: [a]
  direction: greater
  margin: 0.02
  arms:
    a: {files: "results/evaluate/*/ca/seed_*.json", key: eval.h.linear}
    b: {files: "results/evaluate/*/cb/seed_*.json", key: eval.h.linear}
"""
BOUND = """- id: small-loss
  section: demo
  source: "test"
  statement: "the loss is small"
  published: 0
  metric: "loss"
  kind: bound
  at_most: 1.0
  measured: {file: results/examples/ex.json, key: loss}
"""


def write_world(root, registry=None):
    """A registry with one paired and one bound claim, and every record it and the resolved
    configuration expect."""
    (root / "analysis").mkdir(parents=True, exist_ok=True)
    (root / "analysis" / "claims.yaml").write_text(registry or RULES + "claims:\n" + PAIRED + BOUND)
    (root / "resolved").mkdir(exist_ok=True)
    conditions = {name: {"study": "s", "label": name, "steps": 300, "rungs": [0, 300]} for name in ("ca", "cb")}
    (root / "resolved" / "conditions.json").write_text(json.dumps({"seeds": SEEDS, "conditions": conditions}))
    (root / "resolved" / "pretrain").mkdir(exist_ok=True)         # the settings each record's config must hold
    (root / "resolved" / "pretrain" / "s.json").write_text(json.dumps(
        {"conditions": {name: {"steps": 300, "batch": 8} for name in conditions}}))
    (root / "results" / "examples").mkdir(parents=True, exist_ok=True)
    (root / "results" / "examples" / "ex.json").write_text(json.dumps({"loss": 0.5}))
    for name, level in (("ca", 0.8), ("cb", 0.6)):
        for seed in SEEDS:
            metrics = lambda acc: {"h": {"linear": acc, "knn": acc}}
            for stage, record in (
                    ("pretrain", {"condition": name, "seed": seed, "status": "ok", "loss": 1.0,
                                  "config": {"steps": 300, "batch": 8}, "rung_loss": {"0": None, "300": 1.0}}),
                    ("evaluate", {"condition": name, "seed": seed, "status": "ok", "rungs": [0, 300],
                                  "control": metrics(0.35), "eval": metrics(level + seed / 100),
                                  "at": {"0": metrics(0.35), "300": metrics(level + seed / 100)},
                                  "bn": "calibrated", "control_uncalibrated": metrics(0.3)})):
                path = root / "results" / stage / "s" / name / f"seed_{seed}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(record))


def run_analyze(root, monkeypatch, capsys):
    """experiments/analyze.py run as a script in `root`: (exit status, stderr)."""
    monkeypatch.chdir(root)
    try:
        runpy.run_path(str(ROOT / "experiments" / "analyze.py"), run_name="__main__")
        status = 0
    except SystemExit as e:
        status = e.code
    return status, capsys.readouterr().err


def test_the_valid_world_is_judged(tmp_path, monkeypatch, capsys):
    write_world(tmp_path)
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    judged = judged_claims(tmp_path)
    assert status == 0 and err == ""
    assert [c["verdict"] for c in judged] == ["reproduced", "within bound"]


def in_name_form(registry):
    """The registry with every arm named by its condition instead of its records' pattern."""
    for name in ("ca", "cb"):
        registry = registry.replace(f'{{files: "results/evaluate/*/{name}/seed_*.json",', f"{{condition: {name},")
    assert "results/evaluate" not in registry
    return registry


def test_an_arm_named_by_its_condition_is_judged_as_the_pattern_of_its_records(tmp_path, monkeypatch, capsys):
    """{condition: ca} and 'study/condition' read the records results/evaluate/*/ca/seed_*.json names:
    the same claims.json."""
    write_world(tmp_path / "path")
    assert run_analyze(tmp_path / "path", monkeypatch, capsys) == (0, "")
    for registry in (in_name_form(RULES + "claims:\n" + PAIRED + BOUND),
                     in_name_form(RULES + "claims:\n" + PAIRED + BOUND).replace("condition: cb", "condition: s/cb")):
        write_world(tmp_path / "name", registry)
        assert run_analyze(tmp_path / "name", monkeypatch, capsys) == (0, "")
        assert judged_claims(tmp_path / "name") == judged_claims(tmp_path / "path")


# (what is broken, text replaced, replacement, what the one line must name)
REGISTRY_MISTAKES = [
    ("misspelt margin", "  margin: 0.02\n", "  margn: 0.02\n", "a-beats-b: margn: unknown key"),
    ("missing margin", "  margin: 0.02\n", "", "a-beats-b: margin: Field required"),
    ("misspelt at_most", "  at_most: 1.0\n", "  at_mots: 1.0\n", "small-loss: at_mots: unknown key"),
    ("unknown direction", "direction: greater", "direction: grater", "a-beats-b: direction: must be"),
    ("negative margin", "margin: 0.02", "margin: -0.02", "a-beats-b: margin: Input should be greater than or equal to 0"),
    ("misspelt kind", "kind: paired", "kind: pairde", "a-beats-b: kind: must be one of"),
    ("misspelt arms", "  arms:\n", "  amrs:\n", "a-beats-b: amrs: unknown key"),
    ("misspelt metric key", "eval.h.linear}\n    b:", "eval.h.linaer}\n    b:", "a-beats-b: arms.a.key: 'eval.h.linaer'"),
    ("misspelt published", '  published: "+10 points"', '  pubished: "+10 points"', "a-beats-b: pubished: unknown key"),
    ("duplicate key in a claim", "  margin: 0.02\n", "  margin: 0.02\n  margin: 0.5\n", "duplicate key 'margin'"),
    ("unknown rules key", "  max_seeds: 50\n", "  max_seeds: 50\n  control_margins: 0.1\n", "rules: control_margins: unknown key"),
    ("missing rule", "  alpha: 0.025\n", "", "rules: alpha: Field required"),
    ("rule out of range", "alpha: 0.025", "alpha: 0.7", "rules: alpha"),
    ("duplicate id", "- id: small-loss", "- id: a-beats-b", "a-beats-b: id: used twice"),
    ("undefined condition", "*/cb/seed_*", "*/cx/seed_*", "condition 'cx' is not defined"),
    ("undefined condition by name", 'a: {files: "results/evaluate/*/ca/seed_*.json",', "a: {condition: cx,",
     "a-beats-b: arms.a: condition 'cx' is not defined in params.yaml"),
    ("a condition named in another study", 'a: {files: "results/evaluate/*/ca/seed_*.json",', "a: {condition: t/ca,",
     "a-beats-b: arms.a: condition 'ca' is in study 's', not 't'"),
    ("a misspelt key of a condition by name", 'a: {files: "results/evaluate/*/ca/seed_*.json", key: eval.h.linear}',
     "a: {condition: ca, key: eval.h.linaer}", "a-beats-b: arms.a.key: 'eval.h.linaer' is not a field of the "
     "evaluation record"),
    ("a condition by name and files", 'a: {files: "results/evaluate/*/ca/seed_*.json",',
     'a: {condition: ca, files: "results/evaluate/*/ca/seed_*.json",', "a-beats-b: arms.a: give exactly one of"),
    ("a not among the arms", "  a: a\n", "  a: c\n", "arm 'c' is not in arms"),
    ("an arm both gated and an outcome", "  outcome: [a]\n", "  outcome: [a, b]\n",
     "arm 'b': name it in exactly one of reference (must train) and outcome"),
    ("an arm neither gated nor an outcome", "  outcome: [a]\n", "  outcome: []\n",
     "arm 'a': name it in exactly one of reference (must train) and outcome"),
    ("outcome arms not declared", "  outcome: [a]\n", "", "a-beats-b: outcome: Field required"),
    ("an interval on a trained encoder without a reference", "  kind: bound\n  at_most: 1.0\n  measured: "
     "{file: results/examples/ex.json, key: loss}", "  kind: interval\n  range: [0, 1]\n  arms:\n    x: "
     "{files: results/evaluate/*/ca/seed_*.json, key: eval.h.linear}", "small-loss: reads trained encoders (results/evaluate/...): declare `reference`"),
    ("margin as text", "margin: 0.02", "margin: '0.02'", "a-beats-b: margin: Input should be a valid number"),
    ("infinite margin", "margin: 0.02", "margin: .inf", "a-beats-b: margin"),
    ("id outside the alphabet", "- id: a-beats-b", "- id: A beats <b>", "String should match pattern"),
    ("section with markup", "  section: demo\n  source: \"test\"\n  statement: \"a beats b\"",
     "  section: \"<script>\"\n  source: \"test\"\n  statement: \"a beats b\"", "section: String should match pattern"),
    ("ladder as text", "  margin: 0.02\n", "  margin: 0.02\n  ladder: 'yes'\n", "a-beats-b: ladder: Input should be a valid boolean"),
    ("two sources in a spec", "a: {files: \"results/evaluate/*/ca/seed_*.json\",",
     "a: {file: results/x.json, files: \"results/evaluate/*/ca/seed_*.json\",", "give exactly one of file, files"),
    ("a bound with no bound", "  at_most: 1.0\n", "", "small-loss: give at_most, at_least or both"),
    ("missing direction", "  direction: greater\n", "", "a-beats-b: direction: Field required"),
    ("amendment without why", "  margin: 0.02\n",
     "  margin: 0.02\n  amended: {date: '2026-12-01', what: w, previous_verdict: inconclusive}\n", "amended.0.why: Field required"),
    ("amendment with an unknown verdict", "  margin: 0.02\n",
     "  margin: 0.02\n  amended: {date: '2026-12-01', what: w, why: y, previous_verdict: reproducd}\n",
     "amended.0.previous_verdict"),
    ("negative tolerance", "  kind: bound\n  at_most: 1.0\n", "  kind: exact\n  tolerance: -1\n",
     "small-loss: tolerance: Input should be greater than or equal to 0"),
    ("a third top-level key", "claims:\n", "notes: x\nclaims:\n", "expected the keys `rules`"),
    ("a claim in an undefined section", "- id: small-loss\n  section: demo", "- id: small-loss\n  section: demos",
     "small-loss: section: 'demos' is not defined under `sections:`"),
    ("a section without a claim", "  - {id: demo,", "  - {id: empty, title: E, short: E, origin: literature}\n  - {id: demo,",
     "sections: 'empty' has no claim"),
    ("a section of no origin", "origin: literature}", "origin: papers}", "sections.0: origin: must be"),
    ("an amendment id that is not defined", "  margin: 0.02\n",
     "  margin: 0.02\n  amended: [{ref: nowhere, previous_verdict: inconclusive}]\n",
     "a-beats-b: amended.0.ref: 'nowhere' is not an id under `amendments:`"),
    ("ratio of three paths", "measured: {file: results/examples/ex.json, key: loss}",
     "measured: {file: results/examples/ex.json, ratio: [a, b, c]}", "ratio: List should have at most 2 items"),
    ("a positive control on a claim of an effect", "  margin: 0.02\n", "  margin: 0.02\n  positive_control: {a: "
     "{condition: ca, key: eval.h.linear}, b: {condition: cb, key: eval.h.linear}, direction: greater}\n",
     "a-beats-b: positive_control: only a claim of no effect"),
    ("a positive control naming an undefined condition", "  direction: greater\n  margin: 0.02\n",
     "  direction: equal\n  margin: 0.02\n  positive_control: {a: {condition: cx, key: eval.h.linear}, "
     "b: {condition: cb, key: eval.h.linear}, direction: greater}\n",
     "a-beats-b: positive_control.a: condition 'cx' is not defined"),
    ("a correlation population naming an undefined condition", "  kind: bound\n  at_most: 1.0\n  measured: "
     "{file: results/examples/ex.json, key: loss}", "  kind: correlation\n  direction: less\n  margin: 0.1\n"
     "  runs: {conditions: [ca, cx]}\n  x: eval.h.knn\n  y: eval.h.linear", "small-loss: runs: condition 'cx' is not defined"),
    ("a population kept without named conditions", "  kind: bound\n  at_most: 1.0\n  measured: "
     "{file: results/examples/ex.json, key: loss}", "  kind: correlation\n  direction: less\n  margin: 0.1\n"
     "  runs: {studies: [s]}\n  keep: [supervised]\n  x: eval.h.knn\n  y: eval.h.linear",
     "small-loss: keep: only a population named by its conditions"),
    ("a sequential rule with no further seeds", "  convergence_fraction: 0.5\n", "  convergence_fraction: 0.5\n"
     "  sequential: {stage_one_seeds: 5, further_seeds: 0, seeds_needed_at_most: 15, spending: pocock, "
     "conditions_at_most: 12, first: []}\n",
     "rules: sequential.further_seeds: Input should be greater than or equal to 1"),
    ("a sequential rule putting an unknown claim first", "  convergence_fraction: 0.5\n", "  convergence_fraction: 0.5\n"
     "  sequential: {stage_one_seeds: 5, further_seeds: 10, seeds_needed_at_most: 15, spending: pocock, "
     "conditions_at_most: 12, first: [no-such-claim]}\n",
     "rules.sequential.first: no-such-claim is not a claim id"),
]


@pytest.mark.parametrize("case,old,new,named", REGISTRY_MISTAKES, ids=[c[0] for c in REGISTRY_MISTAKES])
def test_a_registry_mistake_stops_analysis_with_one_line(tmp_path, monkeypatch, capsys, case, old, new, named):
    registry = RULES + "claims:\n" + PAIRED + BOUND
    assert old in registry
    write_world(tmp_path, registry.replace(old, new, 1))
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and named in err, err
    assert not (tmp_path / "reports").exists()


def _delete(path):
    path.unlink()


def _empty(path):
    path.write_text("")


def _truncate(path):
    path.write_text(path.read_text()[:40])


def _drop(field):
    def edit(path):
        record = json.loads(path.read_text())
        del record[field]
        path.write_text(json.dumps(record))
    return edit


def _drop_rung(path):
    record = json.loads(path.read_text())
    del record["at"]["300"]
    path.write_text(json.dumps(record))


RESULT_FAULTS = [
    ("evaluation record deleted", "evaluate", _delete, "missing; rewrite it with `dvc repro -f evaluate@s`"),
    ("training record deleted", "pretrain", _delete, "missing; rewrite it with `dvc repro -f pretrain@s`"),
    ("empty file", "evaluate", _empty, "cannot be read"),
    ("truncated record", "evaluate", _truncate, "cannot be read"),
    ("empty record", "evaluate", lambda p: p.write_text("{}"), "empty record"),
    ("partial record: no eval", "evaluate", _drop("eval"), "partial record, no field 'eval'"),
    ("partial record: a rung missing", "evaluate", _drop_rung, "no evaluation at step 300"),
    ("partial training record", "pretrain", _drop("rung_loss"), "partial record, no field 'rung_loss'"),
    ("no uncalibrated control", "evaluate", _drop("control_uncalibrated"),
     "partial record, no field 'control_uncalibrated'"),
]


@pytest.mark.parametrize("case,stage,fault,named", RESULT_FAULTS, ids=[c[0] for c in RESULT_FAULTS])
def test_a_missing_or_partial_result_stops_analysis_with_one_line(tmp_path, monkeypatch, capsys, case, stage,
                                                                   fault, named):
    write_world(tmp_path)
    path = tmp_path / "results" / stage / "s" / "cb" / "seed_1.json"
    fault(path)
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 1
    assert err.count("\n") == 1 and f"results/{stage}/s/cb/seed_1.json" in err and named in err, err
    assert not (tmp_path / "reports").exists()


def test_params_and_the_committed_registry_reject_duplicate_keys():
    from replication.io import DuplicateKeyError, load_yaml
    with pytest.raises(DuplicateKeyError, match="duplicate key 'a' at line 2"):
        load_yaml("a: 1\na: 2\n")
    assert load_yaml("x: &x {a: 1}\ny: {<<: *x, a: 2}\n")["y"] == {"a": 2}     # a merge may override


def test_a_claims_origin_is_its_sections(tmp_path, monkeypatch, capsys):
    write_world(tmp_path, RULES.replace("origin: literature", "origin: document") + "claims:\n" + PAIRED + BOUND)
    assert run_analyze(tmp_path, monkeypatch, capsys)[0] == 0
    claims = judged_claims(tmp_path)
    assert {c["origin"] for c in claims} == {"document"}


def test_the_committed_registry_is_valid():
    rules, claims, sections, _ = load_registry(REGISTRY)
    assert len(claims) > 80 and rules["alpha"] == 0.025
    assert [s["id"] for s in sections][:4] == ["ntxent-example", "tiny-simclr", "toy2d", "analytic"]


def test_the_sequential_rule_is_read_when_given_and_absent_from_the_rules_digest_when_not(tmp_path):
    """The latest registration's rules digest is the committed registry's; a registry without a
    sequential rule dumps none (registration 2's digest stays the one it registered)."""
    from replication.judge.registration import _digest, load
    assert _digest(load_registry(REGISTRY).rules) == load(ROOT)["rules_sha256"]
    design = ("  sequential: {stage_one_seeds: 5, further_seeds: 10, seeds_needed_at_most: 15, spending: pocock, "
              "conditions_at_most: 12, first: []}\n")
    (tmp_path / "claims.yaml").write_text(RULES.replace("  alpha: 0.025\n", "  alpha: 0.025\n" + design)
                                          + "claims:\n" + PAIRED)
    assert load_registry(tmp_path / "claims.yaml").rules["sequential"] == {
        "stage_one_seeds": 5, "further_seeds": 10, "seeds_needed_at_most": 15, "spending": "pocock",
        "conditions_at_most": 12, "first": []}
    (tmp_path / "claims.yaml").write_text(RULES + "claims:\n" + PAIRED)
    assert "sequential" not in load_registry(tmp_path / "claims.yaml").rules


def test_a_shared_amendment_is_written_out_in_every_claim_that_names_it(tmp_path):
    shared = ("amendments:\n  margin-up:\n    date: '2026-12-01'\n    what: margin 0.01 -> 0.02\n    why: test\n")
    registry = RULES + shared + "claims:\n" + PAIRED.replace(
        "  margin: 0.02\n", "  margin: 0.02\n  amended: [{ref: margin-up, previous_verdict: inconclusive}]\n") + BOUND
    (tmp_path / "claims.yaml").write_text(registry)
    claim = load_registry(tmp_path / "claims.yaml").claims[0]
    assert claim["amended"] == [{"date": "2026-12-01", "what": "margin 0.01 -> 0.02", "why": "test",
                                 "previous_verdict": "inconclusive", "post_registration": False}]


# ---------------------------------------------------------------- records checked, not trusted

def _set_field(key, value):
    def edit(path):
        record = json.loads(path.read_text())
        holder = record
        *parents, last = key.split(".")
        for part in parents:
            holder = holder[part]
        holder[last] = value
        path.write_text(json.dumps(record))
    return edit


def _extra_file(name):
    def edit(path):
        (path.parent / name).write_text(path.read_text())
    return edit


RECORD_FAULTS = [
    ("an accuracy of 750%", "evaluate", _set_field("eval.h.linear", 7.5), "eval.h.linear = 7.5, an accuracy outside"),
    ("a NaN accuracy", "evaluate", _set_field("at.300.h.knn", float("nan")), "at.300.h.knn is nan, not a finite"),
    ("an infinite loss", "pretrain", _set_field("rung_loss.300", float("inf")), "rung_loss.300 is inf"),
    ("trained for other steps", "pretrain", _set_field("config.steps", 30), "config.steps is 30, the resolved configuration says 300"),
    ("an extra seed", "evaluate", _extra_file("seed_9.json"), "seed_9.json: a file the resolved configuration does not expect"),
    ("a stray copy", "evaluate", _extra_file("seed_0 (copy).json"), "seed_0 (copy).json: a file the resolved"),
    ("a text where a number is read", "evaluate", _set_field("eval.h.linear", "ok"), "eval.h.linear is 'ok', not a finite number"),
]


@pytest.mark.parametrize("case,stage,fault,named", RECORD_FAULTS, ids=[c[0] for c in RECORD_FAULTS])
def test_a_record_out_of_range_or_unexpected_stops_analysis_with_one_line(tmp_path, monkeypatch, capsys, case,
                                                                           stage, fault, named):
    write_world(tmp_path)
    fault(tmp_path / "results" / stage / "s" / "cb" / "seed_1.json")
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 1 and err.count("\n") == 1 and named in err, err
    assert not (tmp_path / "reports").exists()


def test_a_results_folder_that_leads_outside_the_repository_is_refused(tmp_path, monkeypatch, capsys):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    write_world(repo)
    (repo / "results" / "evaluate" / "s").rename(outside)
    (repo / "results" / "evaluate" / "s").symlink_to(outside, target_is_directory=True)
    status, err = run_analyze(repo, monkeypatch, capsys)
    assert status == 1 and "results/evaluate/s: leads outside the repository" in err, err
    assert not (repo / "reports").exists() and sorted(p.name for p in outside.iterdir()) == ["ca", "cb"]


def test_an_empty_registry_is_refused(tmp_path, monkeypatch, capsys):
    write_world(tmp_path, RULES + "claims: []\n")
    status, err = run_analyze(tmp_path, monkeypatch, capsys)
    assert status == 2 and "claims: the registry holds no claim" in err


# ---------------------------------------------------------------- the claims file and its shared rules

def test_the_claims_file_opens_with_its_claims_and_the_rules_live_beside_it():
    """analysis/claims.yaml holds the claims only (its first key, after its header); the rules,
    sections and amendments they share are in analysis/rules.yaml, and the two load as one registry."""
    from replication.judge.registry import SHARED_KEYS, rules_path
    first_key = next(line for line in REGISTRY.read_text().splitlines() if line and not line.startswith("#"))
    assert first_key == "claims:"
    assert set(yaml.safe_load(REGISTRY.read_text())) == {"claims"}
    assert set(yaml.safe_load(rules_path(REGISTRY).read_text())) == set(SHARED_KEYS)
    registry = load_registry(REGISTRY)
    assert registry.rules["alpha"] and registry.sections and registry.claims


def test_split_and_single_file_registries_load_alike_and_a_key_in_both_is_refused(tmp_path):
    single = tmp_path / "single" / "claims.yaml"
    single.parent.mkdir()
    single.write_text(RULES + "claims:\n" + PAIRED)
    split = tmp_path / "split" / "claims.yaml"
    split.parent.mkdir()
    split.write_text("claims:\n" + PAIRED)
    (split.parent / "rules.yaml").write_text(RULES)
    assert load_registry(single) == load_registry(split)
    split.write_text(RULES + "claims:\n" + PAIRED)
    with pytest.raises(RegistryError, match=r"claims.yaml: `rules` is also in .*rules.yaml; keep it in .*rules.yaml only"):
        load_registry(split)
