"""Probes on frozen features."""
import math

import pytest
import torch
import torch.nn.functional as F

from contrastive.augment import rotate_by_quarter_turns
from contrastive.evaluate import (knn_accuracy, linear_probe_accuracy, rotation_probe_accuracy, tolerance,
                                  weighted_knn_accuracy)


def test_linear_probe_separates_separable_classes():
    g = torch.Generator().manual_seed(0)
    centres = F.normalize(torch.randn(4, 8, generator=g), dim=1)
    y = torch.randint(0, 4, (400,), generator=g)
    h = F.normalize(centres[y] + 0.05 * torch.randn(400, 8, generator=g), dim=1)
    assert linear_probe_accuracy(h[:200], y[:200], h[200:], y[200:]) == 1.0


def test_knn_majority_vote_toy():
    h_train = F.normalize(torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [0.8, 0.2]]), dim=1)
    y_train = torch.tensor([0, 0, 1, 1, 1])
    h_test = F.normalize(torch.tensor([[1.0, 0.05], [0.05, 1.0]]), dim=1)
    assert knn_accuracy(h_train, y_train, h_test, torch.tensor([0, 1]), k=3) == 1.0
    assert knn_accuracy(h_train, y_train, h_test, torch.tensor([1, 1]), k=3) == 0.5


def test_weighted_knn_matches_hand_computation():
    # one query; neighbours with similarities 0.9 (class 0), 0.8 and 0.7 (class 1)
    h_train = torch.tensor([[0.9, math.sqrt(1 - 0.81)], [0.8, -0.6], [0.7, -math.sqrt(1 - 0.49)]])
    y_train = torch.tensor([0, 1, 1])
    h_test = torch.tensor([[1.0, 0.0]])
    # T = 0.1: class 0 gets e^9 = 8103, class 1 gets e^8 + e^7 = 4077 -> class 0
    assert weighted_knn_accuracy(h_train, y_train, h_test, torch.tensor([0]), k=3, T=0.1) == 1.0
    # T = 1: class 0 gets e^0.9 = 2.46, class 1 gets e^0.8 + e^0.7 = 4.24 -> class 1
    assert weighted_knn_accuracy(h_train, y_train, h_test, torch.tensor([1]), k=3, T=1.0) == 1.0
    # k = 1 ignores the two class-1 neighbours whatever T
    assert weighted_knn_accuracy(h_train, y_train, h_test, torch.tensor([0]), k=1, T=1.0) == 1.0


def test_rotation_probe_reads_rotation_from_an_orientation_feature_and_not_from_noise():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(600, 3, 8, 8, generator=g) * 0.1
    x[:, :, :2, :2] += 1.0                    # a bright top-left corner: rotation moves it

    def corners(images):                      # which corner is bright: encodes the rotation
        c = torch.stack([images[:, :, :2, :2].mean((1, 2, 3)), images[:, :, :2, -2:].mean((1, 2, 3)),
                         images[:, :, -2:, :2].mean((1, 2, 3)), images[:, :, -2:, -2:].mean((1, 2, 3))], 1)
        return F.normalize(c - c.mean(1, keepdim=True), dim=1)

    def noise(images):
        return F.normalize(torch.randn(len(images), 4, generator=torch.Generator().manual_seed(1)), dim=1)

    assert rotation_probe_accuracy(corners, x[:300], x[300:], torch.Generator().manual_seed(2)) > 0.99
    chance = rotation_probe_accuracy(noise, x[:300], x[300:], torch.Generator().manual_seed(2))
    assert 0.15 < chance < 0.35


def test_rotate_by_quarter_turns_matches_rot90():
    x = torch.arange(2 * 1 * 3 * 3, dtype=torch.float32).view(2, 1, 3, 3)
    out = rotate_by_quarter_turns(x, torch.tensor([1, 3]))
    assert torch.equal(out[0], torch.rot90(x[0], 1, (1, 2))) and torch.equal(out[1], torch.rot90(x[1], 3, (1, 2)))


def test_tolerance_is_mean_same_class_similarity():
    h = F.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), dim=1)
    y = torch.tensor([0, 0, 1])
    assert tolerance(h, y) == pytest.approx(0.0)
    assert tolerance(h[[0, 2]], torch.tensor([0, 0])) == pytest.approx(math.sqrt(0.5))


