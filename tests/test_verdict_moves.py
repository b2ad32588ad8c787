"""tools.verdict_moves: each moved verdict is given the change that explains it."""
from tools.verdict_moves import cause, markdown

DEFAULTS = {"lr": 0.001, "colour_strength": 1.0}
OLD = {"simclr": {"simclr": {"dataset": "shapes", "lr": 0.001},
                  "simclr_b32": {"dataset": "shapes", "lr": 0.001}}}
NEW = {"simclr": {"simclr": {"dataset": "glyphs100", "lr": 0.001, "colour_strength": 1.0},
                  "simclr_b32": {"dataset": "glyphs100", "lr": 0.0005},
                  "simclr_crop": {"dataset": "glyphs100", "lr": 0.001}}}
RECORDS = "results/evaluate/simclr/{}/seed_*.json"


def claim(arm, **rule):
    return {"id": "c", "statement": "s", "arms": {"x": {"files": RECORDS.format(arm), "key": "h.linear"}}, **rule}


def test_a_new_claim_is_a_design():
    assert cause(None, claim("simclr"), OLD, NEW, DEFAULTS) == ("design", "new claim")


def test_an_arm_retrained_with_another_setting_is_a_design():
    assert cause(claim("simclr_b32"), claim("simclr_b32"), OLD, NEW, DEFAULTS) == ("design", "arms simclr_b32 (lr)")
    assert cause(claim("simclr_crop"), claim("simclr_crop"), OLD, NEW, DEFAULTS) == ("design", "arms simclr_crop (new arm)")


def test_a_changed_rule_is_judging_and_wording_is_nothing():
    old, new = claim("simclr", margin=2.0, statement="a"), claim("simclr", margin=1.0, statement="b")
    assert cause(old, new, OLD, NEW, DEFAULTS) == ("judging", "rule margin")


def test_the_dataset_and_knobs_at_their_defaults_leave_data_and_evaluation():
    assert cause(claim("simclr"), claim("simclr"), OLD, NEW, DEFAULTS) == ("data and evaluation", "")
    every_arm = claim("*")
    assert cause(every_arm, every_arm, OLD, NEW, DEFAULTS)[1].startswith("arms simclr_b32 (lr); simclr_crop")


def test_the_table_counts_causes_and_newly_tested_claims():
    text = markdown([("c", "not tested", "reproduced", "design", "new claim")], ["gone"], ["c"], 3)
    assert "| c | not tested | reproduced | design | new claim |" in text
    assert "1 of 3 verdicts moved: 1 design." in text and "Claims removed: gone." in text
    assert text.endswith("with a measured verdict now: 1.")


def test_new_arms_cost_steps_to_their_last_rung_times_batch_over_every_seed(tmp_path):
    import json
    from tools.verdict_moves import arm_costs
    (tmp_path / "resolved/pretrain").mkdir(parents=True)
    (tmp_path / "resolved/pretrain/batch.json").write_text(json.dumps({"seeds": [0, 1, 2], "conditions": {
        "kept": {"steps": 300, "ladder": [], "batch": 128},
        "ladder": {"steps": 100, "ladder": [400, 1600], "batch": 32}}}))
    run = tmp_path / "results/pretrain/batch/ladder/seed_0.json"
    run.parent.mkdir(parents=True)
    run.write_text(json.dumps({"wall_s": 90.0, "cpu": "cpu A"}))
    rows, dropped = arm_costs({"kept", "gone"}, tmp_path)
    assert rows == [("ladder", "batch", "1,600 x 32", 1600 * 32 * 3, 1.5, "cpu A")] and dropped == ["gone"]
