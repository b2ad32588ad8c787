"""Methods: MoCo's queue and momentum, and every method learning on a fixed batch."""
import pytest
import torch
import torch.nn.functional as F

from helpers import run_config
from contrastive.methods import MoCo, build_method
from contrastive.models import SmallCNN, cifar_resnet18, make_head


def small_moco(K=8, m=0.9, **kw):
    torch.manual_seed(0)
    return MoCo(SmallCNN(), make_head("mlp", 64), dim=32, K=K, m=m, T=0.2, **kw)


def batch(n=4, seed=0):
    """Two views of n smooth random images: each image plus a little independent noise."""
    g = torch.Generator().manual_seed(seed)
    x = F.interpolate(torch.rand(n, 3, 4, 4, generator=g), size=16, mode="bilinear")
    return (x + 0.05 * torch.randn(x.shape, generator=g), x + 0.05 * torch.randn(x.shape, generator=g))


def test_queue_is_fifo_and_wraps():
    moco = small_moco(K=5)
    keys = [torch.full((2, 32), float(i)) for i in range(4)]
    for k in keys:
        moco._dequeue_and_enqueue(k)
    # 8 keys through 5 slots: batch 0 -> slots 0, 1; batch 1 -> 2, 3; batch 2 -> 4, 0; batch 3 -> 1, 2
    assert moco.queue[:, 0].tolist() == [2.0, 3.0, 3.0, 1.0, 2.0]
    assert moco.queue_ptr.item() == 3


def test_loss_never_sees_the_current_positive_key():
    moco = small_moco(K=16)
    seen = {}
    original = moco.__class__._dequeue_and_enqueue

    def spy(self, keys):
        seen["queue_before"] = self.queue.clone()
        seen["keys"] = keys.clone()
        original(self, keys)
    moco._dequeue_and_enqueue = spy.__get__(moco)
    import contrastive.losses as L
    real = L.info_nce

    def check(q, k, queue, tau):
        for key in k:
            assert not (queue == key).all(1).any()
        seen["checked"] = True
        return real(q, k, queue, tau)
    L.info_nce = check
    try:
        v1, v2 = batch()
        moco(v1, v2)
        moco(v1, v2)                         # the second step's queue holds the first step's keys
    finally:
        L.info_nce = real
    assert seen["checked"] and (moco.queue[4:8] == seen["keys"]).all()


def test_momentum_zero_copies_and_one_freezes():
    for m, expect_copy in ((0.0, True), (1.0, False)):
        moco = small_moco(m=m)
        with torch.no_grad():
            for p in moco.query_parameters():
                p.add_(1.0)
        before = [p.clone() for p in moco.key_parameters()]
        moco._momentum_update_key_encoder()
        for k, q, b in zip(moco.key_parameters(), moco.query_parameters(), before):
            assert torch.equal(k, q) if expect_copy else torch.equal(k, b)


def test_key_encoder_gets_no_gradient():
    moco = small_moco()
    v1, v2 = batch()
    moco(v1, v2)[0].backward()
    assert all(p.grad is None for p in moco.key_parameters())
    assert any(p.grad is not None for p in moco.query_parameters())


def test_shuffle_bn_restores_key_order():
    moco = small_moco(bn_groups=2, shuffle_bn=True)
    moco.eval()                               # eval-mode BN: the shuffle must not change any key
    v1, v2 = batch(8)
    torch.manual_seed(0)
    with torch.no_grad():
        shuffled = moco._encode(moco.f_k, moco.g_k, v2[torch.randperm(8)])
    moco.shuffle_bn = False
    plain = moco._encode(moco.f_k, moco.g_k, v2)
    assert not torch.allclose(shuffled, plain)    # the permutation does move rows
    moco.shuffle_bn = True
    k_seen = {}
    import contrastive.losses as L
    real = L.info_nce
    L.info_nce = lambda q, k, queue, tau: (k_seen.setdefault("k", k), real(q, k, queue, tau))[1]
    try:
        moco(v1, v2)
    finally:
        L.info_nce = real
    torch.testing.assert_close(k_seen["k"], torch.nn.functional.normalize(plain, dim=1))


CONFIGS = {
    "simclr": {},
    "simclr_logistic": {"loss": "logistic"},
    "simclr_triplet": {"loss": "margin_triplet"},
    "simclr_siglip": {"loss": "siglip"},
    "simclr_debiased": {"loss": "debiased_nt_xent", "tau_plus": 0.1},
    "simclr_kept_negatives": {"negatives_kept": 2},
    "simclr_learned_tau": {"learn_tau": True, "tau": 0.07},
    "simclr_bn_groups": {"bn_groups": 2},
    "simclr_unnormalised": {"normalize": False, "tau": 1.0},
    "align_uniform": {"method": "align_uniform"},
    "moco": {"method": "moco", "head": "linear", "queue": 16, "momentum": 0.9},   # MoCo v1: a momentum below 0.999
    "moco_bn_groups": {"method": "moco", "queue": 16, "bn_groups": 2, "shuffle_bn": True},
    "memory_bank": {"method": "memory_bank", "queue": 16, "momentum": 0.5},
    "supcon_out": {"method": "supcon"},
    "supcon_in": {"method": "supcon", "supcon_inside": True},
    "supervised": {"method": "supervised"},
    "linear_head": {"head": "linear"},
    "no_head": {"head": "none"},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_every_method_lowers_its_loss(name):
    torch.manual_seed(0)
    cfg = run_config(batch=8, **CONFIGS[name])
    method = build_method(cfg, n_data=8, n_classes=3)
    labels, index = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1]), torch.arange(8)
    opt = torch.optim.Adam([p for p in method.parameters() if p.requires_grad], lr=1e-3)
    history = []
    for step in range(30):
        # MoCo's queue would fill with the batch's own keys if the batch repeated: cycle 4 batches
        v1, v2 = batch(8, seed=step % 4 if cfg.method == "moco" else 1)
        loss, _ = method(v1, v2, labels, index)
        history.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    # from step 2 on (MoCo's queue starts as random keys and is full of real ones by then)
    assert sum(history[-3:]) / 3 < sum(history[2:5]) / 3


def test_cifar_resnet18_keeps_32x32_resolution():
    net = cifar_resnet18()
    assert isinstance(net.maxpool, torch.nn.Identity) and net.conv1.stride == (1, 1)
    assert net(torch.rand(2, 3, 32, 32)).shape == (2, 512)