def test_centred_tolerance_removes_global_concentration():
    """Adding the same offset to every feature raises raw tolerance towards 1 but leaves the centred
    measure near where class structure puts it; with no class structure it is 0."""
    from contrastive.evaluate import centred_tolerance
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(200) % 4
    unstructured = torch.nn.functional.normalize(torch.randn(200, 16, generator=gen) + 5.0, dim=1)
    assert tolerance(unstructured, y) > 0.9
    assert abs(centred_tolerance(unstructured, y)) < 0.01
    centres = torch.eye(16)[:4] * 3.0
    clustered = torch.nn.functional.normalize(torch.randn(200, 16, generator=gen) + centres[y], dim=1)
    assert centred_tolerance(clustered, y) > 0.3


def test_mlp_probe_reads_a_label_the_linear_probe_cannot():
    """XOR of two feature signs: no linear separation, one hidden layer separates it."""
    from contrastive.evaluate import mlp_probe_accuracy
    gen = torch.Generator().manual_seed(1)
    h = torch.rand(800, 2, generator=gen) * 2 - 1
    y = ((h[:, 0] > 0) ^ (h[:, 1] > 0)).long()
    linear = linear_probe_accuracy(h[:600], y[:600], h[600:], y[600:], steps=300, l2=0.0)
    mlp = mlp_probe_accuracy(h[:600], y[:600], h[600:], y[600:], steps=300, l2=0.0, hidden=32)
    assert linear < 0.7 and mlp > 0.9


def test_centred_knn_lets_the_class_signal_choose_where_a_common_offset_decides_raw_neighbours():
    """Four classes along +e1, +e2, -e1, -e2, every feature offset by 2 e3 (post-ReLU features share
    such a direction). Classes 0 and 2 are labelled with a strong signal (2), classes 1 and 3 with a
    faint one (0.5); the test images are faint images of classes 0 and 2. Raw cosine pairs a faint
    image with a faint labelled one of another class (16/17 = 0.94 against 0.86); minus the labelled mean
    (a multiple of e3, the classes being symmetric) the signal's direction decides."""
    from contrastive.evaluate import centred_knn_accuracy
    offset = torch.tensor([0.0, 0.0, 2.0])
    h_train = F.normalize(torch.tensor([[2.0, 0, 0], [0, 0.5, 0], [-2.0, 0, 0], [0, -0.5, 0]]) + offset, dim=1)
    y_train = torch.tensor([0, 1, 2, 3])
    h_test = F.normalize(torch.tensor([[0.5, 0, 0], [-0.5, 0, 0]]) + offset, dim=1)
    y_test = torch.tensor([0, 2])
    strong = 4.25 ** 0.5 * 8 ** 0.5                                      # |test| |strong labelled|
    assert (h_test @ h_train.T)[0].tolist() == pytest.approx([5 / strong, 16 / 17, 3 / strong, 16 / 17])
    assert knn_accuracy(h_train, y_train, h_test, y_test, k=1) == 0.0
    assert centred_knn_accuracy(h_train, y_train, h_test, y_test, k=1) == 1.0
    # without the offset the two agree: centring changes nothing that the classes' directions decide
    plain = F.normalize(torch.tensor([[2.0, 0, 0], [0, 0.5, 0], [-2.0, 0, 0], [0, -0.5, 0]]), dim=1)
    plain_test = F.normalize(torch.tensor([[0.5, 0, 0], [-0.5, 0, 0]]), dim=1)
    assert knn_accuracy(plain, y_train, plain_test, y_test, k=1) == 1.0
    assert centred_knn_accuracy(plain, y_train, plain_test, y_test, k=1) == 1.0
    # cosine after centring: a long centred vector does not outvote a short one closer in angle
    # (labelled mean 0; the test point is 6 degrees from class 1's, 39 from class 0's)
    spread = torch.tensor([[3.0, 3.0], [1.0, 0.0], [-3.0, -3.0], [-1.0, 0.0]])
    assert centred_knn_accuracy(spread, y_train, torch.tensor([[1.0, 0.1]]), torch.tensor([1]), k=1) == 1.0


