"""The shared training loop.

Seeds: torch.manual_seed(seed) fixes initialisation (and the few draws methods make from the
global generator); a torch.Generator seeded with `seed` fixes data order and augmentation.
The thread count is set per run, because float results depend on it.
"""
import math
import resource
import time

import torch
from tqdm import tqdm

from .augment import augment, rotate_by_quarter_turns
from .distributed import data_parallel, local_slice, mean_over_ranks, world

COLLAPSE_STD = 1e-3     # per-dimension std of normalised embeddings below this means collapse
CHECK_EVERY = 25        # steps between collapse checks


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


def train(method, x_train, y_train, gen, steps, batch, lr, schedule="constant", blur=False,
          rotate=False, channels_last=False, device="cpu", amp=False, desc="pretrain", progress=True):
    """Adam on the method's loss for `steps` batches of `batch` images drawn with replacement.

    Per step: draw indices, sample two views with `gen`, loss = method(v1, v2, labels, index),
    one Adam step. channels_last: run the convolutions in NHWC layout (faster on CPU; the
    documents' exact example keeps NCHW so that its float sums match). device: where the model
    runs (the data stay on the CPU and each batch is moved); amp: bfloat16 autocast on CUDA.
    Under torch.distributed, `batch` is the global batch: every rank draws the same indices and
    views and trains on its own slice, BN spans every rank where the method wants global BN, and
    DistributedDataParallel averages the gradients (src/contrastive/distributed.py).
    Stops early on a NaN/inf loss (status 'diverged') or collapsed embeddings (status
    'collapsed'). Returns a record: status, steps_done, reason, final loss, loss curve.
    """
    device = torch.device(device)
    method.to(device)
    if channels_last:
        method.to(memory_format=torch.channels_last)
    model = data_parallel(method, device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16,
                              enabled=amp and device.type == "cuda" and torch.cuda.is_bf16_supported())
    params = [p for p in method.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps) if schedule == "cosine" else None
    record = {"status": "ok", "steps_done": 0, "reason": None, "loss": None, "loss_curve": []}
    curve_every = max(1, steps // 20)
    for step in tqdm(range(steps), desc=desc, disable=not progress or world()[0] > 0, leave=False, mininterval=2):
        index = torch.randint(0, len(x_train), (batch,), generator=gen)
        x = x_train[index].to(device)
        v1, v2 = augment(x, gen, blur=blur), augment(x, gen, blur=blur)
        if rotate:  # one more augmentation: k * 90 degrees, k ~ U{0..3}, drawn per view
            v1 = rotate_by_quarter_turns(v1, torch.randint(0, 4, (batch,), generator=gen).to(device))
            v2 = rotate_by_quarter_turns(v2, torch.randint(0, 4, (batch,), generator=gen).to(device))
        v1, v2, labels, index = (local_slice(t) for t in (v1, v2, y_train[index].to(device), index.to(device)))
        if channels_last:
            v1, v2 = (v.contiguous(memory_format=torch.channels_last) for v in (v1, v2))
        with autocast:
            loss = model(v1, v2, labels, index)
        value = mean_over_ranks(loss.item())
        if not math.isfinite(value):
            record.update(status="diverged", reason=f"loss {value} at step {step}")
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        record["steps_done"] = step + 1
        record["loss"] = value
        if step % curve_every == 0 or step == steps - 1:
            record["loss_curve"].append([step, value])
        if (step + 1) % CHECK_EVERY == 0 and mean_over_ranks(embedding_spread(method.last_z)) < COLLAPSE_STD:
            record.update(status="collapsed", reason=f"embedding std below {COLLAPSE_STD} at step {step}")
            break
    return record


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
