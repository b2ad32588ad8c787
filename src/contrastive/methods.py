"""Pretraining methods. Each is a module whose forward(v1, v2, labels, index) returns (loss, z):
the loss of one training step on two views v1, v2 (N, 3, H, W) of the images with dataset indices
`index`, and the step's embeddings z (detached), which the training loop checks for collapse.
Labels are used only by the supervised methods. Each exposes f (image -> h) and g (h -> z).

Under torch.distributed each rank holds a slice of the global batch (src/contrastive/distributed.py):
SimCLR and SupCon gather every rank's embeddings (with their gradients) so that negatives come from
the whole batch, as in one process; MoCo keeps BN per device, as in its paper, and shuffles keys
across devices. `global_bn` says whether a method's BN should span every rank.
"""
import copy
from functools import partial
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import losses
from .distributed import broadcast, gather, gather_with_grad, local_slice
from .models import make_encoder, make_head


def _interleave(v1, v2):
    """One batch of 2N views, rows 2i and 2i + 1 from image i: BN sees all views at once."""
    return torch.stack([v1, v2], 1).flatten(0, 1)


def _encode_in_groups(f, g, x, groups):
    """g(f(x)) with each of `groups` equal consecutive chunks of the batch normalised by its own BN
    statistics (simulated devices)."""
    return torch.cat([g(f(chunk)) for chunk in x.chunk(groups)])


class SimCLR(nn.Module):
    """SimCLR (Chen et al. 2020): z = g(f(t(x))) for both views of every image, negatives from the
    batch, loss criterion(z1, z2). bn_groups = 1: one forward pass, global BN over all 2N views;
    bn_groups = G: the interleaved views are split into G groups, each holding both views of N / G
    images and normalised on its own (per-device BN, the setting SimCLR's global BN replaces).
    Across ranks, per-device BN keeps each rank's BN to itself, as MoCo does."""

    def __init__(self, f, g, criterion, bn_groups=1):
        super().__init__()
        self.f, self.g, self.criterion, self.bn_groups = f, g, criterion, bn_groups
        self.global_bn = bn_groups == 1

    def forward(self, v1, v2, labels=None, index=None):
        z = _encode_in_groups(self.f, self.g, _interleave(v1, v2), self.bn_groups)
        z = gather_with_grad(z)                                      # z: 2N x d, every rank's views
        if getattr(self.criterion, "reads_labels", False):
            return self.criterion(z[0::2], z[1::2], gather(labels)), z.detach()
        return self.criterion(z[0::2], z[1::2]), z.detach()


class NTXent(nn.Module):
    """SimCLR's criterion nt_xent(z1, z2, tau, normalize), with two options:

    - learn_tau: the temperature is learned, log-parameterised as CLIP's: tau = exp(log_tau), with
      log_tau starting at log(tau) and trained with the encoder, and tau kept at least MIN_TAU
      (CLIP caps 1/tau at 100 for stability);
    - negatives_kept = k: each anchor keeps k of its 2N - 2 negatives (losses.kept_negatives), drawn
      afresh every step from the global generator, rank 0's draw on every rank. The batch, and
      with it BN's statistics and the number of updates, stays that of the full batch;
    - drop_same_class: the negatives of the anchor's own class are dropped by label
      (losses.other_class): NT-Xent without false negatives, a control that reads labels.

    With none, exactly nt_xent(z1, z2, tau, normalize): no parameter and no random draw.
    """
    MIN_TAU = 0.01

    def __init__(self, tau, normalize=True, learn_tau=False, negatives_kept=None, drop_same_class=False):
        super().__init__()
        self.fixed_tau, self.normalize, self.negatives_kept = tau, normalize, negatives_kept
        self.reads_labels = drop_same_class
        self.log_tau = nn.Parameter(torch.tensor(math.log(tau))) if learn_tau else None

    def tau(self):
        """The temperature in use: the fixed one, or the learned one (a tensor with a gradient)."""
        return self.fixed_tau if self.log_tau is None else self.log_tau.exp().clamp(min=self.MIN_TAU)

    def forward(self, z1, z2, labels=None):
        keep = None
        if self.negatives_kept is not None:
            keep = broadcast(losses.kept_negatives(2 * len(z1), self.negatives_kept, None).to(z1.device))
        if self.reads_labels:
            keep = losses.other_class(labels)
        return losses.nt_xent(z1, z2, self.tau(), normalize=self.normalize, keep=keep)


