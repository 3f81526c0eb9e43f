"""dspark_loss against hand-computed values (two-token vocabulary), chunking invariance, anchors."""

import math

import pytest
import torch
import transformers

from drafters.dspark.anchors import AnchorError, anchor_candidates, sample_anchors
from drafters.dspark.config import DSparkConfig
from drafters.dspark.losses import dspark_loss, position_weights, slot_validity
from drafters.dspark.model import DSparkDrafter
from tests.dspark._tiny import V, target_features, tiny_drafter


def _two_token_drafter():
    """V=2, block 2, rank 1. Final norm weight 0 -> h = 0 -> base logits U = 0, so Z = Markov bias only:
    W1 = [[1], [-1]], W2 = [[ln 2], [0]] -> Z(prev=0) = [ln 2, 0], Z(prev=1) = [-ln 2, 0].
    lm_head row 0 = e_0, row 1 = 0 -> p_t(x) = softmax([x_0, 0]). Confidence: c = 0.5 * W1[prev] + 0.2."""
    tc = transformers.LlamaConfig(hidden_size=8, intermediate_size=16, num_hidden_layers=4,
                                  num_attention_heads=2, num_key_value_heads=1, vocab_size=2)
    cfg = DSparkConfig.from_target(tc, mask_token_id=1, num_hidden_layers=1, block_size=2, markov_rank=1,
                                   target_layer_ids=[0, 1])
    lm = torch.zeros(2, 8)
    lm[0, 0] = 1.0
    d = DSparkDrafter(cfg, torch.randn(2, 8), lm)
    with torch.no_grad():
        d.norm.weight.zero_()
        d.markov_head.markov_w1.weight.copy_(torch.tensor([[1.0], [-1.0]]))
        d.markov_head.markov_w2.weight.copy_(torch.tensor([[math.log(2)], [0.0]]))
        d.confidence_head.proj.weight.zero_()
        d.confidence_head.proj.weight[0, -1] = 0.5
        d.confidence_head.proj.bias.fill_(0.2)
    return d


def _bce(c, y):
    return max(c, 0) - c * y + math.log1p(math.exp(-abs(c)))


def test_two_token_hand_computed():
    d = _two_token_drafter()
    ids = torch.tensor([[0, 1, 0, 0, 1]])
    loss_mask = torch.tensor([[0, 1, 1, 1, 1]])
    aux = torch.randn(1, 5, 16)
    last = torch.zeros(1, 5, 8)
    last[0, 1, 0] = math.log(3)  # p_t at label 2 = softmax([ln 3, 0]) = [3/4, 1/4]; at label 3: [1/2, 1/2]
    anchors = torch.tensor([[1, 0]])
    keep = torch.tensor([[True, False]])
    out = dspark_loss(d, ids, loss_mask, aux, last, anchors, keep)
    # slot 0: prev = ids[1] = 1 -> p_d = [1/3, 2/3], y = ids[2] = 0, p_t = [3/4, 1/4]
    # slot 1: prev = ids[2] = 0 -> p_d = [2/3, 1/3], y = ids[3] = 0, p_t = [1/2, 1/2]
    w = [1.0, math.exp(-1 / 4)]
    ce = [math.log(3), -math.log(2 / 3)]
    l1 = [5 / 6, 1 / 3]
    cstar = [1 - l / 2 for l in l1]  # 7/12, 5/6
    conf_logit = [0.5 * -1 + 0.2, 0.5 * 1 + 0.2]
    bce = [_bce(c, y) for c, y in zip(conf_logit, cstar)]
    W = sum(w)
    exp_ce = sum(a * b for a, b in zip(w, ce)) / W
    exp_l1 = sum(a * b for a, b in zip(w, l1)) / W
    exp_conf = sum(a * b for a, b in zip(w, bce)) / W
    assert out.ce.item() == pytest.approx(exp_ce, rel=1e-5)
    assert out.l1.item() == pytest.approx(exp_l1, rel=1e-5)
    assert out.conf.item() == pytest.approx(exp_conf, rel=1e-5)
    assert out.total.item() == pytest.approx(0.1 * exp_ce + 0.9 * exp_l1 + 1.0 * exp_conf, rel=1e-5)
    assert out.expected_tau.item() == pytest.approx(1 + 7 / 12 + 7 / 12 * 5 / 6, rel=1e-5)
    torch.testing.assert_close(out.accept_rate_per_slot, torch.tensor([7 / 12, 5 / 6]))
    assert out.n_valid == 2 and out.n_blocks == 1
    assert out.weight_sum.item() == pytest.approx(W)


