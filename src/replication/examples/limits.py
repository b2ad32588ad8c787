"""The loss's limits, measured on constructed data whose answer is known in closed form.

1. The InfoNCE bound I >= log K - L: where its gap closes. Data: x uniform on M symbols, y = x, or
   with probability eps a fresh uniform symbol, so I(x; y) and every loss are exact sums over a
   binomial count. Sampled batches scored by F.cross_entropy check the sums.
2. The floor of a class-collapsed encoder: every view of class c at one point u_c. Its NT-Xent is a
   closed form in the number of views of each class; as tau -> 0 the partner ties with the anchor's
   same-class negatives. Checked against the library's nt_xent on the constructed embeddings.
3. Wang & Isola's decomposition at a finite number M of negatives: L_M - log M against its M -> inf
   limit (an alignment term plus a uniformity term) on fixed embeddings, points of a von Mises-Fisher
   mixture on the sphere S^2, each with a positive drawn around it.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import binom
from scipy.special import xlogy

from contrastive.losses import nt_xent


# ---------------------------------------------------------------- 1. the InfoNCE bound

def density_ratios(symbols, eps):
    """r = p(y|x) / p(y) at a match (y = x) and at a mismatch: M (1 - eps) + eps, and eps."""
    return symbols * (1 - eps) + eps, eps


def mutual_information(symbols, eps):
    """I(x; y) = E log r = q log r_match + (1 - q) log r_mismatch, q = P(y = x) = 1 - eps + eps / M."""
    match, mismatch = density_ratios(symbols, eps)
    q = 1 - eps + eps / symbols
    return float(xlogy(q, match) + xlogy(1 - q, mismatch))


def infonce_loss(symbols, eps, k, scale):
    """Expected InfoNCE over K candidates (the positive y and K - 1 independent draws of y) with the
    critic f = scale * log r, exactly:

        L = E[log(e^f_pos + C e^f_match + (K - 1 - C) e^f_mismatch) - f_pos],

    the positive a match with probability q, C ~ Bin(K - 1, 1/M) negatives matching x by chance.
    scale = 1 is the optimal critic (the Bayes posterior of which candidate is the positive)."""
    match, mismatch = density_ratios(symbols, eps)
    q = 1 - eps + eps / symbols
    with np.errstate(divide="ignore"):                  # log 0 = -inf: an empty count, or r = 0
        f_match, f_mismatch = scale * np.log(match), scale * np.log(mismatch) if mismatch > 0 else -np.inf
        c = np.arange(k)
        log_matching, log_rest = np.log(c) + f_match, np.log(k - 1 - c) + f_mismatch
    weights = binom.pmf(c, k - 1, 1 / symbols)
    loss = 0.0
    for p_positive, f_positive in ((q, f_match), (1 - q, f_mismatch)):
        if p_positive > 0:
            log_denominator = np.logaddexp(f_positive, np.logaddexp(log_matching, log_rest))
            loss += p_positive * float((weights * (log_denominator - f_positive)).sum())
    return loss


def optimal_critic_gap(symbols, eps, k):
    """I - (log K - L) for the optimal critic, a second closed form: E[R log R], R the mean of r over
    K independent draws of y (B ~ Bin(K, 1/M) of them matching x). By Jensen it is zero only where R = 1
    always, that is I = 0, and it shrinks to 0 as K grows (R -> E r = 1)."""
    match, mismatch = density_ratios(symbols, eps)
    b = np.arange(k + 1)
    mean_ratio = (b * match + (k - b) * mismatch) / k
    return float((binom.pmf(b, k, 1 / symbols) * xlogy(mean_ratio, mean_ratio)).sum())


def sampled_infonce_loss(symbols, eps, k, scale, batches, gen):
    """The same loss from sampled batches of K pairs (x_i, y_i): row i scores every y_j with the
    critic and F.cross_entropy takes y_i as the class. Returns (mean, standard error) over batches."""
    match, mismatch = density_ratios(symbols, eps)
    critic = scale * torch.log(torch.tensor([mismatch, match], dtype=torch.float64))   # by y_j == x_i
    losses = []
    for _ in range(batches):
        x = torch.randint(0, symbols, (k,), generator=gen)
        fresh = torch.rand(k, generator=gen) < eps
        y = torch.where(fresh, torch.randint(0, symbols, (k,), generator=gen), x)
        logits = critic[(x[:, None] == y[None, :]).long()]                    # (K, K), positives on the diagonal
        losses.append(F.cross_entropy(logits, torch.arange(k)).item())
    return float(np.mean(losses)), float(np.std(losses, ddof=1) / math.sqrt(batches))


def bound_tightness(p):
    """log K - L against I over the grid (eps x K x critic scale), the Monte Carlo check, and the
    reading of "tight only when the loss reaches zero" with the optimal critic: among settings with
    I > 0 whose gap is at most p.tight_within, the smallest loss; among settings whose loss is at
    most p.zero_loss_within, the largest gap."""
    rows = []
    for eps in p.eps:
        mi = mutual_information(p.symbols, eps)
        for k in p.batch_sizes:
            for scale in p.critic_scales:
                loss = infonce_loss(p.symbols, eps, k, scale)
                rows.append({"eps": eps, "batch_size": k, "critic_scale": scale, "mi": mi, "loss": loss,
                             "bound": math.log(k) - loss, "gap": mi - (math.log(k) - loss)})
    gen = torch.Generator().manual_seed(p.seed)
    checks = []
    for eps in p.eps:
        for k in p.check_batch_sizes:
            for scale in p.critic_scales:
                mean, stderr = sampled_infonce_loss(p.symbols, eps, k, scale, p.check_batches, gen)
                exact = infonce_loss(p.symbols, eps, k, scale)
                # at eps = 1 every batch gives exactly log K: its spread is rounding, hence the floor
                checks.append({"eps": eps, "batch_size": k, "critic_scale": scale, "sampled": mean,
                               "stderr": stderr, "exact": exact, "z": (mean - exact) / max(stderr, 1e-12)})
    optimal = [r for r in rows if r["critic_scale"] == 1.0]         # the best any critic can do
    tight = [r for r in optimal if r["mi"] > 0 and r["gap"] <= p.tight_within]
    near_zero = [r for r in optimal if r["loss"] <= p.zero_loss_within]
    closes = []                       # per eps: the smallest K at which the optimal critic's gap is tight
    for eps in p.eps:
        tight_here = [r for r in tight if r["eps"] == eps]
        first = min(tight_here, key=lambda r: r["batch_size"], default=None)
        closes.append({"eps": eps, "mi": mutual_information(p.symbols, eps),
                       "batch_size": first["batch_size"] if first else None, "loss": first["loss"] if first else None})
    return {
        "rows": rows,
        "optimal_gap_closed_form": [{"eps": eps, "batch_size": k, "gap": optimal_critic_gap(p.symbols, eps, k)}
                                    for eps in p.eps for k in p.batch_sizes],
        "monte_carlo": checks,
        "largest_abs_z": max(abs(c["z"]) for c in checks),
        "closes": closes,
        "least_loss_when_tight": min(tight, key=lambda r: r["loss"], default=None),
        "largest_gap_near_zero_loss": max(near_zero, key=lambda r: r["gap"], default=None),
    }


# ---------------------------------------------------------------- 2. the class-collapse floor

def simplex(classes):
    """C unit vectors as far apart as C points on a sphere can be: pairwise cosine -1/(C - 1)."""
    e = np.eye(classes) - 1 / classes
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def collapsed_loss(views, gram, tau):
    """NT-Xent of an encoder that sends every view of class c to one point u_c, with n_c views of class
    c among the 2N (both views of a pair share its class) and G = the Gram matrix of the points:

        L = (1/2N) sum_c n_c log(n_c - 1 + sum_{d != c} n_d exp((G_cd - 1) / tau)).

    (Anchor of class c: its partner and n_c - 2 same-class negatives at similarity 1, the rest at G_cd.)"""
    views = np.asarray(views, dtype=float)
    present = views > 0
    others = (views[None, :] * np.exp((gram - 1) / tau) * (1 - np.eye(len(views)))).sum(1)
    per_class = views * np.log(np.where(present, views - 1 + others, 1.0))
    return float(per_class.sum() / views.sum())


def collapsed_floor(views):
    """The tau -> 0 limit: (1/2N) sum_c n_c log(n_c - 1). The partner ties with the n_c - 2
    same-class negatives, so it gets at most 1/(n_c - 1) of the softmax."""
    views = np.asarray(views, dtype=float)
    return float(xlogy(views, np.maximum(views - 1, 1)).sum() / views.sum())


def expected_floor(pairs, classes):
    """The floor averaged over batches whose pairs draw their class uniformly: E log(1 + 2B),
    B ~ Bin(N - 1, 1/C) the anchor's same-class pairs (each gives two tied views)."""
    b = np.arange(pairs)
    return float((binom.pmf(b, pairs - 1, 1 / classes) * np.log(1 + 2 * b)).sum())


