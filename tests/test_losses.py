"""Every loss against a slow loop written from its formula, closed forms, and gradcheck."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from contrastive import losses



@pytest.fixture(autouse=True)
def float64():
    """These checks run in float64 (gradcheck needs it); other test modules keep float32."""
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


def views(n=6, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(n, d, generator=g)
    return z1, z1 + 0.5 * torch.randn(n, d, generator=g)


def cos(a, b):
    return float(a @ b / (a.norm() * b.norm()))


def nt_xent_loop(z1, z2, tau):
    z = [v for pair in zip(z1, z2) for v in pair]          # rows 2i, 2i + 1
    total = 0.0
    for i in range(len(z)):
        j = i ^ 1
        denominator = sum(math.exp(cos(z[i], z[k]) / tau) for k in range(len(z)) if k != i)
        total += -math.log(math.exp(cos(z[i], z[j]) / tau) / denominator)
    return total / len(z)


@pytest.mark.parametrize("tau", [0.05, 0.2, 1.0])
def test_nt_xent_matches_formula(tau):
    z1, z2 = views()
    assert losses.nt_xent(z1, z2, tau).item() == pytest.approx(nt_xent_loop(z1, z2, tau), rel=1e-10)


def test_nt_xent_identical_views_cost_log_2n_minus_1():
    z = torch.ones(7, 3)
    assert losses.nt_xent(z, z, 0.3).item() == pytest.approx(math.log(13), abs=1e-12)


def test_nt_xent_stable_at_tiny_temperature():
    z1, z2 = views()
    assert torch.isfinite(losses.nt_xent(z1, z2, 1e-4))


def test_nt_xent_without_normalisation_uses_dot_products():
    z1, z2 = views()
    scaled = losses.nt_xent(3 * z1, 3 * z2, 0.5, normalize=False)
    assert scaled.item() != pytest.approx(losses.nt_xent(z1, z2, 0.5, normalize=False).item())
    assert losses.nt_xent(3 * z1, 3 * z2, 0.5).item() == pytest.approx(losses.nt_xent(z1, z2, 0.5).item())


def test_info_nce_matches_formula():
    q, k = views()
    queue = torch.randn(9, 5, generator=torch.Generator().manual_seed(1))
    tau, total = 0.2, 0.0
    for i in range(len(q)):
        pos = math.exp(cos(q[i], k[i]) / tau)
        total += -math.log(pos / (pos + sum(math.exp(cos(q[i], n) / tau) for n in queue)))
    assert losses.info_nce(q, k, queue, tau).item() == pytest.approx(total / len(q), rel=1e-10)


def test_info_nce_closed_form_log_m_plus_1():
    q = torch.ones(4, 3)
    assert losses.info_nce(q, q, torch.ones(10, 3), 0.1).item() == pytest.approx(math.log(11), abs=1e-12)


def supcon_loop(z, labels, tau, inside):
    z = F.normalize(z, dim=1)
    per_anchor = []
    for i in range(len(z)):
        positives = [p for p in range(len(z)) if p != i and labels[p] == labels[i]]
        if not positives:
            continue
        denominator = sum(math.exp(float(z[i] @ z[a]) / tau) for a in range(len(z)) if a != i)
        probs = [math.exp(float(z[i] @ z[p]) / tau) / denominator for p in positives]
        per_anchor.append(-math.log(np.mean(probs)) if inside else -np.mean(np.log(probs)))
    return float(np.mean(per_anchor))


@pytest.mark.parametrize("inside", [False, True])
def test_supcon_matches_formula(inside):
    z = torch.randn(10, 4, generator=torch.Generator().manual_seed(2))
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 2, 0, 3, 1])          # class 3: an anchor with no positive
    got = losses.supcon(z, labels, 0.3, inside=inside).item()
    assert got == pytest.approx(supcon_loop(z, labels, 0.3, inside), rel=1e-10)


def test_supcon_inside_at_most_outside():
    for seed in range(5):
        z = torch.randn(12, 4, generator=torch.Generator().manual_seed(seed))
        labels = torch.randint(0, 3, (12,), generator=torch.Generator().manual_seed(seed))
        assert losses.supcon(z, labels, 0.2, inside=True) <= losses.supcon(z, labels, 0.2) + 1e-12


def test_supcon_with_one_positive_per_anchor_is_nt_xent():
    z1, z2 = views()
    z = torch.stack([z1, z2], 1).flatten(0, 1)
    labels = torch.arange(len(z1)).repeat_interleave(2)
    for inside in (False, True):
        assert losses.supcon(z, labels, 0.4, inside).item() == pytest.approx(losses.nt_xent(z1, z2, 0.4).item())


def test_supcon_without_any_positive_is_zero_and_finite():
    z = torch.randn(4, 3, requires_grad=True)
    loss = losses.supcon(z, torch.arange(4), 0.1)
    loss.backward()
    assert loss.item() == 0.0 and torch.isfinite(z.grad).all()


def test_supcon_gradient_finite_with_lonely_anchor():
    z = torch.randn(5, 3, requires_grad=True)
    losses.supcon(z, torch.tensor([0, 0, 1, 1, 2]), 0.1, inside=True).backward()
    assert torch.isfinite(z.grad).all()


def test_alignment_and_uniformity_match_formulas():
    x, y = (F.normalize(v, dim=1) for v in views(8, 3))
    assert losses.alignment(x, y).item() == pytest.approx(
        np.mean([float((a - b).norm() ** 2) for a, b in zip(x, y)]))
    pairs = [math.exp(-2 * float((x[i] - x[j]).norm() ** 2)) for i in range(8) for j in range(i + 1, 8)]
    assert losses.uniformity(x).item() == pytest.approx(math.log(np.mean(pairs)))


def test_collapsed_embeddings_align_perfectly_and_are_least_uniform():
    x = F.normalize(torch.ones(6, 3), dim=1)
    assert losses.alignment(x, x).item() == 0 and losses.uniformity(x).item() == pytest.approx(0)


def pairs_loop(z1, z2):
    """(anchor, positive similarity, [negative similarities]) for the 2N interleaved views."""
    z = [v for pair in zip(z1, z2) for v in pair]
    return [(cos(z[i], z[i ^ 1]), [cos(z[i], z[k]) for k in range(len(z)) if k not in (i, i ^ 1)])
            for i in range(len(z))]


def test_logistic_with_semi_hard_negatives_matches_formula():
    z1, z2 = views(5, 4, seed=3)
    tau, total = 0.5, 0.0
    logsig = lambda x: -math.log1p(math.exp(-x))
    for s_pos, negs in pairs_loop(z1, z2):
        semi = [s for s in negs if s < s_pos]
        total += -logsig(s_pos / tau) + (np.mean([-logsig(-s / tau) for s in semi]) if semi else 0.0)
    assert losses.nt_logistic(z1, z2, tau).item() == pytest.approx(total / 10, rel=1e-10)


def test_margin_triplet_with_facenet_band_matches_formula():
    """Semi-hard negatives lie in FaceNet's band s_pos - margin < s < s_pos; easier ones (below the
    band, hinge zero) must not dilute the mean."""
    z1, z2 = views(5, 4, seed=4)
    margin, total = 0.5, 0.0
    for s_pos, negs in pairs_loop(z1, z2):
        band = [s for s in negs if s_pos - margin < s < s_pos]
        total += np.mean([s - s_pos + margin for s in band]) if band else 0.0
    assert losses.margin_triplet(z1, z2, margin).item() == pytest.approx(total / 10, rel=1e-10)


def test_an_easy_negative_does_not_change_the_semi_hard_triplet_loss():
    z1, z2 = views(5, 4, seed=4)
    s, s_pos, negative = losses._pairs(z1, z2)
    mask = losses.choose_negatives(s, s_pos, negative, "semi_hard", margin=0.5)
    easy = negative & (s <= s_pos[:, None] - 0.5)
    assert easy.any() and not (mask & easy).any() and (mask & ~negative).sum() == 0


def test_margin_triplet_with_the_hardest_negative_matches_formula():
    z1, z2 = views(5, 4, seed=6)
    margin = 0.5
    total = sum(max(0.0, max(negs) - s_pos + margin) for s_pos, negs in pairs_loop(z1, z2))
    assert losses.margin_triplet(z1, z2, margin, "hardest").item() == pytest.approx(total / 10, rel=1e-10)


def test_margin_triplet_with_every_negative_matches_formula():
    z1, z2 = views(5, 4, seed=7)
    margin = 0.5
    total = sum(np.mean([max(0.0, s - s_pos + margin) for s in negs]) for s_pos, negs in pairs_loop(z1, z2))
    assert losses.margin_triplet(z1, z2, margin, "all").item() == pytest.approx(total / 10, rel=1e-10)


def test_siglip_matches_formula():
    z1, z2 = views(4, 3, seed=5)
    log_t, b = torch.tensor(math.log(10.0)), torch.tensor(-10.0)
    total = 0.0
    for i in range(4):
        for j in range(4):
            y = 1 if i == j else -1
            logit = 10 * cos(z1[i], z2[j]) - 10
            total += math.log1p(math.exp(-y * logit))
    assert losses.siglip(z1, z2, log_t, b).item() == pytest.approx(total / 4, rel=1e-10)
    module = losses.SigLIPLoss()            # the paper's t = 10, b = -10
    assert module.b.item() == -10.0 and module.log_t.exp().item() == pytest.approx(10)
    assert {name for name, p in module.named_parameters() if p.requires_grad} == {"log_t", "b"}


def test_debiased_with_zero_prior_is_nt_xent():
    z1, z2 = views()
    assert losses.debiased_nt_xent(z1, z2, 0.5, tau_plus=0.0).item() == pytest.approx(
        losses.nt_xent(z1, z2, 0.5).item())


def test_numpy_twin_matches_torch_and_its_gradient():
    z1, z2 = views()
    u = F.normalize(torch.stack([z1, z2], 1).flatten(0, 1), dim=1)
    loss, dU, _ = losses.nt_xent_numpy(u.numpy(), np.arange(len(u)) ^ 1, 0.3)
    leaf = u.clone().requires_grad_(True)
    torch_loss = losses.nt_xent(leaf[0::2], leaf[1::2], 0.3, normalize=False)
    torch_loss.backward()
    assert loss == pytest.approx(torch_loss.item(), rel=1e-12)
    np.testing.assert_allclose(dU, leaf.grad.numpy(), atol=1e-12)


GRADCHECK = {
    "nt_xent": lambda a, b: losses.nt_xent(a, b, 0.3),
    "nt_xent_unnormalised": lambda a, b: losses.nt_xent(a, b, 0.7, normalize=False),
    "info_nce": lambda a, b: losses.info_nce(a, b, torch.linspace(-1, 1, 15).view(5, 3), 0.3),
    "supcon_out": lambda a, b: losses.supcon(torch.cat([a, b]), torch.tensor([0, 1, 0, 2, 0, 1, 1, 2]), 0.3),
    "supcon_in": lambda a, b: losses.supcon(torch.cat([a, b]), torch.tensor([0, 1, 0, 2, 0, 1, 1, 2]), 0.3, True),
    "alignment": lambda a, b: losses.alignment(a, b),
    "uniformity": lambda a, b: losses.uniformity(a),
    "align_uniform": lambda a, b: losses.align_uniform(a, b),
    "nt_logistic": lambda a, b: losses.nt_logistic(a, b, 0.5),
    "margin_triplet": lambda a, b: losses.margin_triplet(a, b, 0.5),
    "siglip": lambda a, b: losses.siglip(a, b, torch.tensor(1.0), torch.tensor(-2.0)),
    "debiased": lambda a, b: losses.debiased_nt_xent(a, b, 0.5, 0.1),
}


@pytest.mark.parametrize("name", GRADCHECK)
def test_gradcheck(name):
    a, b = (v.clone().requires_grad_(True) for v in views(4, 3, seed=6))
    assert torch.autograd.gradcheck(GRADCHECK[name], (a, b))


def test_siglip_gradcheck_in_its_parameters():
    a, b = views(4, 3, seed=7)
    log_t, bias = torch.tensor(0.5, requires_grad=True), torch.tensor(-1.0, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t, c: losses.siglip(a, b, t, c), (log_t, bias))


def test_masking_all_but_k_negatives_gives_the_loss_of_a_batch_with_k_negatives():
    """Each anchor keeps k of its 2N - 2 negatives: its term equals NT-Xent computed on the anchor,
    its partner and those k views alone (a (k + 1)-way cross-entropy)."""
    gen = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(6, 5, generator=gen, dtype=torch.float64), torch.randn(6, 5, generator=gen, dtype=torch.float64)
    keep = losses.kept_negatives(12, 3, torch.Generator().manual_seed(1))
    assert keep.sum(1).tolist() == [3] * 12 and not keep.diagonal().any()
    assert not keep[torch.arange(12), torch.arange(12) ^ 1].any()
    z = F.normalize(torch.stack([z1, z2], 1).flatten(0, 1), dim=1)
    tau, terms = 0.3, []
    for i in range(12):
        candidates = [i ^ 1] + keep[i].nonzero().flatten().tolist()          # the partner first
        logits = (z[i] @ z[candidates].T) / tau
        terms.append(-torch.log_softmax(logits, 0)[0])
    assert losses.nt_xent(z1, z2, tau, keep=keep).item() == pytest.approx(torch.stack(terms).mean().item(), rel=1e-12)
    every = ~torch.eye(12, dtype=torch.bool)
    assert losses.nt_xent(z1, z2, tau, keep=every).item() == pytest.approx(losses.nt_xent(z1, z2, tau).item(), rel=1e-12)


def test_the_zero_temperature_limit_of_nt_xent_is_the_margin_0_hardest_negative_triplet():
    """tau * NT-Xent(tau) -> mean_i max(0, max_k s_ik - s_ij) as tau -> 0: log-sum-exp becomes a max
    (the error is at most tau log(2N - 1)); that is the margin triplet loss with margin 0 on the
    hardest negative."""
    gen = torch.Generator().manual_seed(3)
    z1, z2 = torch.randn(8, 4, generator=gen, dtype=torch.float64), torch.randn(8, 4, generator=gen, dtype=torch.float64)
    limit = losses.margin_triplet(z1, z2, 0.0, negatives="hardest").item()
    assert limit > 0.05                                            # a case where the hardest negative wins
    for tau in (1e-2, 1e-3, 1e-4):
        assert abs(tau * losses.nt_xent(z1, z2, tau).item() - limit) <= tau * math.log(15) + 1e-12
