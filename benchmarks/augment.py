"""Batched per-sample augmentation: this project's augment() against kornia and torchvision v2.

    python benchmarks/augment.py [--batch 128 256] [--threads 1]

Two views of a batch of 32 x 32 images, each image with its own random crop (30-100% of the area,
square), flip, brightness, contrast, colour and grayscale draw. kornia draws per-sample parameters
for a whole batch; torchvision.transforms.v2 draws one set per call, so per-sample views need a
Python loop over the images (shown), or one set for the whole batch (shown for scale, not
equivalent). Needs kornia (benchmarks/requirements.txt; `make bench` installs it).
"""
import argparse
import sys

import torch

from common import alternate, header, record
from contrastive.augment import augment


def kornia_pipeline():
    import kornia.augmentation as K
    return K.AugmentationSequential(
        K.RandomResizedCrop((32, 32), scale=(0.3, 1.0), ratio=(1.0, 1.0)),
        K.RandomHorizontalFlip(),
        K.ColorJiggle(brightness=0.4, contrast=0.4, saturation=0.4, p=1.0),
        K.RandomGrayscale(p=0.2))


def torchvision_pipeline():
    from torchvision.transforms import v2
    return v2.Compose([v2.RandomResizedCrop(32, scale=(0.3, 1.0), ratio=(1.0, 1.0), antialias=False),
                       v2.RandomHorizontalFlip(), v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4),
                       v2.RandomGrayscale(p=0.2)])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--threads", type=int, default=1)
    a = parser.parse_args(argv)
    try:
        kornia_aug = kornia_pipeline()
    except ImportError:
        print("kornia is not installed: pip install -r benchmarks/requirements.txt (or make bench)")
        return 1
    torch.set_num_threads(a.threads)
    tv = torchvision_pipeline()
    header(f"two augmented views per image, {a.threads} thread(s)")
    print(f"{'batch':>6s} {'ours ms':>8s} {'kornia ms':>10s} {'tv2 loop ms':>12s} {'tv2 batch ms':>13s} "
          f"{'kornia/ours':>12s} {'tv2 loop/ours':>14s}")
    rows = []
    for n in a.batch:
        x = torch.rand(n, 3, 32, 32, generator=torch.Generator().manual_seed(0))
        gen = torch.Generator().manual_seed(0)
        t = alternate({
            "ours": lambda: (augment(x, gen), augment(x, gen)),
            "kornia": lambda: (kornia_aug(x), kornia_aug(x)),
            "tv2 loop": lambda: (torch.stack([tv(img) for img in x]), torch.stack([tv(img) for img in x])),
            "tv2 batch": lambda: (tv(x), tv(x)),
        }, repeats=9, warmup=2)
        rows.append({"batch": n, **{f"{k} ms": 1e3 * v for k, v in t.items()},
                     "kornia / ours": t["kornia"] / t["ours"], "tv2 loop / ours": t["tv2 loop"] / t["ours"]})
        print(f"{n:6d} {1e3 * t['ours']:8.1f} {1e3 * t['kornia']:10.1f} {1e3 * t['tv2 loop']:12.1f} "
              f"{1e3 * t['tv2 batch']:13.1f} {t['kornia'] / t['ours']:11.2f}x {t['tv2 loop'] / t['ours']:13.2f}x")
    record("augment", {"threads": a.threads, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
