"""One precision that runs at full speed on any CPU: the CPU's native capabilities read from its flags,
emulated bf16 refused with one line before any step (training and the cheap evaluation), fp32 and
CUDA never refused, the capabilities recorded beside every stage time and pilot, and the smoke
pipeline trained in fp32 whatever params.yaml's registered precision."""
import json
import runpy
import sys

import pytest

import contrastive.train
from contrastive.data import build_dataset
from contrastive.train import PrecisionError, check_precision, cpu_capabilities
from helpers import PARAMS, data_params
from replication.cli import timing
from replication.io import write_json
from replication.run.config import EvaluateConfig, Execution, RunData, StudyConfig, read_params
from replication.run.datasets import save_dataset
from replication.run.evaluate import evaluate_run
from smoke_run import ROOT, smoke_copy
from tools import pilot_protocol

FP32_ON_CPU = Execution(threads=1, device="cpu", precision="fp32")
AVX2_ONLY = {"avx2": True, "avx512f": False, "avx512_bf16": False, "amx_bf16": False, "native_bf16": False}
REFUSAL = ("error: precision bf16 on a CPU without native bf16 (no AVX512-BF16 or AMX): it would be emulated, "
           "several times slower than fp32; set `precision: fp32` in params.yaml, or run "
           "`make exp SET=precision=fp32`\n")


@pytest.fixture
def avx2_only(monkeypatch):
    """This CPU as an AVX2-only one (no AVX-512, no native bf16), whatever it is."""
    monkeypatch.setattr(contrastive.train, "cpu_capabilities", lambda: AVX2_ONLY)


@pytest.mark.parametrize("flags, native", [
    ("fpu sse2 avx avx2 fma", {"avx2"}),                                        # an AVX2-only EPYC
    ("avx2 avx512f avx512bw avx512_bf16 avx512_vnni", {"avx2", "avx512f", "avx512_bf16"}),
    ("avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8", {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}),
])
def test_the_capabilities_are_the_cpus_flags(tmp_path, flags, native):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: a CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
    found = cpu_capabilities(cpuinfo)
    assert {name for name in contrastive.train.CAPABILITIES if found[name]} == native
    assert found["native_bf16"] == bool(native & {"avx512_bf16", "amx_bf16"})


def test_a_system_without_cpuinfo_has_no_native_bf16(tmp_path):
    assert cpu_capabilities(tmp_path / "absent") == {name: False for name in (*contrastive.train.CAPABILITIES,
                                                                              "native_bf16")}


@pytest.mark.parametrize("precision, device, capabilities", [
    ("fp32", "cpu", AVX2_ONLY),
    ("fp32", "cpu", {**AVX2_ONLY, "avx2": False}),                             # not even AVX2
    ("bf16", "cuda", AVX2_ONLY),                                               # the GPU's bf16, not the CPU's
    ("bf16", "cpu", {**AVX2_ONLY, "avx512_bf16": True, "native_bf16": True}),
])
def test_what_runs_natively_is_never_refused(monkeypatch, precision, device, capabilities):
    monkeypatch.setattr(contrastive.train, "cpu_capabilities", lambda: capabilities)
    check_precision(precision, device)


def tiny_study(root, precision):
    """A resolved one-condition study of 6 steps on 60 shapes, its data and workers.json, in `root`."""
    data = data_params(shapes={"n_train": 60, "n_test": 40})
    save_dataset(build_dataset("shapes", data), "shapes", root / "data")
    cfg = PARAMS.pretrain.run_config("simclr").model_copy(update={"dataset": "shapes", "checkpoints": [], "steps": 6,
                                                                  "batch": 16, "ladder": []})
    write_json(root / "resolved/workers.json", {"workers": 1})
    write_json(root / "resolved/pretrain/tiny.json", StudyConfig(
        study="tiny", seeds=[0], execution=FP32_ON_CPU.model_copy(update={"precision": precision}),
        data=RunData(image_size=32), conditions={"simclr": cfg}).model_dump())


def pretrain_stage(root, monkeypatch):
    """experiments/pretrain.py tiny, run in this process in `root` as the stage runs it: its exit status."""
    monkeypatch.chdir(root)
    monkeypatch.setattr(sys, "argv", ["pretrain.py", "tiny"])
    try:
        runpy.run_path(str(ROOT / "experiments/pretrain.py"), run_name="__main__")
    except SystemExit as e:
        return e.code
    return 0


def test_training_in_emulated_bf16_stops_with_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, avx2_only):
    tiny_study(tmp_path, "bf16")
    before = sorted(tmp_path.rglob("*"))
    assert pretrain_stage(tmp_path, monkeypatch) == 1
    assert capsys.readouterr().err == REFUSAL
    assert sorted(tmp_path.rglob("*")) == before                               # no record, no checkpoint


def test_training_in_fp32_on_an_avx2_only_cpu_runs(tmp_path, monkeypatch, capsys, avx2_only):
    tiny_study(tmp_path, "fp32")
    assert pretrain_stage(tmp_path, monkeypatch) == 0
    record = json.loads((tmp_path / "results/pretrain/tiny/simclr/seed_0.json").read_text())
    assert record["status"] == "ok" and record["steps_done"] == 6 and record["precision"] == "fp32"


def test_the_cheap_evaluation_is_refused_where_its_bf16_would_be_emulated(tmp_path, avx2_only):
    cfg = PARAMS.pretrain.run_config("simclr")
    write_json(tmp_path / "record.json", {"config": cfg.model_dump(), "checkpoints": []})
    config = EvaluateConfig(execution=FP32_ON_CPU, evaluate=PARAMS.evaluate, control=PARAMS.control)
    with pytest.raises(PrecisionError, match=r"^precision bf16 on a CPU without native bf16 .*; evaluate in float32 "
                                             r"\(cheap=False\)$"):
        evaluate_run("record.json", config, RunData(image_size=32), root=tmp_path, cheap=True)


def test_every_stage_time_and_pilot_records_the_capabilities(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(timing, "cpu_capabilities", lambda: AVX2_ONLY)
    monkeypatch.setattr(pilot_protocol, "cpu_capabilities", lambda: AVX2_ONLY)
    timing.record_stages({"analyze": 0.0}, 2.0, 0.1, 2.0, "AMD EPYC")
    assert json.loads((tmp_path / timing.STAGE_RECORD).read_text())["analyze"]["capabilities"] == AVX2_ONLY
    monkeypatch.setattr(pilot_protocol, "OUT", tmp_path)
    pilot_protocol.publish("some", {"pilot": "some", "cpu": "AMD EPYC"}, "# a pilot\n")
    assert json.loads((tmp_path / "some.json").read_text())["capabilities"] == AVX2_ONLY


def test_the_smoke_pipeline_trains_in_fp32_whatever_params_yaml_registers(tmp_path):
    """Every stage of the smoke copy that trains or evaluates runs in fp32, so that no CPU refuses it and
    none emulates bf16; only the copy's precision line changes."""
    copy = smoke_copy(tmp_path / "smoke")
    ours, theirs = ((path / "params.yaml").read_text().splitlines() for path in (ROOT, copy))
    assert len(ours) == len(theirs)
    assert all(a.startswith(("profile:", "precision:")) for a, b in zip(ours, theirs) if a != b)
    params = read_params(copy / "params.yaml")                   # the active profile applied
    assert params.profile == "smoke" and params.precision == "fp32"
