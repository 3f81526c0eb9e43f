"""Suffix decoding: the counting automaton, the proposal rules on hand-made sequences, agreement with a
brute-force reference, and speculative decoding with it (lossless, tau by hand on a cyclic target)."""

from __future__ import annotations

import random
import warnings
from types import SimpleNamespace

import pytest
import torch

from drafters.baselines.suffix_automaton import Match, SuffixAutomaton
from drafters.baselines.suffix_decoding import (
    GLOBAL,
    REQUEST,
    SuffixProposer,
    build_global_index,
    spec_length,
    training_outputs,
)
from drafters.errors import TracedraftError
from drafters.evaluate import tau_of
from drafters.speculate import plain_generate, speculative_generate
from tests._speculate_helpers import tiny_target
from tests._suffix_helpers import BigramTarget, naive_speculate

warnings.filterwarnings("ignore", category=FutureWarning)


def _occ(seqs, pat):
    return sum(1 for s in seqs for i in range(len(s) - len(pat) + 1) if s[i: i + len(pat)] == pat)


def _propose(prop: SuffixProposer, prompt: list[int], anchor: int):
    prop.start(torch.tensor(prompt))
    return prop.propose(anchor)


# ------------------------------------------------------------------------------------------- automaton


@pytest.mark.parametrize("alphabet,depth", [(2, 6), (3, 5), (5, 4)])
def test_automaton_counts_every_substring_exactly(alphabet, depth):
    rng = random.Random(alphabet)
    seqs = [[rng.randrange(alphabet) for _ in range(rng.randint(1, 40))] for _ in range(6)]
    sam = SuffixAutomaton(depth)
    for s in seqs:
        sam.start_sequence()
        sam.extend(s)
    subs = {tuple(s[i:j]) for s in seqs for i in range(len(s))
            for j in range(i + 1, min(len(s), i + depth) + 1)}
    assert len(subs) > 20
    for pat in subs:
        st = sam.state_of(pat)
        assert st is not None and sam.count(st) == _occ(seqs, list(pat)), pat
    # A string that never occurs has no state, even when each of its tokens does.
    absent = next(p for p in ((0,) * k for k in range(1, 60)) if _occ(seqs, list(p)) == 0)
    assert sam.state_of(absent) is None
    assert sam.tokens == sum(map(len, seqs)) and sam.sequences == len(seqs)


def test_occurrences_never_span_two_sequences():
    sam = SuffixAutomaton(4)
    for s in ([1, 2], [3, 4], [2, 3]):
        sam.start_sequence()
        sam.extend(s)
    assert sam.count(sam.state_of([2, 3])) == 1  # only the third sequence, not "1 2 | 3 4"
    assert sam.state_of([2, 3, 4]) is None
    assert sam.count(sam.state_of([2])) == 2


def test_advance_keeps_the_longest_capped_match():
    rng = random.Random(7)
    text = [rng.randrange(3) for _ in range(120)]
    sam = SuffixAutomaton(10)
    sam.start_sequence()
    sam.extend(text)
    stream = [rng.randrange(4) for _ in range(200)]  # token 3 never occurs in text: matches must reset
    m = Match()
    for i, t in enumerate(stream):
        m = sam.advance(m, t, 6)
        ctx = stream[: i + 1]
        want = max((k for k in range(min(6, len(ctx)) + 1) if k == 0 or _occ([text], ctx[-k:])), default=0)
        assert m.length == want, i
        assert m.state == (sam.state_of(ctx[-want:]) if want else 0)


def test_best_child_prefers_count_then_recency():
    sam = SuffixAutomaton(4)
    sam.start_sequence()
    sam.extend([9, 1, 9, 2, 9, 1, 9, 3, 9, 2])  # after 9: 1 twice, 2 twice (2 most recent), 3 once
    tok, child = sam.best_child(sam.state_of([9]))
    assert tok == 2 and sam.count(child) == 2
    assert sam.best_child(sam.state_of([3, 9, 2])) is None


def test_tail_match_rejects_a_length_beyond_the_counted_depth():
    with pytest.raises(TracedraftError) as e:
        SuffixAutomaton(3).tail_match(4)
    assert e.value.code == "bad_config"


# ---------------------------------------------------------------------------------- proposal rules