def test_the_balanced_draw_has_exactly_k_of_each_class_seeded():
    from contrastive.data import DataError
    from contrastive.evaluate import balanced_subset
    y = torch.cat([torch.full((n,), c) for c, n in enumerate([5, 10, 30, 7])])[torch.randperm(52)]
    draw = lambda k, seed: balanced_subset(y, k, torch.Generator().manual_seed(seed))
    index = draw(4, 0)
    assert torch.bincount(y[index]).tolist() == [4, 4, 4, 4]
    assert len(set(index.tolist())) == 16 and index.tolist() == sorted(index.tolist())
    assert torch.equal(index, draw(4, 0)) and not torch.equal(index, draw(4, 1))
    assert torch.bincount(y[draw(5, 0)]).tolist() == [5, 5, 5, 5]               # all of the smallest class
    with pytest.raises(DataError, match=r"^evaluate.labels_per_class: 6 labelled images of each class, but class 0 "
                                        r"has 5 training images"):
        draw(6, 0)


def test_the_labelled_set_is_the_balanced_draw_or_the_first_n_labelled():
    from types import SimpleNamespace
    from contrastive.evaluate import labelled_set
    x, y = torch.arange(40.0)[:, None], torch.arange(40) % 4
    p = SimpleNamespace(labels_per_class=None, n_labelled=6, knn_k=5)
    assert torch.equal(labelled_set(x, y, p)[0], x[:6])
    balanced = labelled_set(x, y, SimpleNamespace(labels_per_class=3, n_labelled=6, knn_k=5))
    assert torch.bincount(balanced[1]).tolist() == [3, 3, 3, 3]
    assert torch.equal(balanced[1], y[balanced[0][:, 0].long()])            # images and labels stay paired


def test_the_colour_probe_reads_grayness_from_a_feature_that_encodes_it_and_not_from_brightness():
    """Half of each set turned grayscale (the channel mean). Per-image channel variance is 0 exactly
    for a gray image: probed, ~100%. Mean brightness is the same before and after grayscale: ~50%."""
    from contrastive.evaluate import colour_probe_accuracy, greyed, greyscale
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(1000, 3, 4, 4, generator=gen)
    assert torch.allclose(greyscale(x).mean((1, 2, 3)), x.mean((1, 2, 3)))

    def colourfulness(images):
        return torch.stack([images.var(1).mean((1, 2)), torch.ones(len(images))], 1)

    def brightness(images):
        return torch.stack([images.mean((1, 2, 3)), torch.ones(len(images))], 1)

    _, grey_train, _, grey_test = greyed(brightness, x[:400], x[400:], torch.Generator().manual_seed(1))
    assert (grey_train.sum().item(), grey_test.sum().item()) == (200, 300)     # exactly half of each set
    settings = dict(standardize=True)
    assert colour_probe_accuracy(colourfulness, x[:400], x[400:], torch.Generator().manual_seed(1), **settings) == 1.0
    chance = colour_probe_accuracy(brightness, x[:400], x[400:], torch.Generator().manual_seed(1), **settings)
    assert 0.4 < chance < 0.6


