"""NT-Logistic and the sigmoid (SigLIP) loss against independent implementations written here from
the papers' definitions (never calling the project's losses), on random and hand-made inputs:
values, gradients (autograd through both), gradcheck in float64, and the SigLIP initialisation."""
import math

import pytest
import torch
import torch.nn.functional as F

from contrastive import losses
from contrastive.methods import build_method
from helpers import run_config


@pytest.fixture(autouse=True)
def float64():
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


def random_views(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(n, d, generator=g)
    return z1, z1 + 0.7 * torch.randn(n, d, generator=g)


# ---------------------------------------------------------------- references, from the formulas

def softplus(x):
    """-log sigma(-x) = log(1 + e^x), written out (stable for either sign)."""
    return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))


def nt_logistic_reference(z1, z2, tau, negatives="semi_hard"):
    """SimCLR's NT-Logistic (Chen et al. 2020, Table 2 and its supplement), per anchor u with positive
    v+ and negatives v-: -log sigma(u.v+ / tau) - log sigma(-u.v- / tau), the negative term averaged
    over the anchor's negatives (so positives and negatives weigh the same), semi-hard negatives
    being those less similar to u than v+. Every one of the 2N views is an anchor once; mean over them.
    A loop over anchors: the views are ordered [z1_0, z2_0, z1_1, z2_1, ...]."""
    views = []
    for a, b in zip(z1, z2):
        views += [a / a.norm(), b / b.norm()]
    terms = []
    for i, u in enumerate(views):
        partner = i + 1 if i % 2 == 0 else i - 1
        s_pos = u @ views[partner]
        s_neg = torch.stack([u @ views[k] for k in range(len(views)) if k not in (i, partner)])
        if negatives == "semi_hard":
            s_neg = s_neg[s_neg < s_pos]
        push = softplus(s_neg / tau).mean() if len(s_neg) else s_pos * 0
        terms.append(softplus(-s_pos / tau) + push)
    return torch.stack(terms).mean()


def siglip_reference(img, txt, t_prime, b):
    """SigLIP's pseudo-code (Zhai et al. 2023, Algorithm 1) with img, txt the two towers' outputs:
    t = exp(t'); zimg, ztxt l2-normalised; logits = zimg @ ztxt.T * t + b; labels = 2 eye(n) - 1;
    loss = -sum(log_sigmoid(labels * logits)) / n."""
    n = len(img)
    zimg, ztxt = img / img.norm(dim=1, keepdim=True), txt / txt.norm(dim=1, keepdim=True)
    logits = zimg @ ztxt.T * torch.exp(t_prime) + b
    labels = 2 * torch.eye(n) - 1
    return -torch.sum(-softplus(-labels * logits)) / n


# ---------------------------------------------------------------- NT-Logistic

@pytest.mark.parametrize("tau", [0.1, 0.2, 0.5, 1.0])
@pytest.mark.parametrize("negatives", ["semi_hard", "all"])
@pytest.mark.parametrize("seed", [0, 1])
def test_nt_logistic_matches_the_reference_in_value_and_gradient(tau, negatives, seed):
    z1, z2 = random_views(6, 5, seed)
    ours = [t.clone().requires_grad_(True) for t in (z1, z2)]
    theirs = [t.clone().requires_grad_(True) for t in (z1, z2)]
    value = losses.nt_logistic(*ours, tau, negatives)
    reference = nt_logistic_reference(*theirs, tau, negatives)
    torch.testing.assert_close(value, reference, rtol=1e-12, atol=1e-12)
    value.backward(), reference.backward()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-10, atol=1e-12)


def test_nt_logistic_on_orthogonal_views_has_its_closed_form():
    """Both views of image i are e_i: s_pos = 1, every negative 0 (all semi-hard), so each anchor
    costs log(1 + e^(-1/tau)) + log 2."""
    z = torch.eye(4)
    tau = 0.2
    expected = math.log1p(math.exp(-1 / tau)) + math.log(2)
    assert losses.nt_logistic(z, z.clone(), tau).item() == pytest.approx(expected, rel=1e-12)
    assert nt_logistic_reference(z, z.clone(), tau).item() == pytest.approx(expected, rel=1e-12)


