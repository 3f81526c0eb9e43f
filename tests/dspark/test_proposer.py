"""Train/serve consistency: DSparkProposer (context-only KV cache, sequential Markov sampling) against the
training forward fed the same context and teacher-forced with the proposer's own drafts."""

import pytest
import torch

from drafters.dspark.config import ConfigError
from drafters.dspark.proposer import DSparkProposer
from tests.dspark._tiny import V, target_features, tiny_drafter


def _train_path(d, seq, aux, p):
    """Markov-corrected logits [g, V] and confidences [g] of the block anchored at p, teacher-forced with
    seq[p : p + g] as previous tokens."""
    g = d.config.block_size
    with torch.no_grad():
        h = d(seq[None], aux[None], torch.tensor([[p]]), torch.tensor([[True]]))
        prev = seq[p:p + g][None, None]
        Z = d.corrected_logits(h, prev)[0, 0]
        c = torch.sigmoid(d.confidence_logits(h, prev))[0, 0] if d.confidence_head is not None else None
    return Z, c


@pytest.mark.parametrize("kind,head,extra", [
    ("llama", "vanilla", {}), ("qwen3", "gated", {}), ("qwen3", "rnn", {}),
    ("llama", "vanilla", {"sliding_window": 5}), ("qwen3", "vanilla", {"enable_confidence_head": False}),
])
def test_greedy_drafts_equal_training_argmax(kind, head, extra):
    d, target = tiny_drafter(kind, markov_head_type=head, **extra)
    g = d.config.block_size
    torch.manual_seed(0)
    seq = torch.randint(0, V - 1, (40,))
    prop = DSparkProposer(d)
    P = 12
    aux, _ = target_features(target, seq[None], d.config.target_layer_ids)
    prop.start(seq[:P], aux[0, :P])
    pos = P
    for rnd in range(3):
        anchor = int(seq[pos])
        out = prop.propose(anchor, 0.0, None)
        assert out.tokens.shape == (g,) and out.probs.shape == (g, V) and out.probs.dtype == torch.float32
        # the training path on context seq[:pos] + anchor + the proposer's drafts
        seq2 = torch.cat([seq[:pos + 1], out.tokens])
        aux2, _ = target_features(target, seq2[None], d.config.target_layer_ids)
        Z, c = _train_path(d, seq2, aux2[0], pos)
        assert torch.equal(Z.argmax(-1), out.tokens), f"round {rnd}"
        torch.testing.assert_close(out.probs, torch.nn.functional.one_hot(out.tokens, V).float())
        if c is not None:
            torch.testing.assert_close(out.confidences, c, atol=1e-5, rtol=1e-5)
        else:
            assert out.confidences is None
        # accept a prefix of 1 + rnd drafts; the committed context uses the drafts the target "accepted"
        a = 1 + rnd
        committed = torch.cat([torch.tensor([anchor]), out.tokens[:a]])
        seq = torch.cat([seq[:pos], committed, seq[pos + 1 + a:]])[:40]
        aux, _ = target_features(target, seq[None], d.config.target_layer_ids)
        prop.commit(committed, aux[0, pos:pos + a + 1])
        pos += a + 1
        assert prop.context_length == pos


def test_sampling_probs_match_training_softmax():
    d, target = tiny_drafter("qwen3", markov_head_type="rnn")
    torch.manual_seed(1)
    seq = torch.randint(0, V - 1, (20,))
    aux, _ = target_features(target, seq[None], [0, 1])
    P, temp = 9, 0.7
    res = []
    for _ in range(2):
        prop = DSparkProposer(d)
        prop.start(seq[:P], aux[0, :P])
        res.append(prop.propose(int(seq[P]), temp, torch.Generator().manual_seed(5)))
    assert torch.equal(res[0].tokens, res[1].tokens)  # deterministic given the generator
    out = res[0]
    torch.testing.assert_close(out.probs.sum(-1), torch.ones(4))
    seq2 = torch.cat([seq[:P + 1], out.tokens])
    aux2, _ = target_features(target, seq2[None], [0, 1])
    Z, _ = _train_path(d, seq2, aux2[0], P)
    torch.testing.assert_close(out.probs, torch.softmax(Z / temp, -1), atol=1e-5, rtol=1e-4)


def test_confidence_threshold_cuts_block_and_errors():
    d, target = tiny_drafter()
    seq = torch.randint(0, V - 1, (10,))
    aux, _ = target_features(target, seq[None], [0, 1])
    prop = DSparkProposer(d, confidence_threshold=1.01)  # nothing passes
    prop.start(seq[:5], aux[0, :5])
    assert prop.propose(int(seq[5]), 0.0, None).tokens.numel() == 0
    with pytest.raises(ConfigError) as e:
        prop.start(seq[:5], None)
    assert e.value.code == "missing_features"
    with pytest.raises(ConfigError):
        prop.start(seq[:5], aux[0, :4])
    assert prop.block_size == 4 and prop.layer_ids == [0, 1]
