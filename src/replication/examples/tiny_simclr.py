"""The encyclopedia article's tiny SimCLR, in its exact configuration, built from the library.

2,000 unlabelled shapes4 images; the article's augmentation; the three-layer CNN f (64-D h) and a
64 -> 64 -> 32 MLP head g; NT-Xent at tau = 0.2; Adam (lr 1e-3) for 300 steps of 128 images.
Then a linear probe and a 5-NN classifier on l2-normalised h, fitted on 40 labelled images and
scored on 1,000 test images, for the trained encoder and for an untrained copy of its
initialisation. The random draws follow the article's order, seed for seed.
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


def run(seed, steps=300, batch=128, tau=0.2, threads=1, channels_last=False, progress=False):
    """One seed of the example. channels_last trains in NHWC layout: faster, but float sums then
    differ from the article's script (the benchmark uses it; the reproduction does not)."""
    torch.set_num_threads(threads)
    start = time.perf_counter()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    unlabelled, labels = make_shapes4(2000, gen)          # the labels are never used in training
    f, g = SmallCNN(), make_head("mlp", SmallCNN.dim)
    f_untrained = copy.deepcopy(f)                         # the control: same initialisation
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
    return out


def same_output(a, b):
    """Whether two runs printed the same: loss and all four accuracies to the last bit."""
    return a["loss"] == b["loss"] and a["random"] == b["random"] and a["simclr"] == b["simclr"]
