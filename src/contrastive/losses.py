"""Contrastive losses, each a few lines of tensor algebra with its formula.

Shapes: z1, z2 (N, d) are the two views of N images (z1[i] and z2[i] are a positive pair);
tau > 0 is the temperature; sim(a, b) = a.b / (|a| |b|) is the cosine similarity. Every loss
is a mean over its anchors. No scale factor is hidden: what is written is what is computed.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def _interleave(z1, z2):
    """(2N, d) with rows 2i and 2i + 1 the two views of image i; row r's partner is r ^ 1."""
    return torch.stack([z1, z2], 1).flatten(0, 1)


def nt_xent(z1, z2, tau, normalize=True, keep=None):
    """SimCLR's NT-Xent (InfoNCE over the batch), mean over the 2N anchors.

        l(i, j) = -log exp(s_ij / tau) / sum_{k != i} exp(s_ik / tau)

    with s = sim (or the raw dot product when normalize=False) over all 2N views, j the partner
    of i, and the other 2N - 2 views as negatives. Computed as a (2N - 1)-way cross-entropy
    (log-sum-exp, so stable at small tau). keep (2N, 2N) bool, optional: the negatives each anchor
    uses (kept_negatives), so that the number of negatives varies while the batch, and with it
    BatchNorm's statistics and the number of updates, stays fixed.
    """
    z = _interleave(z1, z2)
    if normalize:
        z = F.normalize(z, dim=1)
    logits = z @ z.T / tau
    logits.fill_diagonal_(float("-inf"))                 # k != i
    partner = torch.arange(len(z), device=z.device) ^ 1
    if keep is not None:                                 # drop the negatives not kept; the partner stays
        dropped = ~keep
        dropped[torch.arange(len(z)), partner] = False
        logits = logits.masked_fill(dropped, float("-inf"))
    return F.cross_entropy(logits, partner)


def other_class(labels):
    """(2N, 2N) bool over the interleaved views of images with these N labels: True where view k's
    image has another class than view i's, so that nt_xent(keep=...) drops every same-class negative
    (the false negatives that debiasing only corrects for in expectation)."""
    views = labels.repeat_interleave(2)
    return views[:, None] != views[None, :]


def kept_negatives(n_views, k, gen):
    """(n_views, n_views) bool: for each anchor (row) k negatives drawn uniformly without replacement
    from the other n_views - 2 views (not itself, not its partner r ^ 1), from generator `gen`."""
    rows = torch.arange(n_views)
    scores = torch.rand(n_views, n_views, generator=gen)
    scores[rows, rows] = scores[rows, rows ^ 1] = float("inf")     # never chosen
    chosen = scores.topk(k, dim=1, largest=False).indices
    return torch.zeros(n_views, n_views, dtype=torch.bool).scatter_(1, chosen, True)


def contrastive_accuracy(z1, z2, normalize=True):
    """Share of the 2N anchors whose most similar other view is their partner (top-1)."""
    z = _interleave(z1, z2)
    if normalize:
        z = F.normalize(z, dim=1)
    s = z @ z.T
    s.fill_diagonal_(float("-inf"))
    partner = torch.arange(len(z), device=z.device) ^ 1
    return (s.argmax(1) == partner).float().mean().item()


def info_nce(q, k, queue, tau):
    """MoCo's InfoNCE: query q (N, d), its positive key k (N, d), negatives queue (K, d).

        L = -mean_i log exp(q_i.k_i / tau) / (exp(q_i.k_i / tau) + sum_{n=1..K} exp(q_i.queue_n / tau))

    on l2-normalised vectors: a (K + 1)-way cross-entropy with the positive as class 0.
    """
    q, k, queue = F.normalize(q, dim=1), F.normalize(k, dim=1), F.normalize(queue, dim=1)
    positive = (q * k).sum(1, keepdim=True)              # (N, 1)
    negatives = q @ queue.T                              # (N, K)
    logits = torch.cat([positive, negatives], 1) / tau
    return F.cross_entropy(logits, torch.zeros(len(q), dtype=torch.long, device=q.device))


