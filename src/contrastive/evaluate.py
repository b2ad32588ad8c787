"""Evaluation on frozen features.

Protocol (recorded with every figure): features are l2-normalised h = f(x) or z = g(f(x)),
computed in eval mode (BN running statistics; the study re-estimates them on training images
first, replication.run.calibration). The labelled set is a seeded draw of the same number of training
images of each class (labels_per_class), the same for every run, or the first n_labelled training
images. The linear probe is multinomial logistic regression from zero weights, full-batch Adam
(lr 0.05, 300 steps) with an L2 penalty 1e-3 ||W||^2, as in the documents' example. The studies
standardise each feature first (mean and SD of the labelled set): a pilot (seed 100, not a study
seed) showed the unstandardised probe under-fitting its own training set, because normalised h
vectors are nearly parallel and the penalty swamps their small discriminative directions. The
documents' exact example keeps its unstandardised probe. The kNN classifiers use cosine
similarity, of the features as they are or centred on the labelled set's mean.
"""
import torch
import torch.nn.functional as F

from .augment import rotate_by_quarter_turns
from .data import DataError
from .losses import alignment, contrastive_accuracy, uniformity

LABEL_DRAW_SEED = 6_000_001     # the balanced labelled set: one draw, the same for every run and rung
# images per forward pass: 1,000 in run 2's evaluation; 250 in the cheap one, whose activations stay in
# the CPU's caches (twice as fast on the AMD EPYC). Eval-mode features do not depend on it (a test checks).
CHUNK, CHEAP_CHUNK = 1000, 250
# rows per block of the cheap linear probe's gradient: a block's 2,048 x classes matrices stay in the
# caches, where all 20,000 training images' (the full-label probe) did not
PROBE_BLOCK = 2048


@torch.no_grad()
def embed(f, g, x, chunk=None, bf16=False):
    """l2-normalised (h, z) of images x in eval mode, in float32 on the CPU; chunk splits a large x
    (None: one batch). Runs on f's device; bf16: the forward passes under bfloat16 autocast."""
    was_training = f.training
    f.eval(), g.eval()
    device = next(f.parameters()).device
    hs, zs = [], []
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        for part in (x.split(chunk) if chunk else [x]):
            h = f(part.to(device)).float()
            hs.append(F.normalize(h, dim=1).cpu())
            zs.append(F.normalize(g(h), dim=1).float().cpu())
    f.train(was_training), g.train(was_training)
    return torch.cat(hs), torch.cat(zs)


def _standardized(h_train, h_test):
    """(h - mean) / sd with the training set's statistics, for both sets."""
    mean, sd = h_train.mean(0), h_train.std(0) + 1e-6
    return (h_train - mean) / sd, (h_test - mean) / sd


def linear_probe_accuracy(h_train, y_train, h_test, y_test, steps=300, lr=0.05, l2=1e-3,
                          standardize=False, bf16=False):
    """Test accuracy of softmax regression W, b fitted on (h_train, y_train):
    minimise CE(h W + b, y) + l2 ||W||^2 with full-batch Adam from W = 0, b = 0.
    standardize: first map h -> (h - mean) / sd with the training set's statistics.
    bf16: the same fit from softmax_regression_bf16 (the cheap evaluation)."""
    if standardize:
        h_train, h_test = _standardized(h_train, h_test)
    n_classes = int(max(y_train.max(), y_test.max())) + 1
    if bf16:
        W, b = softmax_regression_bf16(h_train, y_train, n_classes, steps, lr, l2)
    else:
        with torch.enable_grad():
            W = torch.zeros(h_train.shape[1], n_classes, requires_grad=True)
            b = torch.zeros(n_classes, requires_grad=True)
            opt = torch.optim.Adam([W, b], lr=lr)
            for _ in range(steps):
                opt.zero_grad()
                (F.cross_entropy(h_train @ W + b, y_train) + l2 * (W**2).sum()).backward()
                opt.step()
    with torch.no_grad():
        return ((h_test @ W + b).argmax(1) == y_test).float().mean().item()


