"""The loss's limits (src/replication/examples/limits.py) and the printed arithmetic, against
answers computed another way: enumeration, a second closed form, cases with a known value."""
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import binom

from contrastive.losses import nt_xent
from replication.run.config import read_params
from replication.examples import arithmetic, limits

LIMITS = read_params(Path(__file__).resolve().parents[1] / "params.yaml").examples.limits


# ---------------------------------------------------------------- 1. the InfoNCE bound

def joint(symbols, eps):
    """p(x, y) as a table."""
    return ((1 - eps) * np.eye(symbols) + eps / symbols) / symbols


def test_mutual_information_matches_the_joint_table():
    for symbols, eps in [(5, 0.3), (3, 0.9), (64, 0.05)]:
        p = joint(symbols, eps)
        expected = float((p * np.log(p / np.outer(p.sum(1), p.sum(0)))).sum())
        assert limits.mutual_information(symbols, eps) == pytest.approx(expected, abs=1e-12)
    assert limits.mutual_information(16, 1.0) == 0.0
    assert limits.mutual_information(16, 0.0) == pytest.approx(math.log(16), abs=1e-12)


def enumerated_loss(symbols, eps, k, scale):
    """E[-log softmax(critic)_positive] by summing over every x, positive y and K - 1 negatives."""
    p = joint(symbols, eps)
    ratio = p * symbols**2                        # p(x, y) / (p(x) p(y)), uniform marginals
    loss = 0.0
    for x, y in itertools.product(range(symbols), repeat=2):
        for negatives in itertools.product(range(symbols), repeat=k - 1):
            weight = p[x, y] / symbols ** (k - 1)
            scores = scale * np.log(ratio[x, [y, *negatives]])
            loss += weight * (np.logaddexp.reduce(scores) - scores[0])
    return loss


@pytest.mark.parametrize("symbols, eps, k, scale", [(3, 0.4, 3, 1.0), (3, 0.4, 3, 2.0), (2, 0.7, 4, 0.5)])
def test_infonce_loss_equals_enumeration(symbols, eps, k, scale):
    assert limits.infonce_loss(symbols, eps, k, scale) == pytest.approx(
        enumerated_loss(symbols, eps, k, scale), abs=1e-12)


def test_two_closed_forms_of_the_optimal_gap_agree():
    for eps, k in [(0.8, 2), (0.5, 256), (0.05, 4096), (0.0, 16)]:
        mi = limits.mutual_information(64, eps)
        gap = mi - (math.log(k) - limits.infonce_loss(64, eps, k, 1.0))
        assert gap == pytest.approx(limits.optimal_critic_gap(64, eps, k), abs=1e-10)


def test_deterministic_pairs_pay_the_log_of_the_ties():
    """y = x: the positive ties with the negatives that drew the same symbol, L = E log(1 + C)."""
    c = np.arange(256)
    expected = float((binom.pmf(c, 255, 1 / 64) * np.log1p(c)).sum())
    assert limits.infonce_loss(64, 0.0, 256, 1.0) == pytest.approx(expected, abs=1e-12)


def test_sampled_batches_agree_with_the_exact_loss():
    mean, stderr = limits.sampled_infonce_loss(64, 0.5, 16, 2.0, 400, torch.Generator().manual_seed(1))
    assert abs(mean - limits.infonce_loss(64, 0.5, 16, 2.0)) < 4 * stderr


def test_bound_tightness_record():
    record = limits.bound_tightness(LIMITS.mi_bound)
    rows = record["rows"]
    assert all(r["gap"] >= -1e-12 and r["bound"] <= math.log(r["batch_size"]) + 1e-12 for r in rows)
    for eps in LIMITS.mi_bound.eps:          # the optimal critic has the least loss at every K
        for k in LIMITS.mi_bound.batch_sizes:
            here = {r["critic_scale"]: r["loss"] for r in rows if r["eps"] == eps and r["batch_size"] == k}
            assert here[1.0] <= min(here.values()) + 1e-12
    optimal = [r["gap"] for r in rows if r["eps"] == 0.5 and r["critic_scale"] == 1.0]
    assert all(a > b > 0 for a, b in zip(optimal, optimal[1:]))       # closes only as K grows
    tight, near_zero = record["least_loss_when_tight"], record["largest_gap_near_zero_loss"]
    assert tight["gap"] <= LIMITS.mi_bound.tight_within and tight["loss"] > 4      # tight at a large loss
    assert near_zero["loss"] <= LIMITS.mi_bound.zero_loss_within and near_zero["gap"] > 3   # loose at ~0
    assert record["largest_abs_z"] < 4


# ---------------------------------------------------------------- 2. the class-collapse floor

def test_collapsed_loss_small_cases_by_hand():
    antipodal = np.array([[1.0, -1.0], [-1.0, 1.0]])
    # two pairs in one class: all four views at one point, log(2N - 1) = log 3
    assert limits.collapsed_loss([4, 0], antipodal, 0.3) == pytest.approx(math.log(3), abs=1e-12)
    # one pair per class, classes antipodal: the partner against two views at cosine -1
    assert limits.collapsed_loss([2, 2], antipodal, 0.5) == pytest.approx(math.log(1 + 2 * math.exp(-4)), abs=1e-12)
    assert limits.collapsed_floor([2, 2]) == 0.0 and limits.collapsed_floor([6, 2]) == pytest.approx(
        0.75 * math.log(5), abs=1e-12)