def test_the_uncalibrated_probes_use_the_labelled_and_test_sets_of_every_probe():
    """linear_probes gives evaluate_representation's linear probe on h and z, and the balanced
    labelled set has labels_per_class of each class; the transformation and full-label probes only
    at the budget checkpoint, on the first n_views test images."""
    from types import SimpleNamespace
    from contrastive.evaluate import evaluate_representation, linear_probes
    torch.manual_seed(0)
    f = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 8), torch.nn.ReLU())
    g = torch.nn.Linear(8, 4)
    gen = torch.Generator().manual_seed(0)
    y_train, y_test = torch.arange(120) % 3, torch.arange(60) % 3
    data = {"x_train": torch.rand(120, 3, 2, 2, generator=gen) + y_train[:, None, None, None] * 0.3,
            "y_train": y_train, "x_test": torch.rand(60, 3, 2, 2, generator=gen) + y_test[:, None, None, None] * 0.3,
            "y_test": y_test}
    p = SimpleNamespace(labels_per_class=10, n_labelled=100, n_test=50, n_views=40, probe_steps=30, probe_lr=0.05,
                        probe_l2=1e-3, probe_standardize=True, knn_k=5, wknn_k=20, wknn_t=0.1)
    views = lambda x, gen: x + 0.01 * torch.randn(x.shape, generator=gen)
    every = evaluate_representation(f, g, data, p, 0, views)
    alone = linear_probes(f, g, data, p)
    assert alone == {"h": {"linear": every["h"]["linear"]}, "z": {"linear": every["z"]["linear"]}}
    assert every["protocol"]["n_labelled"] == 30 and every["protocol"]["n_test"] == 50
    assert every["protocol"]["n_views"] == 40
    assert "knn_centred" in every["h"] and not {"colour", "rotation", "linear_full"} & set(every["h"])
    budget = evaluate_representation(f, g, data, p, 0, views, budget=True)
    assert 0 <= budget["z"]["linear_full"] <= 1 and budget["protocol"]["n_full"] == 120
    assert {"colour", "rotation", "rotation_mlp"} <= set(budget["h"])
    assert {k: v for k, v in budget["h"].items() if k in every["h"]} == every["h"]
    cheap = evaluate_representation(f, g, data, p, 0, views, budget=True, cheap=True)
    assert linear_probes(f, g, data, p, cheap=True) == {name: {"linear": cheap[name]["linear"]} for name in "hz"}
    assert {name: set(cheap[name]) for name in "hz"} == {name: set(budget[name]) for name in "hz"}
    assert "cheap" in cheap["protocol"] and "cheap" not in budget["protocol"]
    assert cheap["h"]["tolerance"] == pytest.approx(budget["h"]["tolerance"], abs=0.01)
    # the MLP rotation probe reads float32 features in both (on bf16 ones it moved beyond the pilot's rule)
    assert [cheap[name]["rotation_mlp"] for name in "hz"] == [budget[name]["rotation_mlp"] for name in "hz"]
    # the all-label probe at a checkpoint below the budget (registration 3's every rung): the budget's, alone
    rung = evaluate_representation(f, g, data, p, 0, views, full_labels=True)
    assert {k: v for k, v in rung["h"].items() if k != "linear_full"} == every["h"]
    assert [rung[name]["linear_full"] for name in "hz"] == [budget[name]["linear_full"] for name in "hz"]
    assert rung["protocol"]["n_full"] == 120


@pytest.mark.parametrize("value,named", [(0, "greater than or equal to 1"), (2.0, "valid integer"),
                                         ("20", "valid integer")])
def test_the_label_budget_is_checked_strictly_naming_its_key(value, named):
    import yaml
    from helpers import ROOT
    from replication.run.config import ParamsError, parse_params
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["evaluate"]["labels_per_class"] = value
    with pytest.raises(ParamsError, match=rf"^params.yaml: evaluate.labels_per_class: .*{named}"):
        parse_params(raw)


def test_the_neighbours_are_checked_against_n_labelled_only_when_it_draws_the_labelled_set():
    import yaml
    from helpers import ROOT
    from replication.run.config import ParamsError, parse_params
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["evaluate"].update(n_labelled=100, wknn_k=200)
    raw["profiles"] = {"default": {}}                                  # the others set labels_per_class too
    assert parse_params(raw).evaluate.labels_per_class == 20          # the balanced draw: n_labelled unused
    raw["evaluate"]["labels_per_class"] = None
    with pytest.raises(ParamsError, match=r"evaluate: wknn_k \(200\) must not exceed n_labelled \(100\)"):
        parse_params(raw)


def test_shared_tolerances_equal_the_boolean_index_means_bit_for_bit():
    """tolerances() (one similarity matrix, masked_select) gives exactly what the per-function
    boolean-index formulas gave, so evaluation records stay byte-identical; and None, None when no
    class has two samples."""
    from contrastive.evaluate import class_masks, tolerances
    gen = torch.Generator().manual_seed(0)
    h = torch.nn.functional.normalize(torch.rand(300, 16, generator=gen), dim=1)
    y = torch.randint(0, 7, (300,), generator=gen)
    s = h @ h.T
    same = y[:, None] == y[None, :]
    pairs = same & ~torch.eye(len(y), dtype=torch.bool)
    expected = (s[pairs].mean().item(), (s[pairs].mean() - s[~same].mean()).item())
    assert tolerances(h, class_masks(y)) == expected
    assert tolerances(h[:3], class_masks(torch.tensor([0, 1, 2]))) == (None, None)


