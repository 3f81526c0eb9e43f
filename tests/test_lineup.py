"""The evaluation's line-up: one suffix index and draft vocabulary for every proposer, suffix decoding at its
natural cap and at the block size, and what a deployment could ship."""

from __future__ import annotations

from drafters.cascade import CascadeProposer
from drafters.evaluate.lineup import SUFFIX_CAP, Lineup
from tests.dspark._tiny import tiny_drafter


def test_lineup_names_caps_and_shared_state():
    d, _ = tiny_drafter("qwen3", block_size=4)
    inc, _ = tiny_drafter("qwen3", block_size=4, seed=1)
    lu = Lineup(d, inc, "untrained", [[5, 6, 7, 5, 6], [9, 5]], stop_ids=[200], draft_vocab_size=2)
    base = lu.baselines()
    assert list(base) == ["candidate", "untrained", "ngram", "suffix", "suffix@block", "hybrid"]
    assert base["suffix"].block_size == SUFFIX_CAP == 24 and base["suffix@block"].block_size == 4
    assert base["suffix"].global_index is lu.index is base["suffix@block"].global_index
    assert lu.vocab.tolist() == [5, 6, 200]  # the two most frequent answer tokens and the stop id
    assert list(lu.shippable()) == ["candidate", "ngram", "suffix", "suffix@block"]
    c = lu.cascade(1.5)
    assert isinstance(c, CascadeProposer) and c.threshold == 1.5 and c.block_size == 24
    same = Lineup(d, None, "", [[1, 2]], suffix_cap=4)
    assert "suffix@block" not in same.baselines() and "untrained" not in same.baselines()
