"""The training knobs of issue 25's design arms: augmentation strength, kept negatives, a learned
temperature, the debiased loss as a choice, and SimCLR's per-device BN. Each default must leave
today's runs bit-identical; each setting must do what its name says."""
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from contrastive import losses
from contrastive.augment import augment, colour_jitter
from contrastive.data import build_dataset, make_shapes4
from contrastive.methods import SimCLR, build_method
from contrastive.models import SmallCNN, make_head
from contrastive.train import draw_batch
from helpers import PARAMS, data_params, run_config
from replication.run.config import Execution, ParamsError, parse_params
from replication.run.datasets import save_dataset
from replication.io import load_yaml
from replication.run.train import train_run

ROOT = Path(__file__).resolve().parents[1]


def views(n=8, seed=0):
    """Two views of n smooth random 16 x 16 images: each image plus a little independent noise."""
    g = torch.Generator().manual_seed(seed)
    x = F.interpolate(torch.rand(n, 3, 4, 4, generator=g), size=16, mode="bilinear")
    return x + 0.05 * torch.randn(x.shape, generator=g), x + 0.05 * torch.randn(x.shape, generator=g)


def built(**overrides):
    """A method of params.yaml's defaults with overrides, initialised from torch seed 0."""
    torch.manual_seed(0)
    return build_method(run_config(**overrides), n_data=8, n_classes=3)


# ---------------------------------------------------------------- augmentation strength

def test_default_strengths_reproduce_the_article_views():
    """params.yaml's defaults for the two knobs give the article's views, bit for bit (the sum the
    article's augment(x, Generator().manual_seed(5)) prints, recorded at two threads)."""
    defaults = PARAMS.pretrain.defaults
    assert (defaults.colour_strength, defaults.crop_min_side) == (1.0, 0.55)
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x, _ = make_shapes4(20, torch.Generator().manual_seed(3))
        out = augment(x, torch.Generator().manual_seed(5), colour_strength=defaults.colour_strength,
                      crop_min_side=defaults.crop_min_side)
        assert out.sum().item() == 13788.7734375
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize("strength", [0.0, 0.5, 2.0])
def test_colour_strength_scales_every_jitter_factor(strength):
    """With every uniform draw at 1 (no grayscale) each factor is 1 + 0.4 s: on an image of two
    grey levels a and b (mean m) a pixel becomes ((x - m) c + m) c^2 with c = 1 + 0.4 s."""
    a, b = 0.2, 0.4
    x = torch.full((1, 3, 2, 2), a)
    x[..., 1] = b
    c = 1 + 0.4 * strength
    m = (a + b) / 2
    out = colour_jitter(x, lambda *shape: torch.ones(shape), strength)
    expected = torch.where(x == a, ((a - m) * c + m) * c ** 2, ((b - m) * c + m) * c ** 2)
    torch.testing.assert_close(out, expected.clamp(0, 1))


def test_no_jitter_spread_leaves_a_grey_image_as_without_colour_augmentation():
    """Strength 0: every factor is 1, and grayscale leaves a grey image as it is, so the view is
    the crop alone (the first view: its crop draws come first in either case)."""
    x = torch.rand(6, 1, 16, 16, generator=torch.Generator().manual_seed(0)).expand(6, 3, 16, 16)
    crop_only = augment(x, torch.Generator().manual_seed(1), colour=False)
    torch.testing.assert_close(augment(x, torch.Generator().manual_seed(1), colour_strength=0.0), crop_only)
    assert (augment(x, torch.Generator().manual_seed(1)) - crop_only).abs().max() > 0.05


def test_the_training_batch_uses_the_condition_s_strengths():
    cfg = run_config(batch=4, colour_strength=0.5, crop_min_side=0.25, channels_last=False)
    x, y = make_shapes4(10, torch.Generator().manual_seed(0))
    v1, v2, _, index = draw_batch(x, y, torch.Generator().manual_seed(2), cfg, "cpu")
    gen = torch.Generator().manual_seed(2)
    expected_index = torch.randint(0, 10, (4,), generator=gen)
    expected = [augment(x[expected_index], gen, colour_strength=0.5, crop_min_side=0.25) for _ in range(2)]
    assert torch.equal(index, expected_index) and torch.equal(v1, expected[0]) and torch.equal(v2, expected[1])


def test_a_crop_of_the_whole_image_only_flips():
    """crop_min_side 1: the crop side is always 1, so a view is the image or its mirror image."""
    x, _ = make_shapes4(6, torch.Generator().manual_seed(0))
    out = augment(x, torch.Generator().manual_seed(1), colour=False, crop_min_side=1.0)
    for view, image in zip(out, x):
        assert min((view - image).abs().max(), (view - image.flip(-1)).abs().max()) < 1e-5
    cropped = augment(x, torch.Generator().manual_seed(1), colour=False)
    assert (cropped - out).abs().max() > 0.1          # the default crop does zoom in


