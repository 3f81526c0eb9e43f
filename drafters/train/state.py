"""Training state on disk: step checkpoints (the drafter export + ``training_state.safetensors`` +
``training_state.json``), ``latest.json``, the best export, and reading them back to resume.

Layout of ``out_dir``: ``step_XXXXXX/`` (config.json + model.safetensors, the DeepSpec-native export;
training_state.safetensors: AdamW moments ``opt.<i>.<step|exp_avg|exp_avg_sq>``, fp32 master weights
``master.<i>`` when the drafter is not fp32, the unmerged LoRA state ``model.<name>``, the RNG state
``rng.torch``; training_state.json: step, data position, config, history), ``latest.json`` (the resume
point), ``best/`` + ``best.json`` (the export with the best validation expected accepted length). Each
directory is written under a temporary name and renamed, so a kill never leaves a half-written checkpoint;
no pickle anywhere. Tensors are whole (unsharded) whatever the parallel mode or world size.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from drafters.dspark.checkpoint import save_checkpoint
from drafters.train.config import TrainConfig, TrainError
from drafters.train.parallel import ProcessGroup, Unsharded, gather_full, shard_like

if TYPE_CHECKING:
    from drafters.train.training_model import Model

STATE_JSON = "training_state.json"
STATE_TENSORS = "training_state.safetensors"
LATEST = "latest.json"
BEST = "best"
BEST_JSON = "best.json"


def export_drafter(drafter: Any, out: Path) -> None:
    """The DeepSpec-native export (config.json + model.safetensors, docs/serving.md 2); LoRA adapters are
    merged into a copy first so engines load a plain drafter."""
    if has_lora(drafter):
        from drafters.dspark.lora import merge_lora

        drafter = merge_lora(drafter)
    save_checkpoint(drafter, out)


def has_lora(drafter: Any) -> bool:
    """Whether peft LoRA adapters are applied to ``drafter``."""
    return any("lora_" in n for n, _ in drafter.named_parameters())


def unmerged_state(drafter: Any) -> dict[str, torch.Tensor]:
    """Unmerged drafter state without the frozen target copies (what a LoRA resume needs)."""
    return {k: v for k, v in drafter.state_dict().items() if not k.startswith(("embed_tokens.", "lm_head."))}


def named_trainable(drafter: Any) -> list[tuple[str, torch.nn.Parameter]]:
    """(name, parameter) of every trainable parameter, in the order the optimizer state is stored by."""
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
    saved = load_file(str(path))
    loaded = []
    with torch.no_grad():
        for name, p in named_trainable(drafter):
            if name not in saved:
                raise TrainError("checkpoint_mismatch", f"{path} lacks tensor {name}", name)
            if tuple(saved[name].shape) != tuple(p.shape):
                raise TrainError("checkpoint_mismatch", f"tensor {name} has shape {tuple(saved[name].shape)} in "
                                 f"{path}, the drafter expects {tuple(p.shape)}", name)
            p.copy_(saved[name].to(p.dtype))
            loaded.append(name)
    return loaded


class StateTensors:
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


@dataclass
class Checkpoint:
    """A step checkpoint to resume from: its directory, its ``training_state.json`` and tensors."""

    dir: Path
    record: dict[str, Any]
    tensors: StateTensors


def find_resume_point(out_dir: Path, cfg: TrainConfig, per_step: int) -> Checkpoint | None:
    """The checkpoint ``out_dir/latest.json`` names, or None when there is none. Raises
    TrainError("resume_mismatch", where=<checkpoint dir>) when it was written with another schedule
    fingerprint (``TrainConfig.schedule_fingerprint``) or another global batch (``per_step`` micro-batches
    per optimizer step)."""
    if not (out_dir / LATEST).is_file():
        return None
    latest = json.loads((out_dir / LATEST).read_text())
    directory = out_dir / latest["dir"]
    record = json.loads((directory / STATE_JSON).read_text())
    if record["fingerprint"] != cfg.schedule_fingerprint() or record["per_step"] != per_step:
        raise TrainError("resume_mismatch", f"{directory} was written by a run with a different schedule/data "
                         "config or global batch; use a new out_dir or resume=False", str(directory))
    return Checkpoint(directory, record, StateTensors(directory / STATE_TENSORS))


def restore_drafter_weights(drafter: Any, checkpoint: Checkpoint) -> None:
    """Load a checkpoint's drafter weights into the full (unsharded) drafter: the unmerged state from the
    training state under LoRA (the export is merged), else the export's weights."""
    if has_lora(drafter):
        with torch.no_grad():
            for k, v in unmerged_state(drafter).items():
                v.copy_(checkpoint.tensors[f"model.{k}"])
    else:
        load_drafter_weights(drafter, checkpoint.dir)