def test_global_proposal_is_the_hand_computed_most_frequent_continuation():
    # After "5 6 7": "8 1" twice (once via 8 1 2), "9" once.
    train = [[5, 6, 7, 8, 1], [5, 6, 7, 9], [5, 6, 7, 8, 1, 2], [4, 4]]
    p = _propose(SuffixProposer(train, block_size=5), [0, 5, 6], 7)
    # match "5 6 7" (3 occurrences) allows 3 tokens: 8 (2/3), 1 (2/2 -> 2/3), 2 (1/2 -> 1/3).
    assert p.tokens.tolist() == [8, 1, 2]
    assert p.path_probs == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert p.score == pytest.approx(5 / 3) and p.match_len == 3 and p.source == GLOBAL
    assert p.probs is None and p.confidences is None


def test_min_token_prob_stops_the_path_before_a_rare_token():
    train = [[5, 6, 7, 8, 1], [5, 6, 7, 9], [5, 6, 7, 8, 1, 2], [4, 4]]
    p = _propose(SuffixProposer(train, block_size=5, min_token_prob=0.5), [0, 5, 6], 7)
    assert p.tokens.tolist() == [8, 1] and p.score == pytest.approx(4 / 3)


def test_request_context_wins_a_tie_and_loses_to_a_strictly_better_global_path():
    # Context "7 1 2 3 8 1" + anchor 2: "1 2" occurs twice (once as the context's own end), so the request
    # path after the 2-token match is [3 8] at 1/2 each: score 1.
    prompt = [7, 1, 2, 3, 8, 1]
    tie_train = [[1, 2, 5], [1, 2, 4, 6]]  # "1 2" -> 5 or 4 once each (4 is more recent), then 6: score 1
    p = _propose(SuffixProposer(tie_train, block_size=4), prompt, 2)
    assert p.tokens.tolist() == [3, 8] and p.source == REQUEST and p.score == pytest.approx(1.0)
    better = [[1, 2, 5], [1, 2, 4, 6], [1, 2, 4, 6]]  # "1 2" -> 4 with 2/3, then 6: score 4/3 > 1
    p = _propose(SuffixProposer(better, block_size=4), prompt, 2)
    assert p.tokens.tolist() == [4, 6] and p.source == GLOBAL and p.score == pytest.approx(4 / 3)


