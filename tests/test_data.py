"""Datasets: the documents' generator seed for seed, manifests, loaders and their errors."""
import json

import pytest
import torch

from contrastive.augment import augment
from contrastive.data import (SHAPES_CLASSES, DataError, _glyph_masks, build_dataset, load_cifar10,
                              load_imagefolder, make_shapes, make_shapes4)
from helpers import data_params
from replication.run.config import SameClassShare
from replication.run.datasets import GENERATED, load_dataset, same_class_share, save_dataset


@pytest.fixture
def two_threads():
    """The float32 sums below were recorded at two torch threads; a sum's last bits depend on it."""
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_shapes4_reproduces_the_article_generator(two_threads):
    # values recorded from the article's make_images(20, Generator().manual_seed(3))
    x, y = make_shapes4(20, torch.Generator().manual_seed(3))
    assert y.tolist() == [2, 0, 1, 3, 0, 0, 0, 1, 1, 3, 2, 3, 1, 1, 2, 1, 3, 2, 0, 0]
    assert x.sum().item() == 12608.2197265625
    assert x[0, 0, 16, 16].item() == 0.3313031494617462
    assert x[5].sum().item() == 898.4786376953125


def test_augment_reproduces_the_article_draws(two_threads):
    x, _ = make_shapes4(20, torch.Generator().manual_seed(3))
    # the article's augment(x, Generator().manual_seed(5)) sums to this
    assert augment(x, torch.Generator().manual_seed(5)).sum().item() == 13788.7734375


def test_augment_blur_is_drawn_after_the_default_sequence():
    x, _ = make_shapes4(8, torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    plain = augment(x, g)
    blurred = augment(x, torch.Generator().manual_seed(1), blur=True)
    assert plain.shape == blurred.shape and not torch.equal(plain, blurred)


def test_without_colour_augmentation_every_pixel_keeps_its_hue():
    """colour=False crops and flips only: a pixel's channel ratios survive (jitter's per-channel
    gains and grayscale would change them)."""
    x = torch.tensor([0.2, 0.5, 0.8])[None, :, None, None].expand(6, 3, 16, 16).clone()
    plain = augment(x, torch.Generator().manual_seed(0), colour=False)
    lit = plain[:, 2] > 0
    torch.testing.assert_close(plain[:, 0][lit] / plain[:, 2][lit], torch.full_like(plain[:, 0][lit], 0.25))
    jittered = augment(x, torch.Generator().manual_seed(0))
    assert not torch.allclose(jittered[:, 0][lit] / jittered[:, 2][lit].clamp(min=1e-6), plain[:, 0][lit] / plain[:, 2][lit])


def test_no_glyph_survives_a_quarter_turn():
    axis = torch.linspace(-1, 1, 64)
    v, u = torch.meshgrid(-axis, axis, indexing="ij")
    masks = _glyph_masks(u[None], v[None])[:, 0].float()          # (10, 64, 64)
    for k in range(len(SHAPES_CLASSES)):
        for turns in (1, 2, 3):
            differ = (torch.rot90(masks[k], turns) != masks[k]).float().mean().item()
            assert differ > 0.02, (SHAPES_CLASSES[k], turns)


def test_shapes_is_deterministic_and_in_range():
    a, ya = make_shapes(30, torch.Generator().manual_seed(0))
    b, yb = make_shapes(30, torch.Generator().manual_seed(0))
    assert torch.equal(a, b) and torch.equal(ya, yb)
    assert a.min() >= 0 and a.max() <= 1 and a.shape == (30, 3, 32, 32)


def small_params():
    return data_params(shapes={"n_train": 20, "n_test": 10}, shapes4={"n_train": 10, "n_test": 10})


def test_manifest_records_shape_classes_counts_and_hash(tmp_path):
    save_dataset(build_dataset("shapes", small_params()), "shapes", tmp_path, same_class=small_params().same_class)
    manifest = json.loads((tmp_path / "shapes.json").read_text())
    assert manifest["shape"]["train"] == [20, 3, 32, 32] and sum(manifest["counts"]["test"]) == 10
    assert manifest["classes"] == SHAPES_CLASSES and len(manifest["sha256"]) == 64
    assert "superclass" not in manifest                    # only glyphs100 has superclasses
    freq = torch.tensor(manifest["counts"]["train"], dtype=torch.float64) / 20
    assert manifest["same_class_negatives"]["analytic"] == pytest.approx((freq**2).sum().item(), abs=1e-12)
    assert torch.equal(load_dataset("shapes", tmp_path)["x_train"], build_dataset("shapes", small_params())["x_train"])


def test_same_class_share_counts_ordered_pairs_of_other_positions():
    assert same_class_share(torch.tensor([0, 0, 1, 2])) == 2 / 12       # (0, 1) and (1, 0) of 4 x 3
    assert same_class_share(torch.tensor([5, 5, 5])) == 1.0
    assert same_class_share(torch.arange(7)) == 0.0


def test_the_manifest_same_class_share_matches_its_closed_form(tmp_path):
    """Constructed training labels with counts 600, 300, 100: two draws with replacement agree in
    class with probability 0.6^2 + 0.3^2 + 0.1^2 = 0.46 (without replacement it would be 0.4595)."""
    labels = torch.tensor([0] * 600 + [1] * 300 + [2] * 100)[torch.randperm(1000, generator=torch.Generator().manual_seed(0))]
    dataset = {"x_train": torch.zeros(1000, 3, 2, 2), "y_train": labels, "x_test": torch.zeros(3, 3, 2, 2),
               "y_test": torch.tensor([0, 1, 2]), "classes": ["a", "b", "c"]}
    settings = SameClassShare(batch=64, batches=400, seed=1)
    save_dataset(dataset, "constructed", tmp_path, same_class=settings)
    share = json.loads((tmp_path / "constructed.json").read_text())["same_class_negatives"]
    assert share["analytic"] == pytest.approx(0.46, abs=1e-12)
    assert share["per_anchor"] == pytest.approx(63 * 0.46, abs=1e-12)
    assert abs(share["measured"] - 0.46) < 4 * share["measured_se"] and 0 < share["measured_se"] < 0.003
    save_dataset(dataset, "again", tmp_path, same_class=settings)                # the draws are seeded
    assert json.loads((tmp_path / "again.json").read_text())["same_class_negatives"] == share


def test_the_data_stage_builds_every_generated_dataset():
    assert GENERATED[0] == "glyphs100"                                          # the study's default
    tiny = data_params(shapes={"n_train": 10, "n_test": 10}, shapes4={"n_train": 10, "n_test": 10},
                       glyphs100={"n_train": 10, "n_test": 10})
    for name in GENERATED:
        d = build_dataset(name, tiny)
        assert d["x_train"].shape[1:] == (3, 32, 32) and int(d["y_train"].max()) < len(d["classes"])
    with pytest.raises(DataError, match="imagefolder: not a generated dataset"):
        build_dataset("imagefolder", tiny)


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupted_dataset_is_refused_with_the_fix(tmp_path, damage):
    path = save_dataset(build_dataset("shapes4", small_params()), "shapes4", tmp_path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2] if damage == "truncate" else raw[:-1] + bytes([raw[-1] ^ 1]))
    with pytest.raises(DataError, match=r"shapes4\.pt.*sha256.*dvc repro -f data"):
        load_dataset("shapes4", tmp_path)