def softmax_regression_grad(h, y, W, b, l2, dtype=torch.float32, block=None):
    """Gradient of CE(h W + b, y) + l2 ||W||^2 written out, the two products with h in `dtype`
    (float32 results): with G = (softmax(h W + b) - onehot(y)) / n,
    dW = h^T G + 2 l2 W and db = sum_i G_i, summed over blocks of `block` rows (None: one block)."""
    n = len(y)
    dW, db, W_cast = 2 * l2 * W, torch.zeros_like(b), W.to(dtype)
    for h_block, y_block in zip(h.split(block or n), y.split(block or n)):
        G = torch.softmax((h_block.to(dtype) @ W_cast).float() + b, dim=1)
        G[torch.arange(len(y_block)), y_block] -= 1
        G /= n
        dW += (h_block.T.to(dtype) @ G.to(dtype)).float()
        db += G.sum(0)
    return dW, db


@torch.no_grad()
def softmax_regression_bf16(h, y, n_classes, steps, lr, l2):
    """W, b of linear_probe_accuracy's fit (full-batch Adam from zero) with softmax_regression_grad's
    gradient in bfloat16, in blocks of PROBE_BLOCK rows, and fused Adam: no autograd graph, half the
    bytes per product, and no matrix larger than the caches."""
    h = h.bfloat16()
    W, b = torch.zeros(h.shape[1], n_classes), torch.zeros(n_classes)
    opt = torch.optim.Adam([W, b], lr=lr, fused=True)
    for _ in range(steps):
        W.grad, b.grad = softmax_regression_grad(h, y, W, b, l2, torch.bfloat16, PROBE_BLOCK)
        opt.step()
    return W, b


def mlp_probe_accuracy(h_train, y_train, h_test, y_test, steps=300, lr=0.05, l2=1e-3, standardize=False,
                       hidden=64, seed=0):
    """Test accuracy of a one-hidden-layer classifier fitted like the linear probe (full-batch Adam,
    L2 penalty on the weights): logits = relu(h W1 + b1) W2 + b2, `hidden` units, W1 drawn from a
    generator seeded with `seed` (Kaiming-uniform scale), W2 = 0. SimCLR read what h and g(h) retain
    with such a classifier."""
    if standardize:
        h_train, h_test = _standardized(h_train, h_test)
    n_classes = int(max(y_train.max(), y_test.max())) + 1
    gen = torch.Generator().manual_seed(seed)
    bound = 1 / h_train.shape[1] ** 0.5
    with torch.enable_grad():
        W1 = ((torch.rand(h_train.shape[1], hidden, generator=gen) * 2 - 1) * bound).requires_grad_()
        b1 = torch.zeros(hidden, requires_grad=True)
        W2 = torch.zeros(hidden, n_classes, requires_grad=True)
        b2 = torch.zeros(n_classes, requires_grad=True)
        opt = torch.optim.Adam([W1, b1, W2, b2], lr=lr)
        logits = lambda h: F.relu(h @ W1 + b1) @ W2 + b2
        for _ in range(steps):
            opt.zero_grad()
            (F.cross_entropy(logits(h_train), y_train) + l2 * ((W1**2).sum() + (W2**2).sum())).backward()
            opt.step()
    with torch.no_grad():
        return (logits(h_test).argmax(1) == y_test).float().mean().item()


def nearest(h_train, h_test, k, chunk=1024):
    """(similarities, indices) of the k most cosine-similar training points of each test point,
    computed for `chunk` test points at a time (memory stays small for a 50,000-image train set)."""
    parts = [(part @ h_train.T).topk(k, dim=1) for part in h_test.split(chunk)]
    return torch.cat([p.values for p in parts]), torch.cat([p.indices for p in parts])


