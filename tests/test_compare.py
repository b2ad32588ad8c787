"""`make compare` / `python -m replication compare`: verdict changes and effect shifts between two judged runs, and with
--causes each moved verdict given the change that explains it."""
import copy
import json
import subprocess
import sys
from pathlib import Path

from replication.cli.compare import arm_costs, causes, compare, markdown, seeds_read
from helpers import judged_claims

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = judged_claims(ROOT)


def test_a_rerun_that_moved_one_effect_and_flipped_one_verdict():
    rerun = copy.deepcopy(CLAIMS)
    moved = next(c for c in rerun if c.get("contrast") and c["contrast"].get("diff_mean") is not None
                 and "contrasts" not in c)
    lo, hi = moved["contrast"]["diff_ci95"]
    moved["contrast"]["diff_mean"] += 2 * (hi - lo) / 2          # two half-widths
    flipped = next(c for c in rerun if c["verdict"] == "exact match")
    flipped["verdict"] = "mismatch"
    lines = compare(CLAIMS, rerun)
    assert lines[0] == f"verdicts: 1 of {len(CLAIMS)} shared claims changed"
    assert f"  {flipped['id']}: exact match -> mismatch" in lines
    shifted = [line for line in lines if moved["id"] in line and "2.00 of the old half-width" in line]
    assert len(shifted) == 1 and shifted[0].lstrip().startswith("!")


def test_identical_files_report_nothing_moved():
    assert compare(CLAIMS, CLAIMS)[:2] == [f"verdicts: 0 of {len(CLAIMS)} shared claims changed",
                                           "effects: 0 moved; 0 by more than the old interval's half-width (marked !)"]


