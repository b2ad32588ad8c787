"""glyphs100 (src/replication/glyphs.py): determinism, format, class structure, balance."""
import torch

from helpers import data_params
from replication.glyphs import (ACCENTS, BASES, CLASSES, SUPERCLASS, SUPERCLASSES, balanced_labels,
                                build_glyphs, make_glyphs, same_class_share, templates)

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
