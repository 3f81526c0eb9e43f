"""On-disk form of prepared data: rendered training sequences and held-out prompts.

The prepare stage writes these once; training and evaluation read them, possibly on another machine.
Sequences go into one safetensors file (token ids, loss mask and segment labels concatenated, plus
offsets), so loading never unpickles anything; prompts, which are few, go into JSON lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from drafters.errors import TracedraftError
from drafters.render import RenderedPrompt, RenderedSequence


def save_sequences(seqs: list[RenderedSequence], path: Path) -> None:
    """Write sequences to ``path`` (safetensors) and their ids to ``path`` + ``.json``.

    Tensors: input_ids int32 [N_tokens], loss_mask uint8 [N_tokens], segments uint8 [N_tokens],
    offsets int64 [n_seqs + 1] (sequence i is tokens offsets[i]:offsets[i+1]).
    """
    lengths = [len(s.input_ids) for s in seqs]
    offsets = torch.zeros(len(seqs) + 1, dtype=torch.int64)
    if seqs:
        offsets[1:] = torch.tensor(lengths, dtype=torch.int64).cumsum(0)
    flat = lambda attr, dtype: torch.tensor(  # noqa: E731
        [t for s in seqs for t in getattr(s, attr)], dtype=dtype
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(
        {
            "input_ids": flat("input_ids", torch.int32),
            "loss_mask": flat("loss_mask", torch.uint8),
            "segments": flat("segments", torch.uint8),
            "offsets": offsets,
        },
        str(path),
    )
    meta = [{"conversation_id": s.conversation_id, "call_ids": s.call_ids} for s in seqs]
    Path(str(path) + ".json").write_text(json.dumps(meta))


def load_sequences(path: Path) -> list[RenderedSequence]:
    """Inverse of ``save_sequences``. Raises TracedraftError(code="prepared_data_corrupt") on mismatch."""
    tensors = load_file(str(path))
    meta = json.loads(Path(str(path) + ".json").read_text())
    offsets = tensors["offsets"].tolist()
    if len(offsets) != len(meta) + 1:
        raise TracedraftError(
            "prepared_data_corrupt", "sequence index and metadata disagree in length", where=str(path)
        )
    ids, mask, seg = (tensors[k].tolist() for k in ("input_ids", "loss_mask", "segments"))
    return [
        RenderedSequence(
            conversation_id=m["conversation_id"],
            call_ids=m["call_ids"],
            input_ids=ids[a:b],
            loss_mask=mask[a:b],
            segments=seg[a:b],
        )
        for m, a, b in zip(meta, offsets[:-1], offsets[1:])
    ]


def save_prompts(prompts: list[RenderedPrompt], path: Path) -> None:
    """Write held-out prompts as JSON lines (one RenderedPrompt per line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for p in prompts:
            f.write(json.dumps(p.__dict__) + "\n")


def load_prompts(path: Path) -> list[RenderedPrompt]:
    """Inverse of ``save_prompts``."""
    with path.open() as f:
        return [RenderedPrompt(**json.loads(line)) for line in f if line.strip()]


def take_tokens(seqs: list[RenderedSequence], max_tokens: int | None, seed: int = 0) -> list[RenderedSequence]:
    """A deterministic subset of ``seqs`` holding at most ``max_tokens`` tokens (all when None).

    Rows are taken in a seeded random order (so a budget samples the whole dataset, not its first file)
    and returned in their original order. Used to bound CPU runs.
    """
    if max_tokens is None or sum(len(s.input_ids) for s in seqs) <= max_tokens:
        return list(seqs)
    order = torch.randperm(len(seqs), generator=torch.Generator().manual_seed(seed)).tolist()
    keep, total = set(), 0
    for i in order:
        n = len(seqs[i].input_ids)
        if total + n <= max_tokens:
            keep.add(i)
            total += n
    return [s for i, s in enumerate(seqs) if i in keep]
