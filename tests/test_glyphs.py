"""glyphs100 (src/contrastive/glyphs.py): determinism, format, class structure, balance; its
manifest (superclasses, same-class share), its checks on disk, and strict params."""
import json

import pytest
import torch
import yaml

from contrastive.data import DataError, build_dataset
from contrastive.glyphs import (ACCENTS, BASES, CLASSES, SUPERCLASS, SUPERCLASSES, balanced_labels,
                                build_glyphs, make_glyphs, templates)
from helpers import ROOT, data_params
from replication.run.config import load_params
from replication.run.datasets import load_dataset, same_class_share, save_dataset

KNOBS = data_params().glyphs100          # params.yaml's knobs


def small(seed, n_train=200, n_test=50):
    return build_glyphs(data_params(glyphs100={"seed": seed, "n_train": n_train, "n_test": n_test}).glyphs100)


def test_the_same_seed_gives_bit_identical_data():
    a, b = small(3), small(3)
    for key in ("x_train", "y_train", "x_test", "y_test"):
        assert torch.equal(a[key], b[key])
    assert a["classes"] == b["classes"] and a["superclass"] == b["superclass"]


def test_other_seeds_give_other_images_and_orders():
    a, b = small(3), small(4)
    assert not torch.equal(a["x_train"], b["x_train"])
    assert not torch.equal(a["y_train"], b["y_train"])


def test_images_do_not_depend_on_the_chunk_size():
    x1, y1 = make_glyphs(70, torch.Generator().manual_seed(1), KNOBS, chunk=1000)
    x2, y2 = make_glyphs(70, torch.Generator().manual_seed(1), KNOBS, chunk=16)
    assert torch.equal(y1, y2) and torch.allclose(x1, x2, atol=1e-6)


def test_format_matches_shapes():
    d = small(0)
    assert d["x_train"].shape == (200, 3, 32, 32) and d["x_test"].shape == (50, 3, 32, 32)
    assert d["x_train"].dtype == torch.float32 and d["y_train"].dtype == torch.int64
    assert 0 <= d["x_train"].min() and d["x_train"].max() <= 1
    assert d["classes"] == CLASSES and len(d["superclass"]) == len(CLASSES)
    assert d["superclasses"] == SUPERCLASSES


def test_a_hundred_classes_in_ten_families_of_ten():
    assert len(CLASSES) == 100 and len(set(CLASSES)) == 100
    assert len(SUPERCLASSES) == len(BASES) == 10 and len(ACCENTS) == 10
    assert torch.bincount(torch.tensor(SUPERCLASS)).tolist() == [10] * 10


def test_labels_come_in_balanced_blocks():
    y = small(0, n_train=300)["y_train"]
    for block in y.view(3, 100):
        assert sorted(block.tolist()) == list(range(100))
    assert torch.bincount(y[:200], minlength=100).tolist() == [2] * 100   # k labels per class in the first k x 100
    assert same_class_share(torch.arange(100).repeat(2)) == 200 / (200 * 199)   # each has one partner


def test_tiny_generation():
    x, y = make_glyphs(3, torch.Generator().manual_seed(0), KNOBS)
    assert x.shape == (3, 3, 32, 32) and len(set(y.tolist())) == 3
    x, y = make_glyphs(0, torch.Generator().manual_seed(0), KNOBS)
    assert x.shape == (0, 3, 32, 32) and y.shape == (0,)
    assert balanced_labels(5, 100, torch.Generator().manual_seed(0)).shape == (5,)


def test_classes_of_one_family_are_more_alike_than_across_families():
    t = templates().reshape(len(CLASSES), -1)
    t = t - t.mean(1, keepdim=True)
    r = (t / t.norm(dim=1, keepdim=True)) @ (t / t.norm(dim=1, keepdim=True)).T   # pixel correlation
    family = torch.tensor(SUPERCLASS)
    same = family[:, None] == family[None, :]
    others = ~torch.eye(len(CLASSES), dtype=torch.bool)
    within, across = r[same & others].mean(), r[~same].mean()
    assert within > across + 0.3
    assert r[others].max() < 0.99                     # no two classes are drawn alike


def test_every_class_is_drawn_and_accents_are_visible():
    t = templates()
    assert (t.flatten(1).sum(1) > 20).all()
    for family in range(10):                          # the accent changes the template
        rows = t[family * 10:(family + 1) * 10].flatten(1)
        assert (torch.cdist(rows, rows) + torch.eye(10) * 1e3).min() > 1


def test_nuisances_vary_and_can_be_switched_off():
    plain = KNOBS.model_copy(update={"clutter": 0, "texture": 0.0, "noise": 0.0})
    x, _ = make_glyphs(40, torch.Generator().manual_seed(0), plain)
    noisy, _ = make_glyphs(40, torch.Generator().manual_seed(0), KNOBS)
    assert x.mean((2, 3)).std(0).min() > 0.05         # colour and brightness vary between images
    assert not torch.equal(x, noisy)


