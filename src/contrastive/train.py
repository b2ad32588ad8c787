"""The shared training loop.

Seeds: torch.manual_seed(seed) fixes initialisation (and the few draws methods make from the
global generator); a torch.Generator seeded with `seed` fixes data order and augmentation.
The thread count is set per run, because float results depend on it.
"""
import math
import resource
import time
from collections import deque
from dataclasses import dataclass

import torch
from tqdm import tqdm

from .augment import augment, rotate_by_quarter_turns
from .distributed import data_parallel, local_slice, mean_over_ranks, rank

COLLAPSE_STD = 1e-3     # per-dimension std of normalised embeddings below this means collapse
CHECK_EVERY = 25        # steps between collapse checks
RECENT = 10             # steps averaged in the loss handed to a snapshot
DECAY_SHARE = 0.2       # "wsd": the share of the steps over which the learning rate decays to 0
PROGRESS_LINE = 0       # the terminal line of this process's progress bar (a worker of several: its own)


@dataclass(frozen=True)
class TrainSettings:
    """What the loop needs to know; the study's RunConfig has these fields too and can be passed
    instead. channels_last: NHWC convolutions (faster on CPU; the documents' exact example keeps
    NCHW so that its float sums match). blur, rotate: extra augmentations; colour_strength,
    crop_min_side: how strong the colour jitter and the crop are (augment())."""
    steps: int
    batch: int
    lr: float = 1e-3
    schedule: str = "constant"      # or "cosine", or "wsd" (constant, then a linear decay to 0 over the last DECAY_SHARE)
    blur: bool = False
    colour: bool = True
    colour_strength: float = 1.0
    crop_min_side: float = 0.55
    rotate: bool = False
    channels_last: bool = False

    @property
    def batch_lr(self):
        """The rate Adam runs at (the study's RunConfig scales its lr to the batch)."""
        return self.lr


def embedding_spread(z):
    """Mean per-dimension std of the l2-normalised embeddings z (n, d) across the batch; below
    COLLAPSE_STD the embeddings have collapsed."""
    return torch.nn.functional.normalize(z.float(), dim=1).std(0).mean().item()


def peak_rss_mb():
    """This process's peak resident memory in MB: VmHWM, which starts afresh when a process is
    started (ru_maxrss, the fallback off Linux, carries over the parent's peak)."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def wsd_factor(step, steps, share=DECAY_SHARE):
    """The learning rate's factor before update `step` (0-based) of `steps` under warmup-stable-decay
    without warm-up: 1 until the last `share` of the steps, then falling linearly to 0 at the end.
    A run decayed this way is the constant-rate run, update for update, until its decay starts."""
    decay = max(1, round(share * steps))
    return min(1.0, (steps - step) / decay)


def optimizer(method, cfg):
    """Adam over the trainable parameters, and the schedule if not constant (else None): cosine to 0,
    or wsd (constant, then linear to 0 over the last DECAY_SHARE of the steps)."""
    opt = torch.optim.Adam([p for p in method.parameters() if p.requires_grad], lr=cfg.batch_lr)
    schedules = {
        "cosine": lambda: torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.steps),
        "wsd": lambda: torch.optim.lr_scheduler.LambdaLR(opt, lambda step: wsd_factor(step, cfg.steps)),
    }
    return opt, schedules[cfg.schedule]() if cfg.schedule in schedules else None


NATIVE_BF16 = ("avx512_bf16", "amx_bf16")           # CPU flags with which bf16 runs natively, not emulated
CAPABILITIES = ("avx2", "avx512f", *NATIVE_BF16)   # the flags recorded beside every stage time and pilot
TO_FP32 = "set `precision: fp32` in params.yaml, or run `make exp SET=precision=fp32`"


class PrecisionError(Exception):
    """bf16 asked of a CPU that would emulate it."""


def cpu_capabilities(cpuinfo="/proc/cpuinfo"):
    """Which of CAPABILITIES (AVX2, AVX-512, AVX512-BF16, AMX) the CPU has, from the flags line of
    /proc/cpuinfo (all False where there is none: another OS), and `native_bf16`: AVX512-BF16 or
    AMX, without which bf16 is emulated. {"avx2": bool, ..., "amx_bf16": bool, "native_bf16": bool}."""
    try:
        with open(cpuinfo) as info:
            flags = next(line for line in info if line.startswith("flags")).split()
    except (OSError, StopIteration):
        flags = []
    found = {name: name in flags for name in CAPABILITIES}
    return {**found, "native_bf16": any(found[name] for name in NATIVE_BF16)}


def check_precision(precision, device, fix=TO_FP32):
    """Refuse emulated bf16: precision "bf16" on a CPU device without native bf16 raises PrecisionError,
    one line saying why and `fix`, before any step (on an AVX2-only EPYC an emulated bf16 step took
    9.3x the fp32 one). fp32, and any device but the CPU, pass."""
    if precision == "bf16" and torch.device(device).type == "cpu" and not cpu_capabilities()["native_bf16"]:
        raise PrecisionError("precision bf16 on a CPU without native bf16 (no AVX512-BF16 or AMX): it would be "
                             f"emulated, several times slower than fp32; {fix}")


def in_bf16(module):
    """Run `module` under bfloat16 autocast on its device and hand its output on in float32, so that
    whatever follows it (the loss, the similarity matrix) is computed in float32. Patches the
    instance's forward: the state dict, and so every checkpoint, is unchanged."""
    forward = module.forward

    def forward_in_bf16(x):
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            return forward(x).float()
    module.forward = forward_in_bf16
    return module


