"""The documents' analytic statements about InfoNCE, checked numerically in float64."""
import math

import numpy as np
import torch
import torch.nn.functional as F

from contrastive.losses import nt_xent, nt_xent_numpy


def _views(n, d, seed):
    gen = torch.Generator().manual_seed(seed)
    z1 = torch.randn(n, d, generator=gen, dtype=torch.float64)
    return z1, z1 + 0.7 * torch.randn(n, d, generator=gen, dtype=torch.float64)


def concatenated_cross_entropy(z1, z2, tau):
    """InfoNCE as plain categorical cross-entropy, views concatenated [z1; z2] (row i's class is
    i + N, and i - N for the second half), self-similarity masked out."""
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = (z @ z.T / tau).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    return F.cross_entropy(logits, torch.cat([torch.arange(n) + n, torch.arange(n)]))


def layouts_agree(n=32, d=16, tau=0.5, seed=0):
    """The same loss in three layouts: interleaved (library nt_xent), concatenated cross-entropy,
    and the NumPy form with partners i <-> i + N. Returns the values and the largest gap."""
    z1, z2 = _views(n, d, seed)
    u = F.normalize(torch.cat([z1, z2]), dim=1).numpy()
    values = {"interleaved": nt_xent(z1, z2, tau).item(),
              "concatenated_cross_entropy": concatenated_cross_entropy(z1, z2, tau).item(),
              "numpy_halves": float(nt_xent_numpy(u, np.r_[np.arange(n, 2 * n), np.arange(n)], tau)[0])}
    v = list(values.values())
    return {"values": values, "max_gap": max(v) - min(v)}


def indistinguishable_views(n=128, d=16, tau=0.2):
    """An encoder that maps every view to the same point pays log(2N - 1)."""
    z = torch.ones(n, d, dtype=torch.float64)
    return {"n_pairs": n, "loss": nt_xent(z, z, tau).item(), "log_2n_minus_1": math.log(2 * n - 1)}


def similarity_gradient(n=16, d=8, tau=0.3, seed=1):
    """dL/ds_ik from autograd against (P_ik - 1[k = j(i)]) / (2N tau), and the pushes against the pull:
    sum over negatives of P_ik equals 1 - P_ij for every anchor."""
    z1, z2 = _views(n, d, seed)
    z = F.normalize(torch.stack([z1, z2], 1).flatten(0, 1), dim=1)
    s = (z @ z.T).detach().requires_grad_(True)
    logits = (s / tau).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    partner = torch.arange(2 * n) ^ 1
    F.cross_entropy(logits, partner).backward()
    P = torch.softmax(logits, 1).detach()
    expected = (P - F.one_hot(partner, 2 * n)) / (2 * n * tau)
    pull = 1 - P[torch.arange(2 * n), partner]
    push = P.sum(1) - P[torch.arange(2 * n), partner]
    return {"max_gradient_gap": (s.grad - expected).abs().max().item(),
            "max_push_pull_gap": (push - pull).abs().max().item()}


def zero_temperature_limit(taus=(1.0, 0.1, 0.01, 1e-3, 1e-4), n=16, d=8, seed=2):
    """tau * l_i against max(0, s_neg - s_pos) for the most similar negative, per anchor; the largest
    gap over anchors at each tau (it should shrink towards 0 as tau -> 0+)."""
    z1, z2 = _views(n, d, seed)
    z = F.normalize(torch.stack([z1, z2], 1).flatten(0, 1), dim=1)
    s = z @ z.T
    idx = torch.arange(2 * n)
    s_pos = s[idx, idx ^ 1]
    s_neg = s.clone()
    s_neg[idx, idx], s_neg[idx, idx ^ 1] = float("-inf"), float("-inf")
    hinge = (s_neg.max(1).values - s_pos).clamp(min=0)
    gaps = []
    for tau in taus:
        logits = (s / tau).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
        per_anchor = F.cross_entropy(logits, idx ^ 1, reduction="none")
        gaps.append((tau * per_anchor - hinge).abs().max().item())
    return {"taus": list(taus), "max_gap": gaps, "anchors_with_harder_negative": int((hinge > 0).sum())}


def mutual_information_bound(rho, dim, k, n_batches=200, seed=3):
    """log K - InfoNCE with the optimal critic on correlated Gaussians, y = rho x + sqrt(1 - rho^2) e,
    whose mutual information is I = -dim/2 log(1 - rho^2). The estimate should stay below I and
    below log K. Returns the mean estimate, its standard error, I and log K."""
    rng = np.random.default_rng(seed)
    var = 1 - rho**2
    estimates = []
    for _ in range(n_batches):
        x = rng.standard_normal((k, dim))
        y = rho * x + math.sqrt(var) * rng.standard_normal((k, dim))
        # critic: log p(y_j | x_i) up to terms constant in i, the optimal choice
        critic = -((y[None, :, :] - rho * x[:, None, :]) ** 2).sum(-1) / (2 * var)
        critic = torch.tensor(critic.T)                  # row j: candidates x_i for the query y_j
        loss = F.cross_entropy(critic, torch.arange(k)).item()
        estimates.append(math.log(k) - loss)
    return {"rho": rho, "dim": dim, "K": k, "estimate": float(np.mean(estimates)),
            "stderr": float(np.std(estimates, ddof=1) / math.sqrt(n_batches)),
            "true_mi": -dim / 2 * math.log(var), "log_k": math.log(k)}


def bound_by_batch_size(rho=0.99, dim=4, ks=(4, 16, 64, 256, 1024), n_batches=50, seed=4):
    """The InfoNCE bound log K - L with the optimal critic as K grows, for a fixed true mutual
    information well above log K: each larger K certifies more (the bound tightens), never above I.
    Returns the estimates, their increments from one K to the next, and I."""
    rows = [mutual_information_bound(rho, dim, k, n_batches, seed) for k in ks]
    estimates = [r["estimate"] for r in rows]
    return {"rho": rho, "dim": dim, "K": list(ks), "estimate": estimates, "log_k": [r["log_k"] for r in rows],
            "true_mi": rows[0]["true_mi"], "increments": [b - a for a, b in zip(estimates, estimates[1:])],
            "largest_excess_over_true_mi": max(e - rows[0]["true_mi"] for e in estimates)}


def run():
    return {
        "layouts": layouts_agree(),
        "indistinguishable": indistinguishable_views(),
        "similarity_gradient": similarity_gradient(),
        "zero_temperature": zero_temperature_limit(),
        "mi_low": mutual_information_bound(rho=0.8, dim=2, k=255),
        "mi_high": mutual_information_bound(rho=0.999, dim=8, k=255),
        "mi_by_k": bound_by_batch_size(),
        "cap_128_pairs": math.log(2 * 128 - 1),
    }
