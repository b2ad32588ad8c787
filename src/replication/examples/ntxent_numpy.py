"""The encyclopedia article's NumPy example: NT-Xent on four 16x16 shape images, its gradient
checked by finite differences, and how the push is shared among negatives at three temperatures.

The random draws follow the article's order (default_rng(0); per image and view, a shift in
{-1, 0, 1}^2 then 16x16 pixel noise), so the printed numbers can be compared digit for digit.
"""
import numpy as np
import torch

from contrastive.losses import normalize_backward, nt_xent, nt_xent_numpy

SIZE = 16
NAMES = ["square A", "square B", "bar", "ring"]


def shape_images():
    """Four binary 16x16 images; square B, a slightly smaller square, is square A's hard negative."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE] - 7.5
    r2 = xx**2 + yy**2
    return [(abs(xx) < 5) & (abs(yy) < 5),
            (abs(xx) < 4) & (abs(yy) < 4),
            (abs(xx) < 7) & (abs(yy) < 1.5),
            (r2 < 49) & (r2 > 25)]


def view(image, rng):
    """t ~ T: a cyclic shift of up to one pixel each way, then Gaussian pixel noise (sd 0.1)."""
    dy, dx = rng.integers(-1, 2, size=2)
    return np.roll(image.astype(float), (dy, dx), axis=(0, 1)) + 0.1 * rng.standard_normal((SIZE, SIZE))


def encode(v):
    """Stand-in for g(f(v)): separable Gaussian blur (sigma 1.5, 9 taps), flatten, minus 0.2."""
    kernel = np.exp(-0.5 * (np.arange(-4, 5) / 1.5) ** 2)
    kernel /= kernel.sum()
    blurred = np.apply_along_axis(np.convolve, 0, v, kernel, "same")
    blurred = np.apply_along_axis(np.convolve, 1, blurred, kernel, "same")
    return blurred.ravel() - 0.2


def embeddings(seed=0):
    """Z (8, 256): rows 2k and 2k + 1 are two views of image k; and the row names."""
    rng = np.random.default_rng(seed)
    Z = np.stack([encode(view(image, rng)) for image in shape_images() for _ in range(2)])
    names = [f"{name} view {i}" for name in NAMES for i in (1, 2)]
    return Z, names


def loss_and_gradient(Z, tau):
    """NT-Xent of unnormalised rows Z (partners 2k <-> 2k + 1) and dL/dZ through the normalisation."""
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    U = Z / norms
    loss, dU, P = nt_xent_numpy(U, np.arange(len(Z)) ^ 1, tau)
    return loss, normalize_backward(dU, U, norms), P


def finite_difference_gradient(Z, tau, eps):
    """Central differences (L(Z + eps e) - L(Z - eps e)) / 2 eps, one entry at a time."""
    grad = np.zeros_like(Z)
    for idx in np.ndindex(*Z.shape):
        plus, minus = Z.copy(), Z.copy()
        plus[idx] += eps
        minus[idx] -= eps
        grad[idx] = (loss_and_gradient(plus, tau)[0] - loss_and_gradient(minus, tau)[0]) / (2 * eps)
    return grad


def autograd_gradient(Z, tau):
    """dL/dZ from torch autograd of the library's nt_xent, in float64."""
    z = torch.tensor(Z, dtype=torch.float64, requires_grad=True)
    nt_xent(z[0::2], z[1::2], tau).backward()
    return z.grad.numpy()


def push_shares(U, anchor, negatives, tau):
    """P_ik / sum of P over the negatives: each negative's share of the push on the anchor."""
    s = U[negatives] @ U[anchor] / tau
    w = np.exp(s - s.max())
    return w / w.sum()


def run(loss_tau=0.2, taus=(0.05, 0.2, 1.0), fd_step=1e-6):
    Z, names = embeddings()
    loss, dZ, _ = loss_and_gradient(Z, loss_tau)
    U = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    anchor, negatives = 0, list(range(2, len(Z)))   # view 1 of square A; its partner is row 1
    per_tau = []
    for tau in taus:
        P = loss_and_gradient(Z, tau)[2]
        per_tau.append({"tau": tau, "p_positive": float(P[0, 1]), "anchor_loss": float(-np.log(P[0, 1])),
                        "shares": push_shares(U, anchor, negatives, tau).tolist()})
    return {
        "loss_tau": loss_tau,
        "loss": float(loss),
        "max_grad_error_fd": float(np.abs(finite_difference_gradient(Z, loss_tau, fd_step) - dZ).max()),
        "max_grad_error_autograd": float(np.abs(autograd_gradient(Z, loss_tau) - dZ).max()),
        "anchor": names[anchor],
        "cos_positive": float(U[0] @ U[1]),
        "negatives": [names[k] for k in negatives],
        "cos_negatives": [float(U[0] @ U[k]) for k in negatives],
        "per_tau": per_tau,
    }
