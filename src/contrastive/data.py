"""Datasets: synthetic generators and loaders of real images.

Every dataset is a dict of tensors {x_train, y_train, x_test, y_test} with images (n, 3, H, W)
in float32 and integer labels, plus `classes` (names); glyphs100 (contrastive/glyphs.py, the study's
default) adds `superclass` and `superclasses`. Saving them with checked manifests is the study's
business (replication/datasets.py).
"""
import math
from pathlib import Path

import torch
import torch.nn.functional as F

from .glyphs import build_glyphs


class DataError(Exception):
    """A dataset that cannot be used; str(e) says which file and how to fix it."""


def _grid(size):
    """Pixel-centre coordinates in [-1, 1]: (yy, xx), each (size, size)."""
    axis = torch.linspace(-1, 1, size)
    return torch.meshgrid(axis, axis, indexing="ij")


# ---------------------------------------------------------------- shapes4: the documents' images

SHAPES4_CLASSES = ["disk", "square", "triangle", "cross"]


def make_shapes4(n, gen, size=32):
    """n RGB images of a disk, square, triangle or cross (the tiny-SimCLR example's generator).

    Draws from `gen` in exactly the order of the example: the n labels, then per image the
    centre (2), radius (1), background level (1) and tint (3), foreground level (1) and tint (3),
    then one block of pixel noise. Seed for seed it makes the same images.
    Returns images (n, 3, size, size), unclamped, and labels (n,).
    """
    yy, xx = _grid(size)
    labels = torch.randint(0, 4, (n,), generator=gen)
    images = torch.empty(n, 3, size, size)
    for i in range(n):
        cy, cx = (torch.rand(2, generator=gen) - 0.5) * 0.5
        r = 0.45 + 0.25 * torch.rand(1, generator=gen).item()
        y, x = yy - cy, xx - cx
        kind = labels[i].item()
        if kind == 0:
            inside = x**2 + y**2 < r**2
        elif kind == 1:
            inside = (x.abs() < 0.85 * r) & (y.abs() < 0.85 * r)
        elif kind == 2:
            inside = (y < 0.8 * r) & (y > -r + 2 * x.abs())
        else:
            inside = ((x.abs() < 0.3 * r) | (y.abs() < 0.3 * r)) & (x.abs() < r) & (y.abs() < r)
        background = 0.4 * torch.rand(1, generator=gen) * (0.6 + 0.4 * torch.rand(3, generator=gen))
        foreground = background + (0.4 + 0.2 * torch.rand(1, generator=gen)) * (
            0.6 + 0.4 * torch.rand(3, generator=gen))
        images[i] = torch.where(inside, foreground[:, None, None], background[:, None, None])
    return images + 0.05 * torch.randn(images.shape, generator=gen), labels


# ---------------------------------------------------------------- shapes: ten glyphs (the first study's default)

SHAPES_CLASSES = ["L", "T", "F", "P", "arrow", "half-disk", "wedge", "C", "seven", "flag"]


def _glyph_masks(u, v):
    """All ten glyphs at once on normalised coordinates u (right), v (up), each (n, H, W).

    No glyph is unchanged by a 90-, 180- or 270-degree rotation, so an image's orientation is
    visible in its content. Returns a bool tensor (10, n, H, W).
    """
    def box(u0, u1, v0, v1):
        return (u >= u0) & (u <= u1) & (v >= v0) & (v <= v1)
    stem = box(-0.7, -0.3, -0.9, 0.9)                               # a left vertical bar
    disk = u**2 + v**2
    return torch.stack([
        stem | box(-0.7, 0.7, -0.9, -0.5),                            # L
        box(-0.8, 0.8, 0.5, 0.9) | box(-0.2, 0.2, -0.9, 0.9),         # T
        stem | box(-0.7, 0.8, 0.5, 0.9) | box(-0.7, 0.4, -0.15, 0.2), # F
        stem | (box(-0.7, 0.7, -0.1, 0.9) & ~box(-0.3, 0.3, 0.25, 0.55)),  # P
        box(-0.9, 0.2, -0.2, 0.2) | ((u > 0.1) & (u < 0.9) & (v.abs() < 0.9 - u)),  # arrow
        (disk < 0.8) & (v > -0.1),                                    # half-disk, flat side down
        (u > -0.8) & (v > -0.8) & (u + v < 0.1),                      # wedge, right angle bottom-left
        (disk < 0.8) & (disk > 0.25) & ~((u > 0.2) & (v.abs() < 0.35)),  # C, open to the right
        box(-0.8, 0.8, 0.5, 0.9) | ((u - 0.5 * v).abs() < 0.22) & (v < 0.7) & (v > -0.9),  # seven
        box(-0.8, -0.5, -0.9, 0.9) | box(-0.5, 0.8, 0.2, 0.9),        # flag
    ])


