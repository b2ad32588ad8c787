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