# ---------------------------------------------------------------- kept negatives

def test_kept_negatives_in_simclr_give_the_loss_of_the_keep_mask():
    """negatives_kept = k: the step's loss is NT-Xent with the mask kept_negatives draws from the
    global generator at that point, on the same embeddings."""
    k = 3
    method = built(negatives_kept=k)
    v1, v2 = views()
    torch.manual_seed(7)
    loss, _ = method(v1, v2)
    z = method.g(method.f(torch.stack([v1, v2], 1).flatten(0, 1)))
    keep = losses.kept_negatives(16, k, torch.Generator().manual_seed(7))
    torch.testing.assert_close(loss, losses.nt_xent(z[0::2], z[1::2], 0.2, keep=keep), rtol=0, atol=1e-6)
    assert (loss - losses.nt_xent(z[0::2], z[1::2], 0.2)).abs() > 0.1    # fewer negatives: a lower loss


def test_every_negative_kept_is_plain_nt_xent():
    v1, v2 = views()
    torch.manual_seed(7)
    full, _ = built()(v1, v2)
    torch.manual_seed(7)
    kept, _ = built(negatives_kept=14)(v1, v2)             # 2N - 2 = 14 of 14
    torch.testing.assert_close(kept, full, rtol=0, atol=1e-6)


def test_dropping_same_class_negatives_is_nt_xent_over_the_other_classes():
    """drop_same_class: the step's loss is NT-Xent with keep = other_class(labels), which reads the
    labels; with every image of its own class it is plain NT-Xent, and a shared class lowers it."""
    method = built(drop_same_class=True)
    v1, v2 = views()
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 0, 1])
    loss, _ = method(v1, v2, labels)
    z = method.g(method.f(torch.stack([v1, v2], 1).flatten(0, 1)))
    keep = losses.other_class(labels)
    assert keep.sum().item() == 12 * 10 + 4 * 12   # classes 0 and 1: 6 views each keep 10; class 2: 4 keep 12
    torch.testing.assert_close(loss, losses.nt_xent(z[0::2], z[1::2], 0.2, keep=keep), rtol=0, atol=1e-6)
    distinct, _ = method(v1, v2, torch.arange(8))
    torch.testing.assert_close(distinct, losses.nt_xent(z[0::2], z[1::2], 0.2), rtol=0, atol=1e-6)


def test_the_loss_knobs_reach_the_loss():
    """align-uniform's lambda and SigLIP's starting t and b reach the criterion built."""
    assert built(method="align_uniform", lam=0.5).criterion.keywords == {"lam": 0.5}
    siglip = built(loss="siglip", siglip_t=5.0, siglip_b=-5.0).criterion
    assert (siglip.log_t.exp().item(), siglip.b.item()) == pytest.approx((5.0, -5.0))


# ---------------------------------------------------------------- learned temperature

