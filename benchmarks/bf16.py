"""bfloat16 autocast against float32 on the CPU at hand: the default arm's training step, side by side.

    python benchmarks/bf16.py [--threads 1] [--batch 128]

The default arm (resolved/pretrain/simclr_mocov2.json: simclr) trained as a run trains it, by
contrastive.train.train: two augmented views, forward, backward and Adam, channels_last as
configured; STEPS steps per call, once in float32 and once with the encoder and head under bfloat16
autocast (the loss and similarity matrix stay in float32), the calls alternated. The images are
random (the step's time does not depend on them). Prints each precision's seconds per step, their
ratio and the CPU's native capabilities (contrastive.train.cpu_capabilities). On a CPU without
native bf16 (no AVX512-BF16 or AMX) bf16 is emulated: this measures it, and a run refuses it.
"""
import copy
import sys

import torch

from common import alternate, header, record, step_args
from contrastive.methods import build_method
from contrastive.train import CAPABILITIES, cpu_capabilities, train
from replication.run.config import StudyConfig, read_resolved

STEPS = 5               # training steps per timed call
IMAGES = 2048           # the random training set the batches are drawn from


def main(argv):
    a = step_args(argv, __doc__, batch=128)
    cfg = read_resolved("pretrain/simclr_mocov2", StudyConfig).conditions["simclr"]
    cfg = cfg.model_copy(update={"batch": a.batch, "steps": STEPS})
    x, y = torch.rand(IMAGES, 3, 32, 32), torch.zeros(IMAGES, dtype=torch.long)
    arm = build_method(cfg, n_data=IMAGES, n_classes=1)

    def steps(precision):
        return lambda: train(copy.deepcopy(arm), x, y, torch.Generator().manual_seed(0), cfg, progress=False,
                             precision=precision)

    t = alternate({"float32": steps("fp32"), "bfloat16 autocast": steps("bf16")}, repeats=7, warmup=2)
    fp32_ms, bf16_ms = (1e3 * t[name] / STEPS for name in ("float32", "bfloat16 autocast"))
    capabilities = cpu_capabilities()
    header(f"the default arm's training step (views, forward, backward, Adam), batch {a.batch}, "
           f"{'channels_last' if cfg.channels_last else 'NCHW'}, {a.threads} thread(s)")
    flags = ", ".join(name for name in CAPABILITIES if capabilities[name]) or "none of them"
    print(f"# {', '.join(CAPABILITIES)}: {flags}; bf16 {'native' if capabilities['native_bf16'] else 'emulated'}")
    print(f"float32 {fp32_ms:.1f} ms, bfloat16 autocast {bf16_ms:.1f} ms per step: "
          f"bf16 is {fp32_ms / bf16_ms:.2f}x the speed of float32")
    record("bf16", {"threads": a.threads, "batch": a.batch, "channels_last": cfg.channels_last, "steps_per_call": STEPS,
                    "float32_ms": fp32_ms, "bf16_ms": bf16_ms, "speedup": fp32_ms / bf16_ms})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