def test_images_do_not_depend_on_the_thread_count():
    previous = torch.get_num_threads()
    try:
        images = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            images.append(make_glyphs(150, torch.Generator().manual_seed(2), KNOBS)[0])
    finally:
        torch.set_num_threads(previous)
    assert torch.equal(*images)


# ---------------------------------------------------------------- the dataset on disk

def saved(folder, seed):
    """glyphs100 built as the data stage builds it (small), saved with its manifest; the manifest."""
    params = data_params(glyphs100={"seed": seed, "n_train": 200, "n_test": 50})
    save_dataset(build_dataset("glyphs100", params), "glyphs100", folder, same_class=params.same_class)
    return json.loads((folder / "glyphs100.json").read_text())


def test_the_file_is_a_function_of_the_seed(tmp_path):
    a, again, other = (saved(tmp_path / name, seed) for name, seed in (("a", 5), ("again", 5), ("other", 6)))
    assert a["sha256"] == again["sha256"]
    assert (tmp_path / "a/glyphs100.pt").read_bytes() == (tmp_path / "again/glyphs100.pt").read_bytes()
    assert other["sha256"] != a["sha256"]


def test_the_superclass_of_each_class_is_its_family():
    """Class c is family c // 10's base with accent c % 10, and its name says so."""
    assert SUPERCLASS == [c // len(ACCENTS) for c in range(100)]
    accents = list(ACCENTS)
    for c, name in enumerate(CLASSES):
        assert name == f"{SUPERCLASSES[SUPERCLASS[c]]} + {accents[c % 10]}"
    # drawn: a class's template shares more ink with its own family's base than with any other family's
    ink = templates().flatten(1)
    base = torch.stack([ink[f * 10:(f + 1) * 10].amin(0) for f in range(10)])   # ink all ten accents share
    overlap = ink @ base.T / base.sum(1)                                         # (100, 10)
    assert overlap.argmax(1).tolist() == SUPERCLASS


def test_the_manifest_records_superclasses_and_the_same_class_share(tmp_path):
    manifest = saved(tmp_path, 0)
    assert manifest["classes"] == CLASSES
    assert manifest["superclass"] == SUPERCLASS and manifest["superclasses"] == SUPERCLASSES
    assert manifest["counts"]["train"] == [2] * 100 and sum(manifest["counts"]["test"]) == 50
    share = manifest["same_class_negatives"]
    assert (share["batch"], share["batches"]) == (128, data_params().same_class.batches)
    assert share["analytic"] == pytest.approx(0.01, abs=1e-15)      # 100 equal classes: sum of 100 x 0.01^2
    assert share["per_anchor"] == pytest.approx(1.27, abs=1e-12)    # 127 other draws x 0.01
    assert abs(share["measured"] - share["analytic"]) < 4 * share["measured_se"]
    loaded = load_dataset("glyphs100", tmp_path)
    assert loaded["superclass"] == SUPERCLASS and loaded["superclasses"] == SUPERCLASSES


NAMED = {"no dataset": r"glyphs100\.pt: missing",
         "no manifest": r"glyphs100\.json: missing",
         "another file's bytes": r"glyphs100\.pt: contents do not match the sha256 in .*glyphs100\.json",
         "manifest not JSON": r"glyphs100\.json: not a dataset manifest",
         "manifest without sha256": r"glyphs100\.json: not a dataset manifest"}


@pytest.mark.parametrize("damage", NAMED)
def test_a_wrong_or_missing_file_is_refused_naming_it(tmp_path, damage):
    saved(tmp_path, 0)
    data, manifest = tmp_path / "glyphs100.pt", tmp_path / "glyphs100.json"
    if damage == "no dataset":
        data.unlink()
    elif damage == "no manifest":
        manifest.unlink()
    elif damage == "another file's bytes":
        save_dataset(build_dataset("shapes4", data_params(shapes4={"n_train": 10, "n_test": 10})), "shapes4", tmp_path)
        data.write_bytes((tmp_path / "shapes4.pt").read_bytes())
    elif damage == "manifest not JSON":
        manifest.write_text(manifest.read_text()[:40])
    else:
        manifest.write_text(json.dumps({"file": str(data)}))
    with pytest.raises(DataError, match=NAMED[damage] + ".*dvc repro -f data"):
        load_dataset("glyphs100", tmp_path)


# ---------------------------------------------------------------- strict params

@pytest.mark.parametrize("key,value", [
    ("rotation", "15"),          # text for a number
    ("part_drop", 1.5),          # a probability above 1
    ("n_train", 2000.0),         # a float for a count
    ("clutter", -1),
    ("noise", float("nan")),
    ("jiter", 0.04),             # a typo: unknown key
])
def test_a_bad_glyphs100_value_stops_with_one_line_naming_the_key(tmp_path, capsys, key, value):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["data"]["glyphs100"][key] = value
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(SystemExit) as stop:
        load_params(tmp_path / "params.yaml")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    assert f"data.glyphs100.{key}: " in err, err


def test_the_same_class_settings_are_checked_too(tmp_path, capsys):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["data"]["same_class"]["batches"] = 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(SystemExit):
        load_params(tmp_path / "params.yaml")
    assert "data.same_class.batches: " in capsys.readouterr().err
