"""The what-if hybrid: it keeps the proposal with the larger expected acceptance, stays lossless, and its
rounds on a cyclic target match a hand count."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
import torch

from drafters.baselines import NGramProposer
from drafters.baselines.hybrid import DRAFTER, HybridProposer, expected_accepted
from drafters.baselines.suffix_decoding import SuffixProposal, SuffixProposer
from drafters.dspark.proposer import DSparkProposer
from drafters.errors import TracedraftError
from drafters.evaluate import evaluate, tau_of
from drafters.speculate import Proposal, plain_generate, speculative_generate
from drafters.target import Target
from tests._speculate_helpers import SelfProposer, tiny_target
from tests._suffix_helpers import BigramTarget
from tests.dspark._tiny import tiny_drafter

warnings.filterwarnings("ignore", category=FutureWarning)

CYCLE = {i: (i + 1) % 5 for i in range(5)}


class CycleDrafter:
    """Drafts ``block_size`` tokens of the cycle after the anchor (right) or the cycle shifted by one
    (``wrong``: never accepted), with fixed per-slot confidences."""

    layer_ids = None

    def __init__(self, confidences, wrong=False, block_size=4):
        self.conf, self.wrong, self.block_size = list(confidences), wrong, block_size
        self.committed = 0

    def start(self, prompt_ids, features=None):
        self.committed = int(prompt_ids.numel())

    def propose(self, anchor, temperature=0.0, generator=None):
        toks, t = [], int(anchor)
        for _ in range(self.block_size):
            t = CYCLE[t]
            toks.append(CYCLE[t] if self.wrong else t)
        return Proposal(torch.tensor(toks), None, torch.tensor(self.conf))

    def commit(self, tokens, features=None):
        self.committed += int(tokens.numel())


def test_expected_acceptance_of_each_kind_of_proposal():
    assert expected_accepted(SuffixProposal(torch.tensor([1, 2]), score=1.25)) == 1.25
    conf = Proposal(torch.tensor([1, 2, 3]), None, torch.tensor([0.9, 0.5, 0.2]))
    assert expected_accepted(conf) == pytest.approx(0.9 + 0.45 + 0.09)
    assert expected_accepted(Proposal(torch.tensor([4, 5, 6]))) == 3.0
    assert expected_accepted(Proposal(torch.zeros(0, dtype=torch.long))) == 0.0


def test_the_hybrid_keeps_the_longer_expected_proposal():
    # Suffix side: context 0 1 2 3 4 0 1 + anchor 2 gives [3 4 0] with score 1.5 (see the suffix tests).
    prompt, anchor = torch.tensor([0, 1, 2, 3, 4, 0, 1]), 2
    for conf, choice in (([0.5] * 4, "suffix"), ([0.9] * 4, DRAFTER), ([0.75, 1.0, 0.0, 0.0], DRAFTER)):
        # expectations 0.9375 < 1.5; 3.0951 > 1.5; 1.5 == 1.5 (a tie keeps the drafter)
        h = HybridProposer(CycleDrafter(conf, wrong=True), SuffixProposer(block_size=4))
        h.start(prompt)
        p = h.propose(anchor)
        assert h.rounds[-1].choice == choice
        assert h.rounds[-1].alternative_expected == pytest.approx(1.5)
        if choice == "suffix":
            assert p.tokens.tolist() == [3, 4, 0] and p.confidences is None
        else:
            assert p.tokens.tolist() == [4, 0, 1, 2] and p.confidences is not None
        assert h.picks == {DRAFTER: int(choice == DRAFTER), "suffix": int(choice == "suffix")}


def test_hand_count_on_a_cyclic_target():
    """Prompt 0 1 2 3 4 0 1, 20 tokens, block 4; the drafter is always right with confidence 0.7 per slot
    (expected 0.7 + 0.49 + 0.343 + 0.2401 = 1.7731 accepted drafts). Suffix scores by hand:
    round 1: [3 4 0] at 1/2 each = 1.5 < 1.7731 -> drafter: [3 4 0 1] + bonus 2: 5 tokens;
    round 2: 13 tokens; "4 0 1 2" .. "0 1 2 3 4 0 1 2" (2 occurrences) -> [3 4 0 1] at 1/2 = 2.0 (ties the
      3-token "0 1 2" path at 2/3 each; the longer match wins) -> suffix, 5 tokens;
    round 3: 18 tokens; the same state, 3 occurrences: 4 x 2/3 = 2.667 -> suffix, 5 tokens;
    round 4: 23 tokens; 4 occurrences: 4 x 3/4 = 3.0 -> suffix, but 4 tokens remain: 3 drafts verified.
    """
    target = BigramTarget(CYCLE)
    prompt = [0, 1, 2, 3, 4, 0, 1]
    h = HybridProposer(CycleDrafter([0.7] * 4), SuffixProposer(block_size=4))
    gen = speculative_generate(target, h, prompt, 20)
    assert gen.tokens == plain_generate(target, prompt, 20).tokens
    assert [r.choice for r in h.rounds] == [DRAFTER, "suffix", "suffix", "suffix"]
    assert [r.alternative_expected for r in h.rounds] == pytest.approx([1.5, 2.0, 8 / 3, 3.0])
    assert [(r.proposed, r.accepted, r.committed) for r in gen.rounds] == [(4, 4, 5), (4, 4, 5), (4, 4, 5),
                                                                          (3, 3, 4)]
    assert tau_of(gen.rounds) == pytest.approx(19 / 4)
    assert h.drafter.committed == len(prompt) + 19  # every committed token reached the drafter too


def test_a_confident_wrong_drafter_is_still_chosen_the_rule_is_a_what_if():
    """Expected acceptance decides, not the outcome: a wrong drafter at confidence 0.99 (3.94 expected)
    beats every suffix score here, and every round accepts nothing."""
    target = BigramTarget(CYCLE)
    h = HybridProposer(CycleDrafter([0.99] * 4, wrong=True), SuffixProposer(block_size=4))
    gen = speculative_generate(target, h, [0, 1, 2, 3, 4, 0, 1], 12)
    assert {r.choice for r in h.rounds} == {DRAFTER}
    assert all(r.accepted == 0 for r in gen.rounds) and tau_of(gen.rounds) == 1.0
    # A diffident one hands every round to suffix decoding: exactly the suffix-only rounds.
    alone = speculative_generate(target, SuffixProposer(block_size=4), [0, 1, 2, 3, 4, 0, 1], 12)
    h = HybridProposer(CycleDrafter([0.1] * 4, wrong=True), SuffixProposer(block_size=4))
    gen = speculative_generate(target, h, [0, 1, 2, 3, 4, 0, 1], 12)
    assert [r.to_dict() for r in gen.rounds] == [r.to_dict() for r in alone.rounds]
    assert h.picks == {DRAFTER: 0, "suffix": len(gen.rounds)}


def test_the_report_table_by_segment_shows_suffix_and_hybrid():
    """evaluate() as it stands, with the two baselines beside n-gram, on the cyclic target (same rounds as
    the hand counts above). Segments by parity of each committed token (odd: text, even: tool_args), each
    token carrying 1/L of its round (SEGMENT_RULE). After the prefill token 2, suffix commits 3 4 0 1 | then
    three rounds of 2 3 4 0 1: text 2 + 3x2 = 8 tokens over 0.5 + 3 x 0.4 = 1.7 rounds, tool_args 2 + 3x3 =
    11 tokens over 0.5 + 3 x 0.6 = 2.3 rounds. The hybrid commits 3 4 0 1 2 three times, then 3 4 0 1: the
    same tokens, so the same per-segment figures, as every proposer's segments cover the same tokens."""
    target = BigramTarget(CYCLE)
    prompt = SimpleNamespace(call_id="conv/0", prompt_ids=[0, 1, 2, 3, 4, 0, 1])
    proposers = {"suffix": SuffixProposer(block_size=4),
                 "hybrid": HybridProposer(CycleDrafter([0.7] * 4), SuffixProposer(block_size=4)),
                 "ngram": NGramProposer(4)}
    rep = evaluate(target, proposers, [prompt], max_new_tokens=20,
                   segmenter=lambda toks: [4 if t % 2 else 7 for t in toks])
    assert rep["lossless"]["calls_checked"] == 3
    suffix, hybrid = rep["proposers"]["suffix"], rep["proposers"]["hybrid"]
    assert suffix["tau"] == pytest.approx(19 / 4) and hybrid["tau"] == pytest.approx(19 / 4)
    for entry in (suffix, hybrid):
        seg = entry["by_segment"]
        assert seg["text"]["tokens"] == 8 and seg["text"]["rounds"] == pytest.approx(1.7)
        assert seg["tool_args"]["tokens"] == 11 and seg["tool_args"]["rounds"] == pytest.approx(2.3)
        assert seg["text"]["tau"] == pytest.approx(8 / 1.7) and seg["tool_args"]["tau"] == pytest.approx(11 / 2.3)
    assert set(rep["proposers"]["ngram"]["by_segment"]) <= {"text", "tool_args"}


