"""glyphs100: a procedural dataset of 100 stroke glyphs in 10 families, with headroom for the study.

Why it exists (issue 28): on `shapes` (10 classes) the strongest arms sit near the ceiling, about 10%
of a batch's negatives share the anchor's class, and there is no graded similarity between classes.
glyphs100 has 100 fine classes in 10 superclasses, 1% same-class negatives in a batch, and fine
distinctions that an untrained encoder cannot read off colour or texture.

Design
------
A glyph is drawn with strokes (polylines) in a canonical frame [-1, 1]^2 (u right, v up).

- Superclass (family) = a base skeleton of 2-4 strokes inside [-0.6, 0.6]^2: triangle, arch, T,
  Y, W, lollipop, arrow, E, J, P. No base equals another base, or itself, turned by 90, 180 or
  270 degrees, so an image's orientation stays visible in its content (the rotation probes); a
  base that is not mirror-symmetric has no mirror image among the bases.
- Fine class = base + one accent: a short bar, dash or diagonal in the margin around the base
  (10 accents, shared by all families as strokes are shared by an alphabet). No two accents are
  mirror images of each other, so the horizontal flip of the augmentation never turns one class
  into another. Classes of one family share the base, most of the ink, so they are more alike
  than classes of two families that share only an accent (tests/test_glyphs.py checks this on the
  templates).

Within-class variation (the augmentation does not remove it; the encoder must learn to ignore it):
each stroke shifted on its own (`jitter`, handwriting-like gaps at joints), a smooth sinusoidal
warp of the frame (`warp`), rotation (+-`rotation` degrees), shear and aspect, stroke width
(`stroke` to twice that),
position and scale, and parts: with probability `part_drop` one base stroke is left out.

Nuisances (what an augmentation must remove): foreground and background colour (kept apart in
brightness by `min_contrast`), a striped background texture of random angle and frequency
(`texture`), a brightness gradient across the image, `clutter` distractor strokes (a share
`clutter_mimic` of them in the glyph's own colour, so they can mimic an accent), global brightness, and pixel noise.

The knobs' values live in params.yaml (data.glyphs100; schema replication.run.config.GlyphsData);
contrastive.data.build_dataset("glyphs100", ...) builds the dataset the study trains on. The pilot that
fixed them, against the untrained control and the ceiling only, is
tools/pilot_dataset.py (reports/pilot/glyphs100.json).

Format: the same as contrastive.data.make_shapes: images (n, 3, size, size) float32 in [0, 1],
labels (n,) int64; the dataset dict adds `superclass` (the family index of each fine class) and
`superclasses` (family names) to {x_train, y_train, x_test, y_test, classes}.

Labels come in balanced blocks: every consecutive block of 100 images holds each class once, in a
random order. The first k x 100 training images hold exactly k images of each class, so a probe
given the first n_labelled = k x 100 images (evaluate_representation) sees exactly k labels per
class. Every random draw is made up front for the whole split, in a fixed order, and rendering
draws nothing, so the images depend only on the seed (not on the chunk size).

The dataset's statistics (same-class share of in-batch negatives, class counts) are the manifest's
business: replication/datasets.py.
"""
import math
from types import SimpleNamespace

import torch


def _arc(cx, cy, r, start, end, pieces=8):
    """A circular arc as a polyline: centre (cx, cy), radius r, from `start` to `end` degrees."""
    angles = torch.linspace(math.radians(start), math.radians(end), pieces + 1)
    return [(cx + r * math.cos(a), cy + r * math.sin(a)) for a in angles.tolist()]