def supcon(z, labels, tau, inside=False):
    """Supervised contrastive loss (Khosla et al. 2020) for z (M, d) with labels (M,).

    Positives P(i) are the other rows with i's label; A(i) all rows but i. With
    log p_ip = s_ip / tau - log sum_{a in A(i)} exp(s_ia / tau):

        L_out = -mean_i 1/|P(i)| sum_{p in P(i)} log p_ip          (sum outside the log; default)
        L_in  = -mean_i log( 1/|P(i)| sum_{p in P(i)} p_ip )       (inside=True)

    The mean runs over anchors with at least one positive (others have no term); no extra scale.
    L_in <= L_out by Jensen's inequality. With one positive per anchor both equal NT-Xent.
    """
    z = F.normalize(z, dim=1)
    logits = z @ z.T / tau
    logits.fill_diagonal_(float("-inf"))
    positive = labels[:, None] == labels[None, :]
    positive.fill_diagonal_(False)
    has_positive = positive.any(1)
    if not has_positive.any():
        return z.sum() * 0.0
    if not has_positive.all():                           # anchors without a positive have no term
        logits, positive = logits[has_positive], positive[has_positive]
    n_positive = positive.sum(1)
    log_denominator = torch.logsumexp(logits, dim=1)      # log sum_{a in A(i)} exp(s_ia / tau)
    if inside:
        per_anchor = torch.logsumexp(logits.masked_fill(~positive, float("-inf")), 1) - n_positive.log()
    else:
        per_anchor = logits.masked_fill(~positive, 0.0).sum(1) / n_positive
    per_anchor = per_anchor - log_denominator
    return -per_anchor.mean()


def alignment(x, y, alpha=2):
    """Wang & Isola's alignment: L_align = E ||x_i - y_i||_2^alpha over positive pairs (rows)."""
    return (x - y).norm(p=2, dim=1).pow(alpha).mean()


def uniformity(x, t=2):
    """Wang & Isola's uniformity: L_uniform = log E_{i<j} exp(-t ||x_i - x_j||_2^2)."""
    return torch.pdist(x, p=2).pow(2).mul(-t).exp().mean().log()


def align_uniform(z1, z2, lam=1.0, alpha=2, t=2):
    """Optimising the two properties directly: L_align(z1, z2) + lam (L_uniform(z1) + L_uniform(z2)) / 2,
    on l2-normalised views."""
    z1, z2 = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    return alignment(z1, z2, alpha) + lam * (uniformity(z1, t) + uniformity(z2, t)) / 2


def _pairs(z1, z2):
    """Cosine similarities of all 2N views: s (2N, 2N), s_pos (2N,), and the negative mask."""
    z = F.normalize(_interleave(z1, z2), dim=1)
    s = z @ z.T
    idx = torch.arange(len(z), device=z.device)
    negative = idx[:, None] != idx[None, :]
    negative[idx, idx ^ 1] = False
    return s, s[idx, idx ^ 1], negative


def choose_negatives(s, s_pos, negative, kind, margin=None):
    """The negatives N(i) each anchor averages over (a mask like `negative`):
    - "all": every other view but the partner;
    - "semi_hard" (Schroff et al. 2015): less similar to the anchor than its positive, and, when a
      margin is given, within it: s_pos - margin < s_ik < s_pos (FaceNet's band);
    - "hardest": the single most similar negative."""
    if kind == "all":
        return negative
    if kind == "semi_hard":
        band = s < s_pos[:, None]
        if margin is not None:
            band = band & (s > s_pos[:, None] - margin)
        return negative & band
    if kind == "hardest":
        hardest = s.masked_fill(~negative, float("-inf")).argmax(1)
        return F.one_hot(hardest, len(s)).bool()
    raise ValueError(f"unknown negatives {kind!r}; known: all, semi_hard, hardest")


def _masked_mean(values, mask):
    """Per-row mean of values over mask; a row with an empty mask gives 0."""
    return (values * mask).sum(1) / mask.sum(1).clamp(min=1)


def nt_logistic(z1, z2, tau, negatives="semi_hard"):
    """SimCLR's NT-Logistic: per anchor i with partner j and negatives k in N(i),

        l_i = -log sigma(s_ij / tau) - mean_{k in N(i)} log sigma(-s_ik / tau)

    N(i) chosen by choose_negatives (semi-hard: less similar than the positive); mean over the 2N
    anchors.
    """
    s, s_pos, negative = _pairs(z1, z2)
    mask = choose_negatives(s, s_pos, negative, negatives)
    push = _masked_mean(-F.logsigmoid(-s / tau), mask)
    return (-F.logsigmoid(s_pos / tau) + push).mean()


