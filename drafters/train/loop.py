"""The training loop: ``train`` and its progress and result records (one step's maths: the package
docstring)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from safetensors.torch import save_file

from drafters.cpu_memory import reuse_freed_memory
from drafters.dspark.losses import dspark_loss, position_weights, slot_validity
from drafters.train.config import TrainConfig, TrainError, lr_factor
from drafters.train.data import (
    _anchors,
    _collate,
    _pack,
    _Plan,
    _resolve_segment_weights,
    _seed_mix,
    _Seq,
    _to_seqs,
)
from drafters.train.features import FeatureCache, feature_bytes_per_token
from drafters.train.parallel import (
    _Dist,
    _gather,
    _like,
    _LossUnit,
    _shard_fsdp,
    _unshard_for_good,
    _Unsharded,
    choose_parallel,
)
from drafters.train.state import (
    BEST,
    BEST_JSON,
    LATEST,
    STATE_JSON,
    STATE_TENSORS,
    _export_drafter,
    _has_lora,
    _model_state,
    _StateTensors,
    _trainable,
    load_drafter_weights,
)


@dataclass
class TrainProgress:
    """One progress report (after every ``log_every`` steps, after validation, during cache building).

    phase: "cache" | "validate" | "train" | "done"; step/total_steps: optimizer steps; loss/ce/l1/conf:
    global weighted means of the last step (DSPARK.md 2.2); lr; grad_norm (before clipping); tokens_per_s:
    real (non-pad) training tokens per second over all ranks, averaged since the run (re)started; eta_s:
    seconds to max_steps at that rate (or to the time budget, whichever is sooner); val_expected_tau: the
    latest validation expected accepted length (bonus token included), best_expected_tau the best so far.
    """

    phase: str
    step: int
    total_steps: int
    epoch: float = 0.0
    loss: float | None = None
    ce: float | None = None
    l1: float | None = None
    conf: float | None = None
    lr: float | None = None
    grad_norm: float | None = None
    tokens_per_s: float | None = None
    eta_s: float | None = None
    elapsed_s: float = 0.0
    val_expected_tau: float | None = None
    best_expected_tau: float | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TrainResult:
    """Outcome of ``train``: best_dir (export with the best validation expected tau; the last export when
    there is no validation set), last_dir (latest step checkpoint), steps done, cancelled (stopped by
    should_stop/SIGTERM), stop_reason ("max_steps" | "time_budget" | "cancelled"), history (one dict per
    logged step and per validation), best_expected_tau, initial_expected_tau (step 0 or the resumed
    step), feature_cache (how features were produced: {"mode", "dir", "bytes", "estimate_bytes"}),
    parallel ("single" | "ddp" | "fsdp": how the run actually held the drafter)."""

    best_dir: Path | None
    last_dir: Path | None
    steps: int
    cancelled: bool
    history: list[dict[str, Any]]
    stop_reason: str = "max_steps"
    best_expected_tau: float | None = None
    initial_expected_tau: float | None = None
    feature_cache: dict[str, Any] = field(default_factory=dict)
    parallel: str = "single"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["best_dir"] = str(self.best_dir) if self.best_dir else None
        d["last_dir"] = str(self.last_dir) if self.last_dir else None
        return d


def _loss_matmul_dtype(cfg: TrainConfig, drafter: Any) -> torch.dtype:
    """``cfg.loss_matmul_dtype`` resolved for this drafter ("auto": bf16 when its LM head is bf16)."""
    if cfg.loss_matmul_dtype == "auto":
        return torch.bfloat16 if drafter.lm_head.weight.dtype == torch.bfloat16 else torch.float32
    return getattr(torch, cfg.loss_matmul_dtype)


def _autocast(cfg: TrainConfig, drafter: Any, device: torch.device) -> Callable[[], Any]:
    """A factory of the context each training micro-batch's forward runs in: ``torch.autocast`` in bf16 when
    ``cfg.compute_dtype`` is "bfloat16" and the drafter's trainable weights are fp32, else a no-op."""
    fp32 = any(p.dtype == torch.float32 for p in drafter.trainable_parameters())
    if cfg.compute_dtype == "bfloat16" and fp32:
        return lambda: torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext


def train(
    target: Any,
    drafter: Any,
    train_seqs: Sequence[Any],
    val_seqs: Sequence[Any],
    cfg: TrainConfig,
    out_dir: str | Path,
    *,
    progress: Callable[[TrainProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    resume: bool = True,
    handle_sigterm: bool = False,
) -> TrainResult:
    """Train ``drafter`` on ``train_seqs`` (RenderedSequence-like: input_ids, loss_mask, segments) against
    the frozen ``target`` (drafters.target.Target); see the module docstring for one step's maths.

    Validation on ``val_seqs`` (fixed anchors) reports the expected accepted length 1 + sum_k prod c*_i
    (c* = 1 - TV, DSPARK.md 2.2) at step 0, every ``validate_every`` steps and at the end; the best is kept
    in ``out_dir/best``. ``should_stop`` is polled between steps (and SIGTERM when ``handle_sigterm``; the
    previous handler is restored on return): the run checkpoints and returns ``cancelled=True``. With
    ``resume=True`` an existing ``out_dir/latest.json`` continues that run exactly.
    Data parallel when torch.distributed is initialised (every rank calls train with the same arguments;
    rank 0 writes files and builds the feature cache while the others wait). ``cfg.parallel`` = "ddp":
    the drafter and its AdamW state are replicated on every rank. "fsdp": the drafter's weights other than
    embed_tokens / lm_head are sharded in place with FSDP2 (see ``_LossUnit``): fp32 master shards,
    gradients and AdamW moments take 1/W of their replicated size per rank, weights are gathered for each
    micro-batch's forward/backward, for validation and for exports. On return the drafter is a plain
    module again with the full trained weights in their original dtypes (on an exception under FSDP it is
    left sharded). Raises TrainError (bad config, no usable sequences, resume mismatch, feature cache over
    its limit). On CPU the whole run keeps freed memory for reuse (``drafters.cpu_memory``: process-wide
    glibc settings, restored on return).
    """
    with reuse_freed_memory(enabled=drafter.fc.weight.device.type == "cpu"):
        return _train(target, drafter, train_seqs, val_seqs, cfg, out_dir, progress=progress,
                      should_stop=should_stop, resume=resume, handle_sigterm=handle_sigterm)


def _train(target: Any, drafter: Any, train_seqs: Sequence[Any], val_seqs: Sequence[Any], cfg: TrainConfig,
           out_dir: str | Path, *, progress: Callable[[TrainProgress], None] | None, should_stop:
           Callable[[], bool] | None, resume: bool, handle_sigterm: bool) -> TrainResult:
    cfg.validate()
    out_dir = Path(out_dir)
    dd = _Dist()
    device = drafter.fc.weight.device
    mm_dtype = _loss_matmul_dtype(cfg, drafter)  # before FSDP wraps the drafter
    autocast = _autocast(cfg, drafter, device)
    gamma = drafter.config.block_size
    layer_ids = list(drafter.config.target_layer_ids)
    target.check_layer_ids(layer_ids)
    if drafter.config.hidden_size != target.hidden_size:
        raise TrainError("target_mismatch", f"drafter hidden size {drafter.config.hidden_size} != target's "
                         f"{target.hidden_size}", "hidden_size")
    max_len = min(cfg.max_seq_len or cfg.tokens_per_batch, cfg.tokens_per_batch)
    tr_all = _to_seqs(train_seqs, max_len, "t")
    from drafters.dspark.anchors import anchor_candidates

    tr = [s for s in tr_all if bool(anchor_candidates(s.mask).any())]
    if not tr:
        raise TrainError("no_training_data", f"none of the {len(tr_all)} training sequences has a supervised "
                         "token pair to anchor on (loss_mask[p] = loss_mask[p+1] = 1)", "train_seqs")
    va = _to_seqs(val_seqs[: cfg.val_max_seqs] if cfg.val_max_seqs else val_seqs, max_len, "v")
    va = [s for s in va if bool(anchor_candidates(s.mask).any())]
    seg_table = _resolve_segment_weights(cfg.segment_weights)
    seg_table_or_none = None if bool((seg_table == 1).all()) else seg_table
    per_step = dd.world * cfg.grad_accum
    plan = _Plan([len(s.ids) for s in tr], cfg.tokens_per_batch, cfg.seed)
    if cfg.max_steps is not None:
        total = int(cfg.max_steps)
    else:
        total = max(1, int(cfg.epochs * len(plan.epoch(0)) // per_step))
    t_start = time.perf_counter()
    history: list[dict[str, Any]] = []

    def emit(p: TrainProgress) -> None:
        p.elapsed_s = round(time.perf_counter() - t_start, 3)
        if progress is not None and dd.rank == 0:
            progress(p)

    # ---------------------------------------------------------------- features
    fc_info: dict[str, Any] = {"mode": "online"}
    cache: FeatureCache | None = None
    if cfg.feature_cache != "off":
        el = 4 if target.dtype == torch.float32 else torch.finfo(target.dtype).bits // 8
        bpt = feature_bytes_per_token(target.hidden_size, len(layer_ids), el)
        est = bpt * sum(len(s.ids) for s in tr + va)
        fc_info.update(estimate_bytes=est, bytes_per_token=bpt, limit_bytes=cfg.feature_cache_max_bytes)
        if est > cfg.feature_cache_max_bytes:
            if cfg.feature_cache == "on":
                raise TrainError(
                    "feature_cache_too_large",
                    f"the feature cache would need {est / 2**20:.1f} MiB ({bpt} B/token x "
                    f"{est // bpt} tokens) but feature_cache_max_bytes is {cfg.feature_cache_max_bytes / 2**20:.1f}"
                    " MiB; raise the limit or use feature_cache='off' (online target features)",
                    "feature_cache_max_bytes",
                )
        else:
            root = Path(cfg.feature_cache_dir) if cfg.feature_cache_dir else out_dir / "feature_cache"
            if dd.rank == 0:
                cache = FeatureCache.open_or_build(
                    root, target, layer_ids, tr + va, cfg.tokens_per_batch,
                    report=lambda d, n: emit(TrainProgress("cache", 0, total, message=f"features {d}/{n}")))
            dd.barrier()
            if cache is None:
                cache = FeatureCache(root, json.loads((root / "manifest.json").read_text()))
            fc_info.update(mode="cache", dir=str(root), bytes=cache.manifest["bytes"])

    def feats(items: list[_Seq], ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if cache is not None:
            return cache.get(items, device, target.dtype)
        aux, last = target.features(ids, layer_ids)
        return aux.to(device), last.to(device)

    # ---------------------------------------------------------------- optimizer
    resuming = resume and (out_dir / LATEST).is_file()
    if cfg.init_from and not resuming:
        load_drafter_weights(drafter, cfg.init_from)
    if cfg.lora is not None and not _has_lora(drafter):
        from drafters.dspark.lora import apply_lora

        apply_lora(drafter, **cfg.lora)
    named = _trainable(drafter)
    params = [p for _, p in named]
    mixed = any(p.dtype != torch.float32 for p in params)
    step = 0
    best_tau: float | None = None
    best_step: int | None = None
    last_dir: Path | None = None
    tens: _StateTensors | None = None
    if resuming:  # model weights first (into the full drafter, before any sharding), optimizer state below
        latest = json.loads((out_dir / LATEST).read_text())
        ck = out_dir / latest["dir"]
        st = json.loads((ck / STATE_JSON).read_text())
        if st["fingerprint"] != cfg.schedule_fingerprint() or st["per_step"] != per_step:
            raise TrainError("resume_mismatch", f"{ck} was written by a run with a different schedule/data "
                             "config or global batch; use a new out_dir or resume=False", str(ck))
        tens = _StateTensors(ck / STATE_TENSORS)
        if _has_lora(drafter):  # the export is merged; the unmerged state is in the training state
            with torch.no_grad():
                for k, v in _model_state(drafter).items():
                    v.copy_(tens[f"model.{k}"])
        else:
            load_drafter_weights(drafter, ck)
    if dd.on:
        # Every rank starts from rank 0's weights, as DDP's constructor does: ranks that built (or LoRA-wrapped)
        # their drafters from different RNG states would otherwise train different models forever.
        frozen = {id(drafter.embed_tokens.weight), id(drafter.lm_head.weight)}
        with torch.no_grad():
            for p in drafter.parameters():
                if id(p) not in frozen:
                    dist.broadcast(p.data, src=0)
    # "fsdp" shards only when there is a process group to shard over; one process trains unsharded.
    parallel = "single"
    if dd.on:
        parallel = cfg.parallel
        if parallel == "auto":
            free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else None
            parallel = choose_parallel(sum(p.numel() for _, p in _trainable(drafter)), free)
    unit: _LossUnit | None = None
    orig_dtypes: dict[str, torch.dtype] = {}
    if parallel == "fsdp":
        masters = tens.master if tens is not None and mixed else None
        unit, orig_dtypes = _shard_fsdp(drafter, device, dd.world, cfg.anchor_chunk, masters, mm_dtype)
        names = [n for n, _ in named]
        named = _trainable(drafter)
        params = [p for _, p in named]  # fp32 DTensor shards: the master weights themselves
        master = params
        if [n for n, _ in named] != names:  # optimizer state is stored by position: the order must hold
            raise TrainError("fsdp_param_order", "sharding changed the order of the trainable parameters",
                             "parallel")
    else:
        master = [p.detach().float().clone().requires_grad_(True) for p in params] if mixed else params
    separate_master = master is not params
    opt = torch.optim.AdamW(master, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay)

    if resuming:
        assert tens is not None
        if separate_master:
            with torch.no_grad():
                for i, m in enumerate(master):
                    m.copy_(tens[f"master.{i}"])
        osd = {"state": {}, "param_groups": opt.state_dict()["param_groups"]}
        for i, m in enumerate(master):
            if f"opt.{i}.exp_avg" in tens:
                osd["state"][i] = {"step": tens[f"opt.{i}.step"], "exp_avg": _like(tens[f"opt.{i}.exp_avg"], m),
                                   "exp_avg_sq": _like(tens[f"opt.{i}.exp_avg_sq"], m)}
        opt.load_state_dict(osd)
        torch.set_rng_state(tens["rng.torch"])
        tens = None  # close the file: keep_last may delete its directory
        step = int(st["step"])
        history = list(st.get("history", []))
        best_tau, best_step = st.get("best_expected_tau"), st.get("best_step")
        bj = out_dir / BEST_JSON
        if bj.is_file():  # a validation after the last checkpoint may have written a better best/
            b = json.loads(bj.read_text())
            if b.get("expected_tau") is not None and (best_tau is None or b["expected_tau"] > best_tau):
                best_tau, best_step = b["expected_tau"], b["step"]
        last_dir = ck
    dd.barrier()

    # ---------------------------------------------------------------- checkpointing
    def save(step_: int) -> Path:
        """Write ``step_XXXXXX/`` (rank 0 writes; under FSDP every rank takes part in the gathers)."""
        d = out_dir / f"step_{step_:06d}"
        tmp = out_dir / f".step_{step_:06d}.tmp"
        tens: dict[str, torch.Tensor] = {"rng.torch": torch.get_rng_state()}
        with _Unsharded(unit):  # the export is the full drafter (compute dtype), written once
            if dd.rank == 0:
                shutil.rmtree(tmp, ignore_errors=True)
                _export_drafter(drafter, tmp)
                if _has_lora(drafter):  # clone: the gathered tensors are freed when resharding
                    tens.update({f"model.{k}": v.detach().cpu().clone(memory_format=torch.contiguous_format)
                                 for k, v in _model_state(drafter).items()})
        if dd.rank == 0 or unit is not None:
            # Master weights and AdamW moments as whole tensors (gathered one at a time under FSDP): the
            # same file whatever the parallel mode (resume may switch it) or world size.
            osd = opt.state_dict()["state"]
            for i, m in enumerate(master):
                if mixed:
                    v = _gather(m.detach())
                    if dd.rank == 0:
                        tens[f"master.{i}"] = v.float().cpu().contiguous()
                if i in osd:
                    for k in ("step", "exp_avg", "exp_avg_sq"):
                        v = osd[i][k]
                        v = _gather(v.detach()) if torch.is_tensor(v) else torch.tensor(float(v))
                        if dd.rank == 0:
                            tens[f"opt.{i}.{k}"] = v.cpu().contiguous()
        if dd.rank == 0:
            save_file(tens, str(tmp / STATE_TENSORS))
            st = {"step": step_, "total_steps": total, "per_step": per_step, "world_size": dd.world,
                  "parallel": parallel,
                  "micro_batches_done": step_ * per_step, "fingerprint": cfg.schedule_fingerprint(),
                  "config": cfg.to_dict(), "param_names": [n for n, _ in named], "mixed_precision": mixed,
                  "best_expected_tau": best_tau, "best_step": best_step, "history": history,
                  "target": target.info() if hasattr(target, "info") else None, "feature_cache": fc_info}
            (tmp / STATE_JSON).write_text(json.dumps(st, indent=1))
            shutil.rmtree(d, ignore_errors=True)
            tmp.rename(d)
            tmp_latest = out_dir / (LATEST + ".tmp")
            tmp_latest.write_text(json.dumps({"step": step_, "dir": d.name}))
            tmp_latest.replace(out_dir / LATEST)
            old = sorted(p for p in out_dir.glob("step_*") if p.is_dir())
            for p in old[: max(0, len(old) - cfg.keep_last)]:
                shutil.rmtree(p, ignore_errors=True)
        dd.barrier()
        return d

    def save_best(step_: int, tau: float | None) -> None:
        with _Unsharded(unit):
            if dd.rank == 0:
                tmp = out_dir / ".best.tmp"
                shutil.rmtree(tmp, ignore_errors=True)
                _export_drafter(drafter, tmp)
        if dd.rank == 0:
            (tmp / BEST_JSON).write_text(json.dumps({"step": step_, "expected_tau": tau}))
            shutil.rmtree(out_dir / BEST, ignore_errors=True)
            tmp.rename(out_dir / BEST)
            (out_dir / BEST_JSON).write_text(json.dumps({"step": step_, "expected_tau": tau, "dir": BEST}))
        dd.barrier()

    # ---------------------------------------------------------------- validation
    val_batches = _pack(list(range(len(va))), [len(s.ids) for s in va], cfg.tokens_per_batch)

    @torch.no_grad()
    def validate() -> dict[str, Any] | None:
        if not va:
            return None
        acc = torch.zeros(4 + gamma, dtype=torch.float64)  # tau_sum, blocks, loss_num, weight, slot sums
        slot_n = torch.zeros(gamma, dtype=torch.float64)
        for bidx in val_batches[dd.rank:: dd.world]:
            items = [va[i] for i in bidx]
            ids, mask, seg = _collate(items)
            anchors, keep = _anchors(mask, seg, cfg.num_anchors,
                                     [_seed_mix(cfg.seed, -1, int(s.key[1:])) for s in items], None)
            aux, last = feats(items, ids)
            out = dspark_loss(drafter, ids.to(device), mask.to(device), aux, last, anchors.to(device),
                              keep.to(device), anchor_chunk=cfg.anchor_chunk, matmul_dtype=mm_dtype)
            if out.n_blocks:
                acc[0] += float(out.expected_tau) * out.n_blocks
                acc[1] += out.n_blocks
                acc[2] += float(out.total.detach()) * float(out.weight_sum)
                acc[3] += float(out.weight_sum)
                M = slot_validity(mask, anchors, keep, gamma).double().sum(dim=(0, 1))
                acc[4:] += torch.nan_to_num(out.accept_rate_per_slot.double().cpu()) * M
                slot_n += M
        acc = dd.sum_(acc.to(device)).cpu()
        slot_n = dd.sum_(slot_n.to(device)).cpu()
        if acc[1] == 0:
            return None
        return {"expected_tau": float(acc[0] / acc[1]), "loss": float(acc[2] / acc[3]),
                "accept_rate_per_slot": (acc[4:] / slot_n.clamp_min(1)).tolist(), "blocks": int(acc[1])}

    def run_validation(step_: int) -> float | None:
        nonlocal best_tau, best_step
        drafter.eval()
        with _Unsharded(unit):  # full weights on every rank: ranks may run different numbers of batches
            v = validate()
        drafter.train()
        if v is None:
            return None
        history.append({"step": step_, "phase": "validate", **v})
        improved = best_tau is None or v["expected_tau"] > best_tau
        if improved:
            best_tau, best_step = v["expected_tau"], step_
            save_best(step_, best_tau)
        emit(TrainProgress("validate", step_, total, val_expected_tau=v["expected_tau"],
                           best_expected_tau=best_tau, loss=v["loss"]))
        return v["expected_tau"]

    # ---------------------------------------------------------------- cancellation
    stop_flag = threading.Event()
    old_handler = None
    if handle_sigterm and threading.current_thread() is threading.main_thread():
        old_handler = signal.signal(signal.SIGTERM, lambda *_: stop_flag.set())

    def stopping() -> bool:
        local = stop_flag.is_set() or bool(should_stop and should_stop())
        return dd.any(local, device)

    # ---------------------------------------------------------------- loop
    drafter.train()
    initial_tau = None
    if not any(h.get("phase") == "validate" and h["step"] == step for h in history):
        initial_tau = run_validation(step)
    else:
        initial_tau = next(h["expected_tau"] for h in history if h.get("phase") == "validate"
                           and h["step"] == step)
    stop_reason = "max_steps"
    cancelled = False
    tokens_seen = 0
    t_loop = time.perf_counter()
    steps_here = 0
    pw = position_weights(gamma, drafter.config.loss_decay_gamma)
    try:
        while step < total:
            if stopping():
                cancelled, stop_reason = True, "cancelled"
                break
            if cfg.time_budget_s is not None and dd.any(time.perf_counter() - t_start > cfg.time_budget_s, device):
                stop_reason = "time_budget"
                break
            # 1-2: this rank's micro-batches and anchors
            micro = []
            for a in range(cfg.grad_accum):
                g = step * per_step + a * dd.world + dd.rank
                epoch, bidx = plan.locate(g)
                items = [tr[i] for i in bidx]
                ids, mask, seg = _collate(items)
                anchors, keep = _anchors(mask, seg, cfg.num_anchors,
                                         [_seed_mix(cfg.seed, epoch, i) for i in bidx], seg_table_or_none)
                wsum = (slot_validity(mask, anchors, keep, gamma).float() * pw).sum()
                micro.append((items, ids, mask, anchors, keep, wsum, epoch))
            # 3: global denominator of the step, then forward/backward per micro-batch
            denom = dd.sum_(torch.stack([m[5] for m in micro]).sum().to(device).double()).float()
            for p in params:
                p.grad = None
            sums = torch.zeros(5, dtype=torch.float64, device=device)  # loss, ce, l1, conf, tokens
            if float(denom) > 0:
                for items, ids, mask, anchors, keep, _, _ in micro:
                    aux, last = feats(items, ids)
                    args = (ids.to(device), mask.to(device), aux, last, anchors.to(device), keep.to(device))
                    with autocast():
                        if unit is not None:  # FSDP: gather, forward, backward, reduce-scatter (SUM) per micro-batch
                            total_, ce_, l1_, conf_ = unit(*args, denom)
                        else:
                            out = dspark_loss(drafter, *args, anchor_chunk=cfg.anchor_chunk, weight_sum=denom,
                                              matmul_dtype=mm_dtype)
                            total_, ce_, l1_, conf_ = out.total, out.ce, out.l1, out.conf
                    total_.backward()
                    sums += torch.tensor([float(total_.detach()), float(ce_), float(l1_), float(conf_), 0.0],
                                         dtype=torch.float64, device=device)
            sums[4] = float(sum(len(s.ids) for m in micro for s in m[0]))  # real (unpadded) tokens
            sums = dd.sum_(sums)
            # 4: reduce, clip, step
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            if unit is None:  # FSDP already summed (and sharded) the gradients in backward
                dd.sum_grads(params)
            if separate_master:
                for m, p in zip(master, params):
                    m.grad = p.grad.float()
            # the global norm over all ranks' shards under FSDP (a replicated DTensor)
            gnorm = float(_gather(torch.nn.utils.clip_grad_norm_(master, cfg.max_grad_norm)))
            lr = cfg.lr * lr_factor(step, total, cfg.warmup_ratio)
            for grp in opt.param_groups:
                grp["lr"] = lr
            if float(denom) > 0:
                opt.step()
                if separate_master:
                    with torch.no_grad():
                        for m, p in zip(master, params):
                            p.copy_(m.to(p.dtype))
            step += 1
            steps_here += 1
            tokens_seen += int(sums[4])
            el = time.perf_counter() - t_loop
            tps = tokens_seen / el if el > 0 else None
            eta = el / steps_here * (total - step)
            if cfg.time_budget_s is not None:
                eta = min(eta, max(0.0, cfg.time_budget_s - (time.perf_counter() - t_start)))
            rec = {"step": step, "phase": "train", "loss": float(sums[0]), "ce": float(sums[1]),
                   "l1": float(sums[2]), "conf": float(sums[3]), "lr": lr, "grad_norm": gnorm,
                   "tokens": int(sums[4]), "epoch": micro[-1][6]}
            history.append(rec)
            if step % cfg.log_every == 0 or step == total:
                emit(TrainProgress("train", step, total, epoch=float(micro[-1][6]), loss=rec["loss"], ce=rec["ce"],
                                   l1=rec["l1"], conf=rec["conf"], lr=lr, grad_norm=gnorm, tokens_per_s=tps,
                                   eta_s=eta, val_expected_tau=_last_tau(history), best_expected_tau=best_tau))
            if cfg.validate_every and step % cfg.validate_every == 0 and step < total:
                run_validation(step)
            if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step < total:
                last_dir = save(step)
        if not cancelled and (not history or history[-1].get("phase") != "validate" or
                              history[-1]["step"] != step):
            run_validation(step)
        if last_dir is None or last_dir.name != f"step_{step:06d}" or not last_dir.is_dir():
            last_dir = save(step)
    finally:
        if old_handler is not None:
            signal.signal(signal.SIGTERM, old_handler)
    if best_tau is None:  # no validation data: the last export is the best we know
        save_best(step, None)
    if unit is not None:  # hand the caller a plain trained drafter, as the replicated path does
        _unshard_for_good(drafter, orig_dtypes)
        unit = None
    emit(TrainProgress("done", step, total, val_expected_tau=_last_tau(history), best_expected_tau=best_tau,
                       message=stop_reason))
    return TrainResult(best_dir=out_dir / BEST, last_dir=last_dir, steps=step, cancelled=cancelled,
                       history=history, stop_reason=stop_reason, best_expected_tau=best_tau,
                       initial_expected_tau=initial_tau, feature_cache=fc_info, parallel=parallel)


def _last_tau(history: list[dict[str, Any]]) -> float | None:
    for h in reversed(history):
        if h.get("phase") == "validate":
            return h["expected_tau"]
    return None
