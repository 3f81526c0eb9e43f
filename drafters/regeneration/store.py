"""Regenerated answers stored per call, content-addressed, so a killed stage resumes and jobs share them.

The key of an answer is the sha256 of everything that decides it: the target's identity (its weights'
digest), the exact prompt token ids, the sampling settings and the call's seed. A second job on the same
dataset and target finds every answer already there; a job whose stage was killed finds the answers
written before the kill. Each answer is one small JSON file written atomically (temporary file + rename),
so a kill mid-write leaves either the whole answer or nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Regeneration", "RegenerationStore", "Sampling", "answer_key", "call_seed"]


@dataclass(frozen=True)
class Sampling:
    """How the target regenerates an answer.

    temperature: 0 is greedy (the default: the answers the target serves at temperature 0, which is also how
    the evaluation replays calls); DeepSpec regenerates its training set at 0.7 with top_p 0.8 and top_k 20
    (docs/dspark.md section 3.3) for variety over 1.2M prompts. top_p / top_k: nucleus and top-k filtering
    (1.0 / 0 = off). max_tokens: the longest answer; one that reaches it is kept and marked truncated.
    seed: the job's seed; each call samples with its own seed derived from it and the prompt.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    max_tokens: int = 256
    seed: int = 0


@dataclass
class Regeneration:
    """The target's answer to one call: ``token_ids`` [n] as generated, ending with the end-of-turn token
    unless ``truncated`` (``max_tokens`` reached first); ``seconds`` of engine time; ``engine`` that wrote it."""

    key: str
    token_ids: list[int]
    truncated: bool
    engine: str
    seconds: float

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Regeneration:
        return cls(d["key"], [int(t) for t in d["token_ids"]], bool(d["truncated"]), d["engine"],
                   float(d["seconds"]))


def call_seed(seed: int, prompt_ids: list[int]) -> int:
    """The sampling seed of one call (31 bits): the job's seed and the prompt, so it does not depend on the
    order or batching of the calls."""
    h = hashlib.sha256(f"{seed}:".encode() + _ids_bytes(prompt_ids)).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


def answer_key(target_id: str, prompt_ids: list[int], sampling: Sampling) -> str:
    """Content address of one answer (hex sha256)."""
    h = hashlib.sha256()
    h.update(json.dumps({"v": 1, "target": target_id, "sampling": asdict(sampling)}, sort_keys=True).encode())
    h.update(_ids_bytes(prompt_ids))
    return h.hexdigest()


def _ids_bytes(ids: list[int]) -> bytes:
    return b"".join(int(t).to_bytes(4, "little") for t in ids)


class RegenerationStore:
    """A directory of answers, ``<root>/<key[:2]>/<key>.json``."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Regeneration | None:
        """The stored answer, or None (also for a file that does not parse: it is then written again)."""
        try:
            return Regeneration.from_dict(json.loads(self._path(key).read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, answer: Regeneration) -> None:
        path = self._path(answer.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(answer), f)
        os.replace(tmp, path)