def make_shapes(n, gen, size=32, clutter=2, texture=0.1, noise=0.05):
    """n RGB images of ten asymmetric glyphs under nuisance factors.

    Nuisances: position (centre within +-0.3), scale (half-size 0.45-0.75), foreground and
    background colour, brightness, a striped background texture of random angle and frequency
    (amplitude `texture`), `clutter` small distractor squares of random colour, and pixel noise.
    Orientation is canonical, so a rotation applied later is predictable from the content.
    Returns images (n, 3, size, size) clamped to [0, 1] and labels (n,).
    """
    yy, xx = _grid(size)
    labels = torch.randint(0, len(SHAPES_CLASSES), (n,), generator=gen)
    centre = (torch.rand(n, 2, generator=gen) - 0.5) * 0.6
    scale = 0.45 + 0.3 * torch.rand(n, 1, 1, generator=gen)
    u = (xx - centre[:, 1, None, None]) / scale
    v = -(yy - centre[:, 0, None, None]) / scale                     # image rows grow downwards
    glyph = _glyph_masks(u, v)[labels, torch.arange(n)]               # (n, H, W)

    background = 0.15 + 0.4 * torch.rand(n, 3, 1, 1, generator=gen)
    foreground = torch.rand(n, 3, 1, 1, generator=gen)
    # keep the glyph visible: push the foreground away from the background's brightness
    gap = foreground.mean(1, keepdim=True) - background.mean(1, keepdim=True)
    foreground = (foreground + torch.where(gap >= 0, 0.35, -0.35)).clamp(0, 1)

    angle = math.pi * torch.rand(n, 1, 1, generator=gen)
    freq = 3 + 6 * torch.rand(n, 1, 1, generator=gen)
    phase = 2 * math.pi * torch.rand(n, 1, 1, generator=gen)
    stripes = torch.sin(freq * (xx * torch.cos(angle) + yy * torch.sin(angle)) + phase)
    images = background + texture * stripes[:, None]
    images = torch.where(glyph[:, None], foreground, images)

    for _ in range(clutter):                                          # distractors drawn on top
        c = (torch.rand(n, 2, 1, 1, generator=gen) - 0.5) * 1.8
        half = 0.06 + 0.08 * torch.rand(n, 1, 1, generator=gen)
        colour = torch.rand(n, 3, 1, 1, generator=gen)
        blob = ((yy - c[:, 0]).abs() < half) & ((xx - c[:, 1]).abs() < half)
        images = torch.where(blob[:, None], colour, images)

    brightness = 0.7 + 0.6 * torch.rand(n, 1, 1, 1, generator=gen)
    images = images * brightness + noise * torch.randn(images.shape, generator=gen)
    return images.clamp(0, 1), labels


# ---------------------------------------------------------------- real images

def _to_rgb(images, size):
    """Grey or RGB images (n, C, h, w) in [0, 1] -> (n, 3, size, size), bilinear resize."""
    if images.shape[1] == 1:
        images = images.expand(-1, 3, -1, -1)
    if images.shape[-1] != size or images.shape[-2] != size:
        images = F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)
    return images.clamp(0, 1).contiguous()


def load_digits_dataset(size=32, n_test=500, seed=0):
    """scikit-learn's bundled handwritten digits (1,797 real 8x8 images), resized to size x size.

    A fixed random split (seed) holds out n_test images.
    """
    from sklearn.datasets import load_digits
    bunch = load_digits()
    images = torch.tensor(bunch.images, dtype=torch.float32)[:, None] / 16.0
    labels = torch.tensor(bunch.target, dtype=torch.long)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    images, labels = _to_rgb(images[order], size), labels[order]
    return {"x_train": images[n_test:], "y_train": labels[n_test:],
            "x_test": images[:n_test], "y_test": labels[:n_test],
            "classes": [str(d) for d in range(10)]}


IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"}


