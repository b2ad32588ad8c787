"""Is this machine ready for the GPU profiles? Run by tools/gpu_check.sh.

On a machine with a CUDA device: the tests that touch CUDA, a few hundred steps of the default arm
in fp32 and in bfloat16 autocast (throughput of each, and the ratio), and the cifar10 profile's
data loading and first steps on a small generated file in CIFAR-10's own python layout; well under
5 minutes. Without a CUDA device it prints one line and exits 0.

    python -m tools.gpu_check [--steps 300]

The CPU-side parts (the fake CIFAR-10 folder, loading it through the cifar10 profile's loader) are
functions here so that tests/test_gpu_check.py runs them on any machine.
"""
import argparse
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
CUDA_TESTS = ["tests/test_gpu_check.py"]
CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def make_fake_cifar10(root, per_batch=100, n_test=100, seed=0):
    """A small CIFAR-10 in its python layout under root/cifar-10-batches-py: data_batch_1..5 and
    test_batch (each a pickled dict: `data` n x 3072 uint8 in red, green, blue planes, `labels`,
    `batch_label`, `filenames`) and batches.meta (`label_names`, `num_cases_per_batch`, `num_vis`).
    Images are random, labels cycle through the ten classes. Returns the folder."""
    folder = Path(root, "cifar-10-batches-py")
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    def batch(name, n, label):
        labels = [i % 10 for i in range(n)]
        content = {"batch_label": label, "labels": labels,
                   "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                   "filenames": [f"{name}_{i}.png" for i in range(n)]}
        with open(folder / name, "wb") as f:
            pickle.dump(content, f)
    for i in range(1, 6):
        batch(f"data_batch_{i}", per_batch, f"training batch {i} of 5")
    batch("test_batch", n_test, "testing batch 1 of 1")
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": CLASSES, "num_cases_per_batch": per_batch, "num_vis": 3072}, f)
    return folder


def cifar10_profile():
    """The cifar10 profile's Params (params.yaml with that profile active)."""
    import yaml
    from replication.run.config import parse_params
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    return parse_params({**raw, "profile": "cifar10"})


def load_through_profile(folder):
    """The dataset the cifar10 profile's runs would train on, with its root pointed at `folder`:
    replication.run.datasets.dataset_for("cifar10", ...) as pretrain@ calls it."""
    from replication.run.config import RunData
    from replication.run.datasets import dataset_for
    params = cifar10_profile()
    cifar = params.data.cifar10.model_copy(update={"root": str(folder)})
    return dataset_for("cifar10", RunData(image_size=params.data.image_size, cifar10=cifar))


def throughput(cfg, data, device, precision, steps):
    """Images per second of `steps` training steps of cfg (after 5 untimed warm-up steps), and the
    final loss."""
    from contrastive.methods import build_method
    from contrastive.train import train
    torch.manual_seed(0)
    method = build_method(cfg, n_data=len(data["x_train"]), n_classes=len(data["classes"]))
    warm = cfg.model_copy(update={"steps": 5})
    train(method, data["x_train"], data["y_train"], torch.Generator().manual_seed(0), warm, device=device,
          precision=precision, progress=False)
    torch.cuda.synchronize()
    start = time.perf_counter()
    run = cfg.model_copy(update={"steps": steps})
    record = train(method, data["x_train"], data["y_train"], torch.Generator().manual_seed(1), run, device=device,
                   precision=precision, progress=False)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return steps * cfg.batch / seconds, record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu_check: skipped, no CUDA device (torch.cuda.is_available() is False)")
        return 0
    print(f"# {torch.cuda.get_device_name(0)}; torch {torch.__version__}; bf16 {torch.cuda.is_bf16_supported()}")
    failed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CUDA_TESTS],
                            cwd=ROOT).returncode
    from contrastive.data import DataError
    from replication.run.config import StudyConfig, read_resolved
    from replication.run.datasets import dataset_for
    study = read_resolved("pretrain/simclr_mocov2", StudyConfig, root=ROOT)
    cfg = study.conditions["simclr"].model_copy(update={"ladder": []})
    try:
        data = dataset_for(cfg.dataset, study.data, ROOT / "data")
    except DataError:           # a fresh clone: data/ not pulled, so build the dataset in memory
        from contrastive.data import build_dataset
        from replication.run.config import DataParams
        data = build_dataset(cfg.dataset, DataParams(**read_resolved("data", root=ROOT)))
    device = torch.device("cuda")
    fp32, r32 = throughput(cfg, data, device, "fp32", args.steps)
    bf16, r16 = throughput(cfg, data, device, "bf16", args.steps)
    print(f"default arm ({cfg.encoder}, batch {cfg.batch}), {args.steps} steps: fp32 {fp32:.0f} img/s "
          f"(loss {r32['loss']:.3f}), bf16 autocast {bf16:.0f} img/s (loss {r16['loss']:.3f}), bf16/fp32 {bf16 / fp32:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        cifar = load_through_profile(make_fake_cifar10(tmp, per_batch=1024, n_test=512))
        load_s = time.perf_counter() - start
        profile_cfg = cifar10_profile().pretrain.run_config("simclr")
        steps = 20
        c32, _ = throughput(profile_cfg, cifar, device, "fp32", steps)
        c16, record = throughput(profile_cfg, cifar, device, "bf16", steps)
    print(f"cifar10 profile ({profile_cfg.encoder}, batch {profile_cfg.batch}) on a {len(cifar['x_train'])}-image "
          f"fake CIFAR-10 (loaded in {load_s:.1f} s): {steps} steps fp32 {c32:.0f} img/s, bf16 {c16:.0f} img/s, "
          f"bf16/fp32 {c16 / c32:.2f}, status {record['status']}")
    ok = failed == 0 and r32["status"] == r16["status"] == record["status"] == "ok"
    print("gpu_check:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
