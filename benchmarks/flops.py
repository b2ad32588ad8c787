"""The encoder's training throughput in GFLOP/s against the machine's float32 matmul peak.

    python benchmarks/flops.py [--threads 1] [--batch 128]

One SimCLR step of the studies' model (small CNN + MLP head, two views of `batch` 32 x 32 images,
NT-Xent, backward) with FLOPs counted by torch.utils.flop_counter, in NCHW and channels_last, and
channels_last with the encoder and head under bfloat16 autocast as training runs it
(contrastive.train.encoders_in_bf16); the peaks are a 2048 x 2048 matmul in float32 and in bfloat16
on the same thread count, each row measured against its own precision's peak (the target: the float32
step at 40% of its peak or more, on every CPU seen). Augmentation and the optimizer step are left out:
they are not FLOPs of the encoder.
"""
import copy
import sys

import torch
from torch.utils.flop_counter import FlopCounterMode

from common import alternate, header, record, step_args
from contrastive.losses import nt_xent
from contrastive.methods import SimCLR
from contrastive.models import SmallCNN, make_head
from contrastive.train import encoders_in_bf16


def main(argv):
    a = step_args(argv, __doc__, batch=128)
    v1, v2 = torch.rand(2, a.batch, 3, 32, 32)
    models, views = {}, {}
    for layout, fmt in (("NCHW", torch.contiguous_format), ("channels_last", torch.channels_last)):
        models[layout] = SimCLR(SmallCNN(), make_head("mlp", 64), lambda z1, z2: nt_xent(z1, z2, 0.2)).to(memory_format=fmt)
        views[layout] = (v1.contiguous(memory_format=fmt), v2.contiguous(memory_format=fmt))
    models["channels_last, bf16"] = encoders_in_bf16(copy.deepcopy(models["channels_last"]))
    views["channels_last, bf16"] = views["channels_last"]
    step = lambda layout: lambda: models[layout](*views[layout])[0].backward()
    with FlopCounterMode(display=False) as counter:
        step("NCHW")()
    flops = counter.get_total_flops()
    m, m16 = torch.rand(2048, 2048), torch.rand(2048, 2048).bfloat16()
    t = alternate({"matmul": lambda: m @ m, "matmul bf16": lambda: m16 @ m16,
                   **{layout: step(layout) for layout in models}}, repeats=9, warmup=2)
    peaks = {"float32": 2 * 2048 ** 3 / t["matmul"] / 1e9, "bfloat16": 2 * 2048 ** 3 / t["matmul bf16"] / 1e9}
    header(f"SimCLR step (forward + backward), batch {a.batch} x 2 views, {a.threads} thread(s)")
    print(f"# {flops / 1e9:.2f} GFLOP per step; matmul peak float32 {peaks['float32']:.1f} GFLOP/s, "
          f"bfloat16 {peaks['bfloat16']:.1f} GFLOP/s")
    print(f"{'layout':20s} {'ms/step':>8s} {'GFLOP/s':>8s} {'of peak':>8s}")
    rows = []
    for layout in models:
        precision = "bfloat16" if "bf16" in layout else "float32"
        rate, peak = flops / t[layout] / 1e9, peaks[precision]
        rows.append({"layout": layout, "ms_per_step": 1e3 * t[layout], "gflops": rate, "peak": precision,
                     "peak_gflops": peak, "fraction_of_peak": rate / peak})
        print(f"{layout:20s} {1e3 * t[layout]:8.1f} {rate:8.1f} {rate / peak:8.1%}")
    record("flops", {"threads": a.threads, "batch": a.batch, "gflop_per_step": flops / 1e9,
                     "matmul_peak_gflops": peaks["float32"], "matmul_peak_gflops_bf16": peaks["bfloat16"], "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