@pytest.fixture(scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_greedy_hybrid_with_a_dspark_drafter_equals_plain_decoding(one_thread):
    d, t = tiny_drafter("qwen3", markov_rank=16)
    target = Target(t, tokenizer=None, name="tiny")
    g = torch.Generator().manual_seed(0)
    base = torch.randint(0, 200, (8,), generator=g)
    prompt = torch.cat([base, base, base[:3]])
    ref = plain_generate(target, prompt, 24)
    h = HybridProposer(DSparkProposer(d), SuffixProposer([ref.tokens[:10]], block_size=d.config.block_size))
    assert h.layer_ids == list(d.config.target_layer_ids)  # the drafter's features pass through
    gen = speculative_generate(target, h, prompt, 24)
    assert gen.tokens == ref.tokens
    assert len(h.rounds) == len(gen.rounds) and sum(h.picks.values()) == len(gen.rounds)
    assert h.picks["suffix"] > 0  # the repeated prompt makes suffix paths worth more than a random drafter


def test_sampling_hybrid_is_seeded_and_valid(one_thread):
    target = tiny_target(0, scale=4.0)
    prompt = torch.tensor([3, 9, 4, 3, 9, 4, 3, 9])
    runs = []
    for _ in range(2):
        h = HybridProposer(SelfProposer(target, 4), SuffixProposer(block_size=4))
        runs.append(speculative_generate(target, h, prompt, 20, temperature=1.0, seed=5))
    assert runs[0].tokens == runs[1].tokens and len(runs[0].tokens) == 20
    assert all(0 <= r.accepted <= r.proposed <= 4 for r in runs[0].rounds)


def test_the_alternative_must_be_model_free_with_the_same_block():
    with pytest.raises(TracedraftError) as e:
        HybridProposer(CycleDrafter([0.5] * 4), SuffixProposer(block_size=5))
    assert e.value.code == "bad_config"
    feat = CycleDrafter([0.5] * 4)
    feat.layer_ids = [0]
    with pytest.raises(TracedraftError) as e:
        HybridProposer(CycleDrafter([0.5] * 4), feat)
    assert e.value.code == "bad_config"
    with pytest.raises(TracedraftError) as e:
        HybridProposer(CycleDrafter([0.5] * 4), NGramProposer(4), name=DRAFTER)
    assert e.value.code == "bad_config"
    HybridProposer(CycleDrafter([0.5] * 4), NGramProposer(4), name="ngram")  # n-gram drafts count at length
