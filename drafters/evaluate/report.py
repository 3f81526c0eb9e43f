"""The evaluation report record (schema "tracedraft.eval/1") and its strict-JSON form."""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from drafters.errors import TracedraftError

SCHEMA = "tracedraft.eval/1"


class EvalReport(dict):
    """A JSON-able evaluation report (a dict; ``json.dumps(report)`` works). Schema "tracedraft.eval/1":

    {"schema", "convention", "end_effects", "rules": {...}, "settings": {engine, target, temperature, seed,
     max_new_tokens, ...}, "heldout": {"calls", "generated_tokens"}, "lossless": {...},
     "plain": {tokens, seconds, tokens_per_s, ...},
     "proposers": {name: {"tau", "rounds", "tokens", "block_size", "mean_proposed", "verify_rate",
        "by_segment": {seg: {"tau", "rounds", "tokens"}}, "by_turn": {...}, "by_context": {...},
        "conditional_acceptance": [...], "calibration": {...} | None, "timing": {...},
        "speedup_vs_plain", "per_call": [{call_id, turn, context_len, rounds, sum_len, tau, tokens, seconds}]}},
     "speed": drafters.evaluate.speed.speed_section(...) (the cost model and the deploy choice),
     "comparisons": {"cand__vs__inc": compare_entries(...)}}
    """

    @property
    def proposers(self) -> dict:
        return self["proposers"]

    def tau(self, name: str) -> float:
        return self["proposers"][name]["tau"]

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self, indent=kw.pop("indent", 2), allow_nan=False, default=_json_default, **kw)

    @classmethod
    def from_dict(cls, d: Mapping) -> EvalReport:
        if d.get("schema") != SCHEMA:
            raise TracedraftError("bad_report", f"unsupported report schema {d.get('schema')!r}, "
                                  f"expected {SCHEMA!r}", "schema")
        return cls(d)


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    raise TypeError(f"not JSON-able: {type(o)}")


def _clean(o: Any) -> Any:
    """NaN/inf -> None so the report is strict JSON."""
    if isinstance(o, float):
        return None if math.isnan(o) or math.isinf(o) else o
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def hardware() -> str:
    """The machine a report was measured on, in words: the CPU model and core count (and the GPU, if torch
    is imported and sees one)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    out = f"{cpu}, {os.cpu_count()} cores"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        out += f"; {torch.cuda.get_device_name()}"
    return out


def _versions() -> dict:
    v = {"python": platform.python_version()}
    for mod in ("torch", "transformers"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = None
    return v
