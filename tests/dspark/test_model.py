"""DSparkDrafter: attention-mask semantics, Markov head teacher forcing vs sequential, trainable set."""

import pytest
import torch

from drafters.dspark.anchors import sample_anchors
from drafters.dspark.losses import dspark_loss
from tests.dspark._tiny import V, target_features, tiny_drafter

T = 24


def _inputs(seed=0, B=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V - 1, (B, T), generator=g)
    aux = torch.randn(B, T, 128, generator=g)
    return ids, aux


@pytest.mark.parametrize("kind", ["llama", "qwen3"])
def test_context_visible_strictly_before_anchor(kind):
    d, _ = tiny_drafter(kind)
    ids, aux = _inputs()
    anchors = torch.tensor([[3, 9, 15]])
    keep = torch.ones(1, 3, dtype=torch.bool)
    with torch.no_grad():
        base = d(ids, aux, anchors, keep)
        for t in range(T):
            aux2 = aux.clone()
            aux2[0, t] += 1.0
            out = d(ids, aux2, anchors, keep)
            for n, p in enumerate(anchors[0].tolist()):
                changed = not torch.allclose(out[0, n], base[0, n], atol=1e-6)
                assert changed == (t < p), f"context t={t}, block anchored at {p}"


def test_tokens_enter_only_through_anchors():
    d, _ = tiny_drafter()
    ids, aux = _inputs()
    anchors, keep = torch.tensor([[5, 11]]), torch.ones(1, 2, dtype=torch.bool)
    with torch.no_grad():
        base = d(ids, aux, anchors, keep)
        for t in range(T):
            ids2 = ids.clone()
            ids2[0, t] = (ids2[0, t] + 1) % (V - 1)
            out = d(ids2, aux, anchors, keep)
            for n, p in enumerate((5, 11)):
                assert (not torch.allclose(out[0, n], base[0, n], atol=1e-6)) == (t == p)


def test_blocks_independent_and_chunking_exact():
    d, _ = tiny_drafter("qwen3")
    ids, aux = _inputs(B=2)
    anchors = torch.tensor([[2, 7, 7, 19], [0, 4, 13, 0]])
    keep = torch.tensor([[True, True, True, True], [True, True, True, False]])
    with torch.no_grad():
        full = d(ids, aux, anchors, keep)
        for b in range(2):
            for n in range(4):
                if not keep[b, n]:
                    continue
                alone = d(ids[b:b + 1], aux[b:b + 1], anchors[b:b + 1, n:n + 1], keep[b:b + 1, n:n + 1])
                torch.testing.assert_close(alone[0, 0], full[b, n], atol=1e-5, rtol=1e-5)
        d.attn_anchor_chunk = 1
        torch.testing.assert_close(d(ids, aux, anchors, keep), full, atol=1e-5, rtol=1e-5)
        # a dummy block changes nothing of the real ones
        anchors3 = torch.tensor([[2, 7, 7, 19, 0]])
        keep3 = torch.tensor([[True, True, True, True, False]])
        out3 = d(ids[:1], aux[:1], anchors3, keep3)
        torch.testing.assert_close(out3[0, :4], full[0], atol=1e-5, rtol=1e-5)
        assert torch.isfinite(out3).all()


def test_block_is_bidirectional():
    """Perturbing the anchor token changes every slot of its block (slot 0 is seen by later slots and vice
    versa through the shared attention)."""
    d, _ = tiny_drafter()
    ids, aux = _inputs()
    anchors, keep = torch.tensor([[10]]), torch.ones(1, 1, dtype=torch.bool)
    with torch.no_grad():
        base = d(ids, aux, anchors, keep)
        ids2 = ids.clone()
        ids2[0, 10] = (ids2[0, 10] + 7) % (V - 1)
        out = d(ids2, aux, anchors, keep)
    for j in range(d.config.block_size):
        assert not torch.allclose(out[0, 0, j], base[0, 0, j], atol=1e-6)


def test_sliding_window_context():
    d, _ = tiny_drafter(sliding_window=4)
    ids, aux = _inputs()
    anchors, keep = torch.tensor([[12]]), torch.ones(1, 1, dtype=torch.bool)
    with torch.no_grad():
        base = d(ids, aux, anchors, keep)
        for t in range(T):
            aux2 = aux.clone()
            aux2[0, t] += 1.0
            changed = not torch.allclose(d(ids, aux2, anchors, keep), base, atol=1e-6)
            assert changed == (8 <= t < 12), t


@pytest.mark.parametrize("head", ["vanilla", "gated", "rnn"])
def test_markov_teacher_forced_equals_sequential(head):
    d, _ = tiny_drafter(markov_head_type=head)
    g = torch.Generator().manual_seed(3)
    h = torch.randn(2, 3, d.config.block_size, 64, generator=g)
    prev = torch.randint(0, V, (2, 3, d.config.block_size), generator=g)
    with torch.no_grad():
        tf = d.markov_bias(prev, h)
        state = None
        for k in range(d.config.block_size):
            step, state = d.markov_head.step(prev[..., k], h[..., k, :], state)
            torch.testing.assert_close(tf[..., k, :], step.float(), atol=1e-6, rtol=1e-6)
    if head == "rnn":  # the state carries information: slot 1 depends on slot 0's token
        prev2 = prev.clone()
        prev2[..., 0] = (prev2[..., 0] + 1) % V
        with torch.no_grad():
            assert not torch.allclose(d.markov_bias(prev2, h)[..., 1, :], tf[..., 1, :])
    else:
        prev2 = prev.clone()
        prev2[..., 0] = (prev2[..., 0] + 1) % V
        with torch.no_grad():
            torch.testing.assert_close(d.markov_bias(prev2, h)[..., 1, :], tf[..., 1, :])


@pytest.mark.parametrize("head,conf,with_markov", [
    ("vanilla", True, True), ("gated", True, False), ("rnn", True, True), ("vanilla", False, False),
])
def test_gradients_reach_exactly_trainable(head, conf, with_markov):
    d, target = tiny_drafter("qwen3", markov_head_type=head, enable_confidence_head=conf,
                             confidence_head_with_markov=with_markov)
    ids = torch.randint(0, V - 1, (1, 32), generator=torch.Generator().manual_seed(0))
    lm = torch.zeros(32, dtype=torch.long)
    lm[8:] = 1
    aux, last = target_features(target, ids, [0, 1])
    anchors, keep = sample_anchors(lm, 6, torch.Generator().manual_seed(1))
    out = dspark_loss(d, ids, lm[None], aux, last, anchors[None], keep[None], anchor_chunk=4)
    out.total.backward()
    names = {n for n, _ in d.named_parameters()}
    frozen = {"embed_tokens.weight", "lm_head.weight"}
    for n, p in d.named_parameters():
        if n in frozen:
            assert not p.requires_grad and p.grad is None, n
        else:
            assert p.requires_grad and p.grad is not None and p.grad.abs().sum() > 0, n
    assert {n for n, p in d.named_parameters() if p.requires_grad} == names - frozen
    assert ("confidence_head.proj.weight" in names) == conf
    assert target.get_input_embeddings().weight.grad is None


def test_frozen_copies_share_target_weights():
    d, target = tiny_drafter()
    assert d.embed_tokens.weight.data_ptr() == target.get_input_embeddings().weight.data_ptr()
    assert torch.equal(d.lm_head.weight, target.get_output_embeddings().weight)