# Each base: name -> strokes; a stroke is a polyline [(u, v), ...] in [-0.6, 0.6]^2.
BASES = {
    "triangle": [[(-0.6, -0.5), (0.6, -0.5)], [(0.6, -0.5), (0.0, 0.6)], [(0.0, 0.6), (-0.6, -0.5)]],
    "arch": [[(-0.5, -0.6), (-0.5, 0.0)], _arc(0, 0, 0.5, 180, 0), [(0.5, 0.0), (0.5, -0.6)]],
    "T": [[(-0.6, 0.55), (0.6, 0.55)], [(0.0, 0.55), (0.0, -0.6)]],
    "Y": [[(-0.55, 0.6), (0.0, 0.0)], [(0.55, 0.6), (0.0, 0.0)], [(0.0, 0.0), (0.0, -0.6)]],
    "W": [[(-0.6, 0.55), (-0.3, -0.55)], [(-0.3, -0.55), (0.0, 0.25)], [(0.0, 0.25), (0.3, -0.55)],
          [(0.3, -0.55), (0.6, 0.55)]],
    "lollipop": [_arc(0, 0.25, 0.35, -90, 270, 12), [(0.0, -0.1), (0.0, -0.6)], [(-0.3, -0.6), (0.3, -0.6)]],
    "arrow": [[(0.0, -0.6), (0.0, 0.6)], [(0.0, 0.6), (-0.4, 0.2)], [(0.0, 0.6), (0.4, 0.2)]],
    "E": [[(-0.45, -0.6), (-0.45, 0.6)], [(-0.45, 0.6), (0.45, 0.6)], [(-0.45, 0.0), (0.3, 0.0)],
          [(-0.45, -0.6), (0.45, -0.6)]],
    "J": [[(0.3, 0.6), (0.3, -0.25)], _arc(0.0, -0.25, 0.3, 0, -180), [(0.0, 0.6), (0.55, 0.6)]],
    "P": [[(-0.4, -0.6), (-0.4, 0.6)], [(-0.4, 0.6), (0.1, 0.6)] + _arc(0.1, 0.3, 0.3, 90, -90)[1:]
          + [(-0.4, 0.0)]],
}

# Each accent: name -> one short stroke in the margin (0.6 < |u| or |v| < 0.95). Dashes are short
# bars (length 0.12). No accent is the mirror image (u -> -u) of another.
ACCENTS = {
    "top bar": [(-0.25, 0.85), (0.25, 0.85)],
    "bottom bar": [(-0.25, -0.85), (0.25, -0.85)],
    "top dash": [(-0.06, 0.85), (0.06, 0.85)],
    "bottom dash": [(-0.06, -0.85), (0.06, -0.85)],
    "left bar": [(-0.85, -0.25), (-0.85, 0.25)],
    "right dash": [(0.85, -0.06), (0.85, 0.06)],
    "top-left dash": [(-0.86, 0.8), (-0.74, 0.8)],
    "top-right slash": [(0.65, 0.65), (0.9, 0.9)],
    "bottom-right bar": [(0.55, -0.85), (0.9, -0.85)],
    "bottom-left backslash": [(-0.92, -0.62), (-0.68, -0.86)],
}