def margin_triplet(z1, z2, margin, negatives="semi_hard"):
    """SimCLR's margin triplet loss: l_i = mean_{k in N(i)} max(0, s_ik - s_ij + margin), mean over
    the 2N anchors. Semi-hard N(i) is FaceNet's band s_ij - margin < s_ik < s_ij, where every
    term is active; "hardest" takes the most similar negative, "all" every one."""
    s, s_pos, negative = _pairs(z1, z2)
    mask = choose_negatives(s, s_pos, negative, negatives, margin)
    return _masked_mean(F.relu(s - s_pos[:, None] + margin), mask).mean()


def siglip(z1, z2, log_t, b):
    """SigLIP's sigmoid loss on two views: every pair (i, j) of the N x N grid is its own binary
    problem with label y_ij = +1 if i = j else -1,

        L = -1/N sum_i sum_j log sigma( y_ij (t a_i.b_j + b) ),   a = z1/|z1|, b_j = z2_j/|z2_j|,

    t = exp(log_t) the learned temperature and b the learned bias (Zhai et al. 2023, Algorithm 1).
    """
    a, c = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    logits = log_t.exp() * (a @ c.T) + b
    y = 2 * torch.eye(len(a), device=a.device) - 1
    return -F.logsigmoid(y * logits).sum() / len(a)


class SigLIPLoss(nn.Module):
    """siglip() with its learned parameters initialised as in Zhai et al. (2023): t = exp(log_t)
    starts at 10 and b at -10, so the initial logits t s + b are at most 0 for every pair.

    Why not b = -log(N - 1), which makes sigma(b) the share of positives: that holds only for
    similarities near 0, and an untrained encoder's embeddings are nearly parallel (s near 0.9), so
    every negative starts at sigma(t s + b) near 1 and the first steps are a huge correction
    (the committed b32 arm started at a loss of 155 and ended below its untrained control)."""

    def __init__(self, t=10.0, b=-10.0):
        super().__init__()
        self.log_t = nn.Parameter(torch.tensor(math.log(t)))
        self.b = nn.Parameter(torch.tensor(float(b)))

    def forward(self, z1, z2):
        return siglip(z1, z2, self.log_t, self.b)


def debiased_nt_xent(z1, z2, tau, tau_plus=0.1):
    """Debiased contrastive loss (Chuang et al. 2020): with class prior tau_plus and M = 2N - 2
    negatives, the negative term sum_k exp(s_ik / tau) is replaced by

        M * max( (mean_k exp(s_ik/tau) - tau_plus exp(s_ij/tau)) / (1 - tau_plus), exp(-1/tau) ),

    correcting for same-class samples among the negatives. tau_plus = 0 gives NT-Xent.
    """
    s, s_pos, negative = _pairs(z1, z2)
    m = negative.sum(1)
    pos = torch.exp(s_pos / tau)
    neg_mean = (torch.exp(s / tau) * negative).sum(1) / m
    neg = m * torch.clamp((neg_mean - tau_plus * pos) / (1 - tau_plus), min=math.exp(-1 / tau))
    return -torch.log(pos / (pos + neg)).mean()


# ---------------------------------------------------------------- NumPy, with the gradient by hand

def nt_xent_numpy(U, partner, tau):
    """NT-Xent in NumPy for unit rows U (2N, d), row i's positive being row partner[i], with its
    hand-written gradient (the documents' NumPy examples):

        L = -1/(2N) sum_i log P_{i,j(i)},   P_ik = exp(s_ik / tau) / sum_{k' != i} exp(s_ik' / tau),
        s_ik = u_i.u_k,   dL/ds_ik = (P_ik - 1[k = j(i)]) / (2N tau),   dL/dU = (G + G^T) U

    where G = dL/ds (s depends on u_i and on u_k). Returns (loss, dL/dU, P).
    """
    n2 = len(U)
    logits = U @ U.T / tau
    np.fill_diagonal(logits, -np.inf)
    logits -= logits.max(1, keepdims=True)
    P = np.exp(logits)
    P /= P.sum(1, keepdims=True)
    rows = np.arange(n2)
    loss = -np.log(P[rows, partner]).mean()
    G = P.copy()
    G[rows, partner] -= 1
    G /= tau * n2
    return loss, (G + G.T) @ U, P


def normalize_backward(dU, U, norms):
    """Back through u = z / |z| row-wise: dL/dz = (dL/du - (dL/du . u) u) / |z|."""
    return (dU - (dU * U).sum(1, keepdims=True) * U) / norms