def collapse_floor(p):
    """For each (pairs N, classes C): a batch with random classes, every view of class c at the
    simplex point u_c; the library's nt_xent at each tau beside the closed form, the tau -> 0 floor,
    and the floor's expectation over batches."""
    rng = np.random.default_rng(p.seed)
    out = []
    for batch in p.batches:
        labels = rng.integers(0, batch.classes, batch.pairs)
        points = simplex(batch.classes)
        z = torch.tensor(points[labels], dtype=torch.float64)          # (N, C): both views at u_c
        views = 2 * np.bincount(labels, minlength=batch.classes)
        gram = points @ points.T
        by_tau = [{"tau": tau, "nt_xent": nt_xent(z, z, tau).item(), "closed_form": collapsed_loss(views, gram, tau)}
                  for tau in p.taus]
        out.append({"pairs": batch.pairs, "classes": batch.classes,
                    "same_class_negatives": float((views[labels] - 2).mean()),
                    "by_tau": by_tau,
                    "max_abs_error": max(abs(r["nt_xent"] - r["closed_form"]) for r in by_tau),
                    "floor": collapsed_floor(views),
                    "expected_floor": expected_floor(batch.pairs, batch.classes),
                    "expected_same_class_negatives": 2 * (batch.pairs - 1) / batch.classes})
    return {"batches": out, "max_abs_error": max(b["max_abs_error"] for b in out)}


