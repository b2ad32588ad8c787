"""bfloat16 autocast on the CPU against float32: the study's encoder step, side by side.

    python benchmarks/bf16.py [--threads 1] [--batch 256]

One SimCLR step of the studies' model (small CNN + MLP head, two views of `batch` 32 x 32 images,
NT-Xent, backward) in channels_last, once in float32 and once with the encoder under bfloat16
autocast (the loss and similarity matrix stay in float32), timed in alternation. Whether the study
may adopt bf16 also needs its effects to stay within their intervals (the scale-ladder work); this
prints only the speed ratio on the CPU at hand. CPUs without native bf16 (no AVX512-BF16 or AMX)
emulate it and are expected to be slower.
"""
import sys

import torch

from common import alternate, header, record, step_args
from contrastive.losses import nt_xent
from contrastive.methods import SimCLR
from contrastive.models import SmallCNN, make_head


def cpu_flags():
    try:
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return []
    return [f for f in ("avx512_bf16", "amx_bf16", "amx_tile") if f in flags]


def main(argv):
    a = step_args(argv, __doc__, batch=256)
    model = SimCLR(SmallCNN(), make_head("mlp", 64), lambda z1, z2: nt_xent(z1.float(), z2.float(), 0.2))
    model = model.to(memory_format=torch.channels_last)
    v1, v2 = (v.contiguous(memory_format=torch.channels_last) for v in torch.rand(2, a.batch, 3, 32, 32))

    def step(bf16):
        def run():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss, _ = model(v1, v2)
            loss.backward()
        return run

    t = alternate({"float32": step(False), "bfloat16 autocast": step(True)}, repeats=7, warmup=2)
    header(f"SimCLR step (forward + backward), batch {a.batch} x 2 views, {a.threads} thread(s)")
    native = ", ".join(cpu_flags()) or "none (emulated)"
    print(f"# native bf16 instructions: {native}")
    ratio = t["float32"] / t["bfloat16 autocast"]
    print(f"float32 {1e3 * t['float32']:.1f} ms, bfloat16 autocast {1e3 * t['bfloat16 autocast']:.1f} ms: "
          f"bf16 is {ratio:.2f}x the speed of float32")
    record("bf16", {"threads": a.threads, "batch": a.batch, "native_bf16": cpu_flags(),
                    "float32_ms": 1e3 * t["float32"], "bf16_ms": 1e3 * t["bfloat16 autocast"], "speedup": ratio})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