def knn_accuracy(h_train, y_train, h_test, y_test, k=5):
    """Majority vote of the k most cosine-similar training points (ties: torch.mode's choice,
    the smallest label)."""
    idx = nearest(h_train, h_test, k)[1]
    prediction = torch.mode(y_train[idx], dim=1).values
    return (prediction == y_test).float().mean().item()


def centred_knn_accuracy(h_train, y_train, h_test, y_test, k=5):
    """knn_accuracy on centred features: both sets minus the labelled set's mean, re-normalised.
    Features that share one large common direction (post-ReLU h) are all similar by raw cosine;
    removing the mean lets the directions that differ between images choose the neighbours."""
    mean = h_train.mean(0)
    return knn_accuracy(F.normalize(h_train - mean, dim=1), y_train, F.normalize(h_test - mean, dim=1), y_test, k)


def weighted_knn_accuracy(h_train, y_train, h_test, y_test, k=200, T=0.1):
    """Weighted kNN of Wu et al. (2018), the MoCo-style monitor: each of the k nearest neighbours
    votes for its class with weight exp(s / T), s its cosine similarity; the largest total wins."""
    k = min(k, len(h_train))
    s, idx = nearest(h_train, h_test, k)
    n_classes = int(max(y_train.max(), y_test.max())) + 1
    votes = torch.zeros(len(h_test), n_classes).scatter_add_(1, y_train[idx], torch.exp(s / T))
    return (votes.argmax(1) == y_test).float().mean().item()


def rotated(features, x_train, x_test, gen):
    """Features of images turned by k * 90 degrees (k ~ U{0..3} each), with the turns:
    (f_train, k_train, f_test, k_test). features: images -> (n, d) l2-normalised."""
    k_train = torch.randint(0, 4, (len(x_train),), generator=gen)
    k_test = torch.randint(0, 4, (len(x_test),), generator=gen)
    return (features(rotate_by_quarter_turns(x_train, k_train)), k_train,
            features(rotate_by_quarter_turns(x_test, k_test)), k_test)


def rotation_probe_accuracy(features, x_train, x_test, gen, probe=linear_probe_accuracy, **settings):
    """How well a probe on frozen features (linear by default, or mlp_probe_accuracy) predicts the
    rotation of held-out images. Chance is 25%."""
    return probe(*rotated(features, x_train, x_test, gen), **settings)


def greyscale(x):
    """Each pixel's channels replaced by their mean: the augmentations' grayscale."""
    return x.mean(1, keepdim=True).expand_as(x)


