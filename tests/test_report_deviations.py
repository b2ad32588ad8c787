"""The report's setup table (analysis/deviations.yaml): strictly validated, our values read from the
resolved configuration at render time (never typed), a path that resolves to nothing one error
line naming the entry, every string escaped in report.html and claims.md."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from replication.report import deviations as rd
from replication.io import write_json

from test_report_escaping import PAYLOAD, live_markup
from helpers import a_judged_claim

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = ["dataset and image size", "encoder", "optimiser and schedule", "learning rate against batch size",
            "batch sizes", "training length", "crop scale", "colour jitter strength", "blur", "temperature",
            "projection head width", "the probe", "batch normalisation across devices", "MoCo's horizons (queue span, momentum)",
            "precision", "SigLIP's setting"]


def entry(**overrides):
    return {"setting": "batch", "paper": "4,096", "source": "SimCLR, Sec. 2.3",
            "ours": "{pretrain/study:conditions.arm.batch} images", "why": "CPU budget", "claims": ["a-claim"],
            **overrides}


def write_deviations(folder, entries):
    path = folder / "deviations.yaml"
    path.write_text(yaml.safe_dump({"deviations": entries}, sort_keys=False))
    return path


def resolved(folder):
    """A resolved/ folder with one study file (an arm with a few kinds of value) and data.json."""
    write_json(folder / "resolved" / "pretrain" / "study.json", {
        "execution": {"precision": "bf16"}, "conditions": {"arm": {
            "batch": 4096, "lr": 0.001, "blur": False, "ladder": [1200, 2400], "negatives_kept": None,
            "dataset": "glyphs100"}}})
    write_json(folder / "resolved" / "data.json", {"image_size": 32})
    return folder / "resolved"


def one_line_error(tmp_path, entries, claim_ids=("a-claim",), derived=None):
    path = write_deviations(tmp_path, entries)
    with pytest.raises(rd.DeviationError) as e:
        rd.resolve_deviations(rd.load_deviations(path), set(claim_ids), resolved(tmp_path), derived or {}, path)
    message = str(e.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def test_placeholders_are_read_from_the_resolved_files_and_shown_plainly(tmp_path):
    ours = ("{pretrain/study:conditions.arm.dataset} at {data:image_size} x {data:image_size}, batch "
            "{pretrain/study:conditions.arm.batch}, lr {pretrain/study:conditions.arm.lr}, blur "
            "{pretrain/study:conditions.arm.blur}, rungs {pretrain/study:conditions.arm.ladder}, kept "
            "{pretrain/study:conditions.arm.negatives_kept}, {derived:precision}")
    path = write_deviations(tmp_path, [entry(ours=ours)])
    rows = rd.resolve_deviations(rd.load_deviations(path), {"a-claim"}, resolved(tmp_path), {"precision": "fp32"}, path)
    assert rows[0]["ours"] == ("glyphs100 at 32 x 32, batch 4,096, lr 0.001, blur no, rungs 1,200 / 2,400, "
                               "kept none, fp32")
    assert rows[0]["paper"] == "4,096" and rows[0]["claims"] == ["a-claim"]


def test_a_path_that_resolves_to_nothing_is_one_line_naming_the_entry(tmp_path):
    message = one_line_error(tmp_path, [entry(setting="first"), entry(setting="batch sizes",
                                                                      ours="{pretrain/study:conditions.arm.bach}")])
    assert "entry 2 ('batch sizes'): ours: {pretrain/study:conditions.arm.bach} resolves to nothing in " in message
    assert "resolved/pretrain/study.json" in message
    assert "no such file" in one_line_error(tmp_path, [entry(ours="{pretrain/gone:conditions.arm.batch}")])
    assert "resolves to a mapping" in one_line_error(tmp_path, [entry(ours="{pretrain/study:conditions.arm}")])
    assert "{derived:epochs} resolves to nothing" in one_line_error(tmp_path, [entry(ours="{derived:epochs}")])


def test_an_unknown_claim_id_is_one_line_naming_the_entry(tmp_path):
    message = one_line_error(tmp_path, [entry(claims=["a-claim", "renamed-claim"])])
    assert message.endswith("entry 1 ('batch'): claims: 'renamed-claim' is not a claim of reports/claims.json")


@pytest.mark.parametrize("bad, expected", [
    (entry(extra="x"), "entry 1 ('batch'): extra: Extra inputs are not permitted"),
    (entry(ours="128 images"), "needs at least one {file:key.path} placeholder"),
    (entry(ours="{data:image_size} of 128 images"), "holds the typed number '128' outside a placeholder"),
    (entry(ours="{data:image_size}, -10"), "holds the typed number '10'"),
    (entry(claims=[]), "entry 1 ('batch'): claims"),
    (entry(claims="all"), "entry 1 ('batch'): claims"),
    (entry(why=""), "entry 1 ('batch'): why"),
    (entry(paper=4096), "entry 1 ('batch'): paper: Input should be a valid string"),
])
def test_the_file_is_validated_strictly(tmp_path, bad, expected):
    path = write_deviations(tmp_path, [bad])
    with pytest.raises(rd.DeviationError) as e:
        rd.load_deviations(path)
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_names_with_digits_are_not_typed_numbers(tmp_path):
    path = write_deviations(tmp_path, [entry(ours="MoCo v2 in fp32 and bfloat16: {data:image_size}")])
    assert rd.load_deviations(path)[0].ours.startswith("MoCo v2")


def test_a_repeated_setting_a_repeated_key_and_a_missing_file_are_one_line(tmp_path):
    path = write_deviations(tmp_path, [entry(), entry()])
    with pytest.raises(rd.DeviationError, match="setting 'batch' is listed twice"):
        rd.load_deviations(path)
    path.write_text("deviations:\n  - setting: a\n    setting: b\n")
    with pytest.raises(rd.DeviationError, match="not valid YAML") as e:
        rd.load_deviations(path)
    assert "\n" not in str(e.value)
    with pytest.raises(rd.DeviationError, match="missing"):
        rd.load_deviations(tmp_path / "none.yaml")


def test_every_string_is_escaped_in_html_and_markdown(tmp_path):
    quiet = re.sub(r"\d", "x", PAYLOAD)                   # no typed number in `ours`
    write_json(tmp_path / "resolved" / "data.json", {"image_size": 32, "name": "glyphs" + PAYLOAD})
    poisoned = {key: value + PAYLOAD for key, value in entry().items() if key not in ("ours", "claims")}
    path = write_deviations(tmp_path, [{**poisoned, "ours": "{data:name} " + quiet, "claims": ["c" + PAYLOAD]}])
    rows = rd.resolve_deviations(rd.load_deviations(path), {"c" + PAYLOAD}, tmp_path / "resolved", {}, path)
    page = rd.deviations_html(rows)
    assert live_markup(page) == [] and page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 7   # setting twice
    assert "href='#claim-id-" in page                      # an unsafe id becomes a digest in the anchor
    markdown = rd.deviations_markdown(rows)
    table = [line for line in markdown.splitlines() if line.startswith("| batch")]
    assert not re.search(r"(?<!\\)<(script|img)", markdown) and len(table) == 1     # escaped for Markdown: \<script
    assert len(re.split(r"(?<!\\)\|", table[0])) == 7      # the payload's characters never split a cell


def test_all_trained_is_said_in_words(tmp_path):
    path = write_deviations(tmp_path, [entry(claims="all trained")])
    rows = rd.resolve_deviations(rd.load_deviations(path), set(), resolved(tmp_path), {}, path)
    assert "every claim judged on a trained encoder" in rd.deviations_html(rows)


def record(folder, study, condition, seed, precision=None, n_data=20000, n_classes=100, steps=300, batch=128):
    write_json(folder / "results" / "pretrain" / study / condition / f"seed_{seed}.json",
               {"device": "cpu", "n_data": n_data, "n_classes": n_classes, "config": {"steps": steps, "batch": batch},
                **({"precision": precision} if precision else {})})


def test_derived_facts_come_from_the_run_records(tmp_path):
    study, arm = rd.REFERENCE_ARM
    record(tmp_path, Path(study).name, arm, 0)              # a record of the first run: no precision field, fp32
    facts = rd.derived_facts(tmp_path / "results", tmp_path / "resolved")
    assert facts == {"precision": "fp32", "train_images": 20000, "classes": 100, "epochs": 1.9}
    record(tmp_path, "other", "arm", 0, "bf16")
    assert rd.derived_facts(tmp_path / "results")["precision"] == "bf16 and fp32"
    assert rd.derived_facts(tmp_path / "none", tmp_path / "none") == {}


def test_the_committed_file_covers_every_required_setting_with_known_claims():
    entries = rd.load_deviations(ROOT / "analysis" / "deviations.yaml")
    assert [s for s in REQUIRED if s not in {e.setting for e in entries}] == []
    registry = yaml.safe_load((ROOT / "analysis" / "claims.yaml").read_text())
    ids = {c["id"] for c in (registry["claims"] if isinstance(registry, dict) else registry)}
    named = {c for e in entries if e.claims != rd.ALL_TRAINED for c in e.claims}
    assert named and named <= ids, named - ids


def test_the_report_stage_depends_on_every_file_the_committed_file_reads():
    report = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["report"]["deps"]
    entries = rd.load_deviations(ROOT / "analysis" / "deviations.yaml")
    files = {file for e in entries for file, _ in rd.PLACEHOLDER.findall(e.ours) if file != "derived"}
    assert files and {f"resolved/{f}.json" for f in files} <= set(report), files
    assert {"analysis/deviations.yaml", f"resolved/{rd.REFERENCE_ARM[0]}.json", "results/pretrain"} <= set(report)


def test_the_report_stage_stops_with_one_line_and_writes_nothing(tmp_path):
    write_json(tmp_path / "reports" / "claims.json", [a_judged_claim(id="a-claim", verdict="reproduced")])
    resolved(tmp_path)
    (tmp_path / "analysis").mkdir()
    write_deviations(tmp_path / "analysis", [entry(ours="{pretrain/study:conditions.arm.crop_min_side}")])
    (tmp_path / "experiments").mkdir()
    for script in ("render_report.py", "_interpreter.py"):      # the stage and its interpreter check
        (tmp_path / "experiments" / script).write_text((ROOT / "experiments" / script).read_text())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "experiments/render_report.py"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: analysis/deviations.yaml: entry 1 ('batch'): ours: "
                                    "{pretrain/study:conditions.arm.crop_min_side} resolves to nothing")
    assert not (tmp_path / "reports" / "report.html").exists() and not (tmp_path / "reports" / "claims.md").exists()


def test_the_scale_names_the_datasets_the_studies_train_on(tmp_path):
    """miniature() lists each dataset some condition trains on, with its classes, and no other."""
    resolved, data = tmp_path / "resolved", tmp_path / "data"
    (resolved / "pretrain").mkdir(parents=True), data.mkdir()
    file, condition = rd.REFERENCE_ARM
    default = {"dataset": "glyphs", "steps": 2400, "batch": 128}
    write_json(resolved / f"{file}.json", {"conditions": {condition: default}})
    write_json(resolved / "pretrain" / "other.json", {"conditions": {"x": {**default, "dataset": "shapes"}}})
    write_json(resolved / "data.json", {"image_size": 32})
    write_json(resolved / "conditions.json", {"conditions": {"a": {"rungs": [0, 300, 9600]}}})
    for name, n in (("glyphs", 100), ("shapes", 10), ("digits", 10)):
        write_json(data / f"{name}.json", {"classes": list(range(n))})
    text = rd.miniature(resolved, data)
    assert "(glyphs, 100 classes; shapes, 10 classes)" in text and "digits" not in text
    assert "2,400 steps of 128 images" in text and "up to 9,600 steps" in text


# ---------------------------------------------------------------- the levels table (analysis/levels.yaml)

def test_the_levels_table_holds_the_untrained_encoder_then_each_method_with_its_intervals(tmp_path):
    """Constructed records: two seeds of one arm at 40% and 60% (all labels): the mean 50.0 and its
    t-interval; the untrained control first, without the all-label probe; a method without records
    left out; its published figure beside it."""
    from replication.judge.stats import t_interval
    from replication.report import levels
    protocol = {"labels_per_class": 20, "knn_k": 5}
    for seed, full in ((0, 0.4), (1, 0.6)):
        h = {"linear_full": full, "linear": full / 2, "knn": full / 4}
        write_json(tmp_path / f"results/evaluate/s/a/seed_{seed}.json",
              {"control": {"h": {"linear": 0.1, "knn": 0.05}}, "eval": {"h": h, "protocol": protocol},
               "wall_s": 60.0, "threads": 1})
        write_json(tmp_path / f"results/pretrain/s/a/seed_{seed}.json",
              {"config": {"steps": 1000, "batch": 100}, "n_data": 10000, "wall_s": 120.0, "threads": 1})
    methods = [levels.Method(method="A", arm="s/a", published="70% (paper)", source="P"),
               levels.Method(method="B", arm="s/b")]
    table = levels.method_levels(methods, 0.95, root=tmp_path)
    assert list(table.method) == [levels.CONTROL, "A"]
    low, high = t_interval([0.4, 0.6], 0.95)
    row = table.iloc[1]
    assert row.iloc[4] == f"50.0 [{100 * low:.1f}, {100 * high:.1f}]"
    assert row["steps (epochs)"] == "1,000 (10)" and row["CPU-min"] == "6" and row["published"] == "70% (paper) (P)"
    assert table.iloc[0].iloc[4] == "–" and table.iloc[0].iloc[5] == "10.0 [10.0, 10.0]"


def test_the_levels_plot_data_holds_the_tables_figures_as_numbers(tmp_path):
    """The same constructed records as above: reports/levels.csv (`dvc plots show`) gives each
    method's and the untrained encoder's mean and interval per probe, the figures the table prints."""
    from replication.judge.stats import t_interval
    from replication.report import levels
    protocol = {"labels_per_class": 20, "knn_k": 5}
    for seed, full in ((0, 0.4), (1, 0.6)):
        write_json(tmp_path / f"results/evaluate/s/a/seed_{seed}.json",
                   {"control": {"h": {"linear": 0.1, "knn": 0.05}},
                    "eval": {"h": {"linear_full": full, "linear": full / 2, "knn": full / 4}, "protocol": protocol}})
        write_json(tmp_path / f"results/pretrain/s/a/seed_{seed}.json",
                   {"config": {"steps": 1000, "batch": 100}, "n_data": 10000, "wall_s": 120.0, "threads": 1})
    methods = [levels.Method(method="A", arm="s/a"), levels.Method(method="B", arm="s/b")]
    points = levels.level_points(methods, 0.95, root=tmp_path)
    table = levels.method_levels(methods, 0.95, root=tmp_path)
    assert list(points.method) == [levels.CONTROL] * 2 + ["A"] * 3       # the control has no all-label probe
    low, high = t_interval([0.4, 0.6], 0.95)
    full = points[(points.method == "A") & (points.probe == table.columns[4])].iloc[0]
    assert (full.accuracy, full.ci_low, full.ci_high) == pytest.approx((50.0, 100 * low, 100 * high))
    for (_, row), (_, shown) in zip(points.iterrows(), table.set_index("method").loc[list(points.method)].iterrows()):
        assert shown[row.probe] == f"{row.accuracy:.1f} [{row.ci_low:.1f}, {row.ci_high:.1f}]"


def test_a_conditions_stage_two_seeds_count_under_its_study_in_every_levels_table(tmp_path):
    """Seeds 0-1 in the study's folder and 2 in a stage-2 folder: one row of three seeds, under the
    study resolved/conditions.json names, in the benchmark table, the rung table and the headroom arms."""
    from replication.report import headroom, levels
    protocol = {"labels_per_class": 20, "knn_k": 5}
    write_json(tmp_path / "resolved/conditions.json", {"seeds": [0, 1], "conditions": {"a": {"study": "s"}}})
    for seed, folder in ((0, "s"), (1, "s"), (2, "s_stage2")):
        h = {"linear_full": 0.5, "linear": 0.25, "knn": 0.1}
        write_json(tmp_path / f"results/evaluate/{folder}/a/seed_{seed}.json",
                   {"control": {"h": {"linear": 0.1, "knn": 0.05}}, "eval": {"h": h, "protocol": protocol},
                    "at": {"0": {"h": h, "protocol": protocol}}, "status": "ok", "wall_s": 60.0, "threads": 1})
        write_json(tmp_path / f"results/pretrain/{folder}/a/seed_{seed}.json",
                   {"config": {"steps": 1000, "batch": 100, "dataset": "d"}, "n_data": 10000, "wall_s": 120.0,
                    "threads": 1})
    table = levels.method_levels([levels.Method(method="A", arm="s/a")], 0.95, root=tmp_path)
    assert list(table.seeds) == [3, 3] and table.iloc[1]["CPU-min"] == "9"
    rungs = levels.levels(tmp_path)
    assert list(zip(rungs.study, rungs.seeds)) == [("s", 3)]
    assert {k: len(v) for k, v in headroom.arm_records(tmp_path, "d").items()} == {("s", "a"): 3}


@pytest.mark.parametrize("text,said", [("methods: 3\n", "expected `methods:`"),
                                       ("methods:\n  - {method: A, arm: no-slash}\n", "arm"),
                                       ("methods:\n  - {method: A, arm: s/a, colour: red}\n", "colour"),
                                       ("methods: [\n", "not valid YAML")])
def test_a_bad_levels_file_is_one_line_naming_the_key(tmp_path, text, said):
    from replication.report import levels
    path = tmp_path / "levels.yaml"
    path.write_text(text)
    with pytest.raises(levels.LevelsError) as e:
        levels.load_methods(path)
    assert str(e.value).startswith(str(path)) and said in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(levels.LevelsError, match="missing"):
        levels.load_methods(tmp_path / "absent.yaml")


def test_mocos_horizons_are_read_in_steps_from_the_resolved_configuration(tmp_path):
    """K / batch and 1 / (1 - m) against the arm's last rung, on constructed resolved files; the
    rule is shown before our value in both renderings."""
    moco = {"method": "moco", "queue": 1024, "batch": 64, "momentum": 0.99, "steps": 2400, "ladder": [4800]}
    write_json(tmp_path / "pretrain/moco_momentum.json",
               {"conditions": {"moco_m0999": moco, "moco_m0": {**moco, "momentum": 0.0, "queue": 2048}}})
    write_json(tmp_path / "pretrain/simclr_mocov2.json",
               {"conditions": {"mocov2": {**moco, "batch": 128, "queue": 4096, "ladder": []}}})
    facts = rd.horizon_facts(tmp_path)
    assert facts == {"moco_span": 16, "moco_horizon": 100, "moco_share": 2, "moco_span_max": 32,
                     "mocov2_span": 32, "mocov2_horizon": 100, "mocov2_share": 4}
    assert rd.horizon_facts(tmp_path / "none") == {}
    row = {"rule": "K = 16 x batch", "ours": "K = 1,024"}
    assert rd._with_rule(row, str) == "rule: K = 16 x batch; ours: K = 1,024"
    assert rd._with_rule({"rule": None, "ours": "x"}, str) == "x"


def test_the_setup_table_gives_each_methods_learning_rate_as_its_runs_recorded_it():
    trained = [{"lr_used": 0.005335, "config": {"method": "simclr", "loss": "nt_xent"}},
               {"lr_used": 0.0026675, "config": {"method": "simclr", "loss": "nt_xent"}},
               {"lr_used": 0.00070711, "config": {"method": "moco"}},
               {"lr_used": 0.003, "config": {"method": "simclr", "loss": "logistic"}},
               {"config": {"method": "supcon"}}]                  # a record without lr_used names no rate
    assert rd.learning_rates(trained) == "moco 0.000707; simclr 0.00267 / 0.00534; simclr with logistic 0.003"


def test_the_committed_setup_table_names_every_rate_the_runs_trained_at():
    import json
    records = [json.loads(p.read_text()) for p in (ROOT / "results" / "pretrain").glob("*/*/seed_*.json")]
    claims_md = ROOT / "reports" / "claims.md"
    if not records or not claims_md.exists():
        pytest.skip("no committed results")
    row = next(line for line in claims_md.read_text().splitlines() if line.startswith("| optimiser and schedule"))
    for name_and_rates in rd.learning_rates(records).split("; "):      # e.g. 'moco 0.0003 / 0.000707'
        assert name_and_rates in row
    assert all(f"{r['lr_used']:.3g}" in row for r in records)