def test_exact_tolerances_from_class_sums_equal_the_pair_matrix():
    """tolerances_exact (per-class sums in float64) gives the means over every ordered pair that the
    n x n matrix gives, to float32 rounding; None, None when no class has two samples."""
    from contrastive.evaluate import class_masks, tolerances, tolerances_exact
    gen = torch.Generator().manual_seed(1)
    h = F.normalize(torch.rand(300, 16, generator=gen) + torch.eye(16)[torch.arange(300) % 16], dim=1)
    y = torch.randint(0, 7, (300,), generator=gen)
    assert tolerances_exact(h, y) == pytest.approx(tolerances(h, class_masks(y)), abs=1e-6)
    assert tolerances_exact(h[:3], torch.tensor([0, 1, 2])) == (None, None)


def test_the_written_out_probe_gradient_equals_autograds():
    """softmax_regression_grad in float32 is the gradient autograd takes of the probe's objective,
    whole or summed over blocks of rows."""
    from contrastive.evaluate import softmax_regression_grad
    gen = torch.Generator().manual_seed(2)
    h, y = torch.randn(50, 6, generator=gen), torch.randint(0, 4, (50,), generator=gen)
    W = torch.randn(6, 4, generator=gen, requires_grad=True)
    b = torch.randn(4, generator=gen, requires_grad=True)
    (F.cross_entropy(h @ W + b, y) + 0.01 * (W**2).sum()).backward()
    dW, db = softmax_regression_grad(h, y, W.detach(), b.detach(), 0.01)
    assert torch.allclose(dW, W.grad, atol=1e-6) and torch.allclose(db, b.grad, atol=1e-6)
    dW7, db7 = softmax_regression_grad(h, y, W.detach(), b.detach(), 0.01, block=7)     # 8 blocks, the last of 1
    assert torch.allclose(dW7, W.grad, atol=1e-6) and torch.allclose(db7, b.grad, atol=1e-6)
    dW16, _ = softmax_regression_grad(h, y, W.detach(), b.detach(), 0.01, torch.bfloat16)
    assert torch.allclose(dW16, W.grad, rtol=0.05, atol=1e-3) and not torch.equal(dW16, dW)


def test_the_bf16_probe_fits_what_the_float32_probe_fits():
    """On separable classes both fits classify every held-out point; on overlapping ones the bf16 fit
    (its gradient in two blocks here) lands within a point of the float32 fit."""
    gen = torch.Generator().manual_seed(3)
    centres = F.normalize(torch.randn(10, 16, generator=gen), dim=1)
    for noise, within in ((0.05, 0.0), (0.6, 0.01)):
        y = torch.randint(0, 10, (4000,), generator=gen)
        h = F.normalize(centres[y] + noise * torch.randn(4000, 16, generator=gen), dim=1)
        args = (h[:3000], y[:3000], h[3000:], y[3000:])
        fp32, bf16 = linear_probe_accuracy(*args, standardize=True), linear_probe_accuracy(*args, standardize=True,
                                                                                          bf16=True)
        assert abs(fp32 - bf16) <= within and (noise > 0.1 or fp32 == 1.0)


def test_eval_mode_features_do_not_depend_on_the_images_per_forward_pass():
    """embed's chunk (CHUNK in run 2's evaluation, CHEAP_CHUNK in the cheap one) changes only the time:
    in eval mode BatchNorm uses its running statistics, so each image's features are its own."""
    from contrastive.evaluate import CHEAP_CHUNK, CHUNK, embed
    from contrastive.models import make_encoder, make_head
    torch.manual_seed(4)
    f, g = make_encoder("cnn3"), make_head("mlp", 64)
    with torch.no_grad():
        f(torch.rand(64, 3, 32, 32) * 2)                       # running statistics away from 0 and 1
    x = torch.rand(CHUNK + 100, 3, 32, 32)
    for bf16, atol in ((False, 1e-6), (True, 1e-2)):
        for one, other in zip(embed(f, g, x, CHUNK, bf16), embed(f, g, x, CHEAP_CHUNK, bf16)):
            assert torch.allclose(one, other, rtol=0, atol=atol)
    # in train mode the batch's statistics would make the chunk matter
    f.train()
    assert not torch.allclose(f(x[:CHEAP_CHUNK]), f(x[:CHUNK])[:CHEAP_CHUNK], atol=1e-3)
