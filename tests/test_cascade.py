"""The cascade proposer: suffix decoding first, the drafter only where suffix is unsure; lossless, its
drafter skipped in the rounds suffix takes, and its context still exact after skipped rounds."""

from __future__ import annotations

import math

import pytest
import torch

from drafters.baselines.suffix_decoding import SuffixProposer
from drafters.cascade import CHEAP, DRAFTER, CascadeProposer
from drafters.dspark.proposer import DSparkProposer
from drafters.errors import TracedraftError
from drafters.speculate import plain_generate, speculative_generate
from drafters.target import Target
from tests.dspark._tiny import tiny_drafter


class Counting(DSparkProposer):
    """A DSparkProposer that counts its drafting rounds."""

    proposals = 0

    def propose(self, anchor, temperature, generator):
        self.proposals += 1
        return super().propose(anchor, temperature, generator)


def _setup():
    d, t = tiny_drafter("qwen3", markov_rank=16)
    target = Target(t, tokenizer=None, name="tiny")
    base = torch.randint(0, 200, (8,), generator=torch.Generator().manual_seed(0))
    prompt = torch.cat([base, base, base[:3]])
    return d, target, prompt


@pytest.mark.parametrize("threshold", [0.0, 1.0, math.inf])
def test_greedy_cascade_equals_plain_decoding_and_skips_the_drafter(threshold):
    d, target, prompt = _setup()
    ref = plain_generate(target, prompt, 30)
    drafter = Counting(d)
    cheap = SuffixProposer([ref.tokens[:12]], block_size=24)
    c = CascadeProposer(cheap, drafter, threshold)
    assert c.block_size == 24 and c.layer_ids == list(d.config.target_layer_ids)
    gen = speculative_generate(target, c, prompt, 30)
    assert gen.tokens == ref.tokens
    assert sum(c.picks.values()) == len(gen.rounds)
    assert drafter.proposals == c.picks[DRAFTER]  # the drafter ran only in the rounds it drafted
    if threshold == math.inf:
        assert c.picks[CHEAP] == 0
    else:
        assert c.picks[CHEAP] > 0  # the repeated prompt and the indexed answer give suffix sure paths
    # after skipped rounds the drafter's context still holds every committed position
    assert drafter.context_length == len(prompt) + len(gen.tokens) - 1


def test_sampling_cascade_is_seeded_and_valid():
    d, target, prompt = _setup()
    runs = []
    for _ in range(2):
        c = CascadeProposer(SuffixProposer(block_size=24), DSparkProposer(d), 0.5)
        runs.append(speculative_generate(target, c, prompt, 20, temperature=1.0, seed=5))
    assert runs[0].tokens == runs[1].tokens and len(runs[0].tokens) == 20


def test_bad_config():
    d, _, _ = _setup()
    for bad in (-1.0, math.nan):
        with pytest.raises(TracedraftError) as e:
            CascadeProposer(SuffixProposer(), DSparkProposer(d), bad)
        assert e.value.code == "bad_config"
    with pytest.raises(TracedraftError):
        CascadeProposer(DSparkProposer(d), DSparkProposer(d), 1.0)
