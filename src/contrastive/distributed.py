"""Data parallelism with torch.distributed, launched by torchrun: one process (rank) per device.

Every rank draws the same global batch and the same augmentations (one seed), keeps its own
contiguous slice (rank r: rows r n/W ... (r+1) n/W) and runs the model on it; gradients are
averaged by DistributedDataParallel. So a run on W ranks sees exactly the batches of a run in one
process, and differs from it only where the method says so (MoCo's per-device BN) and in float
rounding. Every helper here is the identity in a single process.

    torchrun --nproc-per-node 2 experiments/pretrain.py <study>     # gloo on CPU, NCCL on GPUs
"""
import os
import tempfile
from pathlib import Path

import torch
import torch.multiprocessing
import torch.distributed as dist
import torch.nn as nn


def _initialized():
    return dist.is_available() and dist.is_initialized()


def rank():
    """This process's rank; 0 outside torch.distributed."""
    return dist.get_rank() if _initialized() else 0


def world_size():
    """The number of processes sharing each batch; 1 outside torch.distributed."""
    return dist.get_world_size() if _initialized() else 1


def select_device(name="auto"):
    """The device to train on: 'auto' is this rank's GPU when CUDA is present, otherwise the CPU."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("device: cuda was asked for, but torch sees no CUDA device")
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return torch.device(name)


def init_from_env(device):
    """Join the process group torchrun describes (RANK, WORLD_SIZE, MASTER_ADDR, ...) when there
    is more than one process: NCCL between GPUs, gloo between CPU processes."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")


def run_on_ranks(ranks, fn, *args):
    """fn(*args) in `ranks` fresh CPU processes joined by gloo (torchrun's job, done in-process for
    a pipeline stage or a test); returns rank 0's result."""
    with tempfile.TemporaryDirectory() as tmp:
        torch.multiprocessing.start_processes(_rank_main, args=(ranks, tmp, fn, args), nprocs=ranks,
                                              start_method="spawn")
        return torch.load(Path(tmp, "result.pt"), weights_only=False)


def _rank_main(index, ranks, tmp, fn, args):
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=index, world_size=ranks)
    try:
        result = fn(*args)
        if index == 0:
            torch.save(result, Path(tmp, "result.pt"))
    finally:
        dist.destroy_process_group()


def local_slice(x):
    """This rank's contiguous share of a global batch x (its length must divide by the world size)."""
    if world_size() == 1:
        return x
    n = len(x) // world_size()
    return x[rank() * n:(rank() + 1) * n]


class _AllGather(torch.autograd.Function):
    """Concatenation of x over the ranks; backward sums the gradient over ranks (each rank's loss
    depends on every rank's rows) and hands each rank the rows it contributed."""

    @staticmethod
    def forward(ctx, x):
        parts = [torch.empty_like(x) for _ in range(world_size())]
        dist.all_gather(parts, x.contiguous())
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad)
        return local_slice(grad)


def gather_with_grad(x):
    """x from every rank, in rank order, with gradients flowing back to each rank's own rows."""
    return x if world_size() == 1 else _AllGather.apply(x)


@torch.no_grad()
def gather(x):
    """x from every rank, in rank order (no gradient)."""
    if world_size() == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts)


def broadcast(x, src=0):
    """Rank src's x on every rank."""
    if world_size() > 1:
        dist.broadcast(x, src)
    return x


def mean_over_ranks(value):
    """The average of a Python float over the ranks."""
    if world_size() == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t)
    return t.item() / world_size()


class GatheredBatchNorm2d(nn.BatchNorm2d):
    """BatchNorm2d whose batch statistics span every rank (SimCLR's global BN) for CPU processes,
    where nn.SyncBatchNorm does not run: each rank normalises the gathered batch and keeps its own
    rows. The same parameters and buffers as BatchNorm2d, so checkpoints load either way."""

    def forward(self, x):
        if not self.training or world_size() == 1:
            return super().forward(x)
        return local_slice(super().forward(gather_with_grad(x)))


def global_batch_norm(module):
    """module with every BatchNorm2d made global across ranks: nn.SyncBatchNorm on GPUs,
    GatheredBatchNorm2d on CPUs. Parameters and running statistics are carried over."""
    if world_size() == 1:
        return module
    if next(module.parameters()).is_cuda:
        return nn.SyncBatchNorm.convert_sync_batchnorm(module)
    for parent in list(module.modules()):
        for name, child in parent.named_children():
            if type(child) is nn.BatchNorm2d:
                gathered = GatheredBatchNorm2d(child.num_features, child.eps, child.momentum, child.affine,
                                               child.track_running_stats)
                gathered.load_state_dict(child.state_dict())
                setattr(parent, name, gathered.to(child.weight.device))
    return module


def data_parallel(method, device):
    """The module to call for a training step: method itself in one process; across ranks, method
    with global BN where it asks for it (method.global_bn), wrapped in DistributedDataParallel,
    which averages gradients over the ranks."""
    if world_size() == 1:
        return method
    if getattr(method, "global_bn", True):
        global_batch_norm(method)
    return nn.parallel.DistributedDataParallel(method, device_ids=[device.index] if device.type == "cuda" else None)
