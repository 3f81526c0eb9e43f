"""On-policy regeneration: the target writes every training call's answer (docs/dspark.md section 3.3)."""

from drafters.regeneration.backends import (
    Backend,
    GenerationCancelled,
    HFBackend,
    LlamaServerBackend,
    OpenAIBackend,
    Request,
)
from drafters.regeneration.run import RegenerationReport, cut_at_stop, regenerate, regenerated_rows
from drafters.regeneration.store import Regeneration, RegenerationStore, Sampling, answer_key, call_seed

__all__ = ["Backend", "GenerationCancelled", "HFBackend", "LlamaServerBackend", "OpenAIBackend", "Regeneration",
           "RegenerationReport", "RegenerationStore", "Request", "Sampling", "answer_key", "call_seed", "cut_at_stop",
           "regenerate", "regenerated_rows"]