def greyed(features, x_train, x_test, gen):
    """Features of images of which a seeded half of each set (exactly n // 2) was turned grayscale,
    with 1 marking those: (f_train, grey_train, f_test, grey_test). features: images -> (n, d)."""
    def half_grey(x):
        grey = (torch.randperm(len(x), generator=gen) < len(x) // 2).long()
        return features(torch.where(grey[:, None, None, None].bool(), greyscale(x), x)), grey
    return (*half_grey(x_train), *half_grey(x_test))


def colour_probe_accuracy(features, x_train, x_test, gen, probe=linear_probe_accuracy, **settings):
    """How well a probe on frozen features tells held-out images turned grayscale from the others:
    SimCLR's test that z discards what the colour augmentation changes while h keeps it. Chance is
    50%."""
    return probe(*greyed(features, x_train, x_test, gen), **settings)


def balanced_subset(y, per_class, gen):
    """Indices (ascending) of `per_class` images of each class in y, drawn without replacement from
    gen; DataError when a class has fewer."""
    order = torch.randperm(len(y), generator=gen)
    picked = []
    for c in y.unique().tolist():
        members = order[y[order] == c]
        if len(members) < per_class:
            raise DataError(f"evaluate.labels_per_class: {per_class} labelled images of each class, but class {c} "
                            f"has {len(members)} training images; lower it, or set it to null (the first n_labelled)")
        picked.append(members[:per_class])
    return torch.cat(picked).sort().values


def labelled_set(x, y, p):
    """The probes' labelled images and labels: p.labels_per_class of each class (balanced_subset,
    seeded with LABEL_DRAW_SEED), or the first p.n_labelled when labels_per_class is None."""
    if p.labels_per_class is None:
        return x[:p.n_labelled], y[:p.n_labelled]
    index = balanced_subset(y, p.labels_per_class, torch.Generator().manual_seed(LABEL_DRAW_SEED))
    if p.knn_k > len(index):
        raise DataError(f"evaluate.knn_k: {p.knn_k} neighbours, but the labelled set has {len(index)} images "
                        f"(labels_per_class {p.labels_per_class})")
    return x[index], y[index]


def class_masks(y):
    """(pairs, different): (n, n) bool masks of the pairs of distinct samples of one class, and of the
    pairs of samples of different classes. One pair of masks serves h and z alike."""
    same = y[:, None] == y[None, :]
    return same & ~torch.eye(len(y), dtype=torch.bool), ~same


def tolerances(h, masks):
    """(tolerance, centred_tolerance) of l2-normalised h from one similarity matrix, masks =
    class_masks(y): (None, None) when no class has two samples. masked_select keeps the selected
    similarities in the order boolean indexing does, so the means are those of the two functions
    below, bit for bit, for about half the work (one matrix, one gather of the same-class pairs)."""
    pairs, different = masks
    if not pairs.any():
        return None, None
    s = h @ h.T
    within = s.masked_select(pairs).mean()
    return within.item(), (within - s.masked_select(different).mean()).item()


def tolerances_exact(h, y):
    """tolerances(h, class_masks(y)) without the n x n matrix, exactly, in float64: over ordered pairs
    of distinct samples, sum_{same class} h_i . h_j = sum_c ||sum_{i in c} h_i||^2 - sum_i ||h_i||^2,
    and the sum over all pairs likewise from the sum of every h."""
    h = h.double()
    counts = torch.bincount(y).double()
    if not (counts > 1).any():
        return None, None
    class_sums = torch.zeros(len(counts), h.shape[1], dtype=torch.float64).index_add_(0, y, h)
    norms = (h * h).sum()
    same = (class_sums * class_sums).sum() - norms
    every = h.sum(0) @ h.sum(0) - norms
    within = same / (counts * (counts - 1)).sum()
    different = (every - same) / (len(y) ** 2 - (counts ** 2).sum())
    return within.item(), (within - different).item()


def tolerance(h, y):
    """Wang & Liu's tolerance: mean cosine similarity of pairs of distinct samples of one class
    (h l2-normalised); None when no class has two samples here."""
    return tolerances(h, class_masks(y))[0]


def centred_tolerance(h, y):
    """Tolerance beyond global concentration: mean cosine similarity of same-class pairs minus that
    of different-class pairs. Post-ReLU features are all non-negative and so similar overall; this
    measures how much closer a class's own samples are (0: no closer than any other sample)."""
    return tolerances(h, class_masks(y))[1]


@torch.no_grad()
def alignment_uniformity(f, g, x, gen, augment_fn, bf16=False, chunk=CHUNK):
    """Alignment of two augmented views and uniformity of one view, on h and on z (bf16, chunk: embed's)."""
    v1, v2 = augment_fn(x, gen), augment_fn(x, gen)
    h1, z1 = embed(f, g, v1, chunk, bf16)
    h2, z2 = embed(f, g, v2, chunk, bf16)
    return {"h": {"alignment": alignment(h1, h2).item(), "uniformity": uniformity(h1).item()},
            "z": {"alignment": alignment(z1, z2).item(), "uniformity": uniformity(z1).item()}}


def _budget_probes(both, exact, x_lab, x_views, seed, probe, cheap):
    """The probes only the budget checkpoint gets: rotation (linear, MLP) on `exact`'s features,
    colour on `both`'s."""
    turned = rotated(exact, x_lab, x_views, torch.Generator().manual_seed(2_000_003 + seed))
    grey = greyed(both, x_lab, x_views, torch.Generator().manual_seed(5_000_011 + seed))
    out = {}
    for pick, name in ((0, "h"), (1, "z")):
        turned_feat = (turned[0][pick], turned[1], turned[2][pick], turned[3])
        out[name] = {
            "rotation": linear_probe_accuracy(*turned_feat, **probe, bf16=cheap),
            "rotation_mlp": mlp_probe_accuracy(*turned_feat, seed=4_000_037 + seed, **probe),
            "colour": linear_probe_accuracy(grey[0][pick], grey[1], grey[2][pick], grey[3], **probe, bf16=cheap),
        }
    return out


def _full_label_probe(both, data, test_feats, y_test, probe, cheap):
    """The linear probe fitted on every training image's label (`linear_full`), on h and on z: the
    published protocol's linear evaluation."""
    train_all = both(data["x_train"])                              # (h, z) of every training image
    return {name: {"linear_full": linear_probe_accuracy(train_all[pick], data["y_train"], test_feats[pick], y_test,
                                                         **probe, bf16=cheap)}
            for pick, name in ((0, "h"), (1, "z"))}


def _probe_settings(p):
    return dict(steps=p.probe_steps, lr=p.probe_lr, l2=p.probe_l2, standardize=p.probe_standardize)


CHEAP = (f"forward passes under bfloat16 autocast, {CHEAP_CHUNK:,} images at a time, but the rotation probes' in "
         f"float32 as run 2 ran them; linear probes fitted with the gradient written out in bfloat16, summed over "
         f"blocks of {PROBE_BLOCK:,} images, by fused Adam; tolerances from class sums")


def evaluate_representation(f, g, data, p, seed, augment_fn, budget=False, cheap=False, full_labels=None):
    """Every frozen-feature metric of one pretrained encoder, on h and on z.

    Labelled set: labelled_set (p.labels_per_class of each class, or the first p.n_labelled);
    test set: the first p.n_test test images. Linear probe; majority kNN (k = p.knn_k) on raw and
    on centred features; weighted kNN (k = p.wknn_k, T = p.wknn_t); Wang & Liu's tolerance (raw and
    centred); alignment and uniformity on two augmented views of the first p.n_views test images.
    budget (the run's budget checkpoint, which the claims on them read): also the rotation probe
    (linear and MLP) and the colour probe (grayscale or not, linear), each trained on the labelled set
    transformed and tested on the first p.n_views test images. full_labels (default: budget): also
    the linear probe fitted on every training image (`linear_full`), the published protocol, which
    the claims on an all-label linear evaluation read at every rung they read (run 2 fitted it at the
    budget only). `seed` fixes the rotations, grayscale halves, views and MLP initialisation drawn
    here.
    cheap: the evaluation piloted for the next registered run (tools/pilot_protocol.py evaluation):
    forward passes under bfloat16 autocast, CHEAP_CHUNK images at a time, except the rotation probes'
    (in float32 as run 2 ran them: on bf16 features the MLP rotation probe moved beyond the pilot's
    rule, reports/pilot/evaluation_first.md), the linear probes fitted by softmax_regression_bf16,
    the tolerances from class sums (tolerances_exact); the MLP probe and the kNN classifiers as they
    are. False (run 2's evaluation): everything in float32, CHUNK images at a time.
    """
    gen = torch.Generator().manual_seed(1_000_003 + seed)
    chunk = CHEAP_CHUNK if cheap else CHUNK
    both = lambda x: embed(f, g, x, chunk, bf16=cheap)          # (h, z): the probes on h and z share images
    exact = lambda x: embed(f, g, x, chunk)                     # float32 whatever `cheap`
    x_lab, y_lab = labelled_set(data["x_train"], data["y_train"], p)
    x_test, y_test = data["x_test"][:p.n_test], data["y_test"][:p.n_test]
    x_views = x_test[:p.n_views]
    h_lab, z_lab = both(x_lab)
    h_test, z_test = both(x_test)
    probe = _probe_settings(p)
    out = alignment_uniformity(f, g, x_views, gen, augment_fn, bf16=cheap, chunk=chunk)
    masks = None if cheap else class_masks(y_test)              # the test set's class pairs, for h and z
    for pick, name, train_feat, test_feat in ((0, "h", h_lab, h_test), (1, "z", z_lab, z_test)):
        within, centred = tolerances_exact(test_feat, y_test) if cheap else tolerances(test_feat, masks)
        out[name].update({
            "linear": linear_probe_accuracy(train_feat, y_lab, test_feat, y_test, **probe, bf16=cheap),
            "knn": knn_accuracy(train_feat, y_lab, test_feat, y_test, k=p.knn_k),
            "knn_centred": centred_knn_accuracy(train_feat, y_lab, test_feat, y_test, k=p.knn_k),
            "wknn": weighted_knn_accuracy(train_feat, y_lab, test_feat, y_test, k=p.wknn_k, T=p.wknn_t),
            "tolerance": within,
            "tolerance_centred": centred,
        })
    full_labels = budget if full_labels is None else full_labels
    found = [_budget_probes(both, exact, x_lab, x_views, seed, probe, cheap)] if budget else []
    if full_labels:
        found.append(_full_label_probe(both, data, (h_test, z_test), y_test, probe, cheap))
    for extra in found:
        for name in ("h", "z"):
            out[name].update(extra[name])
    out["protocol"] = {"features": "l2-normalised, eval-mode BN", "n_labelled": len(y_lab),
                       "labels_per_class": p.labels_per_class, "n_test": len(y_test), "probe": probe,
                       "knn_k": p.knn_k, "knn_centred": "minus the labelled set's mean, re-normalised",
                       "wknn": {"k": p.wknn_k, "T": p.wknn_t},
                       "colour": "linear probe: grayscale (channel mean) or not, half of each set",
                       "n_views": len(x_views),
                       "n_full": len(data["y_train"]) if full_labels else None}
    if cheap:
        out["protocol"]["cheap"] = CHEAP
    return out


def linear_probes(f, g, data, p, cheap=False):
    """The linear probe on h and on z alone, with evaluate_representation's labelled and test
    sets (and its `cheap`): {"h": {"linear": ...}, "z": {"linear": ...}}."""
    x_lab, y_lab = labelled_set(data["x_train"], data["y_train"], p)
    x_test, y_test = data["x_test"][:p.n_test], data["y_test"][:p.n_test]
    chunk = CHEAP_CHUNK if cheap else CHUNK
    h_lab, z_lab = embed(f, g, x_lab, chunk, bf16=cheap)
    h_test, z_test = embed(f, g, x_test, chunk, bf16=cheap)
    probe = _probe_settings(p)
    return {name: {"linear": linear_probe_accuracy(train_feat, y_lab, test_feat, y_test, **probe, bf16=cheap)}
            for name, train_feat, test_feat in (("h", h_lab, h_test), ("z", z_lab, z_test))}


@torch.no_grad()
def contrastive_top1(method, x, seed, views, normalize):
    """How often the pretext task is solved on held-out images: the share of 2N views whose most
    similar other view (by z, eval-mode BN) is their partner."""
    gen = torch.Generator().manual_seed(3_000_017 + seed)
    device = next(method.parameters()).device
    v1, v2 = views(x, gen).to(device), views(x, gen).to(device)
    was_training = method.training
    method.eval()
    z1, z2 = method.g(method.f(v1)), method.g(method.f(v2))
    method.train(was_training)
    return contrastive_accuracy(z1, z2, normalize=normalize)