def test_collapsed_loss_equals_nt_xent_and_tends_to_the_floor():
    rng = np.random.default_rng(5)
    for pairs, classes in [(16, 3), (64, 8)]:
        labels = rng.integers(0, classes, pairs)
        points = limits.simplex(classes)
        assert np.allclose(points @ points.T, np.where(np.eye(classes), 1, -1 / (classes - 1)))
        z = torch.tensor(points[labels])
        views = 2 * np.bincount(labels, minlength=classes)
        for tau in (1.0, 0.2, 0.05):
            assert nt_xent(z, z, tau).item() == pytest.approx(
                limits.collapsed_loss(views, points @ points.T, tau), abs=1e-12)
        assert limits.collapsed_loss(views, points @ points.T, 1e-3) == pytest.approx(
            limits.collapsed_floor(views), abs=1e-12)


def test_expected_floor_is_the_mean_over_batches():
    assert limits.expected_floor(2, 2) == pytest.approx(0.5 * math.log(3), abs=1e-12)
    rng = np.random.default_rng(0)
    floors = [limits.collapsed_floor(2 * np.bincount(rng.integers(0, 4, 128), minlength=4)) for _ in range(2000)]
    assert abs(np.mean(floors) - limits.expected_floor(128, 4)) < 4 * np.std(floors) / math.sqrt(len(floors))


def test_collapse_record_blog_batch():
    record = limits.collapse_floor(LIMITS.collapse)
    assert record["max_abs_error"] < 1e-12
    blog = next(b for b in record["batches"] if (b["pairs"], b["classes"]) == (128, 4))
    assert blog["expected_same_class_negatives"] == 63.5
    assert abs(blog["expected_floor"] - math.log(64)) < 0.01


# ---------------------------------------------------------------- 3. Wang & Isola at finite M

def test_von_mises_fisher_mean_cosine():
    """On S^2, E[cos] = coth(kappa) - 1/kappa."""
    rng = np.random.default_rng(0)
    mean = np.tile([0.0, 0.0, 1.0], (20000, 1))
    for kappa in (1.0, 10.0):
        x = limits.von_mises_fisher_s2(mean, kappa, rng)
        assert np.allclose(np.linalg.norm(x, axis=1), 1)
        assert x[:, 2].mean() == pytest.approx(1 / math.tanh(kappa) - 1 / kappa, abs=0.01)


def test_finite_negatives_on_one_point():
    """Every embedding at one point: L_M = log(1 + M), the limit is 0, the gap log(1 + 1/M)."""
    u = np.tile([1.0, 0.0, 0.0], (50, 1))
    for m in (1, 16, 1000):
        loss, _, gap, _ = limits.finite_negatives(u, u, 0.5, m, np.random.default_rng(0))
        assert loss == pytest.approx(math.log1p(1 / m), abs=1e-12)
        assert gap == pytest.approx(math.log1p(1 / m), abs=1e-12)


def test_finite_negatives_on_two_antipodal_points():
    """Half the points at +e, half at -e: the gap's exact expectation is a binomial sum."""
    tau, m = 0.5, 8
    u = np.repeat([[1.0, 0, 0], [-1.0, 0, 0]], 1000, axis=0)
    _, _, gap, stderr = limits.finite_negatives(u, u, tau, m, np.random.default_rng(3))
    b = np.arange(m + 1)
    near, far = math.exp(1 / tau), math.exp(-1 / tau)
    exact = float((binom.pmf(b, m, 0.5) * np.log(near / m + (b * near + (m - b) * far) / m)).sum()) \
        - math.log((near + far) / 2)
    assert abs(gap - exact) < 4 * stderr + 1e-12


def test_decomposition_gap_falls_as_one_over_m():
    p = LIMITS.decomposition.model_copy(update={"points": 500, "negatives": [64, 256, 1024]})
    for row in limits.decomposition(p)["by_tau"]:
        gaps = [r["gap"] for r in row["per_m"]]
        assert all(a > b > 0 for a, b in zip(gaps, gaps[1:]))
        assert -1.1 < row["log_log_slope"] < -0.9
        assert row["largest_m_relative_to_prediction"] == pytest.approx(1, abs=0.05)
        assert row["alignment_term"] == pytest.approx(row["alignment"] / (2 * row["tau"]) - 1 / row["tau"])


# ---------------------------------------------------------------- 4. the printed arithmetic

def test_printed_arithmetic():
    values = {k: v["value"] for k, v in arithmetic.run().items()}
    assert values["simclr_negatives_at_8192"] == 16382
    assert values["gap_to_supervised"] == [22.3, 7.0]
    assert values["tiny_simclr_bn_views"] == 256 and values["tiny_simclr_crop_area"] == [0.3025, 1.0]
    assert values["blog_negatives"] == 254 and values["blog_same_class_views"] == 63.5
    assert round(values["blog_log_64"], 2) == 4.16 and round(values["blog_mi_cap"], 3) == 5.541
    assert values["blog_floor_excess"] == pytest.approx(0.0111, abs=1e-4)