def test_nt_logistic_hand_made_semi_hard_selection():
    """Two images in the plane: view pairs at angle 60 degrees; the other image's views at angles
    chosen so that one negative is harder than the positive and excluded from the semi-hard mean."""
    angle = lambda deg: torch.tensor([math.cos(math.radians(deg)), math.sin(math.radians(deg))])
    z1 = torch.stack([angle(0), angle(30)])
    z2 = torch.stack([angle(60), angle(200)])
    tau = 0.5
    torch.testing.assert_close(losses.nt_logistic(z1, z2, tau), nt_logistic_reference(z1, z2, tau), rtol=1e-12, atol=0)
    # by hand, views 0, 60 (image 0) and 30, 200 degrees (image 1): anchors 0 and 60 keep only the
    # view at 200 (30 is closer than their positive); anchors 30 and 200, whose positive is at
    # 170 degrees, keep no negative at all
    c = lambda deg: math.cos(math.radians(deg))
    pull = lambda s: math.log1p(math.exp(-s / tau))
    push = lambda s: math.log1p(math.exp(s / tau))
    by_hand = (pull(c(60)) + push(c(200)) + pull(c(60)) + push(c(140)) + pull(c(170)) + pull(c(170))) / 4
    assert losses.nt_logistic(z1, z2, tau).item() == pytest.approx(by_hand, rel=1e-12)
    s, sp, negative = losses._pairs(z1, z2)
    mask = losses.choose_negatives(s, sp, negative, "semi_hard")
    assert mask[0].tolist() == [False, False, False, True]      # rows 0..3: z1_0, z2_0, z1_1, z2_1


@pytest.mark.parametrize("negatives", ["semi_hard", "all"])
def test_nt_logistic_gradcheck(negatives):
    z1, z2 = (t.requires_grad_(True) for t in random_views(4, 3, seed=9))
    assert torch.autograd.gradcheck(lambda a, b: losses.nt_logistic(a, b, 0.3, negatives), (z1, z2))


# ---------------------------------------------------------------- SigLIP

@pytest.mark.parametrize("t_prime, b", [(math.log(10), -10.0), (0.3, -2.0), (2.0, 1.5)])
@pytest.mark.parametrize("seed", [0, 1])
def test_siglip_matches_the_papers_pseudo_code_in_value_and_gradient(t_prime, b, seed):
    z1, z2 = random_views(5, 4, seed)
    leaves = lambda: [t.clone().requires_grad_(True) for t in (z1, z2, torch.tensor(t_prime), torch.tensor(b))]
    ours, theirs = leaves(), leaves()
    value, reference = losses.siglip(*ours), siglip_reference(*theirs)
    torch.testing.assert_close(value, reference, rtol=1e-12, atol=1e-12)
    value.backward(), reference.backward()
    for a, c in zip(ours, theirs):       # z1, z2, and the learned t' and b
        torch.testing.assert_close(a.grad, c.grad, rtol=1e-10, atol=1e-12)


def test_siglip_on_orthogonal_views_has_its_closed_form():
    """N orthonormal pairs: the diagonal logit is t + b, every other t * 0 + b, so
    L = log(1 + e^-(t + b)) + (N - 1) log(1 + e^b)."""
    n, t, b = 4, 10.0, -10.0
    z = torch.eye(n)
    expected = math.log1p(math.exp(-(t + b))) + (n - 1) * math.log1p(math.exp(b))
    value = losses.siglip(z, z.clone(), torch.tensor(math.log(t)), torch.tensor(b))
    assert value.item() == pytest.approx(expected, rel=1e-12)


def test_siglip_gradcheck_in_embeddings_and_parameters():
    z1, z2 = (t.requires_grad_(True) for t in random_views(4, 3, seed=3))
    t_prime, b = torch.tensor(0.7, requires_grad=True), torch.tensor(-3.0, requires_grad=True)
    assert torch.autograd.gradcheck(losses.siglip, (z1, z2, t_prime, b))


def test_siglip_starts_at_the_papers_temperature_and_bias():
    """t' = log 10 and b = -10 (the paper's initialisation). The committed run started b at -log(N - 1):
    with an untrained encoder's nearly parallel embeddings every negative began near sigma = 1."""
    module = losses.SigLIPLoss()
    assert module.log_t.item() == pytest.approx(math.log(10)) and module.b.item() == -10.0
    assert {name for name, p in module.named_parameters() if p.requires_grad} == {"log_t", "b"}


def test_the_siglip_arm_optimises_t_and_b_from_the_papers_values():
    """build_method's SigLIP arm: t and b start at the paper's values whatever the batch, and the
    training optimiser (every parameter that requires a gradient) includes them."""
    torch.set_default_dtype(torch.float32)
    cfg = run_config(dataset="shapes", loss="siglip", negatives="all", proj_dim=8, batch=32, lr=1e-3,
                     channels_last=False)             # params.yaml's t and b: the paper's
    method = build_method(cfg, n_data=10, n_classes=10)
    assert method.criterion.b.item() == -10.0 and method.criterion.log_t.exp().item() == pytest.approx(10.0)
    trained = {name for name, p in method.named_parameters() if p.requires_grad}
    assert {"criterion.log_t", "criterion.b"} <= trained
    x = torch.rand(4, 3, 32, 32)
    loss, _ = method(x, x.flip(3))
    loss.backward()
    assert method.criterion.b.grad is not None and method.criterion.b.grad.item() != 0