def test_validity_is_prefix_contiguous():
    lm = torch.tensor([[1, 1, 1, 0, 1, 1, 1, 1]])
    M = slot_validity(lm, torch.tensor([[1, 4, 6]]), torch.tensor([[True, True, False]]), 3)
    assert M.tolist() == [[[True, False, False], [True, True, True], [False, False, False]]]
    M = slot_validity(lm, torch.tensor([[5]]), torch.tensor([[True]]), 3)
    assert M.tolist() == [[[True, True, False]]]  # q = 8 is past the end


def test_position_weights_beta():
    torch.testing.assert_close(position_weights(7, 4.0),
                               torch.tensor([1, .7788, .6065, .4724, .3679, .2865, .2231]), atol=1e-4, rtol=0)
    torch.testing.assert_close(position_weights(7, 7.0)[-1], torch.tensor(.4244), atol=1e-4, rtol=0)


def test_chunking_does_not_change_loss_or_grads():
    d, target = tiny_drafter("qwen3", markov_head_type="rnn")
    ids = torch.randint(0, V - 1, (2, 40), generator=torch.Generator().manual_seed(0))
    lm = torch.ones(2, 40, dtype=torch.long)
    lm[:, :6] = 0
    aux, last = target_features(target, ids, [0, 1])
    g = torch.Generator().manual_seed(2)
    a0, k0 = sample_anchors(lm[0], 12, g)
    a1, k1 = sample_anchors(lm[1], 12, g)
    anchors, keep = torch.stack([a0, a1]), torch.stack([k0, k1])
    res = []
    for chunk, rec in ((64, False), (5, True), (1, True), (3, False)):
        d.zero_grad()
        out = dspark_loss(d, ids, lm, aux, last, anchors, keep, anchor_chunk=chunk, recompute=rec)
        out.total.backward()
        res.append((out.total.detach(), d.fc.weight.grad.clone(), d.markov_head.joint_proj.weight.grad.clone()))
    for r in res[1:]:
        for x, y in zip(res[0], r):
            torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-4)


def test_no_valid_slot_gives_zero_loss_and_backward_works():
    d, target = tiny_drafter()
    ids = torch.randint(0, V - 1, (1, 10))
    aux, last = target_features(target, ids, [0, 1])
    out = dspark_loss(d, ids, torch.zeros(1, 10, dtype=torch.long), aux, last, torch.zeros(1, 3, dtype=torch.long),
                      torch.zeros(1, 3, dtype=torch.bool))
    assert out.total.item() == 0.0 and out.n_valid == 0 and math.isnan(out.expected_tau.item())
    out.total.backward()


def test_anchor_candidates_and_sampling():
    lm = torch.tensor([0, 0, 1, 1, 1, 0, 1, 1, 0, 1])
    assert anchor_candidates(lm).nonzero().flatten().tolist() == [2, 3, 6]
    a, k = sample_anchors(lm, 5, torch.Generator().manual_seed(0))
    assert a.tolist() == [2, 3, 6, 0, 0] and k.tolist() == [True, True, True, False, False]
    lm = torch.ones(100, dtype=torch.long)
    a1, k1 = sample_anchors(lm, 10, torch.Generator().manual_seed(7))
    a2, _ = sample_anchors(lm, 10, torch.Generator().manual_seed(7))
    a3, _ = sample_anchors(lm, 10, torch.Generator().manual_seed(8))
    assert torch.equal(a1, a2) and not torch.equal(a1, a3)
    assert k1.all() and (a1.diff() > 0).all() and a1.max() <= 98


