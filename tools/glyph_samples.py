"""Sample images of glyphs100 as PNG: one row per family (superclass), and one image's augmented views.

    .venv/bin/python tools/glyph_samples.py [--out reports/pilot] [--seed 0]

Writes glyphs100_samples.png (row = family; for each of `classes` classes of the family, `per_class`
images side by side; a gap between classes), glyphs100_templates.png (every class drawn plainly,
10 x 10, family per row) and glyphs100_views.png (one image, then 8 views from
contrastive.augment.augment). Images are upscaled `zoom` times, nearest neighbour.
"""
import argparse
from pathlib import Path

import torch
from PIL import Image

from contrastive.augment import augment
from replication.config import read_params
from replication.glyphs import ACCENTS, SUPERCLASSES, make_glyphs, templates


def to_png(grid, path, zoom=3):
    """grid (3, H, W) in [0, 1] -> PNG, upscaled `zoom` times."""
    pixels = (grid.clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).contiguous().numpy()
    image = Image.fromarray(pixels)
    image.resize((image.width * zoom, image.height * zoom), Image.NEAREST).save(path)


def tile(rows, pad=2, value=1.0):
    """rows: list of lists of images (3, h, w) (None: a blank gap) -> one (3, H, W) grid."""
    h, w = next(im for row in rows for im in row if im is not None).shape[1:]
    width = max(len(row) for row in rows)
    grid = torch.full((3, len(rows) * (h + pad) + pad, width * (w + pad) + pad), value)
    for r, row in enumerate(rows):
        for c, im in enumerate(row):
            if im is not None:
                y, x = pad + r * (h + pad), pad + c * (w + pad)
                grid[:, y:y + h, x:x + w] = im
    return grid


def main(out, seed, classes=5, per_class=3):
    out.mkdir(parents=True, exist_ok=True)
    knobs = read_params(Path("params.yaml")).data.glyphs100
    x, y = make_glyphs(2000, torch.Generator().manual_seed(seed), knobs)
    rows = []
    for family in range(len(SUPERCLASSES)):
        row = []
        for k in range(classes):
            label = family * len(ACCENTS) + 2 * k                     # every other accent
            row += [x[i] for i in (y == label).nonzero()[:per_class, 0]] + [None]
        rows.append(row[:-1])
    to_png(tile(rows), out / "glyphs100_samples.png", zoom=2)
    plain = templates().reshape(len(SUPERCLASSES), len(ACCENTS), 1, 32, 32).expand(-1, -1, 3, -1, -1)
    to_png(tile([list(row) for row in plain]), out / "glyphs100_templates.png")
    views = augment(x[:1].expand(8, -1, -1, -1), torch.Generator().manual_seed(seed))
    to_png(tile([[x[0], None] + list(views)]), out / "glyphs100_views.png", zoom=4)
    print(f"wrote {out}/glyphs100_samples.png, glyphs100_templates.png, glyphs100_views.png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/pilot"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.out, args.seed)
