"""Data parallelism: the process group (DDP-style SUM all-reduces), FSDP2 sharding of the drafter, the
choice between them, and starting the process group under torchrun."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from drafters.dspark.losses import dspark_loss
from drafters.train.config import TrainError


class ProcessGroup:
    """The default torch.distributed process group as the loop uses it; every method is a no-op (or the
    identity) in a single process. Collective methods: all ranks call them in the same order."""

    def __init__(self) -> None:
        self.on = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if self.on else 0
        self.world = dist.get_world_size() if self.on else 1

    @property
    def multi(self) -> bool:
        """More than one process takes part."""
        return self.on and self.world > 1

    def sum(self, t: torch.Tensor) -> torch.Tensor:
        """SUM-all-reduce ``t`` in place; returns it."""
        if self.multi:
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t

    def any(self, flag: bool, device: torch.device) -> bool:
        """True on every rank when ``flag`` is true on any rank (a stop request seen by rank 0 alone)."""
        if not self.multi:
            return flag
        t = torch.tensor([1.0 if flag else 0.0], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item() > 0)

    def max(self, values: list[float], device: torch.device) -> list[float]:
        """The element-wise maximum of ``values`` over the ranks (every rank gets the same numbers)."""
        if not self.multi:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    def barrier(self) -> None:
        if self.multi:
            dist.barrier()

    def sum_grads(self, params: list[torch.Tensor]) -> None:
        """SUM-all-reduce gradients in one flat buffer (the loss already carries the global denominator)."""
        if not self.multi:
            return
        grads = [p.grad for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        o = 0
        for g in grads:
            n = g.numel()
            g.copy_(flat[o: o + n].view_as(g))
            o += n

    def broadcast_weights(self, drafter: Any) -> None:
        """Give every rank rank 0's drafter weights (all but the frozen embed_tokens / lm_head), as DDP's
        constructor does: ranks that built (or LoRA-wrapped) their drafters from different RNG states would
        otherwise train different models forever."""
        if not self.on:
            return
        frozen = {id(drafter.embed_tokens.weight), id(drafter.lm_head.weight)}
        with torch.no_grad():
            for p in drafter.parameters():
                if id(p) not in frozen:
                    dist.broadcast(p.data, src=0)


class LossUnit(torch.nn.Module):
    """The module FSDP2 shards (``parallel="fsdp"``): its forward is the whole DSpark loss of a micro-batch.

    FSDP2 all-gathers a unit's weights in a pre-forward hook and reduce-scatters their gradients from
    backward hooks, so every read of a sharded weight must happen inside the forward of the unit that owns
    it. The drafter's training forward calls layer methods (``q``, ``kv``, ``finish``) rather than layer
    ``forward``s, and ``dspark_loss`` reads the Markov head's W2 weight directly; one unit around the whole
    loss covers all of these uses. Consequence: during a micro-batch's forward/backward all trainable
    weights are gathered (in the compute dtype), while between steps weights (fp32), gradients and AdamW
    moments stay sharded, 1/W per rank. The frozen embed_tokens / lm_head (the target's tensors) are
    ``ignored_params``: replicated, never gathered, never given gradients.

    forward(ids [B,T] long, mask [B,T], aux [B,T,m*d], last [B,T,d], anchors [B,N], keep [B,N],
    denom [] fp32 global weight sum) -> (total, ce, l1, conf) 0-dim tensors; a tuple of tensors because FSDP
    attaches its pre-backward hook to tensor outputs.
    """

    def __init__(self, drafter: Any, anchor_chunk: int, matmul_dtype: torch.dtype = torch.float32):
        super().__init__()
        self.drafter = drafter
        self.anchor_chunk = anchor_chunk
        self.matmul_dtype = matmul_dtype

    def forward(self, ids, mask, aux, last, anchors, keep, denom):
        out = dspark_loss(self.drafter, ids, mask, aux, last, anchors, keep, anchor_chunk=self.anchor_chunk,
                          weight_sum=denom, matmul_dtype=self.matmul_dtype)
        return out.total, out.ce, out.l1, out.conf


#: Bytes per trainable parameter a replicated (DDP) rank holds: fp32 master + fp32 gradient + two AdamW
#: moments (16), plus the bf16 compute copy (2).
REPLICATED_BYTES_PER_PARAM = 18


def choose_parallel(n_trainable: int, free_bytes: int | None, budget: float = 0.4) -> str:
    """"auto" parallel mode (FSDP when the drafter does not fit): "fsdp" when the replicated
    training state (``REPLICATED_BYTES_PER_PARAM`` x ``n_trainable`` bytes) would take more than ``budget``
    of the device's free memory (the rest is for the frozen target and activations), else "ddp".
    ``free_bytes`` None (CPU) -> "ddp". Example: a 5-layer Qwen3-4B drafter (~1.2e9 trainable incl. fc and
    heads) needs ~22 GB: "ddp" on an 80 GB H100 with 70 GB free, "fsdp" on a 40 GB A100."""
    if free_bytes is None:
        return "ddp"
    return "fsdp" if n_trainable * REPLICATED_BYTES_PER_PARAM > budget * free_bytes else "ddp"


def shard_fsdp(drafter: Any, device: torch.device, world: int, anchor_chunk: int,
                masters: Callable[[int], torch.Tensor] | None = None,
                matmul_dtype: torch.dtype = torch.float32) -> tuple[LossUnit, dict[str, torch.dtype]]:
    """Shard ``drafter``'s weights (all but embed_tokens / lm_head) over the default process group with
    FSDP2, in place; returns the root unit and the original dtype of every sharded parameter by name.

    The sharded parameters are fp32 (upcast here): they are the optimizer's master weights. When the
    trainable weights were lower precision (bf16 on GPU), ``MixedPrecisionPolicy(param_dtype=that dtype,
    reduce_dtype=fp32)`` gathers them in that dtype for compute and reduce-scatters gradients in fp32, the
    FSDP form of the replicated path's "bf16 model + fp32 master copies" (docs/dspark.md 8). Gradients are summed
    over ranks, not averaged: the loss already divides by the all-reduced weight sum (step 3 of the package
    docstring). ``masters(i)``, when given, returns the fp32 value of trainable parameter i (resume).
    Raises TrainError(code="invalid_train_config", where="parallel") when the trainable weights do not share
    one dtype.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    frozen = {drafter.embed_tokens.weight, drafter.lm_head.weight}
    frozen_ids = {id(p) for p in frozen}
    trainable = [p for p in drafter.parameters() if p.requires_grad]
    dtypes = {p.dtype for p in trainable}
    if len(dtypes) != 1:
        raise TrainError("invalid_train_config", f"parallel='fsdp' needs one dtype for the trainable weights, "
                         f"got {sorted(str(d) for d in dtypes)}", "parallel")
    compute = dtypes.pop()
    orig: dict[str, torch.dtype] = {}
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if id(p) in frozen_ids:
                continue
            orig[name] = p.dtype
            if p.dtype != torch.float32:
                p.data = p.data.float()
        if masters is not None:
            for i, p in enumerate(trainable):
                p.copy_(masters(i).to(p.device))
    mp = MixedPrecisionPolicy(param_dtype=None if compute == torch.float32 else compute,
                              reduce_dtype=torch.float32, cast_forward_inputs=False)  # keep denom in fp32
    unit = LossUnit(drafter, anchor_chunk, matmul_dtype)
    fully_shard(unit, mesh=init_device_mesh(device.type, (world,)), mp_policy=mp, ignored_params=frozen)
    unit.set_gradient_divide_factor(1.0)
    unit.set_force_sum_reduction_for_comms(True)  # plain SUM (gloo has no PREMUL_SUM)
    # A micro-batch without valid slots on one rank gives no gradient to the heads there (the loss is
    # 0 * sum(h)): reduce zeros for them so every rank's reduce-scatter has the same layout.
    unit.set_reduce_scatter_unused_params(True)
    _drop_fsdp_state_dict_hooks(unit)
    return unit, orig


def _drop_fsdp_state_dict_hooks(unit: LossUnit) -> None:
    """Remove the state-dict hooks FSDP2 puts on the drafter's submodules.

    FSDP2 (torch 2.13) registers, on every module owning a sharded parameter, a pre-``state_dict`` and a
    pre-``load_state_dict`` hook that re-registers the sharded DTensors on the module. Ours is a different
    protocol: the drafter's own ``state_dict`` (the DeepSpec export, the LoRA state) is read only inside
    ``Unsharded``, where it must see the gathered full tensors, and after training the drafter is handed
    back plain, where a leftover hook would swap the shards back in. The hooks are registered by the param
    group's lazy init (run here first; it does not register them twice). Private FSDP2 attributes: torch is
    pinned, and a missing attribute raises rather than exporting shards silently.
    """
    groups = unit._get_fsdp_state()._fsdp_param_groups
    for g in groups:
        g.lazy_init()
        for handles in (g._module_to_pre_save_state_dict_hook_handle, g._module_to_pre_load_state_dict_hook_handle):
            for h in handles.values():
                h.remove()


class Unsharded:
    """``with Unsharded(unit):`` the drafter holds full (gathered) weights, in the compute dtype, on every
    rank (validation, exports); resharded on exit. A no-op without FSDP. Collective: all ranks enter."""

    def __init__(self, unit: LossUnit | None):
        self.unit = unit

    def __enter__(self) -> None:
        if self.unit is not None:
            self.unit.unshard()

    def __exit__(self, *exc: object) -> None:
        if self.unit is not None:
            self.unit.reshard()


def gather_full(t: torch.Tensor) -> torch.Tensor:
    """The full value of a (possibly FSDP-sharded) tensor. Collective for a DTensor: all ranks call it."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def shard_like(full: torch.Tensor, param: torch.Tensor) -> torch.Tensor:
    """``full`` (a whole tensor read from a checkpoint) laid out as ``param``: this rank's shard when the
    parameter is an FSDP DTensor (sliced locally, no communication), else unchanged."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if not isinstance(param, DTensor):
        return full
    return distribute_tensor(full.to(param.device), param.device_mesh, param.placements, src_data_rank=None)


def unshard_for_good(drafter: Any, orig: dict[str, torch.dtype]) -> None:
    """Replace the drafter's sharded parameters by plain full ones in their original dtypes (the trained
    drafter handed back to the caller, as the replicated path does). Collective."""
    from torch.distributed.tensor import DTensor

    with torch.no_grad():
        for name, p in list(drafter.named_parameters()):
            if not isinstance(p, DTensor):
                continue
            full = p.full_tensor().to(orig.get(name, p.dtype))
            mod_name, _, attr = name.rpartition(".")
            mod = drafter.get_submodule(mod_name) if mod_name else drafter
            setattr(mod, attr, torch.nn.Parameter(full, requires_grad=p.requires_grad))


def init_distributed() -> tuple[int, int, torch.device]:
    """Start the process group when launched by torchrun (WORLD_SIZE > 1): nccl on CUDA, gloo on CPU."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return (dist.get_rank() if world > 1 else 0), world, device