def test_weighted_anchors_oversample():
    lm = torch.ones(200, dtype=torch.long)
    w = torch.ones(200)
    w[100:120] = 20.0
    w[150:160] = 0.0
    g = torch.Generator().manual_seed(0)
    hits = torch.zeros(200)
    for _ in range(200):
        a, k = sample_anchors(lm, 10, g, weights=w)
        hits[a[k]] += 1
    assert hits[150:160].sum() == 0
    # 20 heavy positions x 20 = 400 of ~579 total weight: most anchors land there
    assert hits[100:120].sum() / hits.sum() > 0.5
    with pytest.raises(AnchorError) as e:
        sample_anchors(lm, 4, g, weights=-w)
    assert e.value.where == "weights"


def test_bf16_drafter_loss_is_finite_and_trains():
    d, target = tiny_drafter("qwen3", markov_head_type="gated")
    for p in d.parameters():
        if p.requires_grad:
            p.data = p.data.to(torch.bfloat16)  # as drafters.train does on GPU; embed/lm_head stay fp32
    ids = torch.randint(0, V - 1, (1, 30), generator=torch.Generator().manual_seed(0))
    lm = torch.ones(1, 30, dtype=torch.long)
    aux, last = target_features(target, ids, [0, 1])
    a, k = sample_anchors(lm[0], 5, torch.Generator().manual_seed(0))
    out = dspark_loss(d, ids, lm, aux.bfloat16(), last.bfloat16(), a[None], k[None])
    assert torch.isfinite(out.total) and out.total.dtype == torch.float32
    out.total.backward()
    assert d.markov_head.markov_w2.weight.grad.dtype == torch.bfloat16
    assert d.fc.weight.grad.abs().sum() > 0


def test_invalid_slots_do_not_change_loss():
    """Slots outside the supervised region contribute nothing: changing the tokens they would predict leaves
    the loss unchanged."""
    d, target = tiny_drafter()
    ids = torch.randint(0, V - 1, (1, 30), generator=torch.Generator().manual_seed(0))
    lm = torch.zeros(1, 30, dtype=torch.long)
    lm[0, 5:15] = 1
    aux, last = target_features(target, ids, [0, 1])
    anchors, keep = torch.tensor([[6, 12, 13]]), torch.ones(1, 3, dtype=torch.bool)
    base = dspark_loss(d, ids, lm, aux, last, anchors, keep)
    ids2 = ids.clone()
    ids2[0, 15:] = (ids2[0, 15:] + 1) % (V - 1)
    out = dspark_loss(d, ids2, lm, aux, last, anchors, keep)
    assert out.total.item() == pytest.approx(base.total.item(), rel=1e-6)
    assert out.n_valid == base.n_valid == 4 + 2 + 1


def test_fused_ce_l1_gradient_matches_autograd():
    from drafters.dspark.losses import _WeightedCeL1

    g = torch.Generator().manual_seed(0)
    Z = torch.randn(5, 7, generator=g, dtype=torch.float64, requires_grad=True)
    p_t = torch.softmax(torch.randn(5, 7, generator=g, dtype=torch.float64), -1)
    y = torch.randint(0, 7, (5,), generator=g)
    W = torch.rand(5, generator=g, dtype=torch.float64)
    ce, l1, cstar = _WeightedCeL1.apply(Z, y, p_t, W)
    (0.3 * ce + 0.7 * l1).backward()
    Z2 = Z.detach().clone().requires_grad_(True)
    logp = torch.log_softmax(Z2, -1)
    ref_ce = (W * -logp.gather(-1, y[:, None]).squeeze(-1)).sum()
    ref_l1_rows = (logp.exp() - p_t).abs().sum(-1)
    (0.3 * ref_ce + 0.7 * (W * ref_l1_rows).sum()).backward()
    torch.testing.assert_close(Z.grad, Z2.grad)
    torch.testing.assert_close(ce, ref_ce.detach())
    torch.testing.assert_close(cstar, (1 - 0.5 * ref_l1_rows.detach()).clamp(0, 1))
    assert torch.autograd.gradcheck(lambda z: sum(_WeightedCeL1.apply(z, y, p_t, W)[:2]), (Z.detach().requires_grad_(),))


