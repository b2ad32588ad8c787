"""Batched view sampling t ~ T: every image of a batch gets its own random parameters.

One affine_grid/grid_sample call crops, resizes and flips the whole batch; colour jitter and
grayscale are tensor algebra. With the default options the random draws happen in exactly the
order of the documents' tiny-SimCLR example, so the same generator gives the same views.
"""
import torch
import torch.nn.functional as F


def augment(x, gen, blur=False, colour=True, colour_strength=1.0, crop_min_side=0.55):
    """Two-view augmentation of a batch x (n, 3, H, W) in [0, 1], drawing from generator `gen`.

    - random resized crop: side s ~ U(crop_min_side, 1) of the image (by default 0.55: about
      30-100% of the area), at a random position, resized back to H x W; horizontal flip with
      probability 1/2;
    - colour jitter: brightness and contrast factors and a per-channel gain, each ~ U(1 - 0.4 c,
      1 + 0.4 c) with c = colour_strength (by default 1: U(0.6, 1.4));
    - grayscale with probability 0.2; values clamped to [0, 1].
    colour=False leaves out jitter and grayscale (an arm that lets colour be a shortcut).
    The strength knobs change the spread of the draws, not their number or order.
    Optional, drawn after the above so the default sequence is unchanged:
    - blur: a 3x3 Gaussian blur (sigma ~ U(0.1, 1.5)) on half of the images (SimCLR, MoCo v2).
    """
    n = len(x)
    rand = lambda *shape: torch.rand(*shape, generator=gen).to(x.device)  # drawn on the CPU: same views on any device
    side = crop_min_side + (1 - crop_min_side) * torch.rand(n, generator=gen)
    shift = (1 - side)[:, None] * (2 * torch.rand(n, 2, generator=gen) - 1)
    flip = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0], theta[:, 1, 1], theta[:, :, 2] = side * flip, side, shift
    grid = F.affine_grid(theta.to(x.device, x.dtype), x.shape, align_corners=False)
    x = F.grid_sample(x, grid, align_corners=False)

    if colour:
        x = colour_jitter(x, rand, colour_strength)
    if blur:
        x = gaussian_blur(x, sigma=0.1 + 1.4 * rand(n), apply=rand(n) < 0.5)
    return x


def colour_jitter(x, rand, strength=1.0):
    """Brightness, contrast and per-channel gain ~ U(1 - 0.4 strength, 1 + 0.4 strength), then
    grayscale with probability 0.2, clamped to [0, 1]; rand(*shape) draws uniforms from the
    caller's generator. The factors stay positive for strength < 2.5."""
    n = len(x)
    spread = 0.8 * strength             # exactly 0.8 at strength 1: today's views, bit for bit
    brightness = 1 + spread * (rand(n, 1, 1, 1) - 0.5)
    contrast = 1 + spread * (rand(n, 1, 1, 1) - 0.5)
    gain = 1 + spread * (rand(n, 3, 1, 1) - 0.5)
    mean = x.mean((1, 2, 3), keepdim=True)
    x = ((x - mean) * contrast + mean) * brightness * gain
    gray = rand(n, 1, 1, 1) < 0.2
    return torch.where(gray, x.mean(1, keepdim=True).expand_as(x), x).clamp(0, 1)


def gaussian_blur(x, sigma, apply):
    """3x3 Gaussian blur with a per-image sigma (n,), applied where `apply` (n,) is true."""
    offsets = torch.tensor([-1.0, 0.0, 1.0], device=x.device)
    w = torch.exp(-0.5 * (offsets[None] / sigma[:, None]) ** 2)
    w = w / w.sum(1, keepdim=True)                                 # (n, 3) separable weights
    padded = F.pad(x, (1, 1, 1, 1), mode="replicate")
    rows = sum(w[:, i, None, None, None] * padded[:, :, i:i + x.shape[2], :] for i in range(3))
    out = sum(w[:, i, None, None, None] * rows[:, :, :, i:i + x.shape[3]] for i in range(3))
    return torch.where(apply[:, None, None, None], out, x)


def rotate_by_quarter_turns(x, k):
    """Rotate image i of x (n, C, H, W) counter-clockwise by k[i] * 90 degrees (square images)."""
    out = x.clone()
    for turns in range(1, 4):
        sel = k == turns
        if sel.any():
            out[sel] = torch.rot90(x[sel], turns, dims=(2, 3))
    return out
