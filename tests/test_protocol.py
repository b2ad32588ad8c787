"""The training protocol of the registered run: each method at its tuned setting, MoCo's queue
spanning the ablation's steps, a learning-rate rule across batch sizes, rungs below the budget, the
warmup-stable-decay schedule and bfloat16 autocast of the encoder alone."""
import copy
import math

import pytest
import torch
import yaml

from contrastive.losses import nt_xent
from contrastive.methods import SimCLR, build_method
from contrastive.models import SmallCNN, make_head
from contrastive.train import TrainSettings, encoders_in_bf16, optimizer, train, wsd_factor
from helpers import PARAMS, ROOT, run_config
from replication.run.config import ParamsError, parse_params

RAW = yaml.safe_load((ROOT / "params.yaml").read_text())


def params_with(study, condition, overrides):
    raw = copy.deepcopy(RAW)
    raw["pretrain"]["studies"].setdefault(study, {})[condition] = overrides
    return raw


def one_line_error(raw):
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    assert "\n" not in str(e.value)
    return str(e.value)


# ---------------------------------------------------------------- the papers' settings

def test_every_compared_method_runs_at_the_setting_the_tuning_pilot_chose():
    """params.yaml holds each method's chosen rate and knobs (reports/pilot/tuning.json) at the
    condition the pilot tuned it at, the knob a claim is about aside."""
    import json
    from tools.pilot_tuning import METHODS
    tuned = json.loads((ROOT / "reports" / "pilot" / "tuning.json").read_text())["methods"]
    for method, spec in METHODS.items():
        chosen = tuned[method]["configurations"][tuned[method]["chosen"]]
        cfg = PARAMS.pretrain.run_config(spec["at"][1])
        assert cfg.lr == pytest.approx(chosen["lr"], rel=1e-3) or \
            cfg.batch_lr == pytest.approx(chosen["lr"] * math.sqrt(cfg.batch / 128), rel=1e-3), method
        assert {k: getattr(cfg, k) for k in chosen["knobs"]} == chosen["knobs"], method


def test_the_momentum_study_s_queue_spans_the_ablation_s_16_steps():
    arms = [PARAMS.pretrain.run_config(name) for name in ("moco_m0", "moco_m09", "moco_m099", "moco_m0999")]
    assert {cfg.queue / cfg.batch for cfg in arms} == {16}
    assert [cfg.momentum for cfg in arms] == [0.0, 0.9, 0.99, 0.999]


def test_a_learning_rate_that_ignores_the_batch_rule_is_refused():
    message = one_line_error(params_with("batch", "simclr_b64", {"batch": 64, "lr": 0.001}))
    assert "simclr_b64.lr" in message and "lr_rule" in message
    for rule in ("none", "sqrt"):                                                           # said so
        parse_params(params_with("batch", "simclr_b64", {"batch": 64, "lr": 0.001, "lr_rule": rule}))


def test_the_square_root_rule_scales_the_rate_adam_runs_at():
    assert run_config(batch=32, lr=0.001).batch_lr == pytest.approx(0.001 * math.sqrt(32 / 128))
    assert run_config(batch=512, lr=0.001).batch_lr == pytest.approx(0.002)
    assert run_config(batch=32, lr=0.001, lr_rule="none").batch_lr == 0.001
    method = build_method(run_config(batch=32, lr=0.001), n_data=8, n_classes=2)
    opt, _ = optimizer(method, run_config(batch=32, lr=0.001))
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0005)


def test_every_literature_arm_trains_to_its_budget_of_images():
    """Every arm sees at least 2,400 x 128 images (batch-64 arms 4,800 steps), but the registered
    short-training arms of the batch study, which reach it on their ladder."""
    for name in PARAMS.pretrain.conditions:
        cfg = PARAMS.pretrain.run_config(name)
        assert cfg.rungs[-1] * cfg.batch >= 2400 * 128, name


# ---------------------------------------------------------------- rungs

def test_checkpoints_below_the_budget_are_rungs_and_scale_with_the_profile():
    cfg = run_config(checkpoints=[300, 1200], steps=2400, ladder=[4800])
    assert cfg.rungs == [0, 300, 1200, 2400, 4800]
    with pytest.raises(ValueError, match="checkpoints"):
        run_config(checkpoints=[1200, 300], steps=2400)
    with pytest.raises(ValueError, match="checkpoints"):
        run_config(checkpoints=[300, 2400], steps=2400)
    raw = params_with("temperature", "simclr_tau02_early", {"checkpoints": [300, 1200], "steps": 2400})
    raw["pretrain"]["steps_scale"] = 0.01
    assert parse_params(raw).pretrain.run_config("simclr_tau02_early").rungs == [0, 3, 12, 24]


# ---------------------------------------------------------------- schedule

def test_the_decay_starts_in_the_last_fifth_and_ends_at_zero():
    factors = [wsd_factor(step, 100) for step in range(100)]
    assert factors[:80] == [1.0] * 80 and factors[-1] == pytest.approx(1 / 20)
    assert all(a > b for a, b in zip(factors[80:], factors[81:]))


def test_a_decayed_run_is_the_constant_run_until_its_decay_starts():
    """A run of 10 steps decayed over its last 2 equals the constant run after 8 updates, and moves
    less than it in the last two (smaller steps)."""
    x, y = torch.rand(64, 3, 16, 16), torch.zeros(64, dtype=torch.long)

    def states(schedule):
        torch.manual_seed(0)
        method = SimCLR(SmallCNN(), make_head("mlp", 64), lambda z1, z2: nt_xent(z1, z2, 0.2))
        seen = {}
        train(method, x, y, torch.Generator().manual_seed(0), TrainSettings(steps=10, batch=8, schedule=schedule),
              snapshot=lambda step, m, _: seen.update({step: {k: v.clone() for k, v in m.state_dict().items()}}),
              progress=False)
        return seen

    constant, decayed = states("constant"), states("wsd")
    assert all(torch.equal(constant[8][k], decayed[8][k]) for k in constant[8])
    weight = "f.net.0.weight"
    moved = lambda run: (run[10][weight] - run[8][weight]).norm()
    assert moved(decayed) < moved(constant)


# ---------------------------------------------------------------- precision

def test_bf16_autocasts_the_encoder_and_head_and_hands_the_loss_float32():
    seen = []

    def criterion(z1, z2):
        seen.append(z1.dtype)
        return nt_xent(z1, z2, 0.2)

    def simclr():
        torch.manual_seed(0)
        return SimCLR(SmallCNN(), make_head("mlp", 64), criterion)

    v1, v2 = torch.rand(2, 8, 3, 16, 16)
    method, reference = simclr(), simclr()
    keys = list(method.state_dict())
    encoders_in_bf16(method)
    loss, _ = method(v1, v2)
    assert seen == [torch.float32] and loss.dtype == torch.float32 and list(method.state_dict()) == keys
    reference_loss, _ = reference(v1, v2)
    assert loss.item() == pytest.approx(reference_loss.item(), rel=0.05)    # bf16 rounding, not another loss
    assert loss.item() != reference_loss.item()
