"""Speculative decoding loop: losslessness, exact sampling, known answers, stop handling,
n-gram baseline and the what-if scheduler."""

from __future__ import annotations

import warnings

import pytest
import torch

import drafters.speculate as spec
from drafters.baselines import NGramProposer, NoDraftProposer, make_baseline
from drafters.errors import TracedraftError
from drafters.evaluate import tau_of
from drafters.speculate import Proposal, plain_generate, speculative_generate, verify_sampling
from drafters.whatif import schedule_prefix_lengths, survival, threshold_length, what_if_truncation
from tests._speculate_helpers import (
    AdversarialProposer,
    FeatureProposer,
    RandomProposer,
    SelfProposer,
    tiny_target,
)

warnings.filterwarnings("ignore", category=FutureWarning)


def _prompts(vocab=64, n=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        base = torch.randint(0, vocab, (6 + 3 * i,), generator=g)
        out.append(torch.cat([base, base, base[:3]]))  # repeats so prompt lookup has something to copy
    return out


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Tiny ops on a shared 2-core machine: intra-op threads only contend (measured 50x slower with 2).
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def target():
    return tiny_target(0, scale=4.0)


def _proposers(target):
    return {"ngram": NGramProposer(block_size=5, max_ngram=3), "random": RandomProposer(block_size=5),
            "self": SelfProposer(target, block_size=4), "adversarial": AdversarialProposer(target, 3),
            "features": FeatureProposer((-1, 0), 3), "nodraft": NoDraftProposer()}


@pytest.fixture(scope="module")
def plain_refs(target):
    return [plain_generate(target, p, 30).tokens for p in _prompts(n=2)]


@pytest.mark.parametrize("name", ["ngram", "random", "self", "adversarial", "features", "nodraft"])
def test_greedy_speculative_equals_plain(target, plain_refs, name):
    for p, ref in zip(_prompts(n=2), plain_refs):
        prop = _proposers(target)[name]
        g = speculative_generate(target, prop, p, 30)
        assert g.tokens == ref
        assert len(g.tokens) == 30 == 1 + sum(r.committed for r in g.rounds)
        assert g.positions[0] == 0 and all(1 <= x <= r.accepted + 1 for x, r in
                                           zip(g.positions[1:], (g.rounds[i] for i in g.round_index[1:])))
        if name == "features":
            assert prop.n_features == prop.n_tokens == len(p) + len(g.tokens) - 1  # all but the last anchor


def test_greedy_lossless_on_other_targets():
    for seed in (1, 2):
        t = tiny_target(seed, layers=3, scale=2.0)
        for p in _prompts(seed=seed + 10):
            ref = plain_generate(t, p, 30).tokens
            assert speculative_generate(t, NGramProposer(4), p, 30).tokens == ref
            assert speculative_generate(t, RandomProposer(block_size=3), p, 30, seed=seed).tokens == ref


def test_self_proposer_gives_block_plus_one(target):
    block = 4
    g = speculative_generate(target, SelfProposer(target, block), _prompts()[0], 1 + 6 * (block + 1))
    assert [r.committed for r in g.rounds] == [block + 1] * 6
    assert tau_of(g.rounds) == block + 1
    # End effect: a budget that is not a multiple of block + 1 shortens only the last round.
    g = speculative_generate(target, SelfProposer(target, block), _prompts()[0], 1 + 6 * (block + 1) - 2)
    assert [r.committed for r in g.rounds] == [block + 1] * 5 + [block - 1]
    # At temperature 1 the self proposer samples from p_t itself: every draft is accepted.
    g = speculative_generate(target, SelfProposer(target, block), _prompts()[1], 1 + 4 * (block + 1),
                             temperature=1.0, seed=3)
    assert all(r.accepted == r.proposed == block for r in g.rounds)


def test_adversarial_proposer_gives_tau_one(target):
    g = speculative_generate(target, AdversarialProposer(target, 3), _prompts()[0], 25)
    assert all(r.accepted == 0 and r.committed == 1 for r in g.rounds)
    # The budget caps drafts at remaining - 1 near the end (an end effect, never more than 3 here).
    assert [r.proposed for r in g.rounds] == [3] * 21 + [2, 1, 0]
    assert tau_of(g.rounds) == 1.0


def test_plain_is_one_token_per_round(target):
    g = plain_generate(target, _prompts()[0], 12)
    assert len(g.rounds) == 11 and all(r.proposed == 0 and r.committed == 1 for r in g.rounds)
    assert g.total_s >= g.target_s > 0 and g.overhead_s >= 0
    assert abs(g.total_s - (g.target_s + g.drafter_s + g.overhead_s)) < 1e-6


def test_a_shared_prefill_is_charged_to_the_total_as_to_the_target(target):
    """The prefill computed once for several generations counts in total_s as it does in target_s, so the
    loop's own time (overhead_s) is what is left, never clamped to 0 by a total that lacks the prefill."""
    p = _prompts()[0]
    pre = spec.prefill(target, p)
    pre.seconds += 5.0  # a slow prefill: the total must carry it
    g = speculative_generate(target, None, p, 12, shared_prefill=pre)
    assert g.target_s > 5.0 and g.total_s > 5.0
    assert g.overhead_s > 0
    assert abs(g.total_s - (g.target_s + g.drafter_s + g.overhead_s)) < 1e-6


def test_stop_token_ends_generation_counting_a(target):
    p = _prompts()[0]
    ref = plain_generate(target, p, 40).tokens
    # The last distinct token: its first occurrence is deep enough to fall inside a drafted block.
    stop = ref[max(range(len(ref)), key=lambda i: ref.index(ref[i]))]
    j = ref.index(stop)
    plain = plain_generate(target, p, 40, stop_token_ids=[stop])
    assert plain.tokens == ref[: j + 1] and plain.finish_reason == "stop"
    for prop in (SelfProposer(target, 4), NGramProposer(4)):
        g = speculative_generate(target, prop, p, 40, stop_token_ids=[stop])
        assert g.tokens == plain.tokens and g.finish_reason == "stop" and g.rounds[-1].eos
        assert len(g.tokens) == 1 + sum(r.committed for r in g.rounds)
    g = speculative_generate(target, SelfProposer(target, 4), p, 40, stop_token_ids=[stop])
    last = g.rounds[-1]
    if g.positions[-1] <= last.proposed:  # the stop token was an accepted draft: a counts, no bonus
        assert last.committed == last.accepted


class _CharTok:
    def decode(self, ids, skip_special_tokens=False):
        return "".join(f"<{i}>" for i in ids)


def test_stop_string_cuts_after_the_completing_token(target):
    p = _prompts()[1]
    ref = plain_generate(target, p, 40).tokens
    j = 17
    s = f"{ref[j]}><{ref[j + 1]}"  # a stop string spanning two tokens
    first = next(i for i in range(len(ref) - 1) if f"<{ref[i]}><{ref[i + 1]}>" .find(s) >= 0)
    for prop in (None, SelfProposer(target, 4), NGramProposer(4)):
        g = speculative_generate(target, prop, p, 40, stop_strings=[s], tokenizer=_CharTok())
        assert g.tokens == ref[: first + 2] and g.finish_reason == "stop_string" and g.stop_string == s
        assert len(g.tokens) == 1 + sum(r.committed for r in g.rounds)


def test_confidence_threshold_truncates_and_stays_lossless(target):
    p = _prompts()[0]
    ref = plain_generate(target, p, 30).tokens
    prop = RandomProposer(block_size=5)
    g = speculative_generate(target, prop, p, 30, confidence_threshold=0.5, seed=4)
    assert g.tokens == ref
    assert any(r.proposed < r.drafted for r in g.rounds)
    assert all(all(c >= 0.5 for c in (r.confidences or [])) for r in g.rounds)


def test_bad_input(target):
    with pytest.raises(TracedraftError) as e:
        speculative_generate(target, None, [], 5)
    assert e.value.code == "bad_input"
    assert speculative_generate(target, None, [1, 2], 0).tokens == []


# ----------------------------------------------------------------------------- exact sampling

def _tv(counts: torch.Tensor, p: torch.Tensor) -> float:
    return 0.5 * float((counts / counts.sum() - p).abs().sum())


def _chi2(counts: torch.Tensor, p: torch.Tensor) -> float:
    n = counts.sum()
    m = p > 0
    return float(((counts[m] - n * p[m]) ** 2 / (n * p[m])).sum())


def _broken_verify(drafts, draft_probs, logits, temperature, generator):
    """Deliberately wrong: on rejection resample from p_t instead of the residual (biased to the draft)."""
    p_t = torch.softmax(logits.float() / temperature, -1)
    n = drafts.shape[0]
    a = n
    if n:
        idx = torch.arange(n)
        pd = draft_probs[idx, drafts] if draft_probs is not None else torch.ones(n)
        u = torch.rand(n, generator=generator)
        a = int((u * pd < p_t[idx, drafts]).long().cumprod(0).sum())
    return a, int(torch.multinomial(p_t[a], 1, generator=generator))


def _first_token_counts(verify, p_t_logits, p_d, n_samples=10000, seed=0):
    g = torch.Generator().manual_seed(seed)
    V = p_d.shape[-1]
    counts = torch.zeros(V)
    for _ in range(n_samples):
        d = torch.multinomial(p_d[0], 1, generator=g)
        a, nxt = verify(d, p_d, p_t_logits, 1.0, g)
        counts[int(d[0]) if a == 1 else nxt] += 1
    return counts


def test_verify_sampling_matches_target_distribution_and_broken_residual_fails():
    logits = torch.tensor([[1.0, 0.5, 0.0, -0.5], [0.0, 0.0, 0.0, 0.0]])
    p_t = torch.softmax(logits[0], -1)  # [0.43, 0.26, 0.16, 0.10]
    p_d = torch.tensor([[0.05, 0.05, 0.45, 0.45]])
    good = _first_token_counts(verify_sampling, logits, p_d)
    bad = _first_token_counts(_broken_verify, logits, p_d)
    # 10000 draws over 4 categories: sampling TV is ~0.007; chi-square(3 df) > 25 has p < 2e-5.
    assert _tv(good, p_t) < 0.025 and _chi2(good, p_t) < 25
    assert _tv(bad, p_t) > 0.1 and _chi2(bad, p_t) > 100


def test_verify_sampling_residual_fallback_and_one_hot():
    # Residual mass 0 (p_d == p_t) falls back to p_t; a deterministic draft is one-hot.
    logits = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    p = torch.softmax(logits, -1)
    g = torch.Generator().manual_seed(0)
    a, nxt = verify_sampling(torch.tensor([1]), p[:1], logits, 1.0, g)
    assert a == 1 and nxt in (0, 1)
    sure = torch.tensor([[10.0, -10.0], [0.0, 0.0]])  # target almost surely says 0
    hits = [verify_sampling(torch.tensor([1]), None, sure, 1.0, g) for _ in range(200)]
    assert all(a == 0 and nxt == 0 for a, nxt in hits)  # one-hot residual removes the rejected token


def _second_token_distribution(target, prompt):
    """Exact marginal of the second generated token: sum_t1 p(t1) p(t2 | t1)."""
    with torch.no_grad():
        p1 = torch.softmax(target.model(prompt[None]).logits[0, -1].float(), -1)
        V = p1.shape[0]
        batch = torch.cat([prompt.repeat(V, 1), torch.arange(V)[:, None]], 1)
        p2 = torch.softmax(target.model(batch).logits[:, -1].float(), -1)
    return p1 @ p2


class _TwoTokenProposer:
    """Drafts token 0 or 1 with probability 1/2 each whatever the context: far from the target, so a
    rejection is common and the residual carries most of the output distribution."""

    layer_ids = None
    block_size = 1

    def start(self, prompt_ids, features=None):
        pass

    def propose(self, anchor, temperature, generator):
        probs = torch.zeros(1, 4)
        probs[0, :2] = 0.5
        return Proposal(torch.multinomial(probs[0], 1, generator=generator), probs)

    def commit(self, tokens, features=None):
        pass


def _second_token_counts(target, prompt, n_samples):
    counts = torch.zeros(target.vocab_size)
    for s in range(n_samples):
        g = speculative_generate(target, _TwoTokenProposer(), prompt, 3, temperature=1.0, seed=s)
        assert g.rounds[0].proposed == 1
        counts[g.tokens[1]] += 1
    return counts


def test_speculative_sampling_end_to_end_matches_target(monkeypatch):
    t = tiny_target(5, vocab=4, layers=1, scale=3.0)
    prompt = torch.tensor([1, 2, 3])
    exact = _second_token_distribution(t, prompt)
    n = 1000
    good = _second_token_counts(t, prompt, n)
    # 1000 draws over 4 categories: TV ~0.02 by chance; chi-square(3 df) > 25 has p < 2e-5.
    assert _tv(good, exact) < 0.07 and _chi2(good, exact) < 25
    # The broken residual over-produces the drafted tokens 0 and 1 (~1.5x): TV ~0.2.
    monkeypatch.setattr(spec, "verify_sampling", _broken_verify)
    bad = _second_token_counts(t, prompt, n)
    assert _tv(bad, exact) > 0.07 and _chi2(bad, exact) > 25


# ----------------------------------------------------------------------------- n-gram baseline

def test_ngram_lookup_longest_latest_match():
    p = NGramProposer(block_size=3, max_ngram=3, min_ngram=1)
    p.start(torch.tensor([5, 6, 7, 8, 9, 5, 6, 1, 2, 5, 6, 7, 3]))
    # Context ... 5 6 7 3 | anchor 5 -> 2-gram "3 5" unseen, 1-gram "5" latest earlier at index 9 -> 6 7 3
    assert p.propose(5).tokens.tolist() == [6, 7, 3]
    p.commit(torch.tensor([5]))
    # anchor 6 after "... 3 5": 3-gram "3 5 6" unseen; 2-gram "5 6" latest at index 10 -> 7 3 5
    assert p.propose(6).tokens.tolist() == [7, 3, 5]
    p.commit(torch.tensor([6, 7]))
    assert p.propose(42).tokens.tolist() == []  # unseen token: no draft
    assert p.propose(42).probs is None


def test_ngram_no_self_match_and_bad_config():
    p = NGramProposer(block_size=4, max_ngram=2)
    p.start(torch.tensor([1, 2, 3]))
    assert p.propose(4).tokens.tolist() == []
    with pytest.raises(TracedraftError) as e:
        NGramProposer(block_size=0)
    assert e.value.code == "bad_config"
    assert make_baseline("none") is None and isinstance(make_baseline("ngram", 5), NGramProposer)
    with pytest.raises(TracedraftError):
        make_baseline("eagle")


# ----------------------------------------------------------------------------- what-if scheduling

def test_threshold_and_survival():
    assert threshold_length([0.9, 0.6, 0.4, 0.9], 0.5) == 2
    assert threshold_length([0.3], 0.5) == 0 and threshold_length([0.3, 0.2], 0.0) == 2
    assert survival([0.5, 0.5, 0.8]) == pytest.approx([0.5, 0.25, 0.2])


def test_scheduler_algorithm1_with_early_stop():
    flat = {b: 100.0 for b in range(1, 20)}
    assert schedule_prefix_lengths([[0.9, 0.9], [0.5]], flat) == [2, 1]
    # Theta: B=2 tau=2 -> 200; +0.9 -> B=3, 2.9*100=290; +0.81 -> B=4, 3.71*50=185.5 < 290: stop, even though
    # B=5 would reach 4.21*200 = 842 (not looking past the first drop keeps it lossless, docs/dspark.md 6).
    jagged = {2: 100.0, 3: 100.0, 4: 50.0, 5: 200.0}
    assert schedule_prefix_lengths([[0.9, 0.9], [0.5]], jagged) == [1, 0]
    assert schedule_prefix_lengths([], flat) == []
    with pytest.raises(TracedraftError):
        schedule_prefix_lengths([[0.5]], {})


def test_scheduler_counts_the_drafting_round():
    """A drafting round costs time whatever is verified, so a longer verification costs relatively less:
    Theta = tau / (1/SPS(B) + draft_s). Jagged table, draft_s 0.05 s: B=3 2.9/0.06 = 48.3, B=4 3.71/0.07 = 53.0,
    B=5 4.21/0.055 = 76.5: everything is admitted where draft_s = 0 stopped at B=3."""
    jagged = {2: 100.0, 3: 100.0, 4: 50.0, 5: 200.0}
    assert schedule_prefix_lengths([[0.9, 0.9], [0.5]], jagged, draft_s=0.0) == [1, 0]
    assert schedule_prefix_lengths([[0.9, 0.9], [0.5]], jagged, draft_s=0.05) == [2, 1]
    with pytest.raises(TracedraftError):
        schedule_prefix_lengths([[0.5]], jagged, draft_s=-1.0)


def test_what_if_truncation_counts():
    rounds = [spec.Round(3, 3, [0.9, 0.8, 0.7], [1, 2, 3, 4]), spec.Round(3, 1, [0.9, 0.3, 0.9], [1, 2])]
    w = what_if_truncation(rounds, threshold=0.5)
    # round 1: l = 3, tokens 4; round 2: l = 1, a = min(1, 1) = 1 -> tokens 2, verified 2
    assert w["tokens"] == 6 and w["verified_tokens"] == 6 and w["rejected_drafts"] == 0
    w0 = what_if_truncation(rounds, threshold=0.0)
    assert w0["tokens"] == 6 and w0["verified_tokens"] == 8 and w0["rejected_drafts"] == 2
    ws = what_if_truncation(rounds, sps={1: 100.0, 4: 100.0})
    assert ws["verified_tokens"] == 8


def test_whatif_imports_without_torch():
    """The what-if functions are pure: reading a stored report's rounds needs no torch."""
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, drafters.whatif; print('torch' in sys.modules); sys.exit('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ----------------------------------------------------------------------------- DSpark proposer

def test_untrained_dspark_proposer_is_lossless_and_feeds_features():
    dsp = pytest.importorskip("drafters.dspark.proposer")
    from drafters.dspark.config import DSparkConfig
    from drafters.dspark.model import DSparkDrafter

    t = tiny_target(3, layers=3, scale=3.0)
    cfg = DSparkConfig.from_target(t.config, num_hidden_layers=1, block_size=4, markov_rank=8,
                                   target_layer_ids=[0, 1], mask_token_id=t.vocab_size - 1)
    torch.manual_seed(4)
    drafter = DSparkDrafter(cfg, t.embed_weight, t.lm_head_weight)
    for p in _prompts(n=2, seed=7):
        ref = plain_generate(t, p, 25).tokens
        prop = dsp.DSparkProposer(drafter)
        g = speculative_generate(t, prop, p, 25)
        assert g.tokens == ref
        assert all(r.proposed <= 4 and r.confidences is not None for r in g.rounds[:-3])
        assert prop.context_length == len(p) + len(g.tokens) - 1  # every committed token brought features
        # Temperature 1 runs through the sampled-drafts path (probs from the drafter) without error.
        g1 = speculative_generate(t, dsp.DSparkProposer(drafter), p, 25, temperature=1.0, seed=1)
        assert len(g1.tokens) == 25 == 1 + sum(r.committed for r in g1.rounds)


@pytest.mark.slow
def test_greedy_lossless_on_smollm2():
    from drafters.target import load_target

    t = load_target("smollm2-135m-instruct")
    ids = t.tokenizer.apply_chat_template([{"role": "user", "content": "List the files: a.py, b.py, c.py."}],
                                          add_generation_prompt=True, tokenize=True)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    ref = plain_generate(t, ids, 32)
    for prop in (NGramProposer(7), NoDraftProposer()):
        g = speculative_generate(t, prop, ids, 32)
        assert g.tokens == ref.tokens