def test_draft_and_target_logits_from_one_product():
    """The fused product gives Z = h lm_w^T + pre w2^T and z_t = last lm_w^T, gradients for h, pre and w2 as
    autograd's (gradcheck, float64), and none for the frozen head or the target's states."""
    from drafters.dspark.losses import _DraftAndTargetLogits

    g = torch.Generator().manual_seed(0)
    h, pre, last = (torch.randn(n, k, generator=g, dtype=torch.float64) for n, k in ((4, 6), (4, 3), (5, 6)))
    lm_w = torch.randn(9, 6, generator=g, dtype=torch.float64)
    w2 = torch.randn(9, 3, generator=g, dtype=torch.float64, requires_grad=True)
    h.requires_grad_()
    pre.requires_grad_()
    Z, z_t = _DraftAndTargetLogits.apply(h, pre, last, lm_w, w2)
    torch.testing.assert_close(Z, h @ lm_w.T + pre @ w2.T)
    torch.testing.assert_close(z_t, last @ lm_w.T)
    assert not z_t.requires_grad
    (Z.sin().sum()).backward()
    assert lm_w.grad is None and last.grad is None
    assert torch.autograd.gradcheck(lambda a, b, c: _DraftAndTargetLogits.apply(a, b, last, lm_w, c)[0],
                                    (h.detach().requires_grad_(), pre.detach().requires_grad_(),
                                     w2.detach().requires_grad_()))


def test_bf16_matmuls_match_fp32_and_keep_fp32_gradients():
    """matmul_dtype=bf16 (DeepSpec's precision) changes only the rounding of the V-sized matmuls: the loss and
    the gradients of the fp32 parameters stay close to the exact fp32 ones, and they are not identical (the
    bf16 path is really taken)."""
    d, target = tiny_drafter("qwen3", markov_head_type="gated")
    ids = torch.randint(0, V - 1, (1, 40), generator=torch.Generator().manual_seed(0))
    lm = torch.ones(1, 40, dtype=torch.long)
    lm[:, :5] = 0
    aux, last = target_features(target, ids, [0, 1])
    a, k = sample_anchors(lm[0], 8, torch.Generator().manual_seed(1))
    res = {}
    for dt in (torch.float32, torch.bfloat16):
        d.zero_grad()
        out = dspark_loss(d, ids, lm, aux, last, a[None], k[None], matmul_dtype=dt)
        out.total.backward()
        grads = {n: p.grad.clone() for n, p in d.named_parameters() if p.grad is not None}
        res[dt] = (out, grads)
    (o32, g32), (o16, g16) = res[torch.float32], res[torch.bfloat16]
    assert o16.total.dtype == torch.float32 and all(g.dtype == torch.float32 for g in g16.values())
    assert o16.total.item() != o32.total.item()
    torch.testing.assert_close(o16.total, o32.total, rtol=2e-2, atol=0)
    torch.testing.assert_close(o16.expected_tau, o32.expected_tau, rtol=2e-2, atol=0)
    assert g16.keys() == g32.keys() and "markov_head.markov_w2.weight" in g16
    for n in g32:
        cos = torch.nn.functional.cosine_similarity(g16[n].flatten(), g32[n].flatten(), dim=0)
        assert cos > 0.99, (n, cos.item())