def test_missing_dataset_names_the_fix(tmp_path):
    with pytest.raises(DataError, match="dvc repro -f data"):
        load_dataset("shapes", tmp_path)


def test_digits_are_real_and_resized():
    d = build_dataset("digits", data_params())
    assert d["x_train"].shape == (1297, 3, 32, 32) and d["x_test"].shape == (500, 3, 32, 32)
    assert sorted(set(d["y_train"].tolist())) == list(range(10))


def write_png(path, size, colour):
    from PIL import Image
    Image.new("RGB", size, colour).save(path)


def test_imagefolder_loads_classes_and_resizes_mixed_sizes(tmp_path):
    for name, colour in (("cats", (255, 0, 0)), ("dogs", (0, 0, 255))):
        (tmp_path / name).mkdir()
        for i, size in enumerate([(20, 20), (40, 30), (32, 32)]):
            write_png(tmp_path / name / f"{i}.png", size, colour)
    (tmp_path / "dogs" / ".DS_Store").write_bytes(b"ignored")
    d = load_imagefolder(tmp_path, size=16, n_test=0.34, seed=0)
    assert d["classes"] == ["cats", "dogs"]
    assert len(d["y_train"]) + len(d["y_test"]) == 6 and d["x_train"].shape[1:] == (3, 16, 16)
    red = d["x_train"][d["y_train"] == 0]
    assert torch.allclose(red[:, 0], torch.ones_like(red[:, 0]))


def test_imagefolder_errors(tmp_path):
    with pytest.raises(DataError, match="not a directory"):
        load_imagefolder(tmp_path / "nowhere")
    with pytest.raises(DataError, match="no class sub-folders"):
        load_imagefolder(tmp_path)
    (tmp_path / "a").mkdir()
    with pytest.raises(DataError, match="is empty"):
        load_imagefolder(tmp_path)
    (tmp_path / "a" / "notes.txt").write_text("not an image")
    with pytest.raises(DataError, match="notes.txt is not an image"):
        load_imagefolder(tmp_path)


def test_cifar10_absent_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="never downloads"):
        load_cifar10(tmp_path)


def test_cifar10_reader_gives_torchvisions_tensors(tmp_path, monkeypatch):
    """load_cifar10 reads the pickles itself; on a file in the same layout it gives what torchvision's
    CIFAR10 gives (with its md5 check, which refuses any but the published files, switched off)."""
    import torchvision.datasets.cifar as tv_cifar
    from torchvision.datasets import CIFAR10
    from tools.gpu_check import make_fake_cifar10
    make_fake_cifar10(tmp_path, per_batch=6, n_test=5)
    monkeypatch.setattr(CIFAR10, "_check_integrity", lambda self: True)
    monkeypatch.setattr(tv_cifar, "check_integrity", lambda *args, **kwargs: True)
    ours = load_cifar10(tmp_path)
    for split, train in (("train", True), ("test", False)):
        theirs = CIFAR10(tmp_path, train=train, download=False)
        assert torch.equal(ours[f"x_{split}"], torch.tensor(theirs.data).permute(0, 3, 1, 2).float() / 255)
        assert ours[f"y_{split}"].tolist() == theirs.targets
    assert ours["classes"] == theirs.classes