def restore_optimizer(model: Model, tensors: StateTensors) -> None:
    """Load fp32 master weights (when separate), AdamW moments (laid out as each parameter: this rank's
    shard under FSDP) and the torch RNG state."""
    if model.separate_master:
        with torch.no_grad():
            for i, m in enumerate(model.master):
                m.copy_(tensors.master(i))
    state: dict[str, Any] = {"state": {}, "param_groups": model.optimizer.state_dict()["param_groups"]}
    for i, m in enumerate(model.master):
        if f"opt.{i}.exp_avg" in tensors:
            state["state"][i] = {"step": tensors[f"opt.{i}.step"],
                                 "exp_avg": shard_like(tensors[f"opt.{i}.exp_avg"], m),
                                 "exp_avg_sq": shard_like(tensors[f"opt.{i}.exp_avg_sq"], m)}
    model.optimizer.load_state_dict(state)
    torch.set_rng_state(tensors["rng.torch"])


def optimizer_tensors(model: Model, group: ProcessGroup) -> dict[str, torch.Tensor]:
    """Master weights (when the model is not fp32) and AdamW moments as whole tensors, on rank 0 (gathered
    one at a time under FSDP: collective then); other ranks get {}. The same tensors whatever the parallel
    mode or world size, so a resume may switch either."""
    out: dict[str, torch.Tensor] = {}
    if group.rank != 0 and model.unit is None:
        return out
    state = model.optimizer.state_dict()["state"]
    for i, m in enumerate(model.master):
        if model.mixed:
            v = gather_full(m.detach())
            if group.rank == 0:
                out[f"master.{i}"] = v.float().cpu().contiguous()
        if i not in state:  # no AdamW step taken yet
            continue
        for k in ("step", "exp_avg", "exp_avg_sq"):
            v = state[i][k]
            v = gather_full(v.detach()) if torch.is_tensor(v) else torch.tensor(float(v))
            if group.rank == 0:
                out[f"opt.{i}.{k}"] = v.cpu().contiguous()
    return out


def save_step(out_dir: Path, step: int, model: Model, group: ProcessGroup, record: dict[str, Any],
              keep_last: int) -> Path:
    """Write ``out_dir/step_XXXXXX/`` (``record`` becomes training_state.json), point ``latest.json`` at it
    and keep the last ``keep_last`` step directories. Rank 0 writes; collective (FSDP gathers, barrier)."""
    final = out_dir / f"step_{step:06d}"
    tmp = out_dir / f".step_{step:06d}.tmp"
    tensors: dict[str, torch.Tensor] = {"rng.torch": torch.get_rng_state()}
    with Unsharded(model.unit):  # the export is the full drafter (compute dtype), written once
        if group.rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
            export_drafter(model.drafter, tmp)
            if has_lora(model.drafter):  # clone: the gathered tensors are freed when resharding
                tensors.update({f"model.{k}": v.detach().cpu().clone(memory_format=torch.contiguous_format)
                                for k, v in unmerged_state(model.drafter).items()})
    tensors.update(optimizer_tensors(model, group))
    if group.rank == 0:
        save_file(tensors, str(tmp / STATE_TENSORS))
        (tmp / STATE_JSON).write_text(json.dumps(record, indent=1))
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        tmp_latest = out_dir / (LATEST + ".tmp")
        tmp_latest.write_text(json.dumps({"step": step, "dir": final.name}))
        tmp_latest.replace(out_dir / LATEST)
        old = sorted(p for p in out_dir.glob("step_*") if p.is_dir())
        for p in old[: max(0, len(old) - keep_last)]:
            shutil.rmtree(p, ignore_errors=True)
    group.barrier()
    return final


def save_best(out_dir: Path, step: int, tau: float | None, model: Model, group: ProcessGroup) -> None:
    """Replace ``out_dir/best/`` by the current drafter's export and record ``best.json`` {"step",
    "expected_tau", "dir"}. Collective."""
    with Unsharded(model.unit):
        if group.rank == 0:
            tmp = out_dir / ".best.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            export_drafter(model.drafter, tmp)
    if group.rank == 0:
        (tmp / BEST_JSON).write_text(json.dumps({"step": step, "expected_tau": tau}))
        shutil.rmtree(out_dir / BEST, ignore_errors=True)
        tmp.rename(out_dir / BEST)
        (out_dir / BEST_JSON).write_text(json.dumps({"step": step, "expected_tau": tau, "dir": BEST}))
    group.barrier()


def best_so_far(out_dir: Path, record: dict[str, Any]) -> tuple[float | None, int | None]:
    """(expected tau, step) of the best validation a resumed run has seen: the checkpoint's record, or
    ``best.json`` when a validation after that checkpoint wrote a better ``best/``."""
    tau, step = record.get("best_expected_tau"), record.get("best_step")
    path = out_dir / BEST_JSON
    if path.is_file():
        best = json.loads(path.read_text())
        if best.get("expected_tau") is not None and (tau is None or best["expected_tau"] > tau):
            tau, step = best["expected_tau"], best["step"]
    return tau, step