def test_the_learned_temperature_starts_at_tau_and_gets_the_closed_form_gradient():
    """L = mean_i (-s_ij / tau + log sum_{k != i} exp(s_ik / tau)) and tau = exp(log tau), so
    dL/dlog tau = tau dL/dtau = mean_i (s_ij - E_p[s_ik]) / tau, p_i. the softmax over anchor i's
    other views (cosine similarities s)."""
    method = built(learn_tau=True, tau=0.07)
    assert method.criterion.tau().item() == pytest.approx(0.07, rel=1e-6)
    assert any(p is method.criterion.log_tau for p in method.parameters())   # Adam trains it
    v1, v2 = views()
    loss, _ = method(v1, v2)
    loss.backward()
    with torch.no_grad():
        z = F.normalize(method.g(method.f(torch.stack([v1, v2], 1).flatten(0, 1))), dim=1)
        s = z @ z.T
        p = (s / 0.07).fill_diagonal_(float("-inf")).softmax(1)
        positive = s[torch.arange(16), torch.arange(16) ^ 1]
        expected = ((positive - (p * s).sum(1)) / 0.07).mean()
        torch.testing.assert_close(loss, losses.nt_xent(z[0::2], z[1::2], 0.07), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(method.criterion.log_tau.grad, expected, rtol=1e-4, atol=1e-5)


def test_the_learned_temperature_stops_at_clips_floor():
    method = built(learn_tau=True)
    with torch.no_grad():
        method.criterion.log_tau.fill_(math.log(1e-3))
    assert method.criterion.tau().item() == pytest.approx(0.01)


def test_a_fixed_temperature_adds_no_parameter():
    assert all(not name.startswith("criterion") for name in built().state_dict())


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("data")
    data = data_params(shapes={"n_train": 60, "n_test": 40})
    save_dataset(build_dataset("shapes", data), "shapes", data_dir)
    return data, data_dir


def test_the_training_record_holds_the_learned_temperature(tiny_data):
    data, data_dir = tiny_data
    cfg = run_config(dataset="shapes", learn_tau=True, tau=0.07, batch=16, steps=4, ladder=[8])
    record, states = train_run(0, "learned", cfg, Execution(threads=1, device="cpu", precision="fp32"), data, data_dir)
    assert set(record["rung_tau"]) == {"0", "4", "8"} and record["rung_tau"]["0"] == pytest.approx(0.07)
    assert record["tau_final"] == record["rung_tau"]["8"] != pytest.approx(0.07, abs=1e-6)
    assert record["tau_final"] == pytest.approx(math.exp(states[8]["criterion.log_tau"].item()))


# ---------------------------------------------------------------- debiased loss, BN groups

def test_the_debiased_choice_is_the_debiased_loss_and_nt_xent_at_prior_zero():
    v1, v2 = views()
    plain, _ = built()(v1, v2)
    at_zero, _ = built(loss="debiased_nt_xent", tau_plus=0.0)(v1, v2)
    torch.testing.assert_close(at_zero, plain, rtol=1e-5, atol=1e-5)
    method = built(loss="debiased_nt_xent", tau_plus=0.1)
    loss, _ = method(v1, v2)
    z = method.g(method.f(torch.stack([v1, v2], 1).flatten(0, 1)))
    torch.testing.assert_close(loss, losses.debiased_nt_xent(z[0::2], z[1::2], 0.2, 0.1))
    assert (loss - plain).abs() > 1e-3


def test_simclr_with_bn_groups_encodes_each_group_of_images_on_its_own():
    """bn_groups 2 over 8 images: images 0-3 (both views) are normalised together, 4-7 together."""
    torch.manual_seed(0)
    f, g = SmallCNN(), make_head("mlp", 64)
    criterion = lambda z1, z2: losses.nt_xent(z1, z2, 0.2)
    grouped, one = SimCLR(f, g, criterion, bn_groups=2), SimCLR(f, g, criterion)
    v1, v2 = views()
    loss, z = grouped(v1, v2)
    parts = [g(f(torch.stack([v1[i], v2[i]], 1).flatten(0, 1))) for i in (slice(0, 4), slice(4, 8))]
    expected = torch.cat(parts)
    torch.testing.assert_close(z, expected.detach(), rtol=0, atol=0)
    torch.testing.assert_close(loss, criterion(expected[0::2], expected[1::2]), rtol=0, atol=0)
    global_loss, global_z = one(v1, v2)
    assert (global_z - z).abs().max() > 1e-3 and not grouped.global_bn and one.global_bn
    whole = g(f(torch.stack([v1, v2], 1).flatten(0, 1)))              # bn_groups 1: one forward pass
    assert torch.equal(global_z, whole.detach()) and torch.equal(global_loss, criterion(whole[0::2], whole[1::2]))


@pytest.mark.parametrize("method", ["simclr", "align_uniform"])
def test_the_condition_s_bn_groups_reach_simclr(method):
    assert built(method=method, bn_groups=4).bn_groups == 4


# ---------------------------------------------------------------- validation

BAD = [
    ({"negatives_kept": 0}, "negatives_kept"),
    ({"negatives_kept": 2.0}, "negatives_kept"),
    ({"negatives_kept": 255}, "negatives_kept"),                      # 2 x 128 - 2 = 254 at most
    ({"negatives_kept": 4, "loss": "logistic"}, "negatives_kept"),
    ({"drop_same_class": True, "method": "moco"}, "drop_same_class"),
    ({"drop_same_class": True, "negatives_kept": 4}, "drop_same_class"),
    ({"lam": 0.0}, "lam"),
    ({"learn_tau": True, "method": "moco"}, "learn_tau"),
    ({"learn_tau": "yes"}, "learn_tau"),
    ({"loss": "debiased_nt_xent"}, "tau_plus"),                        # needs its class prior
    ({"tau_plus": 0.1}, "tau_plus"),                                   # a prior nothing reads
    ({"loss": "debiased_nt_xent", "tau_plus": 1.0}, "tau_plus"),
    ({"colour_strength": 2.5}, "colour_strength"),                     # a factor 1 - 0.4 x 2.5 = 0
    ({"colour_strength": 2.0, "colour": False}, "colour_strength"),
    ({"crop_min_side": 0.0}, "crop_min_side"),
    ({"crop_min_side": 1.2}, "crop_min_side"),
    ({"bn_groups": 2, "method": "supcon"}, "bn_groups"),
]


@pytest.mark.parametrize("overrides,key", BAD, ids=[str(o) for o, _ in BAD])
def test_a_wrong_knob_value_gives_one_line_naming_it(overrides, key):
    raw = load_yaml((ROOT / "params.yaml").read_text())
    raw["pretrain"]["studies"]["s"] = {"x": overrides}
    with pytest.raises(ParamsError) as e:
        parse_params(raw)
    message = str(e.value)
    assert f"pretrain.studies.s.x.{key}: " in message and "\n" not in message and len(message) < 200
