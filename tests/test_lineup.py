"""The evaluation's line-up: one suffix index and draft vocabulary for every proposer, suffix decoding at its
natural cap and at the block size, and what a deployment could ship."""

from __future__ import annotations

from types import SimpleNamespace

from drafters.baselines.suffix_decoding import SuffixProposer
from drafters.baselines.tool_schema import ToolSchemaProposer
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


def test_with_a_renderer_the_schema_proposer_joins_the_cheap_side():
    from tests.test_render import smollm2_tokenizer
    from tests.test_tool_schema import CHATML

    d, _ = tiny_drafter("qwen3", block_size=4)
    lu = Lineup(d, None, "", [[5, 6, 7]], renderer=SimpleNamespace(tokenizer=smollm2_tokenizer(), dialect=CHATML))
    base = lu.baselines()
    assert list(base) == ["candidate", "ngram", "suffix", "suffix@block", "schema", "suffix+schema", "hybrid"]
    assert isinstance(base["schema"], ToolSchemaProposer) and base["schema"].block_size == SUFFIX_CAP
    both = base["suffix+schema"]
    assert both.drafter is None and [type(c) for c in both.cheap] == [ToolSchemaProposer, SuffixProposer]
    c = lu.cascade(0.5)
    assert [type(x) for x in c.cheap] == [ToolSchemaProposer, SuffixProposer] and c.drafter is not None
    assert "schema" in lu.shippable() and "suffix+schema" in lu.shippable()
