"""The training loop: ``train`` sets the run up, then runs optimizer steps, validations and checkpoints
until the end of the schedule, a stop request or the time budget (one step's maths: the package
docstring)."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from drafters.cpu_memory import reuse_freed_memory
from drafters.dspark.losses import dspark_loss, position_weights, slot_validity
from drafters.train.config import TrainConfig, TrainError, lr_factor
from drafters.train.data import MicroBatch, TrainData, load_data, step_micro_batches, val_micro_batch
from drafters.train.features import FeatureSource, open_features
from drafters.train.optim import Model, Precision, build_model, optimizer_update, prepare_drafter
from drafters.train.parallel import ProcessGroup, Unsharded
from drafters.train.state import BEST, best_so_far, find_resume_point, save_best, save_step


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


@dataclass
class RunState:
    """Where the run is: saved in every checkpoint's training_state.json and restored on resume."""

    total_steps: int
    step: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    best_tau: float | None = None
    best_step: int | None = None
    last_dir: Path | None = None

    def last_tau(self) -> float | None:
        """The latest validation's expected accepted length."""
        return next((h["expected_tau"] for h in reversed(self.history) if h.get("phase") == "validate"), None)

    def validated_at(self, step: int) -> float | None:
        """The expected accepted length of the validation at ``step``, if one ran."""
        return next((h["expected_tau"] for h in self.history
                     if h.get("phase") == "validate" and h["step"] == step), None)


@dataclass
class Run:
    """What stays fixed while the loop runs."""

    cfg: TrainConfig
    out_dir: Path
    group: ProcessGroup
    device: torch.device
    target: Any
    data: TrainData
    features: FeatureSource
    model: Model
    slot_weights: torch.Tensor  # fp32 [block_size] position weights of the loss (DSPARK.md 1.7)
    report: Reporter

    @property
    def per_step(self) -> int:
        """Micro-batches per optimizer step over all ranks (the global batch)."""
        return self.group.world * self.cfg.grad_accum


class Reporter:
    """Hands progress reports to the caller's callback, on rank 0 only, stamped with the seconds since
    the run started (``clock``: a monotonic clock in seconds)."""

    def __init__(self, progress: Callable[[TrainProgress], None] | None, rank: int,
                 clock: Callable[[], float] = time.perf_counter):
        self.progress, self.rank, self.clock = progress, rank, clock
        self.started = clock()

    def elapsed(self) -> float:
        return self.clock() - self.started

    def emit(self, report: TrainProgress) -> None:
        report.elapsed_s = round(self.elapsed(), 3)
        if self.progress is not None and self.rank == 0:
            self.progress(report)


@dataclass
class StepStats:
    """One optimizer step, over all ranks: the global weighted means of the loss and its terms (DSPARK.md
    2.2), real tokens, gradient norm before clipping, learning rate, epoch of its last micro-batch."""

    loss: float
    ce: float
    l1: float
    conf: float
    tokens: int
    grad_norm: float
    lr: float
    epoch: int

    def record(self, step: int) -> dict[str, Any]:
        """The history entry of step ``step`` (1-based: steps done)."""
        return {"step": step, "phase": "train", "loss": self.loss, "ce": self.ce, "l1": self.l1,
                "conf": self.conf, "lr": self.lr, "grad_norm": self.grad_norm, "tokens": self.tokens,
                "epoch": self.epoch}


