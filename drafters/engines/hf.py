"""The in-process engine: transformers target + drafters.speculate loop. Exact per-round data, CPU or GPU."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from drafters.engines.base import CallMeasurement, Engine, EngineRun
from drafters.errors import TracedraftError


def load_proposer(drafter: Any, target: Any) -> Any:
    """A Proposer from a proposer object (returned as is), None (plain decoding), "ngram"/"none", or a DSpark
    checkpoint directory (drafters.dspark.checkpoint.load_checkpoint + DSparkProposer, embeddings and LM head
    from the target). Raises TracedraftError(code="bad_drafter") when a path cannot be loaded."""
    if drafter is None or not isinstance(drafter, (str, Path)):
        return drafter
    if str(drafter) in ("ngram", "none"):
        from drafters.baselines import make_baseline

        return make_baseline(str(drafter))
    path = Path(drafter)
    if not path.is_dir():
        raise TracedraftError("bad_drafter", f"drafter checkpoint directory {path} does not exist", str(path))
    from drafters.dspark.checkpoint import load_checkpoint
    from drafters.dspark.proposer import DSparkProposer

    drafter_model = load_checkpoint(path, target.embed_weight, target.lm_head_weight)
    drafter_model = drafter_model.to(device=target.device)
    return DSparkProposer(drafter_model)


class HFEngine(Engine):
    """Measures with ``speculative_generate`` in this process. ``measure`` returns per-round data;
    ``EngineRun.info`` records the target's name/revision and library versions."""

    name = "hf"

    def __init__(self, target: Any):
        self.target = target

    def measure(self, prompts: Sequence[Any], drafter: Any, *, max_new_tokens: int, temperature: float = 0.0,
                seed: int = 0, stop_token_ids: Sequence[int] = ()) -> EngineRun:
        from drafters.speculate import speculative_generate

        proposer = load_proposer(drafter, self.target)
        calls = []
        for i, p in enumerate(prompts):
            g = speculative_generate(self.target, proposer, p.prompt_ids, max_new_tokens, temperature=temperature,
                                     seed=seed + i, stop_token_ids=stop_token_ids)
            n_rounds = len(g.rounds)
            calls.append(CallMeasurement(
                call_id=p.call_id, completion_tokens=len(g.tokens), verify_rounds=n_rounds,
                accepted_drafts=sum(r.committed for r in g.rounds) - n_rounds,
                proposed_drafts=sum(r.proposed for r in g.rounds), rounds=g.rounds, tokens=list(g.tokens),
                seconds=g.total_s, finish_reason=g.finish_reason, fields={"source": "speculate.Round"},
                context_len=len(p.prompt_ids)))
        info = self.target.info() if hasattr(self.target, "info") else {"target": getattr(self.target, "name", None)}
        name = drafter if isinstance(drafter, (str, Path)) or drafter is None else type(drafter).__name__
        return EngineRun("hf", None if name is None else str(name), calls, info=info)
