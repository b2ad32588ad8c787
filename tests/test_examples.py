"""The documents' own examples: printed numbers to the printed digit, analytic facts exactly."""
import math

import numpy as np
import pytest

from pathlib import Path

from replication.config import read_params
from replication.examples import analytic, ntxent_numpy, tiny_simclr, toy2d


@pytest.fixture(scope="module")
def ntx():
    return ntxent_numpy.run()


def test_ntxent_example_printed_numbers(ntx):
    assert round(ntx["loss"], 4) == 0.6092
    assert ntx["max_grad_error_fd"] <= 1e-8
    assert ntx["max_grad_error_autograd"] <= 1e-12
    assert round(ntx["cos_positive"], 3) == 0.927
    assert [round(c, 3) for c in ntx["cos_negatives"]] == [0.772, 0.809, 0.219, 0.238, 0.066, 0.067]
    printed = {0.05: [0.323, 0.677, 0.000, 0.000, 0.000, 0.000],
               0.2: [0.418, 0.503, 0.026, 0.029, 0.012, 0.012],
               1.0: [0.239, 0.248, 0.137, 0.140, 0.118, 0.118]}
    for row in ntx["per_tau"]:
        assert [round(s, 3) for s in row["shares"]] == printed[row["tau"]]
    assert [round(r["p_positive"], 3) for r in ntx["per_tau"]] == [0.879, 0.476, 0.218]
    assert [round(r["anchor_loss"], 3) for r in ntx["per_tau"]] == [0.129, 0.742, 1.523]


def test_analytic_statements():
    a = analytic.run()
    assert a["layouts"]["max_gap"] < 1e-12
    assert a["indistinguishable"]["loss"] == pytest.approx(math.log(255), abs=1e-12)
    assert a["similarity_gradient"]["max_gradient_gap"] < 1e-12
    assert a["similarity_gradient"]["max_push_pull_gap"] < 1e-12
    gaps = a["zero_temperature"]["max_gap"]
    assert all(x > y for x, y in zip(gaps, gaps[1:])) and gaps[-1] < 1e-3
    assert a["zero_temperature"]["anchors_with_harder_negative"] > 0     # the hinge is not trivially 0
    low, high = a["mi_low"], a["mi_high"]
    assert low["estimate"] <= low["true_mi"] + 3 * low["stderr"] and low["estimate"] > 0.5 * low["true_mi"]
    assert high["estimate"] <= high["log_k"] + 1e-12 and high["true_mi"] > 4 * high["log_k"]
    assert round(a["cap_128_pairs"], 3) == 5.541
    by_k = a["mi_by_k"]
    assert all(step > 0 for step in by_k["increments"]) and by_k["largest_excess_over_true_mi"] < 0
    assert all(e <= log_k + 1e-12 for e, log_k in zip(by_k["estimate"], by_k["log_k"]))


def test_toy2d_gradient_is_exact():
    assert toy2d.gradient_check() < 1e-6


TOY2D = read_params(Path(__file__).resolve().parents[1] / "params.yaml").examples.toy2d


def test_toy2d_training_learns_the_classes():
    r = toy2d.run(0, 0.5, TOY2D)
    assert r["after"]["knn"] >= 0.97 and r["after"]["alignment"] < r["before"]["alignment"] / 2
    pull = toy2d.run(0, 0.5, TOY2D, objective=toy2d.pull_only_objective)
    assert pull["after"]["alignment"] < 0.01 and pull["after"]["uniformity"] > r["after"]["uniformity"]


@pytest.mark.slow
def test_tiny_simclr_seed3_untrained_exact_and_trained_in_printed_range():
    r = tiny_simclr.run(3, threads=1)
    assert (round(r["random"]["linear"], 3), round(r["random"]["knn"], 3)) == (0.288, 0.340)
    assert 0.84 <= r["simclr"]["linear"] <= 0.99 and 0.60 <= r["simclr"]["knn"] <= 0.88
    assert abs(r["loss"] - 3.692) < 0.05          # the printed loss, up to thread/CPU effects