class MoCo(nn.Module):
    """MoCo (He et al. 2020), with v2's MLP head as an option (choose g).

    f, g: the query encoder and head (trained); a key encoder and head start as copies and follow
    theta_k <- m theta_k + (1 - m) theta_q with no gradient. queue: K keys from earlier batches,
    first in first out. T: temperature. bn_groups: the batch is split into this many groups, each
    normalised by its own BN statistics (simulated devices); shuffle_bn permutes the keys across
    the groups before the key encoder and restores the order after (MoCo's shuffling BN).
    Across ranks each rank is one BN group (per-device BN) and shuffle_bn shuffles the keys over
    every rank: gather, permute with rank 0's permutation, encode a slice, gather, unshuffle.
    """
    global_bn = False

    def __init__(self, f, g, dim, K, m, T, bn_groups=1, shuffle_bn=False):
        super().__init__()
        self.f, self.g = f, g
        self.f_k, self.g_k = copy.deepcopy(f), copy.deepcopy(g)
        for p in self.key_parameters():
            p.requires_grad = False
        self.K, self.m, self.T = K, m, T
        self.bn_groups, self.shuffle_bn = bn_groups, shuffle_bn
        self.register_buffer("queue", F.normalize(torch.randn(K, dim), dim=1))
        self.register_buffer("queue_ptr", torch.zeros((), dtype=torch.long))

    def query_parameters(self):
        return list(self.f.parameters()) + list(self.g.parameters())

    def key_parameters(self):
        return list(self.f_k.parameters()) + list(self.g_k.parameters())

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for theta_k, theta_q in zip(self.key_parameters(), self.query_parameters()):
            theta_k.mul_(self.m).add_(theta_q.detach(), alpha=1 - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        """Overwrite the oldest len(keys) entries (FIFO, wrapping around) with every rank's keys."""
        keys = gather(keys)
        slots = (self.queue_ptr + torch.arange(len(keys), device=keys.device)) % self.K
        self.queue[slots] = keys
        self.queue_ptr.fill_((self.queue_ptr + len(keys)) % self.K)

    def _encode(self, f, g, x):
        """g(f(x)) with each of the bn_groups chunks of the batch normalised on its own."""
        return _encode_in_groups(f, g, x, self.bn_groups)

    def forward(self, v1, v2, labels=None, index=None):
        q = F.normalize(self._encode(self.f, self.g, v1), dim=1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            if self.shuffle_bn:
                v2_all = gather(v2)
                perm = broadcast(torch.randperm(len(v2_all)).to(v2.device))
                k_shuffled = gather(self._encode(self.f_k, self.g_k, local_slice(v2_all[perm])))
                k = local_slice(k_shuffled[torch.argsort(perm)])
            else:
                k = self._encode(self.f_k, self.g_k, v2)
            k = F.normalize(k, dim=1)
        loss = losses.info_nce(q, k, self.queue.clone(), self.T)   # logits: N x (1 + K) inside
        self._dequeue_and_enqueue(k)
        return loss, q.detach()


class MemoryBank(nn.Module):
    """Instance discrimination with a memory bank (Wu et al. 2018): one stored feature per training
    image; the positive of image i is its stored feature, K negatives are sampled from the bank,
    and after the step the stored feature moves towards the new one:
    v_i <- normalise(m v_i + (1 - m) q_i). Uses one view per image."""

    def __init__(self, f, g, dim, n_data, K, m, T):
        super().__init__()
        self.f, self.g = f, g
        self.K, self.m, self.T = K, m, T
        self.register_buffer("bank", F.normalize(torch.randn(n_data, dim), dim=1))

    def forward(self, v1, v2, labels=None, index=None):
        q = F.normalize(self.g(self.f(v1)), dim=1)
        negatives = self.bank[broadcast(torch.randint(0, len(self.bank), (self.K,)).to(q.device))]
        loss = losses.info_nce(q, self.bank[index], negatives, self.T)
        with torch.no_grad():
            q_all, index_all = gather(q), gather(index)
            self.bank[index_all] = F.normalize(self.m * self.bank[index_all] + (1 - self.m) * q_all, dim=1)
        return loss, q.detach()


class SupCon(nn.Module):
    """Supervised contrastive (Khosla et al. 2020): both views of every image, positives all views
    with the same label; L_out by default, L_in when inside=True."""

    global_bn = True

    def __init__(self, f, g, tau, inside=False):
        super().__init__()
        self.f, self.g, self.tau, self.inside = f, g, tau, inside

    def forward(self, v1, v2, labels=None, index=None):
        z = gather_with_grad(self.g(self.f(_interleave(v1, v2))))   # z: 2N x d
        return losses.supcon(z, gather(labels).repeat_interleave(2), self.tau, inside=self.inside), z.detach()


class Supervised(nn.Module):
    """The supervised baseline: cross-entropy of a linear classifier on h, on both views."""

    global_bn = True

    def __init__(self, f, n_classes):
        super().__init__()
        self.f, self.g = f, nn.Identity()
        self.classifier = nn.Linear(f.dim, n_classes)

    def forward(self, v1, v2, labels=None, index=None):
        h = self.f(_interleave(v1, v2))                             # h: 2N x dim
        return F.cross_entropy(self.classifier(h), labels.repeat_interleave(2)), h.detach()


def build_method(cfg, n_data, n_classes):
    """The method of a RunConfig, with a freshly initialised encoder f and head g."""
    f = make_encoder(cfg.encoder)
    g = make_head(cfg.head, f.dim, cfg.proj_dim)
    if cfg.method == "simclr":
        criteria = {
            "logistic": lambda z1, z2: losses.nt_logistic(z1, z2, cfg.tau, cfg.negatives),
            "margin_triplet": lambda z1, z2: losses.margin_triplet(z1, z2, cfg.margin, cfg.negatives),
            "debiased_nt_xent": lambda z1, z2: losses.debiased_nt_xent(z1, z2, cfg.tau, cfg.tau_plus),
        }
        if cfg.loss == "nt_xent":
            criterion = NTXent(cfg.tau, cfg.normalize, cfg.learn_tau, cfg.negatives_kept, cfg.drop_same_class)
        elif cfg.loss == "siglip":
            criterion = losses.SigLIPLoss(cfg.siglip_t, cfg.siglip_b)
        else:
            criterion = criteria[cfg.loss]
        return SimCLR(f, g, criterion, cfg.bn_groups)
    if cfg.method == "align_uniform":
        return SimCLR(f, g, partial(losses.align_uniform, lam=cfg.lam), cfg.bn_groups)
    if cfg.method == "moco":
        return MoCo(f, g, g.dim, cfg.queue, cfg.momentum, cfg.tau, cfg.bn_groups, cfg.shuffle_bn)
    if cfg.method == "memory_bank":
        return MemoryBank(f, g, g.dim, n_data, cfg.queue, cfg.momentum, cfg.tau)
    if cfg.method == "supcon":
        return SupCon(f, g, cfg.tau, inside=cfg.supcon_inside)
    if cfg.method == "supervised":
        return Supervised(f, n_classes)
    raise ValueError(f"unknown method {cfg.method!r}")
