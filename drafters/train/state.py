"""Training state on disk: the drafter export, loading drafter weights, and the lazy reader of
``training_state.safetensors``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from drafters.train.config import TrainError

STATE_JSON = "training_state.json"
STATE_TENSORS = "training_state.safetensors"
LATEST = "latest.json"
BEST = "best"
BEST_JSON = "best.json"


def _export_drafter(drafter: Any, out: Path) -> None:
    """The DeepSpec-native export (config.json + model.safetensors, SERVING.md 2); LoRA adapters are
    merged into a copy first so engines load a plain drafter."""
    if _has_lora(drafter):
        from drafters.dspark.lora import merge_lora

        drafter = merge_lora(drafter)
    try:
        from drafters.dspark.checkpoint import save_checkpoint
    except ImportError:  # checkpoint module not there yet: same layout written directly
        save_checkpoint = None
    if save_checkpoint is not None:
        save_checkpoint(drafter, out)
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(drafter.config.to_deepspec_dict(), indent=2))
    sd = {k: v.detach().cpu().contiguous() for k, v in drafter.state_dict().items()
          if not k.startswith(("embed_tokens.", "lm_head."))}
    save_file(sd, str(out / "model.safetensors"))


def _has_lora(drafter: Any) -> bool:
    return any("lora_" in n for n, _ in drafter.named_parameters())


def _model_state(drafter: Any) -> dict[str, torch.Tensor]:
    """Unmerged drafter state without the frozen target copies (what a LoRA resume needs)."""
    return {k: v for k, v in drafter.state_dict().items() if not k.startswith(("embed_tokens.", "lm_head."))}


def _trainable(drafter: Any) -> list[tuple[str, torch.nn.Parameter]]:
    return [(n, p) for n, p in drafter.named_parameters() if p.requires_grad]


def load_drafter_weights(drafter: Any, ckpt_dir: str | Path) -> list[str]:
    """Load a checkpoint's trainable weights into ``drafter`` in place (warm start / resume).

    Reads ``model.safetensors`` of a DeepSpec-native export; embed_tokens/lm_head stay the target's.
    Returns the loaded names. Raises TrainError(code="checkpoint_mismatch") naming the tensor whose name or
    shape differs, "checkpoint_not_found" when the directory has no model.safetensors.
    """
    path = Path(ckpt_dir) / "model.safetensors"
    if not path.is_file():
        raise TrainError("checkpoint_not_found", f"no model.safetensors in {ckpt_dir}", str(ckpt_dir))
    sd = load_file(str(path))
    loaded = []
    with torch.no_grad():
        for name, p in _trainable(drafter):
            if name not in sd:
                raise TrainError("checkpoint_mismatch", f"{path} lacks tensor {name}", name)
            if tuple(sd[name].shape) != tuple(p.shape):
                raise TrainError("checkpoint_mismatch", f"tensor {name} has shape {tuple(sd[name].shape)} in "
                                 f"{path}, the drafter expects {tuple(p.shape)}", name)
            p.copy_(sd[name].to(p.dtype))
            loaded.append(name)
    return loaded


class _StateTensors:
    """Lazy read of ``training_state.safetensors``: one tensor in memory at a time (every rank of a large
    sharded run reads the same file)."""

    def __init__(self, path: Path):
        self._f = safe_open(str(path), framework="pt")
        self._keys = set(self._f.keys())

    def __contains__(self, k: str) -> bool:
        return k in self._keys

    def __getitem__(self, k: str) -> torch.Tensor:
        if k not in self._keys:
            raise KeyError(k)
        return self._f.get_tensor(k)

    def master(self, i: int) -> torch.Tensor:
        """The fp32 master copy of trainable parameter i."""
        return self[f"master.{i}"]