def load_imagefolder(root, size=32, n_test=0.2, seed=0):
    """A class-per-folder directory: root/<class>/<image>.

    Hidden files are ignored; any other file that is not an image is an error, as is an empty class
    folder. Images of mixed sizes are resized to size x size (bilinear), so they may differ.
    A fixed random split (seed) holds out the fraction n_test.
    """
    from PIL import Image, UnidentifiedImageError
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"imagefolder: {root} is not a directory; point data.imagefolder.root at a "
                        "folder with one sub-folder of images per class")
    class_dirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not class_dirs:
        raise DataError(f"imagefolder: {root} has no class sub-folders")
    images, labels = [], []
    for label, class_dir in enumerate(class_dirs):
        files = sorted(f for f in class_dir.iterdir() if f.is_file() and not f.name.startswith("."))
        if not files:
            raise DataError(f"imagefolder: class folder {class_dir} is empty")
        for file in files:
            try:
                with Image.open(file) as im:
                    rgb = im.convert("RGB")
            except (UnidentifiedImageError, OSError):
                raise DataError(f"imagefolder: {file} is not an image this loader can read") from None
            x = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)
            x = x.view(rgb.height, rgb.width, 3).permute(2, 0, 1)[None].float() / 255
            images.append(_to_rgb(x, size)[0])
            labels.append(label)
    images, labels = torch.stack(images), torch.tensor(labels)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    k = max(1, int(round(n_test * len(labels))))
    images, labels = images[order], labels[order]
    return {"x_train": images[k:], "y_train": labels[k:], "x_test": images[:k], "y_test": labels[:k],
            "classes": [d.name for d in class_dirs]}


CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_TRAIN = [f"data_batch_{i}" for i in range(1, 6)]


def load_cifar10(root, size=32):
    """CIFAR-10 from the python-pickle files under root (never downloaded at run time): root is the
    folder cifar-10-batches-py or its parent. Each batch file pickles a dict with `data` (n x 3072
    uint8, the red, green and blue planes of a 32 x 32 image in turn) and `labels`; batches.meta
    names the classes (`label_names`). Read here rather than through torchvision's CIFAR10, whose
    md5 check refuses any file but the published ones (a small file in the same layout included)."""
    import pickle
    folder = Path(root) if Path(root).name == CIFAR10_FOLDER else Path(root, CIFAR10_FOLDER)
    names = CIFAR10_TRAIN + ["test_batch", "batches.meta"]
    if not all((folder / name).is_file() for name in names):
        raise DataError(f"cifar10: no CIFAR-10 files under {root}; extract cifar-10-python.tar.gz "
                        "there (the folder cifar-10-batches-py); this pipeline never downloads")

    def unpickle(name):
        with open(folder / name, "rb") as f:
            return pickle.load(f, encoding="latin1")

    def tensors(files):
        batches = [unpickle(name) for name in files]
        x = torch.cat([torch.as_tensor(b["data"]).reshape(-1, 3, 32, 32) for b in batches]).float() / 255
        return _to_rgb(x, size), torch.tensor([label for b in batches for label in b["labels"]])
    x_train, y_train = tensors(CIFAR10_TRAIN)
    x_test, y_test = tensors(["test_batch"])
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test,
            "classes": list(unpickle("batches.meta")["label_names"])}


# ---------------------------------------------------------------- building, saving, loading

def build_dataset(name, params):
    """The dataset `name` as configured in params.data (a DataParams)."""
    size = params.image_size
    if name == "shapes":
        p = params.shapes
        gen = torch.Generator().manual_seed(p.seed)
        opts = dict(size=size, clutter=p.clutter, texture=p.texture, noise=p.noise)
        x_train, y_train = make_shapes(p.n_train, gen, **opts)
        x_test, y_test = make_shapes(p.n_test, gen, **opts)
        classes = SHAPES_CLASSES
    elif name == "shapes4":
        p = params.shapes4
        gen = torch.Generator().manual_seed(p.seed)
        x_train, y_train = make_shapes4(p.n_train, gen, size)
        x_test, y_test = make_shapes4(p.n_test, gen, size)
        classes = SHAPES4_CLASSES
    elif name == "glyphs100":
        return build_glyphs(params.glyphs100, size)
    elif name == "digits":
        return load_digits_dataset(size, params.digits.n_test, params.digits.seed)
    else:
        raise DataError(f"{name}: not a generated dataset (known: glyphs100, shapes, shapes4, digits)")
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test,
            "classes": classes}
