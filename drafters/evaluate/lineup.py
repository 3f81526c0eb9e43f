"""The proposers an in-process evaluation compares, built in one place (the evaluate stage and the
benchmarks use the same line-up): the trained drafter ("candidate") and its incumbent, each drafting from
the organization's draft vocabulary; the n-gram proposer; suffix decoding at its natural cap and at the
drafter's block size; with the target's renderer, the tool-schema proposer ("schema") and its model-free
combination with suffix decoding ("suffix+schema"); the what-if hybrid; and the cascade (the model-free
proposers first, the drafter where they are unsure), the proposer the product ships when it is fastest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from drafters.baselines import NGramProposer
from drafters.baselines.hybrid import HybridProposer
from drafters.baselines.suffix_decoding import MAX_INDEX_TOKENS, SuffixProposer, build_global_index
from drafters.baselines.tool_schema import ToolSchemaProposer
from drafters.cascade import CascadeProposer
from drafters.dspark.draft_vocab import DEFAULT_SIZE, draft_vocabulary
from drafters.dspark.proposer import DSparkProposer

#: suffix decoding's default cap (vLLM's num_speculative_tokens for method "suffix" in its docs' example,
#: and ArcticInference's tree depth 24)
SUFFIX_CAP = 24


@dataclass
class Lineup:
    """Builds proposers over one shared suffix index and draft vocabulary. candidate / incumbent:
    DSparkDrafter models (incumbent may be None); outputs: the training answers' token ids; stop_ids: the
    target's end-of-turn ids (always draftable); suffix_max_sequences / suffix_max_tokens: the global
    index's limits (vLLM's suffix_decoding_max_cached_requests is 10000; raises TracedraftError(
    code="suffix_corpus_too_large") beyond the token limit); renderer: the target's ``Renderer`` (its
    tokenizer and template dialect), or None to leave the tool-schema proposer out."""

    candidate: Any
    incumbent: Any
    incumbent_name: str
    outputs: list[list[int]]
    stop_ids: Sequence[int] = ()
    suffix_cap: int = SUFFIX_CAP
    draft_vocab_size: int = DEFAULT_SIZE
    suffix_max_sequences: int = 10000
    suffix_max_tokens: int = MAX_INDEX_TOKENS
    renderer: Any = None

    def __post_init__(self) -> None:
        self.block = int(self.candidate.config.block_size)
        depth = 23 + max(self.suffix_cap, self.block)  # SuffixProposer's max_match_len + its block
        self.index = build_global_index(self.outputs, depth, self.suffix_max_sequences, self.suffix_max_tokens)
        self.vocab = torch.tensor(draft_vocabulary(self.outputs, self.draft_vocab_size, self.stop_ids))

    def drafter(self, model: Any) -> DSparkProposer:
        return DSparkProposer(model, draft_vocab=self.vocab)

    def suffix(self, cap: int | None = None) -> SuffixProposer:
        return SuffixProposer(self.index, block_size=cap or self.suffix_cap)

    def schema(self) -> ToolSchemaProposer | None:
        """The tool-schema proposer at suffix decoding's cap, or None without a renderer."""
        if self.renderer is None:
            return None
        return ToolSchemaProposer(self.renderer.tokenizer, self.renderer.dialect, block_size=self.suffix_cap)

    def cheap(self) -> list[Any]:
        """The model-free proposers the cascade asks first: [schema, suffix] (schema only with a renderer)."""
        return [p for p in (self.schema(), self.suffix()) if p is not None]

    def cascade(self, threshold: float) -> CascadeProposer:
        return CascadeProposer(self.cheap(), self.drafter(self.candidate), threshold)

    def shippable(self) -> dict[str, Any]:
        """The proposers a deployment could run, less the cascade (built per threshold): {"candidate", "ngram",
        "suffix", "suffix@block", "schema", "suffix+schema"}; not the incumbent (what is served today) nor
        the what-if hybrid."""
        return {k: v for k, v in self.baselines().items() if k not in (self.incumbent_name, "hybrid")}

    def baselines(self) -> dict[str, Any]:
        """Every proposer but the cascade: {"candidate", incumbent_name, "ngram", "suffix", "suffix@block",
        "schema", "suffix+schema", "hybrid"}; suffix@block is left out when the cap equals the block size,
        schema and suffix+schema without a renderer."""
        out: dict[str, Any] = {"candidate": self.drafter(self.candidate)}
        if self.incumbent is not None:
            out[self.incumbent_name] = self.drafter(self.incumbent)
        out["ngram"] = NGramProposer(block_size=self.block)
        out["suffix"] = self.suffix()
        if self.suffix_cap != self.block:
            out["suffix@block"] = self.suffix(self.block)
        if self.renderer is not None:
            out["schema"] = self.schema()
            out["suffix+schema"] = CascadeProposer(self.cheap(), None, 0.0)
        out["hybrid"] = HybridProposer(self.drafter(self.candidate), self.suffix(self.block))
        return out