# ---------------------------------------------------------------- 3. Wang & Isola at finite M

def von_mises_fisher_s2(mean, kappa, rng):
    """One draw around each row of `mean` (n, 3), unit vectors, with concentration kappa; on S^2 the
    cosine to the mean has the closed-form inverse CDF w = 1 + log(u + (1 - u) e^{-2 kappa}) / kappa."""
    u = rng.random(len(mean))
    w = 1 + np.log(u + (1 - u) * np.exp(-2 * kappa)) / kappa
    tangent = rng.standard_normal(mean.shape)
    tangent -= (tangent * mean).sum(1, keepdims=True) * mean
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    return w[:, None] * mean + np.sqrt(np.clip(1 - w**2, 0, None))[:, None] * tangent


def finite_negatives(u, v, tau, negatives, rng, block=256):
    """L_M - log M and its gap to the M -> inf limit, over anchors u (P, 3) with positives v, M negatives
    drawn uniformly (with replacement) from u:

        L_M - log M = E[-s_pos/tau + log(e^{s_pos/tau}/M + mean_m e^{s_m/tau})],
        limit       = -E[s_pos]/tau + E_x log E_x- e^{s/tau}     (Wang & Isola 2020, Theorem 1),

    with s = u_i . u_j. The gap is averaged with the control variate mean_m e^{s_m/tau} / Z_i - 1 (mean
    zero; Z_i = E_x- e^{s/tau} over the whole population), which removes its first-order noise.
    Returns (L_M - log M, its standard error, gap, its standard error)."""
    similarity = np.exp(u @ u.T / tau)                                 # (P, P): e^{s/tau}
    z = similarity.mean(1)
    positive = (u * v).sum(1) / tau
    raw, corrected = [], []
    for start in range(0, len(u), block):
        rows = slice(start, start + block)
        picked = rng.integers(0, len(u), (len(similarity[rows]), negatives))
        mean_negative = np.take_along_axis(similarity[rows], picked, 1).mean(1)
        log_term = np.log(np.exp(positive[rows]) / negatives + mean_negative)
        raw.append(-positive[rows] + log_term)
        corrected.append(log_term - np.log(z[rows]) - (mean_negative / z[rows] - 1))
    raw, corrected = np.concatenate(raw), np.concatenate(corrected)
    n = len(u)
    return (float(raw.mean()), float(raw.std(ddof=1) / math.sqrt(n)),
            float(corrected.mean()), float(corrected.std(ddof=1) / math.sqrt(n)))


def decomposition(p):
    """L_M - log M against the alignment term -E[s_pos]/tau plus the uniformity term
    E_x log E_x- e^{s/tau}, for M in p.negatives, on fixed embeddings: p.points anchors from a mixture of
    p.classes von Mises-Fisher components (concentration p.class_kappa, uniform random means), each
    with a positive drawn around it (p.view_kappa). The gap's leading term is c / M with
    c = E[e^{s_pos/tau} / Z - Var_x-(e^{s/tau}) / (2 Z^2)] (the positive in the denominator, and Jensen
    on the log of a mean of M), computed on the same embeddings."""
    rng = np.random.default_rng(p.seed)
    centres = rng.standard_normal((p.classes, 3))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    u = von_mises_fisher_s2(centres[rng.integers(0, p.classes, p.points)], p.class_kappa, rng)
    v = von_mises_fisher_s2(u, p.view_kappa, rng)
    out = []
    for tau in p.taus:
        similarity = np.exp(u @ u.T / tau)
        z = similarity.mean(1)
        alignment_term = -float((u * v).sum(1).mean()) / tau
        uniformity_term = float(np.log(z).mean())
        coefficient = float((np.exp((u * v).sum(1) / tau) / z - similarity.var(1) / (2 * z**2)).mean())
        per_m = []
        for m in p.negatives:
            loss, loss_se, gap, gap_se = finite_negatives(u, v, tau, m, rng)
            per_m.append({"negatives": m, "loss_minus_log_m": loss, "loss_stderr": loss_se,
                          "gap": gap, "gap_stderr": gap_se, "m_times_gap": m * gap})
        gaps = np.array([r["gap"] for r in per_m])
        slope = float(np.polyfit(np.log(p.negatives), np.log(gaps), 1)[0]) if (gaps > 0).all() else None
        out.append({"tau": tau, "alignment": float(((u - v) ** 2).sum(1).mean()),
                    "alignment_term": alignment_term, "uniformity_term": uniformity_term,
                    "limit": alignment_term + uniformity_term, "predicted_coefficient": coefficient,
                    "per_m": per_m, "log_log_slope": slope,
                    "largest_m_relative_to_prediction": per_m[-1]["m_times_gap"] / coefficient})
    return {"by_tau": out}


def run(p):
    return {"params": p.model_dump(), "mi_bound": bound_tightness(p.mi_bound),
            "collapse_floor": collapse_floor(p.collapse), "decomposition": decomposition(p.decomposition)}
