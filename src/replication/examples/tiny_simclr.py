"""The encyclopedia article's tiny SimCLR, in its exact configuration, built from the library.

2,000 unlabelled shapes4 images; the article's augmentation; the three-layer CNN f (64-D h) and a
64 -> 64 -> 32 MLP head g; NT-Xent at tau = 0.2; Adam (lr 1e-3) for 300 steps of 128 images.
Then a linear probe and a 5-NN classifier on l2-normalised h, fitted on 40 labelled images and
scored on 1,000 test images, for the trained encoder and for an untrained copy of its
initialisation. The random draws follow the article's order, seed for seed.

The article reads its result as the encoder encoding shape because the augmentations never change
it. match_by_shape tests what can be measured of that reading: whether the trained encoder holds an
image closer to the same shape with its colours, position and size redrawn than to another shape
with the same colours, position and size.
"""
import copy
import time

import torch

from contrastive.data import make_shapes4
from contrastive.evaluate import embed, knn_accuracy, linear_probe_accuracy
from contrastive.losses import nt_xent
from contrastive.methods import SimCLR
from contrastive.models import SmallCNN, make_head
from contrastive.train import TrainSettings, peak_rss_mb, train


def run(seed, steps=300, batch=128, tau=0.2, threads=1, channels_last=False, progress=False, shape_test=None):
    """One seed of the example. channels_last trains in NHWC layout: faster, but float sums then
    differ from the article's script (the benchmark uses it; the reproduction does not).
    shape_test (images, seed), optional: afterwards, match_by_shape() for both encoders, outside the
    timed run and from its own generator, so every other output is unchanged."""
    torch.set_num_threads(threads)
    start = time.perf_counter()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    unlabelled, labels = make_shapes4(2000, gen)          # the labels are never used in training
    f, g = SmallCNN(), make_head("mlp", SmallCNN.dim)
    f_untrained, g_untrained = copy.deepcopy(f), copy.deepcopy(g)   # the control: same initialisation
    method = SimCLR(f, g, lambda z1, z2: nt_xent(z1, z2, tau))
    settings = TrainSettings(steps=steps, batch=batch, lr=1e-3, channels_last=channels_last)
    record = train(method, unlabelled, labels, gen, settings, desc=f"tiny SimCLR seed {seed}", progress=progress)
    x_labelled, y_labelled = make_shapes4(40, gen)
    x_test, y_test = make_shapes4(1000, gen)
    out = {"seed": seed, "threads": threads, "status": record["status"], "loss": record["loss"]}
    for name, encoder in (("random", f_untrained), ("simclr", f)):
        h_train, _ = embed(encoder, torch.nn.Identity(), x_labelled)
        h_test, _ = embed(encoder, torch.nn.Identity(), x_test)
        out[name] = {"linear": linear_probe_accuracy(h_train, y_labelled, h_test, y_test),
                     "knn": knn_accuracy(h_train, y_labelled, h_test, y_test, k=5)}
    out["wall_s"] = time.perf_counter() - start
    out["peak_rss_mb"] = peak_rss_mb()
    if shape_test is not None:
        out["match_by_shape"] = {
            name: match_by_shape(encoder, head, shape_test.images, torch.Generator().manual_seed(shape_test.seed))
            for name, encoder, head in (("random", f_untrained, g_untrained), ("simclr", f, g))}
    return out


def same_output(a, b):
    """Whether two runs printed the same: loss and all four accuracies to the last bit."""
    return a["loss"] == b["loss"] and a["random"] == b["random"] and a["simclr"] == b["simclr"]


# ---------------------------------------------------------------- does the encoder match by shape?

def _shape_mask(kind, x, y, r):
    """The example's four shapes on centred coordinates: disk, square, triangle, cross."""
    if kind == 0:
        return x**2 + y**2 < r**2
    if kind == 1:
        return (x.abs() < 0.85 * r) & (y.abs() < 0.85 * r)
    if kind == 2:
        return (y < 0.8 * r) & (y > -r + 2 * x.abs())
    return ((x.abs() < 0.3 * r) | (y.abs() < 0.3 * r)) & (x.abs() < r) & (y.abs() < r)


def shapes4_factors(n, gen, size=32):
    """make_shapes4's draws, in its order, kept as factors: labels (n,), centre (n, 2), radius (n,),
    background and foreground colours (n, 3), pixel noise (n, 3, size, size). render_shapes4 of them
    is make_shapes4(n, gen), bit for bit (a test checks)."""
    labels = torch.randint(0, 4, (n,), generator=gen)
    centre, background, foreground = torch.empty(n, 2), torch.empty(n, 3), torch.empty(n, 3)
    radius = torch.empty(n, dtype=torch.float64)
    for i in range(n):
        centre[i] = (torch.rand(2, generator=gen) - 0.5) * 0.5
        radius[i] = 0.45 + 0.25 * torch.rand(1, generator=gen).item()     # a Python float, as in the example
        background[i] = 0.4 * torch.rand(1, generator=gen) * (0.6 + 0.4 * torch.rand(3, generator=gen))
        foreground[i] = background[i] + (0.4 + 0.2 * torch.rand(1, generator=gen)) * (
            0.6 + 0.4 * torch.rand(3, generator=gen))
    return {"labels": labels, "centre": centre, "radius": radius, "background": background,
            "foreground": foreground, "noise": 0.05 * torch.randn((n, 3, size, size), generator=gen)}


def render_shapes4(factors):
    """Images (n, 3, size, size) from factors: the shape in the foreground colour on the background,
    plus the pixel noise."""
    size = factors["noise"].shape[-1]
    axis = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(axis, axis, indexing="ij")
    images = torch.empty(factors["noise"].shape)
    for i in range(len(images)):
        cy, cx = factors["centre"][i]
        inside = _shape_mask(factors["labels"][i].item(), xx - cx, yy - cy, factors["radius"][i].item())
        foreground, background = factors["foreground"][i], factors["background"][i]
        images[i] = torch.where(inside, foreground[:, None, None], background[:, None, None])
    return images + factors["noise"]


NUISANCES = {"colour": ("background", "foreground"), "geometry": ("centre", "radius"),
             "all": ("background", "foreground", "centre", "radius")}


def match_by_shape(f, g, n, gen):
    """Which does the encoder hold closer to an image: the same shape with nuisances redrawn, or a
    different shape with the same nuisances? For n images drawn as in the example: per nuisance group
    (colour; geometry = position and size; all four), the share of images whose cosine similarity
    to the same-shape image exceeds that to the other-shape image, on l2-normalised h and on z.
    Every image gets fresh pixel noise. 0.5 is indifference; 1 is matching by shape alone."""
    anchor, donor = shapes4_factors(n, gen), shapes4_factors(n, gen)
    other_shape = (anchor["labels"] + torch.randint(1, 4, (n,), generator=gen)) % 4

    def variant(**changes):
        noise = 0.05 * torch.randn(anchor["noise"].shape, generator=gen)
        return render_shapes4({**anchor, **changes, "noise": noise})

    images = {"anchor": variant(), "other_shape": variant(labels=other_shape)}
    for group, keys in NUISANCES.items():
        images[group] = variant(**{k: donor[k] for k in keys})
    embedded = {name: embed(f, g, x) for name, x in images.items()}       # (h, z), each (n, d)
    out = {}
    for index, space in enumerate(("h", "z")):
        def similarity(name):
            return (embedded["anchor"][index] * embedded[name][index]).sum(1)
        out[space] = {group: float((similarity(group) > similarity("other_shape")).float().mean())
                      for group in NUISANCES}
    return out
