"""NT-Xent and SupCon at batch 256 and 4,096: the library's losses against straightforward
implementations of the same formulas (explicit 2N x 2N masks, exp then sum, the usual way).

    python benchmarks/losses.py [--threads 1]

Prints forward+backward time and the extra peak memory of each, and their ratios. Both sides are
checked to give the same loss first.
"""
import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from common import alternate, header, peak_mb_of, record
from contrastive.losses import nt_xent, supcon


def nt_xent_with_masks(z1, z2, tau):
    """NT-Xent the common way: concatenate views, mask the diagonal and the positives with
    2N x 2N boolean matrices, softmax by exp / sum."""
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = torch.exp(z @ z.T / tau)
    not_self = ~torch.eye(2 * n, dtype=torch.bool)
    positive = torch.zeros(2 * n, 2 * n, dtype=torch.bool)
    positive[torch.arange(n), torch.arange(n) + n] = True
    positive[torch.arange(n) + n, torch.arange(n)] = True
    denominator = (sim * not_self).sum(1)
    numerator = (sim * positive).sum(1)
    return -torch.log(numerator / denominator).mean()


def supcon_with_masks(z, labels, tau):
    """SupCon (L_out) the common way: float masks for 'same label' and 'not self', exp / sum."""
    z = F.normalize(z, dim=1)
    logits = z @ z.T / tau
    logits = logits - logits.max(1, keepdim=True).values.detach()
    not_self = 1 - torch.eye(len(z))
    positive = (labels[:, None] == labels[None, :]).float() * not_self
    log_prob = logits - torch.log((torch.exp(logits) * not_self).sum(1, keepdim=True))
    return -((positive * log_prob).sum(1) / positive.sum(1)).mean()


def inputs(n):
    """Two views' embeddings (n, 128) with gradients, and labels from 10 classes."""
    torch.manual_seed(0)
    return (torch.randn(n, 128, requires_grad=True), torch.randn(n, 128, requires_grad=True),
            torch.randint(0, 10, (n,)))


CASES = {   # name -> (ours, straightforward), each a function of inputs(n)
    "nt_xent": (lambda z1, z2, y: nt_xent(z1, z2, 0.2), lambda z1, z2, y: nt_xent_with_masks(z1, z2, 0.2)),
    "supcon": (lambda z1, z2, y: supcon(torch.cat([z1, z2]), torch.cat([y, y]), 0.1),
               lambda z1, z2, y: supcon_with_masks(torch.cat([z1, z2]), torch.cat([y, y]), 0.1)),
}


def peak_mb(name, side, n):
    """Extra peak memory of one forward+backward, in a fresh process."""
    here = str(Path(__file__).resolve().parent)
    return peak_mb_of(f"import sys; sys.path.insert(0, {here!r}); from losses import CASES, inputs\n"
                      f"CASES[{name!r}][{side}](*inputs({n})).backward()")


def main(argv):
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--threads", type=int, default=1)
    args.add_argument("--batches", type=int, nargs="+", default=[256, 4096])
    a = args.parse_args(argv)
    torch.set_num_threads(a.threads)
    header(f"loss forward+backward, {a.threads} thread(s), d = 128")
    print(f"{'loss':8s} {'batch N':>8s} {'ours ms':>9s} {'plain ms':>9s} {'speed-up':>9s} "
          f"{'ours MB':>8s} {'plain MB':>9s} {'memory ratio':>13s}")
    rows = []
    for name, (ours, plain) in CASES.items():
        for n in a.batches:
            x = inputs(n)
            assert torch.allclose(ours(*x), plain(*x), rtol=1e-4), name
            t = alternate({"ours": lambda: ours(*x).backward(), "plain": lambda: plain(*x).backward()},
                          repeats=5 if n <= 1024 else 3)
            memory = {"ours": peak_mb(name, 0, n), "plain": peak_mb(name, 1, n)}
            rows.append({"loss": name, "batch": n, "ours_ms": 1e3 * t["ours"], "plain_ms": 1e3 * t["plain"],
                         "ours_mb": memory["ours"], "plain_mb": memory["plain"]})
            print(f"{name:8s} {n:8d} {1e3 * t['ours']:9.1f} {1e3 * t['plain']:9.1f} "
                  f"{t['plain'] / t['ours']:8.2f}x {memory['ours']:8.0f} {memory['plain']:9.0f} "
                  f"{memory['plain'] / max(memory['ours'], 1):12.2f}x")
    record("losses", {"threads": a.threads, "rows": rows})


if __name__ == "__main__":
    main(sys.argv[1:])
