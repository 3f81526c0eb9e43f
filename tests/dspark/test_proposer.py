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
        prop = DSparkProposer(d, markov_candidates=0)  # the full-vocabulary distribution
        prop.start(seq[:P], aux[0, :P])
        res.append(prop.propose(int(seq[P]), temp, torch.Generator().manual_seed(5)))
    assert torch.equal(res[0].tokens, res[1].tokens)  # deterministic given the generator
    out = res[0]
    torch.testing.assert_close(out.probs.sum(-1), torch.ones(4))
    seq2 = torch.cat([seq[:P + 1], out.tokens])
    aux2, _ = target_features(target, seq2[None], [0, 1])
    Z, _ = _train_path(d, seq2, aux2[0], P)
    torch.testing.assert_close(out.probs, torch.softmax(Z / temp, -1), atol=1e-5, rtol=1e-4)


def _drafts(d, target, seq, P, temperature, K, seed=5):
    aux, _ = target_features(target, seq[None], d.config.target_layer_ids)
    prop = DSparkProposer(d, markov_candidates=K)
    prop.start(seq[:P], aux[0, :P])
    gen = torch.Generator().manual_seed(seed)
    return prop, [prop.propose(int(seq[P]), temperature, gen) for _ in range(1)][0]


@pytest.mark.parametrize("head", ["vanilla", "gated", "rnn"])
@pytest.mark.parametrize("K", [1, 4, 32])
def test_candidate_greedy_drafts_equal_the_full_vocabulary_argmax(head, K):
    """The top-K search with the Cauchy-Schwarz bound is exact: the same drafts as the full bias, whether
    the bound settles a slot (large K) or the full bias is computed (K = 1 on a random drafter)."""
    torch.manual_seed(3)
    d, target = tiny_drafter("qwen3", markov_head_type=head, block_size=6)
    with torch.no_grad():  # a strong Markov head, so the bias reorders the base logits' top tokens
        d.markov_head.markov_w2.weight.mul_(40.0)
    for trial in range(4):
        seq = torch.randint(0, V - 1, (24,))
        _, ref = _drafts(d, target, seq, 11, 0.0, 0)
        prop, out = _drafts(d, target, seq, 11, 0.0, K)
        assert torch.equal(out.tokens, ref.tokens), f"trial {trial}"
        assert prop.slots == 6 and 0 <= prop.full_bias_slots <= 6


def test_candidate_bound_settles_slots_of_a_trained_like_drafter():
    """Where the base logits are peaked (a trained drafter), the bound settles slots without the full bias."""
    torch.manual_seed(4)
    d, target = tiny_drafter("qwen3", markov_head_type="vanilla", block_size=6)
    with torch.no_grad():
        d.lm_head.weight.mul_(50.0)  # peaked base logits; the Markov bias stays small
    seq = torch.randint(0, V - 1, (24,))
    _, ref = _drafts(d, target, seq, 11, 0.0, 0)
    prop, out = _drafts(d, target, seq, 11, 0.0, 16)
    assert torch.equal(out.tokens, ref.tokens)
    assert prop.full_bias_slots < prop.slots


def test_candidate_sampling_is_the_restricted_softmax_it_samples_from():
    """With K candidates, probs are softmax((U + B) / T) over the top-K of U and zero elsewhere, and every
    draft is one of its candidates: the distribution rejection sampling divides by is the one sampled."""
    torch.manual_seed(6)
    d, target = tiny_drafter("qwen3", markov_head_type="rnn", block_size=5)
    seq = torch.randint(0, V - 1, (20,))
    K, temp, P = 8, 0.9, 9
    _, out = _drafts(d, target, seq, P, temp, K)
    torch.testing.assert_close(out.probs.sum(-1), torch.ones(5))
    assert ((out.probs > 0).sum(-1) <= K).all()
    assert (out.probs[torch.arange(5), out.tokens] > 0).all()
    seq2 = torch.cat([seq[:P + 1], out.tokens])
    aux2, _ = target_features(target, seq2[None], d.config.target_layer_ids)
    Z, _ = _train_path(d, seq2, aux2[0], P)
    with torch.no_grad():
        h = d(seq2[None], aux2, torch.tensor([[P]]), torch.tensor([[True]]))[0, 0]
    U = d.logits(h)
    for k in range(5):
        cand = torch.topk(U[k], K).indices
        want = torch.zeros(V).scatter_(0, cand, torch.softmax(Z[k, cand] / temp, -1))
        torch.testing.assert_close(out.probs[k], want, atol=1e-5, rtol=1e-4)
    with pytest.raises(ConfigError) as e:
        DSparkProposer(d, markov_candidates=-1)
    assert e.value.code == "bad_config"


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


def test_draft_vocabulary_restricts_drafts_to_its_ids_and_the_prompt():
    """With a draft vocabulary the drafts are the argmax of U + B over (vocabulary + prompt tokens), and the
    one-hot probs sit on the drafted ids of the full vocabulary."""
    from drafters.dspark.draft_vocab import coverage, draft_vocabulary

    torch.manual_seed(7)
    d, target = tiny_drafter("qwen3", markov_head_type="gated", block_size=5)
    vocab = draft_vocabulary([[3, 3, 9, 40, 41], [9, 100, 3]], size=3, always=[200])
    assert vocab == [3, 9, 40, 200]  # 3 (x3), 9 (x2), then 40 beats 41 and 100 on the id; 200 always
    seq = torch.randint(0, V - 1, (24,))
    P = 11
    aux, _ = target_features(target, seq[None], d.config.target_layer_ids)
    prop = DSparkProposer(d, draft_vocab=torch.tensor(vocab), markov_candidates=2)
    prop.start(seq[:P], aux[0, :P])
    allowed = sorted(set(vocab) | set(seq[:P].tolist()))
    assert prop.vocab_size == len(allowed)
    out = prop.propose(int(seq[P]), 0.0, None)
    seq2 = torch.cat([seq[:P + 1], out.tokens])
    aux2, _ = target_features(target, seq2[None], d.config.target_layer_ids)
    Z, _ = _train_path(d, seq2, aux2[0], P)
    idx = torch.tensor(allowed)
    assert torch.equal(out.tokens, idx[Z[:, idx].argmax(-1)])
    torch.testing.assert_close(out.probs, torch.nn.functional.one_hot(out.tokens, V).float())
    assert coverage(vocab, [[3, 9, 5, 6]]) == 0.5 and coverage(vocab, []) is None
    with pytest.raises(ConfigError):
        DSparkProposer(d, draft_vocab=torch.tensor([V]))


def test_a_draft_vocabulary_keeps_speculative_output_lossless():
    from drafters.speculate import plain_generate, speculative_generate
    from drafters.target import Target

    d, model = tiny_drafter("llama", block_size=4)
    target = Target(model, name="tiny")
    prompt = torch.randint(0, V - 1, (16,))
    ref = plain_generate(target, prompt, 30)
    for temperature in (0.0, 0.8):
        prop = DSparkProposer(d, draft_vocab=torch.arange(0, V, 3))
        gen = speculative_generate(target, prop, prompt, 30, temperature=temperature, seed=3)
        if temperature == 0.0:
            assert gen.tokens == ref.tokens
        assert len(gen.tokens) == 30