@dataclass
class Pace:
    """Tokens per second and time left, measured since this process's loop started."""

    started: float
    steps: int = 0
    tokens: int = 0

    def tokens_per_s(self, now: float) -> float | None:
        return self.tokens / (now - self.started) if now > self.started else None

    def eta(self, now: float, steps_left: int) -> float:
        return (now - self.started) / max(1, self.steps) * steps_left


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
    the frozen ``target`` (drafters.target.Target); see the package docstring for one step's maths.

    Validation on ``val_seqs`` (fixed anchors) reports the expected accepted length 1 + sum_k prod c*_i
    (c* = 1 - TV, DSPARK.md 2.2) at step 0, every ``validate_every`` steps and at the end; the best is kept
    in ``out_dir/best``. ``should_stop`` is polled between steps (and SIGTERM when ``handle_sigterm``; the
    previous handler is restored on return): the run checkpoints and returns ``cancelled=True``. With
    ``resume=True`` an existing ``out_dir/latest.json`` continues that run exactly.
    Data parallel when torch.distributed is initialised (every rank calls train with the same arguments;
    rank 0 writes files and builds the feature cache while the others wait). ``cfg.parallel`` = "ddp":
    the drafter and its AdamW state are replicated on every rank. "fsdp": the drafter's weights other than
    embed_tokens / lm_head are sharded in place with FSDP2 (see ``LossUnit``): fp32 master shards,
    gradients and AdamW moments take 1/W of their replicated size per rank, weights are gathered for each
    micro-batch's forward/backward, for validation and for exports. On return the drafter is a plain
    module again with the full trained weights in their original dtypes (on an exception under FSDP it is
    left sharded). Raises TrainError (bad config, no usable sequences, resume mismatch, feature cache over
    its limit). On CPU the whole run keeps freed memory for reuse (``drafters.cpu_memory``: process-wide
    glibc settings, restored on return).
    """
    with reuse_freed_memory(enabled=drafter.fc.weight.device.type == "cpu"):
        run, state = _set_up(target, drafter, train_seqs, val_seqs, cfg, Path(out_dir), progress, resume)
        return _run(run, state, should_stop, handle_sigterm)



def _set_up(target: Any, drafter: Any, train_seqs: Sequence[Any], val_seqs: Sequence[Any], cfg: TrainConfig,
            out_dir: Path, progress: Callable[[TrainProgress], None] | None, resume: bool) -> tuple[Run, RunState]:
    """Everything before the first step: config and target checks, data, features, the drafter's starting
    weights, its parallel form and optimizer, and the state to continue from. Collective."""
    cfg.validate()
    group = ProcessGroup()
    device = drafter.fc.weight.device
    precision = Precision.of(cfg, drafter, device)  # before LoRA and FSDP change the parameters' dtypes
    layer_ids = list(drafter.config.target_layer_ids)
    target.check_layer_ids(layer_ids)
    if drafter.config.hidden_size != target.hidden_size:
        raise TrainError("target_mismatch", f"drafter hidden size {drafter.config.hidden_size} != target's "
                         f"{target.hidden_size}", "hidden_size")
    data = load_data(train_seqs, val_seqs, cfg)
    per_step = group.world * cfg.grad_accum
    total = data.total_steps(cfg, per_step)
    report = Reporter(progress, group.rank)

    def cache_progress(done: int, n: int) -> None:
        report.emit(TrainProgress("cache", 0, total, message=f"features {done}/{n}"))

    features = open_features(target, layer_ids, data, cfg, out_dir, group, device, cache_progress)
    checkpoint = find_resume_point(out_dir, cfg, per_step) if resume else None
    prepare_drafter(drafter, cfg, checkpoint)  # into the full drafter, before any sharding
    group.broadcast_weights(drafter)
    model = build_model(drafter, cfg, group, device, precision, checkpoint)
    state = RunState(total_steps=total)
    if checkpoint is not None:
        best_tau, best_step = best_so_far(out_dir, checkpoint.record)
        state = RunState(total, int(checkpoint.record["step"]), list(checkpoint.record.get("history", [])),
                         best_tau, best_step, checkpoint.dir)
    group.barrier()
    slot_weights = position_weights(drafter.config.block_size, drafter.config.loss_decay_gamma)
    return Run(cfg, out_dir, group, device, target, data, features, model, slot_weights, report), state


def _run(run: Run, state: RunState, should_stop: Callable[[], bool] | None, handle_sigterm: bool) -> TrainResult:
    """Validate at the start, train to the end (or a stop), validate and checkpoint at the end."""
    model = run.model
    initial_tau = state.validated_at(state.step)
    if initial_tau is None:
        initial_tau = run_validation(run, state)
    with _stop_requests(run, should_stop, handle_sigterm) as stopping:
        stop_reason = _loop(run, state, stopping)
        if stop_reason != "cancelled" and not (state.history and state.history[-1].get("phase") == "validate"
                                               and state.history[-1]["step"] == state.step):
            run_validation(run, state)
        if state.last_dir is None or state.last_dir.name != f"step_{state.step:06d}" or not state.last_dir.is_dir():
            state.last_dir = save(run, state)
    if state.best_tau is None:  # no validation data: the last export is the best we know
        save_best(run.out_dir, state.step, None, model, run.group)
    model.hand_back()  # a plain trained drafter for the caller, as the replicated path gives
    run.report.emit(TrainProgress("done", state.step, state.total_steps, val_expected_tau=state.last_tau(),
                                  best_expected_tau=state.best_tau, message=stop_reason))
    return TrainResult(best_dir=run.out_dir / BEST, last_dir=state.last_dir, steps=state.step,
                       cancelled=stop_reason == "cancelled", history=state.history, stop_reason=stop_reason,
                       best_expected_tau=state.best_tau, initial_expected_tau=initial_tau,
                       feature_cache=run.features.info, parallel=model.parallel)


def _loop(run: Run, state: RunState, stopping: Callable[[], bool]) -> str:
    """Optimizer steps until ``state.total_steps``; returns why it stopped: "max_steps", "cancelled" or
    "time_budget". Reports progress every ``log_every`` steps, validates every ``validate_every`` and
    checkpoints every ``checkpoint_every`` steps (the final ones are the caller's)."""
    cfg, group = run.cfg, run.group
    pace = Pace(run.report.clock())
    while state.step < state.total_steps:
        if stopping():
            return "cancelled"
        if cfg.time_budget_s is not None and group.any(run.report.elapsed() > cfg.time_budget_s, run.device):
            return "time_budget"
        lr = cfg.lr * lr_factor(state.step, state.total_steps, cfg.warmup_ratio)
        stats = train_step(run, step_micro_batches(run.data, cfg, state.step, group.rank, group.world,
                                                   run.slot_weights), lr)
        state.step += 1
        state.history.append(stats.record(state.step))
        pace.steps += 1
        pace.tokens += stats.tokens
        if state.step % cfg.log_every == 0 or state.step == state.total_steps:
            _report_step(run, state, stats, pace)
        if cfg.validate_every and state.step % cfg.validate_every == 0 and state.step < state.total_steps:
            run_validation(run, state)
        if cfg.checkpoint_every and state.step % cfg.checkpoint_every == 0 and state.step < state.total_steps:
            state.last_dir = save(run, state)
    return "max_steps"


def train_step(run: Run, micro_batches: list[MicroBatch], lr: float) -> StepStats:
    """One optimizer step on this rank's micro-batches: the step's global loss denominator first (all
    micro-batches of all ranks), then forward/backward per micro-batch, then ``optimizer_update``."""
    group, model = run.group, run.model
    weight_sum = torch.stack([mb.weight_sum for mb in micro_batches]).sum().to(run.device).double()
    denom = group.sum(weight_sum).float()
    model.zero_grad()
    sums = torch.zeros(5, dtype=torch.float64, device=run.device)  # loss, ce, l1, conf, tokens
    if float(denom) > 0:
        for mb in micro_batches:
            sums[:4] += forward_backward(run, mb, denom)
    sums[4] = float(sum(mb.tokens for mb in micro_batches))
    sums = group.sum(sums)
    grad_norm = optimizer_update(model, run.cfg, group, lr, apply=float(denom) > 0)
    loss, ce, l1, conf, tokens = sums.tolist()
    return StepStats(loss, ce, l1, conf, int(tokens), grad_norm, lr, micro_batches[-1].epoch)


def forward_backward(run: Run, mb: MicroBatch, denom: torch.Tensor) -> torch.Tensor:
    """Loss of one micro-batch divided by the step's global weight sum ``denom``, and its backward (under
    FSDP the unit gathers the weights and reduce-scatters the gradients, SUM). Returns fp64 [4]: this
    micro-batch's share of (loss, ce, l1, conf)."""
    model, device = run.model, run.device
    aux, last = run.features.get(mb.seqs, mb.ids)
    args = (mb.ids.to(device), mb.mask.to(device), aux, last, mb.anchors.to(device), mb.keep.to(device))
    with model.precision.autocast():
        if model.unit is not None:
            total, ce, l1, conf = model.unit(*args, denom)
        else:
            out = dspark_loss(model.drafter, *args, anchor_chunk=run.cfg.anchor_chunk, weight_sum=denom,
                              matmul_dtype=model.precision.matmul_dtype)
            total, ce, l1, conf = out.total, out.ce, out.l1, out.conf
    total.backward()
    return torch.tensor([float(total.detach()), float(ce), float(l1), float(conf)], dtype=torch.float64,
                        device=device)


def _report_step(run: Run, state: RunState, stats: StepStats, pace: Pace) -> None:
    now = run.report.clock()
    eta = pace.eta(now, state.total_steps - state.step)
    if run.cfg.time_budget_s is not None:
        eta = min(eta, max(0.0, run.cfg.time_budget_s - run.report.elapsed()))
    run.report.emit(TrainProgress(
        "train", state.step, state.total_steps, epoch=float(stats.epoch), loss=stats.loss, ce=stats.ce,
        l1=stats.l1, conf=stats.conf, lr=stats.lr, grad_norm=stats.grad_norm, tokens_per_s=pace.tokens_per_s(now),
        eta_s=eta, val_expected_tau=state.last_tau(), best_expected_tau=state.best_tau))


@torch.no_grad()
def validate(run: Run) -> dict[str, Any] | None:
    """Expected accepted length 1 + sum_k prod_{i<=k} c*_i (c* = 1 - TV, DSPARK.md 2.2) over the fixed
    validation blocks of all ranks, the weighted loss, and the acceptance rate per block slot; None without
    validation blocks. Runs the drafter as it is (the caller gathers FSDP shards). Collective."""
    cfg, group, device, drafter = run.cfg, run.group, run.device, run.model.drafter
    if not run.data.val:
        return None
    gamma = len(run.slot_weights)
    acc = torch.zeros(4 + gamma, dtype=torch.float64)  # tau_sum, blocks, loss_num, weight, slot sums
    slot_n = torch.zeros(gamma, dtype=torch.float64)
    for indices in run.data.val_batches[group.rank:: group.world]:
        mb = val_micro_batch(run.data, cfg, indices)
        aux, last = run.features.get(mb.seqs, mb.ids)
        out = dspark_loss(drafter, mb.ids.to(device), mb.mask.to(device), aux, last, mb.anchors.to(device),
                          mb.keep.to(device), anchor_chunk=cfg.anchor_chunk,
                          matmul_dtype=run.model.precision.matmul_dtype)
        if out.n_blocks:
            acc[0] += float(out.expected_tau) * out.n_blocks
            acc[1] += out.n_blocks
            acc[2] += float(out.total.detach()) * float(out.weight_sum)
            acc[3] += float(out.weight_sum)
            valid = slot_validity(mb.mask, mb.anchors, mb.keep, gamma).double().sum(dim=(0, 1))
            acc[4:] += torch.nan_to_num(out.accept_rate_per_slot.double().cpu()) * valid
            slot_n += valid
    acc = group.sum(acc.to(device)).cpu()
    slot_n = group.sum(slot_n.to(device)).cpu()
    if acc[1] == 0:
        return None
    return {"expected_tau": float(acc[0] / acc[1]), "loss": float(acc[2] / acc[3]),
            "accept_rate_per_slot": (acc[4:] / slot_n.clamp_min(1)).tolist(), "blocks": int(acc[1])}


def run_validation(run: Run, state: RunState) -> float | None:
    """Validate at ``state.step`` (full weights on every rank: ranks may run different numbers of
    batches), record it, export ``best/`` when it is the best so far, report it. Returns the expected
    accepted length, None without validation blocks. Collective."""
    model = run.model
    model.drafter.eval()
    with Unsharded(model.unit):
        result = validate(run)
    model.drafter.train()
    if result is None:
        return None
    state.history.append({"step": state.step, "phase": "validate", **result})
    if state.best_tau is None or result["expected_tau"] > state.best_tau:
        state.best_tau, state.best_step = result["expected_tau"], state.step
        save_best(run.out_dir, state.step, state.best_tau, model, run.group)
    run.report.emit(TrainProgress("validate", state.step, state.total_steps,
                                  val_expected_tau=result["expected_tau"], best_expected_tau=state.best_tau,
                                  loss=result["loss"]))
    return result["expected_tau"]


def save(run: Run, state: RunState) -> Path:
    """Checkpoint ``state.step`` (``state.save_step``) with its training_state.json record. Collective."""
    cfg, model = run.cfg, run.model
    record = {"step": state.step, "total_steps": state.total_steps, "per_step": run.per_step,
              "world_size": run.group.world, "parallel": model.parallel,
              "micro_batches_done": state.step * run.per_step, "fingerprint": cfg.schedule_fingerprint(),
              "config": cfg.to_dict(), "param_names": model.names, "mixed_precision": model.mixed,
              "best_expected_tau": state.best_tau, "best_step": state.best_step, "history": state.history,
              "target": run.target.info() if hasattr(run.target, "info") else None,
              "feature_cache": run.features.info}
    return save_step(run.out_dir, state.step, model, run.group, record, cfg.keep_last)


@contextlib.contextmanager
def _stop_requests(run: Run, should_stop: Callable[[], bool] | None,
                   handle_sigterm: bool) -> Iterator[Callable[[], bool]]:
    """A poll that is true on every rank once ``should_stop()`` or (with ``handle_sigterm``, on the main
    thread) a SIGTERM asked any rank to stop; the previous SIGTERM handler is restored on exit."""
    flag = threading.Event()
    old_handler = None
    if handle_sigterm and threading.current_thread() is threading.main_thread():
        old_handler = signal.signal(signal.SIGTERM, lambda *_: flag.set())

    def stopping() -> bool:
        return run.group.any(flag.is_set() or bool(should_stop and should_stop()), run.device)

    try:
        yield stopping
    finally:
        if old_handler is not None:
            signal.signal(signal.SIGTERM, old_handler)
