"""replication.report.headroom: the dataset's four design targets, read from constructed records."""
import json

from replication.report.headroom import headroom


def write(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def arm(root, study, condition, dataset, control, by_step, seeds=(0, 1), full=0.5):
    for seed in seeds:
        write(root / "results/pretrain" / study / condition / f"seed_{seed}.json", {"config": {"dataset": dataset}})
        at = {"0": {"h": {"linear": control}}, **{str(s): {"h": {"linear": v}} for s, v in by_step.items()}}
        write(root / "results/evaluate" / study / condition / f"seed_{seed}.json",
              {"status": "ok", "control": {"h": {"linear": control}}, "at": at,
               "eval": {"h": {"linear": by_step[min(by_step)], "linear_full": full}}})


def manifest(root, dataset, measured):
    write(root / "data" / f"{dataset}.json", {"same_class_negatives": {
        "batch": 128, "batches": 10, "measured": measured, "analytic": measured, "per_anchor": 1.0}})


def test_a_dataset_with_room_meets_every_target(tmp_path):
    arm(tmp_path, "s", "simclr", "glyphs", control=0.05, by_step={300: 0.2, 2400: 0.31})
    arm(tmp_path, "s", "supcon", "glyphs", control=0.06, by_step={300: 0.8, 2400: 0.9})
    arm(tmp_path, "other", "simclr", "shapes", control=0.5, by_step={300: 0.99})    # another dataset: ignored
    manifest(tmp_path, "glyphs", 0.01)
    rows = headroom(tmp_path, "glyphs", ("s", "simclr"))
    assert [ok for _, _, ok in rows] == [True, True, True, True]
    assert "+15.0 points" in rows[1][1] and "+26.0 points" in rows[1][1]
    assert "90.0% (supcon at 2,400 steps)" in rows[2][1]


def test_each_target_fails_on_its_own(tmp_path):
    arm(tmp_path, "s", "simclr", "glyphs", control=0.31, by_step={300: 0.5, 2400: 0.55})   # gain 24 points
    arm(tmp_path, "s", "supcon", "glyphs", control=0.1, by_step={300: 0.905})
    manifest(tmp_path, "glyphs", 0.021)
    assert [ok for _, _, ok in headroom(tmp_path, "glyphs", ("s", "simclr"))] == [False, False, False, False]


def test_missing_records_hold_nothing(tmp_path):
    assert headroom(tmp_path, "glyphs", ("s", "simclr")) == [("every target", "no evaluated arm on glyphs", None)]
    arm(tmp_path, "s", "supcon", "glyphs", control=0.1, by_step={300: 0.5})
    rows = headroom(tmp_path, "glyphs", ("s", "simclr"))
    assert rows[1][2] is None and rows[3][2] is None and "not in" in rows[3][1]
