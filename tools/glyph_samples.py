"""The report's glyphs100 figures as PNG, from a small set built in memory (no data stage needed):
for looking at the dataset while its knobs are piloted.

    .venv/bin/python -m tools.glyph_samples [--out reports/pilot] [--n 1000]

Writes glyphs100_samples.png (one image per class, a row per family), glyphs100_views.png (each
family's first image and six views under the default arm's augmentation) and
glyphs100_templates.png (every class drawn plainly). The report stage draws the first two from
data/glyphs100.pt with the same functions (replication.report.figures.dataset_figures).
"""
import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import torch  # noqa: E402

from contrastive.glyphs import CLASSES, SUPERCLASS, SUPERCLASSES, make_glyphs, templates  # noqa: E402
from replication.run.config import read_params  # noqa: E402
from replication.report.figures import dataset_figures  # noqa: E402


def glyphs(x, y):
    return {"x_train": x, "y_train": y, "classes": list(CLASSES), "superclass": list(SUPERCLASS),
            "superclasses": list(SUPERCLASSES)}


def main(out, n):
    out.mkdir(parents=True, exist_ok=True)
    params = read_params(Path("params.yaml"))
    knobs = params.data.glyphs100
    x, y = make_glyphs(n, torch.Generator().manual_seed(knobs.seed), knobs)
    samples, views = dataset_figures(glyphs(x, y), params.pretrain.defaults.model_dump())
    plain = templates().unsqueeze(1).expand(-1, 3, -1, -1)
    template_figure, _ = dataset_figures(glyphs(plain, torch.arange(len(CLASSES))))
    for figure, name in ((samples, "samples"), (views, "views"), (template_figure, "templates")):
        figure.savefig(out / f"glyphs100_{name}.png", dpi=120, bbox_inches="tight")
    print(f"wrote {out}/glyphs100_samples.png, glyphs100_views.png, glyphs100_templates.png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/pilot"))
    parser.add_argument("--n", type=int, default=1000, help="images to draw (every 100 hold each class once)")
    args = parser.parse_args()
    main(args.out, args.n)