def test_speculation_length_follows_the_match_length():
    assert [spec_length(m, 7, 1.0, 0.0) for m in (0, 1, 3, 7, 20)] == [0, 1, 3, 7, 7]
    assert spec_length(3, 7, 0.5, 0.0) == 1 and spec_length(3, 7, 0.5, 1.0) == 2
    assert spec_length(1, 7, -1, 0) == 0
    train = [[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]
    # A 1-token match allows 1 token, a 2-token match 2: the draft is as long as the match.
    assert _propose(SuffixProposer(train, block_size=7), [0], 3).tokens.tolist() == [4]
    assert _propose(SuffixProposer(train, block_size=7), [3], 4).tokens.tolist() == [5, 6]
    # A long match is capped by the block size ...
    p = _propose(SuffixProposer(train, block_size=3), [3, 4, 5, 6], 7)
    assert p.tokens.tolist() == [8, 9, 10] and p.match_len == 5
    # ... and by max_match_len, which also bounds the length the factor multiplies.
    p = _propose(SuffixProposer(train, block_size=7, max_match_len=2), [3, 4, 5, 6], 7)
    assert p.tokens.tolist() == [8, 9] and p.match_len == 2
    p = _propose(SuffixProposer(train, block_size=7, max_spec_factor=2.0, max_match_len=2), [3, 4, 5, 6], 7)
    assert p.tokens.tolist() == [8, 9, 10, 11]


def test_request_context_repeats_with_its_own_end_counted():
    # "0 1 2 3 4 0 1" + anchor 2: "0 1 2" occurs twice (the second is the context's own end), so each
    # continuation token has probability 1/2; the 3-token match allows 3 tokens.
    p = _propose(SuffixProposer(block_size=4), [0, 1, 2, 3, 4, 0, 1], 2)
    assert p.tokens.tolist() == [3, 4, 0] and p.path_probs == [0.5, 0.5, 0.5] and p.match_len == 3
    assert p.source == REQUEST


def test_nothing_to_match_gives_an_empty_proposal():
    p = _propose(SuffixProposer([[1, 2, 3]], block_size=4), [7, 8], 9)
    assert p.tokens.tolist() == [] and p.score == 0.0 and p.source is None


@pytest.mark.parametrize("seed", range(12))
def test_proposals_equal_the_brute_force_reference(seed):
    rng = random.Random(seed)
    alphabet = rng.choice([2, 3, 4, 6])
    train = [[rng.randrange(alphabet) for _ in range(rng.randint(1, 25))] for _ in range(rng.randint(0, 5))]
    block, max_match = rng.choice([1, 3, 5]), rng.choice([2, 4, 23])
    factor, min_prob = rng.choice([0.5, 1.0, 2.0]), rng.choice([0.0, 0.1, 0.4])
    prop = SuffixProposer(train, block_size=block, max_match_len=max_match, max_spec_factor=factor,
                          min_token_prob=min_prob)
    ctx = [rng.randrange(alphabet) for _ in range(rng.randint(1, 12))]
    prop.start(torch.tensor(ctx))
    for _ in range(25):
        anchor = rng.randrange(alphabet)
        got = prop.propose(anchor)
        ctx.append(anchor)
        want, source = naive_speculate(train, ctx, block, max_match, factor, 0.0, min_prob)
        assert got.tokens.tolist() == want.tokens, (ctx, got, want)
        assert got.path_probs == pytest.approx(want.probs)
        if want.tokens:
            assert (got.match_len, got.source) == (want.match_len, source)
        accepted = [t for t in got.tokens.tolist()[: rng.randint(0, block)]]
        prop.commit(torch.tensor([anchor] + accepted))
        ctx.extend(accepted)


def test_a_shared_global_index_must_count_deep_enough():
    idx = build_global_index([[1, 2, 3]], count_depth=10)
    SuffixProposer(idx, block_size=3, max_match_len=7)  # 7 + 3 <= 10
    with pytest.raises(TracedraftError) as e:
        SuffixProposer(idx, block_size=4, max_match_len=7)
    assert e.value.code == "bad_config"


def test_global_index_keeps_the_last_sequences():
    idx = build_global_index([[1, 2], [3, 4], [5, 6]], count_depth=4, max_sequences=2)
    assert idx.state_of([1, 2]) is None and idx.state_of([5, 6]) is not None and idx.sequences == 2
    assert build_global_index([[1, 2]], 4, max_sequences=0).tokens == 0


@pytest.mark.parametrize("kwargs", [{"block_size": 0}, {"max_match_len": 0}, {"min_token_prob": 1.5},
                                    {"max_spec_factor": -1.0}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(TracedraftError) as e:
        SuffixProposer(**kwargs)
    assert e.value.code == "bad_config"


def test_propose_and_commit_must_agree_on_the_anchor():
    prop = SuffixProposer(block_size=3)
    prop.start(torch.tensor([1, 2, 1]))
    first = prop.propose(2)
    assert prop.propose(2).tokens.tolist() == first.tokens.tolist()  # asking again is harmless
    with pytest.raises(TracedraftError) as e:
        prop.propose(5)
    assert e.value.code == "bad_state"
    with pytest.raises(TracedraftError) as e:
        prop.commit(torch.tensor([5, 1]))
    assert e.value.code == "bad_state"
    prop.commit(torch.tensor([2, 1]))
    assert prop.request_index.tokens == 5


def test_training_outputs_are_the_supervised_runs():
    rows = [SimpleNamespace(input_ids=[1, 2, 3, 4, 5, 6, 7], loss_mask=[0, 1, 1, 0, 0, 1, 1]),
            SimpleNamespace(input_ids=[8, 9], loss_mask=[0, 0]),
            SimpleNamespace(input_ids=[5], loss_mask=[1])]
    assert training_outputs(rows) == [[2, 3], [6, 7], [5]]
    with pytest.raises(TracedraftError) as e:
        training_outputs([SimpleNamespace(input_ids=[1, 2], loss_mask=[1], conversation_id="c9")])
    assert e.value.code == "bad_input" and "c9" in e.value.where


# ------------------------------------------------------------------------------ speculative decoding


def test_tau_by_hand_on_a_cyclic_target():
    """Target cycles 0 1 2 3 4. Prompt 0 1 2 3 4 0 1, first token 2, block 4, no training outputs:
    round 1: context ..0 1 2, best match "0 1 2" (2 occurrences, one the context's own end), 3 tokens
      [3 4 0] at 1/2 each (score 1.5) -> all accepted + bonus 1: 4 tokens;
    round 2: context of 12 tokens, "0 1 2 3 4 0 1" (7 tokens, 2 occurrences) -> [2 3 4 0] score 2 -> 5 tokens;
    round 3: 17 tokens; the state of "4 0 1" .. "0 1 2 3 4 0 1" occurs 3 times, 2 continue: [2 3 4 0] at 2/3
      each (score 8/3, beating "0 1" -> 3/4 x 2 tokens) -> 5 tokens;
    round 4: 22 tokens; the same state, 4 occurrences, 3 continue: 3/4 each -> 5 tokens.
    19 tokens in 4 rounds: tau 19/4."""
    target = BigramTarget({i: (i + 1) % 5 for i in range(5)})
    prompt = [0, 1, 2, 3, 4, 0, 1]
    plain = plain_generate(target, prompt, 20)
    assert plain.tokens == [(2 + i) % 5 for i in range(20)]
    gen = speculative_generate(target, SuffixProposer(block_size=4), prompt, 20)
    assert gen.tokens == plain.tokens
    rounds = [(r.proposed, r.accepted, r.committed) for r in gen.rounds]
    assert rounds == [(3, 3, 4), (4, 4, 5), (4, 4, 5), (4, 4, 5)]
    assert tau_of(gen.rounds) == pytest.approx(19 / 4)


def test_global_index_drafts_what_training_outputs_continue():
    """Same target, a prompt with no repeat: the request context has nothing; the training output
    "9 0 1 2 3 4" (the target's own text) is matched from the first token on."""
    target = BigramTarget({9: 0, **{i: (i + 1) % 5 for i in range(5)}}, vocab=10)
    prompt = [9]
    gen = speculative_generate(target, SuffixProposer([[9, 0, 1, 2, 3, 4, 0, 1, 2]], block_size=3), prompt, 9)
    assert gen.tokens == plain_generate(target, prompt, 9).tokens == [0, 1, 2, 3, 4, 0, 1, 2, 3]
    # Round 1 matches "9 0" (2 tokens -> 2 drafts), round 2 matches 5 tokens -> 3 drafts (block).
    assert [(r.proposed, r.accepted) for r in gen.rounds][:2] == [(2, 2), (3, 3)]


@pytest.fixture(scope="module")
def target():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield tiny_target(0, scale=4.0)
    torch.set_num_threads(n)


def _prompts(n=3, vocab=64, seed=1):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        base = torch.randint(0, vocab, (6 + 3 * i,), generator=g)
        out.append(torch.cat([base, base, base[:3]]))
    return out


def test_greedy_output_equals_plain_decoding_on_a_real_model(target):
    prompts = _prompts()
    refs = [plain_generate(target, p, 30).tokens for p in prompts]
    # Training outputs: the target's own continuations of the other prompts, so global drafts occur too.
    for i, p in enumerate(prompts):
        train = [refs[j] for j in range(len(prompts)) if j != i]
        prop = SuffixProposer(train, block_size=5)
        g = speculative_generate(target, prop, p, 30)
        assert g.tokens == refs[i]
        assert len(g.tokens) == 1 + sum(r.committed for r in g.rounds)
        assert sum(r.accepted for r in g.rounds) > 0  # the repeated prompt gives drafts that land


def test_sampling_with_suffix_drafts_keeps_the_target_distribution_seeded(target):
    # Deterministic drafts at temperature 1: the loop treats them as one-hot; the same seed gives the same
    # output twice and every round is a valid acceptance.
    p = _prompts(1)[0]
    a = speculative_generate(target, SuffixProposer(block_size=4), p, 25, temperature=1.0, seed=3)
    b = speculative_generate(target, SuffixProposer(block_size=4), p, 25, temperature=1.0, seed=3)
    assert a.tokens == b.tokens and len(a.tokens) == 25
    assert all(0 <= r.accepted <= r.proposed <= 4 for r in a.rounds)


def test_a_corpus_too_large_for_the_index_is_a_coded_error_naming_size_and_setting():
    from drafters.baselines.suffix_decoding import build_global_index

    outputs = [[1, 2, 3, 4]] * 5
    assert build_global_index(outputs, 8, max_tokens=20).tokens  # 20 tokens fit
    with pytest.raises(TracedraftError) as e:
        build_global_index(outputs, 8, max_tokens=19)
    assert e.value.code == "suffix_corpus_too_large" and "20 tokens" in e.value.message
    assert e.value.where == "evaluation.suffix_max_tokens"
    # only the most recent max_sequences count
    assert build_global_index(outputs, 8, max_sequences=4, max_tokens=16).tokens