def test_the_command_reads_files_and_git_revisions(tmp_path):
    other = tmp_path / "claims.json"
    other.write_text(json.dumps(CLAIMS))
    result = subprocess.run([sys.executable, "-m", "replication", "compare", "HEAD:reports/claims.json", str(other)],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("verdicts: "), result.stderr


# ---------------------------------------------------------------- causes


DEFAULTS = {"lr": 0.001, "colour_strength": 1.0}
OLD = {"simclr": {"simclr": {"dataset": "shapes", "lr": 0.001, "precision": "fp32"},
                  "simclr_b32": {"dataset": "shapes", "lr": 0.001, "precision": "fp32"},
                  "simclr_long": {"dataset": "shapes", "lr": 0.001, "steps": 300, "precision": "fp32"},
                  "moco": {"method": "moco", "momentum": 0.99, "steps": 300, "precision": "fp32"}}}
NEW = {"simclr": {"simclr": {"dataset": "glyphs100", "lr": 0.001, "colour_strength": 1.0, "precision": "fp32"},
                  "simclr_b32": {"dataset": "glyphs100", "lr": 0.0005, "precision": "fp32"},
                  "simclr_crop": {"dataset": "glyphs100", "lr": 0.001, "precision": "fp32"}},
       "longer": {"simclr_long": {"lr": 0.001, "steps": 2400, "precision": "fp32", "momentum": 0.999},
                  "moco": {"method": "moco", "momentum": 0.999, "steps": 2400, "precision": "bf16"}}}
RECORDS = "results/evaluate/{}/{}/seed_*.json"


def claim(arm, study="simclr", **rule):
    return {"id": "c", "statement": "s", "arms": {"x": {"files": RECORDS.format(study, arm), "key": "h.linear"}}, **rule}


def test_a_new_claim_or_a_new_arm_is_an_arm_changed():
    assert causes(None, claim("simclr"), OLD, NEW, DEFAULTS) == [("arm changed", "new claim")]
    assert causes(claim("simclr_crop"), claim("simclr_crop"), OLD, NEW, DEFAULTS) == [
        ("arm changed", "arms simclr_crop (new arm)")]


def test_an_arm_retrained_with_other_settings_is_tuning_horizon_budget_or_protocol():
    assert causes(claim("simclr_b32"), claim("simclr_b32"), OLD, NEW, DEFAULTS) == [("tuning", "tuning: simclr_b32 (lr)")]
    # found in the study that holds it now; a momentum where the method has none is no change
    assert causes(claim("simclr_long"), claim("simclr_long", "longer"), OLD, NEW, DEFAULTS) == [
        ("budget", "budget: simclr_long (steps)")]
    assert [why for why, _ in causes(claim("moco"), claim("moco", "longer"), OLD, NEW, DEFAULTS)] == [
        "horizon", "budget", "protocol"]
    assert causes(claim("moco"), claim("moco", "longer"), OLD, NEW, DEFAULTS) == [
        ("horizon", "horizon: moco (momentum)"), ("budget", "budget: moco (steps)"),
        ("protocol", "protocol: moco (precision)")]


def test_another_probe_a_new_gate_and_a_changed_rule_are_told_apart_and_wording_is_nothing():
    old, new = claim("simclr", margin=2.0, statement="a"), claim("simclr", margin=1.0, statement="b")
    assert causes(old, new, OLD, NEW, DEFAULTS) == [("rule", "rule margin")]
    probe = claim("simclr")
    probe["arms"]["x"]["key"] = "h.linear_full"
    assert causes(claim("simclr"), probe, OLD, NEW, DEFAULTS) == [("probe", "arms read another figure")]
    gated = claim("simclr", reference=["x"])
    assert causes(claim("simclr"), gated, OLD, NEW, DEFAULTS) == [("gate", "gated arms (reference)")]
    both = {**probe, "reference": ["x"], "margin": 1.0}
    assert [why for why, _ in causes(claim("simclr"), both, OLD, NEW, DEFAULTS)] == ["probe", "gate", "rule"]


def test_a_condition_trained_in_several_studies_is_named_once():
    twice = {"simclr": NEW["simclr"], "other": {"simclr_b32": NEW["simclr"]["simclr_b32"]}}
    assert causes(claim("simclr_b32", "*"), claim("simclr_b32", "*"), OLD, twice, DEFAULTS) == [
        ("tuning", "tuning: simclr_b32 (lr)")]


def test_the_dataset_and_knobs_at_their_defaults_are_no_cause():
    assert causes(claim("simclr"), claim("simclr"), OLD, NEW, DEFAULTS) == []
    every_arm = claim("*")
    found = causes(every_arm, every_arm, OLD, NEW, DEFAULTS)
    assert found[0] == ("arm changed", "arms simclr_crop (new arm)") and found[1][0] == "tuning"


def test_the_seeds_a_claim_read_are_its_largest_contrast():
    assert seeds_read({"contrasts": [{"seeds": [0, 1, 2]}, {"seeds": list(range(15))}]}) == 15
    assert seeds_read({"contrast": {"seeds": [0, 1]}}) == 2 and seeds_read({}) == 0


def test_the_table_counts_causes_and_newly_tested_claims():
    text = markdown([("c", "not tested", "reproduced", "arm changed", "new claim"),
                     ("d", "inconclusive", "reproduced", "tuning + seeds", "arms a (lr); 5 -> 15 seeds")], ["gone"], ["c"], 3)
    assert "| c | not tested | reproduced | arm changed | new claim |" in text
    assert "2 of 3 verdicts moved; by cause (a move may have several): 1 arm changed, 1 tuning, 1 seeds." in text
    assert "Claims removed: gone." in text
    assert text.endswith("with a measured verdict now: 1.")


def test_new_arms_cost_steps_to_their_last_rung_times_batch_over_every_seed(tmp_path):
    from replication.cli.compare import arm_costs
    (tmp_path / "resolved/pretrain").mkdir(parents=True)
    (tmp_path / "resolved/pretrain/batch.json").write_text(json.dumps({"seeds": [0, 1, 2], "conditions": {
        "kept": {"steps": 300, "ladder": [], "batch": 128},
        "ladder": {"steps": 100, "ladder": [400, 1600], "batch": 32}}}))
    run = tmp_path / "results/pretrain/batch/ladder/seed_0.json"
    run.parent.mkdir(parents=True)
    run.write_text(json.dumps({"wall_s": 90.0, "steps_done": 1600, "cpu": "cpu A"}))
    rows, dropped = arm_costs({"kept", "gone"}, tmp_path)
    assert rows == [("ladder", "batch", "1,600 x 32", 1600 * 32 * 3, 1.5, "cpu A")] and dropped == ["gone"]


def test_the_command_gives_causes_against_a_revision():
    result = subprocess.run([sys.executable, "-m", "replication", "compare", "HEAD", "HEAD", "--causes"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "verdicts: 0 of" in result.stdout and "0 of " in result.stdout and "verdicts moved." in result.stdout
