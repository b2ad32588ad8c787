"""tools/gpu_check's CPU-side parts: the generated CIFAR-10 folder loads through the cifar10
profile's loader, and the script skips with one line where there is no CUDA device. The CUDA test
runs only on a machine with one (tools/gpu_check.sh runs this file there)."""
import subprocess
from pathlib import Path

import pytest
import torch

from contrastive.data import load_cifar10
from tools.gpu_check import CLASSES, load_through_profile, make_fake_cifar10

ROOT = Path(__file__).resolve().parents[1]


def test_a_generated_cifar10_folder_loads_through_the_cifar10_profiles_loader(tmp_path):
    folder = make_fake_cifar10(tmp_path, per_batch=12, n_test=7)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"])
    data = load_through_profile(folder)
    assert data["x_train"].shape == (60, 3, 32, 32) and data["x_test"].shape == (7, 3, 32, 32)
    assert data["classes"] == CLASSES
    assert data["y_train"].tolist() == [i % 10 for i in range(12)] * 5
    # the pixels: the first image's red plane is the first 1,024 bytes of data_batch_1's first row
    import pickle
    with open(folder / "data_batch_1", "rb") as f:
        row = pickle.load(f, encoding="latin1")["data"][0]
    assert torch.equal(data["x_train"][0, 0].flatten(), torch.tensor(row[:1024]).float() / 255)
    # the folder's parent works too, as for the real extracted archive
    assert torch.equal(load_cifar10(tmp_path)["x_test"], data["x_test"])


def test_the_gpu_check_skips_with_one_line_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the check runs instead of skipping")
    result = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 1 and result.stdout.startswith("gpu_check: skipped")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_one_training_step_on_cuda_matches_the_cpu():
    """The same step of the default arm on CUDA (fp32, TF32 off) and on the CPU gives the same loss
    within float32 accumulation differences."""
    from contrastive.methods import build_method
    from helpers import run_config
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    x = torch.rand(16, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    losses = []
    for device in ("cpu", "cuda"):
        torch.manual_seed(0)
        method = build_method(run_config(batch=8), n_data=16, n_classes=2).to(device)
        loss, _ = method(x[:8].to(device), x[8:].to(device))
        loss.backward()
        losses.append(loss.item())
    assert losses[1] == pytest.approx(losses[0], rel=1e-4)