SUPERCLASSES = list(BASES)
CLASSES = [f"{base} + {accent}" for base in BASES for accent in ACCENTS]
SUPERCLASS = [i // len(ACCENTS) for i in range(len(CLASSES))]     # family of each fine class


def _segments():
    """Every class's strokes as padded segment tables: ends (C, S, 4) as (u0, v0, u1, v1),
    stroke (C, S) the stroke index of each segment (the accent is stroke 0; base strokes 1..),
    valid (C, S) false on padding."""
    tables = []
    for base in BASES.values():
        for accent in ACCENTS.values():
            strokes = [accent] + base
            tables.append([(p + q, k) for k, stroke in enumerate(strokes) for p, q in zip(stroke, stroke[1:])])
    S = max(len(t) for t in tables)
    ends, stroke, valid = torch.zeros(len(tables), S, 4), torch.zeros(len(tables), S, dtype=torch.long), \
        torch.zeros(len(tables), S, dtype=torch.bool)
    for c, table in enumerate(tables):
        for s, (seg, k) in enumerate(table):
            ends[c, s], stroke[c, s], valid[c, s] = torch.tensor(seg), k, True
    return ends, stroke, valid


SEGMENTS = _segments()
N_STROKES = 1 + max(len(b) for b in BASES.values())


def _distance(px, py, ends):
    """Distance from points (px, py), each (n, P), to segments ends (n, S, 4): (n, S, P)."""
    ax, ay, bx, by = (ends[..., i, None] for i in range(4))         # each (n, S, 1)
    dx, dy = bx - ax, by - ay
    t = (((px[:, None] - ax) * dx + (py[:, None] - ay) * dy) / (dx**2 + dy**2 + 1e-9)).clamp(0, 1)
    return torch.hypot(px[:, None] - ax - t * dx, py[:, None] - ay - t * dy)


def balanced_labels(n, n_classes, gen):
    """n labels in blocks of n_classes, each block a random permutation of all classes."""
    blocks = [torch.randperm(n_classes, generator=gen) for _ in range(-(-n // n_classes))]
    return torch.cat(blocks)[:n] if blocks else torch.zeros(0, dtype=torch.long)


def _draw(n, gen, s, size):
    """Every random quantity of n images (knobs s), in a fixed order: a dict of tensors, n rows."""
    u = lambda *shape: torch.rand(n, *shape, generator=gen)
    d = {"labels": balanced_labels(n, len(CLASSES), gen),
         "stroke_shift": s.jitter * torch.randn(n, N_STROKES, 2, generator=gen),
         "drop_draw": u(), "drop_which": u(),
         "centre": (u(2) - 0.5) * 0.4, "scale": 0.55 + 0.3 * u(),
         "angle": math.radians(s.rotation) * (2 * u() - 1), "shear": 0.2 * (2 * u() - 1),
         "aspect": 0.85 + 0.3 * u(), "width": s.stroke * (1 + u()),
         "warp_freq": 2 + 2 * u(2), "warp_phase": 2 * math.pi * u(2),
         "background": 0.1 + 0.5 * u(3), "foreground": u(3),
         "stripe_angle": math.pi * u(), "stripe_freq": 3 + 9 * u(), "stripe_phase": 2 * math.pi * u(),
         "gradient": 0.3 * (2 * u(2) - 1),
         "clutter_centre": 1.8 * (u(s.clutter, 2) - 0.5), "clutter_angle": math.pi * u(s.clutter),
         "clutter_length": 0.1 + 0.25 * u(s.clutter), "clutter_own_colour": u(s.clutter) < s.clutter_mimic,
         "clutter_colour": u(s.clutter, 3), "brightness": 0.6 + 0.8 * u()}
    d["noise"] = s.noise * torch.randn(n, 3, size, size, generator=gen)
    return d


def _glyph_ink(d, n, s, size):
    """How much of each pixel the glyph covers, (n, size * size) in [0, 1]."""
    axis = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(-axis, axis, indexing="ij")              # image rows grow downwards
    px, py = xx.reshape(1, -1) - d["centre"][:, :1], yy.reshape(1, -1) - d["centre"][:, 1:]
    # inverse of: glyph frame -> aspect/shear -> rotation -> scale -> image
    cos, sin = torch.cos(d["angle"])[:, None], torch.sin(d["angle"])[:, None]
    qx, qy = (cos * px + sin * py) / d["scale"][:, None], (-sin * px + cos * py) / d["scale"][:, None]
    qx = (qx - d["shear"][:, None] * qy) / d["aspect"][:, None]
    fu, fv = d["warp_freq"][:, :1], d["warp_freq"][:, 1:]
    qx, qy = (qx + s.warp * torch.sin(fu * qy + d["warp_phase"][:, :1]),
              qy + s.warp * torch.sin(fv * qx + d["warp_phase"][:, 1:]))

    ends, stroke, valid = (t[d["labels"]] for t in SEGMENTS)        # (n, S, 4), (n, S), (n, S)
    shift = torch.gather(d["stroke_shift"], 1, stroke[..., None].expand(-1, -1, 2))   # (n, S, 2)
    ends = ends + shift.repeat(1, 1, 2)
    n_base = stroke.max(1).values                                     # base strokes: 1..n_base
    dropped = 1 + (d["drop_which"] * n_base).long().clamp(max=n_base - 1)
    dropped = torch.where(d["drop_draw"] < s.part_drop, dropped, torch.full_like(dropped, -1))
    keep = valid & (stroke != dropped[:, None])
    dist = _distance(qx, qy, ends).masked_fill(~keep[..., None], math.inf).amin(1)   # (n, P)
    pixel = 2 / size / d["scale"][:, None]                            # one pixel in glyph units
    return ((d["width"][:, None] - dist) / pixel + 0.5).clamp(0, 1)


def _clutter_ink(d, n, k, size):
    """Coverage of distractor stroke k, (n, size * size), drawn in image coordinates."""
    axis = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(-axis, axis, indexing="ij")
    c, a, half = d["clutter_centre"][:, k], d["clutter_angle"][:, k], d["clutter_length"][:, k] / 2
    ends = torch.stack([c[:, 0] - half * torch.cos(a), c[:, 1] - half * torch.sin(a),
                        c[:, 0] + half * torch.cos(a), c[:, 1] + half * torch.sin(a)], 1)[:, None]
    dist = _distance(xx.reshape(1, -1).expand(n, -1), yy.reshape(1, -1).expand(n, -1), ends)[:, 0]
    width = d["width"][:, None] * d["scale"][:, None]                 # as thick as the glyph's strokes
    return ((width - dist) / (2 / size) + 0.5).clamp(0, 1)


def _render(d, s, size):
    """Images (n, 3, size, size) in [0, 1] from the draws d; draws nothing."""
    n = len(d["labels"])
    axis = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(axis, axis, indexing="ij")
    background, foreground = d["background"], d["foreground"]
    gap = foreground.mean(1, keepdim=True) - background.mean(1, keepdim=True)
    foreground = (foreground + torch.where(gap >= 0, s.min_contrast, -s.min_contrast)).clamp(0, 1)

    a = d["stripe_angle"][:, None, None]
    stripes = torch.sin(d["stripe_freq"][:, None, None] * (xx * torch.cos(a) + yy * torch.sin(a))
                        + d["stripe_phase"][:, None, None])
    light = 1 + d["gradient"][:, 0, None, None] * xx + d["gradient"][:, 1, None, None] * yy
    images = (background[:, :, None, None] + s.texture * stripes[:, None]) * light[:, None]

    ink = _glyph_ink(d, n, s, size).view(n, 1, size, size)
    images = images * (1 - ink) + foreground[:, :, None, None] * ink
    for k in range(d["clutter_centre"].shape[1]):                    # distractors drawn on top
        colour = torch.where(d["clutter_own_colour"][:, k, None], foreground, d["clutter_colour"][:, k])
        ink = _clutter_ink(d, n, k, size).view(n, 1, size, size)
        images = images * (1 - ink) + colour[:, :, None, None] * ink
    images = images * d["brightness"][:, None, None, None] + d["noise"]
    return images.clamp(0, 1)


def make_glyphs(n, gen, knobs, size=32, chunk=1000):
    """n images of glyphs100 and their fine labels, drawing everything from `gen`; knobs: the
    difficulty knobs of params.yaml data.glyphs100 (a replication.run.config.GlyphsData, or any object
    with those attributes). Returns images (n, 3, size, size) float32 in [0, 1], labels (n,) int64."""
    d = _draw(n, gen, knobs, size)
    parts = [_render({k: v[i:i + chunk] for k, v in d.items()}, knobs, size) for i in range(0, n, chunk)]
    images = torch.cat(parts) if parts else torch.zeros(0, 3, size, size)
    return images, d["labels"]


def build_glyphs(p, size=32):
    """The dataset dict of params.yaml data.glyphs100 (p: seed, n_train, n_test and the knobs):
    train then test drawn from one generator seeded with p.seed."""
    gen = torch.Generator().manual_seed(p.seed)
    x_train, y_train = make_glyphs(p.n_train, gen, p, size)
    x_test, y_test = make_glyphs(p.n_test, gen, p, size)
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test,
            "classes": list(CLASSES), "superclass": list(SUPERCLASS), "superclasses": list(SUPERCLASSES)}


def templates(size=32):
    """Each class drawn plainly (C, size, size) in [0, 1]: centred, upright, no deformation,
    stroke width 0.1, no part left out; for checking the class structure."""
    C = len(CLASSES)
    d = {"labels": torch.arange(C), "stroke_shift": torch.zeros(C, N_STROKES, 2),
         "drop_draw": torch.ones(C), "drop_which": torch.zeros(C), "centre": torch.zeros(C, 2),
         "scale": torch.full((C,), 0.8), "angle": torch.zeros(C), "shear": torch.zeros(C),
         "aspect": torch.ones(C), "width": torch.full((C,), 0.1), "warp_freq": torch.ones(C, 2),
         "warp_phase": torch.zeros(C, 2)}
    return _glyph_ink(d, C, SimpleNamespace(warp=0.0, part_drop=0.0), size).view(C, size, size)