def encoders_in_bf16(method):
    """The method's encoder and head (and MoCo's key copies of them) under bfloat16 autocast; returns
    the method."""
    for name in ("f", "g", "f_k", "g_k"):
        if isinstance(getattr(method, name, None), torch.nn.Module):
            in_bf16(getattr(method, name))
    return method


def augment_options(cfg):
    """augment()'s keyword arguments for a run (a TrainSettings or a RunConfig): the views it trains on."""
    return dict(blur=cfg.blur, colour=cfg.colour, colour_strength=cfg.colour_strength, crop_min_side=cfg.crop_min_side)


def draw_batch(x_train, y_train, gen, cfg, device):
    """One step's data: `cfg.batch` indices drawn with replacement, two augmented views of each
    image (and a random quarter turn per view if cfg.rotate), this rank's slice of them.
    Returns v1, v2 (N, 3, H, W), labels (N,) and dataset indices (N,)."""
    index = torch.randint(0, len(x_train), (cfg.batch,), generator=gen)
    x = x_train[index].to(device)
    v1, v2 = (augment(x, gen, **augment_options(cfg)) for _ in range(2))
    if cfg.rotate:  # k * 90 degrees, k ~ U{0..3}, drawn per view
        v1 = rotate_by_quarter_turns(v1, torch.randint(0, 4, (cfg.batch,), generator=gen).to(device))
        v2 = rotate_by_quarter_turns(v2, torch.randint(0, 4, (cfg.batch,), generator=gen).to(device))
    v1, v2, labels, index = (local_slice(t) for t in (v1, v2, y_train[index].to(device), index.to(device)))
    if cfg.channels_last:
        v1, v2 = (v.contiguous(memory_format=torch.channels_last) for v in (v1, v2))
    return v1, v2, labels, index


def stop_reason(step, loss, z):
    """(status, reason) when the run must stop after this step, else None: a NaN/inf loss
    (diverged) or, every CHECK_EVERY steps, embeddings that have collapsed to one point."""
    if not math.isfinite(loss):
        return "diverged", f"loss {loss} at step {step}"
    if (step + 1) % CHECK_EVERY == 0 and mean_over_ranks(embedding_spread(z)) < COLLAPSE_STD:
        return "collapsed", f"embedding std below {COLLAPSE_STD} at step {step}"
    return None


def train(method, x_train, y_train, gen, cfg, device="cpu", snapshot=None, desc="pretrain", progress=True,
          precision="fp32"):
    """Adam on the method's loss for cfg.steps batches of cfg.batch images (a TrainSettings or a
    RunConfig), drawn with replacement.

    Per step: draw a batch and two views with `gen`, (loss, z) = method(v1, v2, labels, index),
    one Adam step. snapshot(steps_done, method, recent_loss) is called before the first step (0,
    recent_loss None) and after every completed step, with the mean loss of the last RECENT steps,
    so that a caller can save checkpoints at the steps it wants; it must not draw from any
    generator. device: where the model runs (the data stay on the CPU and each batch is
    moved); precision "bf16": the encoder and head under bfloat16 autocast on any device, the loss
    in float32 (in_bf16; a run's entry refuses it where it would be emulated: check_precision);
    "fp32": float32 throughout. Under torch.distributed, cfg.batch is the global batch:
    every rank draws the same indices and views and trains on its own slice, BN spans every rank
    where the method wants global BN, and DistributedDataParallel averages the gradients
    (src/contrastive/distributed.py). Stops early on a NaN/inf loss (status 'diverged') or
    collapsed embeddings (status 'collapsed'); a diverged step is not applied.
    Returns a record: status, steps_done, reason, final loss, loss curve.
    """
    device = torch.device(device)
    method.to(device)
    if cfg.channels_last:
        method.to(memory_format=torch.channels_last)
    if precision == "bf16":
        encoders_in_bf16(method)
    model = data_parallel(method, device)
    opt, sched = optimizer(method, cfg)
    record = {"status": "ok", "steps_done": 0, "reason": None, "loss": None, "loss_curve": []}
    curve_every = max(1, cfg.steps // 20)
    recent = deque(maxlen=RECENT)
    if snapshot:
        snapshot(0, method, None)
    for step in tqdm(range(cfg.steps), desc=desc, disable=not progress or rank() > 0, leave=False, mininterval=2,
                     position=PROGRESS_LINE):
        v1, v2, labels, index = draw_batch(x_train, y_train, gen, cfg, device)
        loss, z = model(v1, v2, labels, index)
        value = mean_over_ranks(loss.item())
        if not math.isfinite(value):
            record.update(zip(("status", "reason"), stop_reason(step, value, z)))
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        record["steps_done"] = step + 1
        record["loss"] = value
        recent.append(value)
        if step % curve_every == 0 or step == cfg.steps - 1:
            record["loss_curve"].append([step, value])
        stop = stop_reason(step, value, z)
        if stop:
            record.update(zip(("status", "reason"), stop))
            break
        if snapshot:
            snapshot(step + 1, method, sum(recent) / len(recent))
    return record


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
