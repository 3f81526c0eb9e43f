"""The training loop: ``train`` sets the run up, then runs optimizer steps, validations and checkpoints
until the end of the schedule, a stop request or the time budget (one step's maths: the package
docstring)."""

from __future__ import annotations

import contextlib
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
from drafters.train.config import PROBE_FRACTION, PROBE_STEPS, Budget, Schedule, TrainConfig, TrainError
from drafters.train.data import MicroBatch, TrainData, load_data, step_micro_batches, val_micro_batch
from drafters.train.features import FeatureSource, open_features
from drafters.train.optim import build_model, optimizer_update, prepare_drafter
from drafters.train.parallel import ProcessGroup, Unsharded
from drafters.train.progress import Pace, Reporter, TrainProgress, TrainResult
from drafters.train.state import BEST, Checkpoint, best_so_far, find_resume_point, save_best, save_step
from drafters.train.training_model import Model, Precision


@dataclass
class RunState:
    """Where the run is: saved in every checkpoint's training_state.json and restored on resume.
    ``used_before_s``: seconds of the time budget spent by the processes before this one (the time between
    their last checkpoint and a kill is not counted: those steps are done again)."""

    schedule: Schedule
    step: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    best_tau: float | None = None
    best_step: int | None = None
    last_dir: Path | None = None
    used_before_s: float = 0.0
    horizon_kept: bool = False  # resumed with a horizon a time budget set: no re-estimate

    @property
    def total_steps(self) -> int:
        """The horizon for progress reports (0 while a time-budgeted run has not set it)."""
        return self.schedule.total_steps or 0

    def running(self) -> bool:
        """Steps remain: below the horizon (or the cap, or without either, while it is measured)."""
        return self.schedule.end is None or self.step < self.schedule.end

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
    slot_weights: torch.Tensor  # fp32 [block_size] position weights of the loss (docs/dspark.md 1.7)
    report: Reporter
    budget: Budget | None  # cfg.time_budget_s and its measured costs

    @property
    def per_step(self) -> int:
        """Micro-batches per optimizer step over all ranks (the global batch)."""
        return self.group.world * self.cfg.grad_accum


@dataclass
class StepStats:
    """One optimizer step, over all ranks: the global weighted means of the loss and its terms (docs/dspark.md
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
    clock: Callable[[], float] = time.perf_counter,
) -> TrainResult:
    """Train ``drafter`` on ``train_seqs`` (RenderedSequence-like: input_ids, loss_mask, segments) against
    the frozen ``target`` (drafters.target.Target); see the package docstring for one step's maths.

    Validation on ``val_seqs`` (fixed anchors) reports the expected accepted length 1 + sum_k prod c*_i
    (c* = 1 - TV, docs/dspark.md 2.2) at step 0, every ``validate_every`` steps and at the end; the best is kept
    in ``out_dir/best``. ``should_stop`` is polled between steps (and SIGTERM when ``handle_sigterm``; the
    previous handler is restored on return): the run checkpoints and returns ``cancelled=True``. With
    ``resume=True`` an existing ``out_dir/latest.json`` continues that run exactly. ``clock``: seconds, for
    the time budget and the rates reported (tests pass a fake one).
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
        run, state = _set_up(target, drafter, train_seqs, val_seqs, cfg, Path(out_dir), progress, resume,
                             clock)
        return _run(run, state, should_stop, handle_sigterm)



def _set_up(target: Any, drafter: Any, train_seqs: Sequence[Any], val_seqs: Sequence[Any], cfg: TrainConfig,
            out_dir: Path, progress: Callable[[TrainProgress], None] | None, resume: bool,
            clock: Callable[[], float]) -> tuple[Run, RunState]:
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
    cap = data.step_cap(cfg, per_step)
    if cfg.time_budget_s is not None:
        schedule = Schedule.budgeted(cap, cfg.warmup_ratio)
    else:
        schedule = Schedule.fixed(cap, cfg.warmup_ratio)  # type: ignore[arg-type]  (validate: a cap is set)
    report = Reporter(progress, group.rank, clock)
    features = open_features(target, layer_ids, data, cfg, out_dir, group, device, cap,
                             report.feature_pass(schedule.total_steps or 0))
    checkpoint = find_resume_point(out_dir, cfg, per_step) if resume else None
    prepare_drafter(drafter, cfg, checkpoint)  # into the full drafter, before any sharding
    group.broadcast_weights(drafter)
    model = build_model(drafter, cfg, group, device, precision, checkpoint)
    budget = Budget(cfg.time_budget_s) if cfg.time_budget_s is not None else None
    state = RunState(schedule)
    if checkpoint is not None:
        state = _resumed_state(checkpoint, out_dir, schedule, budget)
    group.barrier()
    slot_weights = position_weights(drafter.config.block_size, drafter.config.loss_decay_gamma)
    run = Run(cfg, out_dir, group, device, target, data, features, model, slot_weights, report, budget)
    return run, state


def _resumed_state(checkpoint: Checkpoint, out_dir: Path, schedule: Schedule,
                   budget: Budget | None) -> RunState:
    """The state a checkpoint continues from: its step, history, best, schedule (the horizon it set; a
    checkpoint without one had the fixed ``schedule``) and time budget spent; ``budget`` takes the costs it
    measured."""
    record = checkpoint.record
    best_tau, best_step = best_so_far(out_dir, record)
    if record.get("schedule"):
        schedule = Schedule(**record["schedule"])
    if budget is not None:
        budget.validate_s = record.get("budget_costs", {}).get("validate_s", 0.0)
        budget.checkpoint_s = record.get("budget_costs", {}).get("checkpoint_s", 0.0)
    return RunState(schedule, int(record["step"]), list(record.get("history", [])), best_tau, best_step,
                    checkpoint.dir, float(record.get("budget_used_s") or 0.0),
                    horizon_kept=budget is not None and schedule.total_steps is not None)


def _run(run: Run, state: RunState, should_stop: Callable[[], bool] | None,
         handle_sigterm: bool) -> TrainResult:
    """Validate at the start, train to the end (or a stop), validate and checkpoint at the end."""
    model = run.model
    initial_tau = state.validated_at(state.step)
    if initial_tau is None:
        initial_tau = _timed_validation(run, state)
    with _stop_requests(run, should_stop, handle_sigterm) as stopping:
        stop_reason = _loop(run, state, stopping)
        if stop_reason != "cancelled" and not (state.history and state.history[-1].get("phase") == "validate"
                                               and state.history[-1]["step"] == state.step):
            run_validation(run, state)
        last = state.last_dir
        if last is None or last.name != f"step_{state.step:06d}" or not last.is_dir():
            state.last_dir = save(run, state)
    if state.best_tau is None:  # no validation data: the last export is the best we know
        save_best(run.out_dir, state.step, None, model, run.group)
    model.hand_back()  # a plain trained drafter for the caller, as the replicated path gives
    run.report.emit(TrainProgress("done", state.step, state.total_steps, val_expected_tau=state.last_tau(),
                                  best_expected_tau=state.best_tau, message=stop_reason))
    return TrainResult(best_dir=run.out_dir / BEST, last_dir=state.last_dir, steps=state.step,
                       cancelled=stop_reason == "cancelled", history=state.history, stop_reason=stop_reason,
                       best_expected_tau=state.best_tau, initial_expected_tau=initial_tau,
                       feature_cache=run.features.info, parallel=model.parallel,
                       schedule=state.schedule.to_dict())


def _loop(run: Run, state: RunState, stopping: Callable[[], bool]) -> str:
    """Optimizer steps until the end of the schedule; returns why it stopped: "max_steps" (the step cap),
    "time_budget" (the horizon the budget set, or the clock ran out), "cancelled". Reports progress every
    ``log_every`` steps, validates and checkpoints at the config's intervals (the final ones are the
    caller's), and under a time budget sets and re-estimates the horizon (``_fit_schedule``)."""
    cfg, group = run.cfg, run.group
    pace = Pace(run.report.clock())
    while state.running():
        pace.tick(run.report.clock())
        if run.budget is not None:
            _fit_schedule(run, state, pace)
            if not state.running():
                break
        if stopping():
            return "cancelled"
        if run.budget is not None and group.any(_used_s(run, state) > run.budget.seconds, run.device):
            return "time_budget"
        lr = cfg.lr * state.schedule.factor(state.step)
        stats = train_step(run, step_micro_batches(run.data, cfg, state.step, group.rank, group.world,
                                                   run.slot_weights), lr)
        state.step += 1
        state.history.append(stats.record(state.step))
        pace.steps += 1
        pace.tokens += stats.tokens
        known = state.schedule.total_steps is not None  # a time-budgeted run reports once it is estimated
        if known and (state.step % cfg.log_every == 0 or not state.running()):
            _report_step(run, state, stats, pace)
        _periodic_validation_and_checkpoint(run, state, pace)
    at_cap = state.schedule.cap is not None and state.step >= state.schedule.cap
    return "time_budget" if run.budget is not None and not at_cap else "max_steps"


def _periodic_validation_and_checkpoint(run: Run, state: RunState, pace: Pace) -> None:
    total = state.schedule.total_steps
    if total is None or state.step >= total:  # the final ones come after the loop
        return
    started = run.report.clock()
    validate_every, checkpoint_every = run.cfg.validate_interval(total), run.cfg.checkpoint_interval(total)
    if validate_every and state.step % validate_every == 0:
        _timed_validation(run, state)
    if checkpoint_every and state.step % checkpoint_every == 0:
        state.last_dir = _timed_save(run, state)
    pace.excluded_s += run.report.clock() - started


def _used_s(run: Run, state: RunState) -> float:
    """Seconds of the time budget spent: by earlier processes of the run and by this one."""
    return state.used_before_s + run.report.elapsed()


def _fit_schedule(run: Run, state: RunState, pace: Pace) -> None:
    """Set the horizon once the steps after the first are timed over ``PROBE_STEPS`` steps and
    ``PROBE_FRACTION`` of the budget, then re-estimate it every tenth of the schedule (``Budget.fit``) from
    the steps timed since the last estimate, and report each change. A resumed run keeps the horizon its
    checkpoint stored (``state.horizon_kept``). Every decision and measurement is agreed over the ranks (the
    probe's end by any rank, the measurements as maxima), so every rank sets the same horizon at the same
    step: collective on every rank alike."""
    schedule, budget = state.schedule, run.budget
    assert budget is not None
    if state.horizon_kept:
        return
    every = PROBE_STEPS if schedule.total_steps is None else max(PROBE_STEPS, schedule.total_steps // 10)
    if pace.timed_steps < every or (schedule.total_steps is not None and state.step >= schedule.total_steps):
        return
    now = run.report.clock()
    probed = pace.window_s(now) >= PROBE_FRACTION * budget.seconds
    if schedule.total_steps is None and not run.group.any(probed, run.device):
        return
    step_s, used_s, budget.validate_s, budget.checkpoint_s = run.group.max(
        [pace.step_s(now), _used_s(run, state), budget.validate_s, budget.checkpoint_s], run.device)
    timed = pace.timed_steps
    pace.restart_window(now)
    state.schedule = budget.fit(schedule, run.cfg, state.step, used_s, step_s)
    if schedule.total_steps is None or state.schedule.total_steps != schedule.total_steps:
        _report_schedule(run, state, used_s, timed)


def _report_schedule(run: Run, state: RunState, used_s: float, timed_steps: int) -> None:
    schedule, budget = state.schedule, run.budget
    assert budget is not None and schedule.total_steps is not None and schedule.step_s is not None
    capped = schedule.total_steps == schedule.cap and schedule.cap is not None
    message = (f"time budget {budget.seconds:.0f} s, {used_s:.0f} s used at step {state.step}: "
               f"{schedule.step_s:.3g} s per step (mean of {timed_steps} steps), "
               f"{budget.validate_s:.3g} s per validation, {budget.checkpoint_s:.3g} s per checkpoint -> "
               f"schedule of {schedule.total_steps} steps, warm-up {schedule.warmup_steps}"
               + (" (the step cap)" if capped else ", cosine decay to the end of the budget"))
    run.report.emit(TrainProgress("schedule", state.step, schedule.total_steps, message=message,
                                  val_expected_tau=state.last_tau(), best_expected_tau=state.best_tau))


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
    if run.budget is not None:
        eta = min(eta, max(0.0, run.budget.seconds - _used_s(run, state)))
    run.report.emit(TrainProgress(
        "train", state.step, state.total_steps, epoch=float(stats.epoch), loss=stats.loss, ce=stats.ce,
        l1=stats.l1, conf=stats.conf, lr=stats.lr, grad_norm=stats.grad_norm,
        tokens_per_s=pace.tokens_per_s(now), eta_s=eta, val_expected_tau=state.last_tau(),
        best_expected_tau=state.best_tau))


@torch.no_grad()
def validate(run: Run) -> dict[str, Any] | None:
    """Expected accepted length 1 + sum_k prod_{i<=k} c*_i (c* = 1 - TV, docs/dspark.md 2.2) over the fixed
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


def _timed_validation(run: Run, state: RunState) -> float | None:
    """``run_validation``, its duration kept as the budget's cost of a validation."""
    started = run.report.clock()
    tau = run_validation(run, state)
    if run.budget is not None:
        run.budget.validate_s = run.report.clock() - started
    return tau


def _timed_save(run: Run, state: RunState) -> Path:
    """``save``, its duration kept as the budget's cost of a checkpoint."""
    started = run.report.clock()
    path = save(run, state)
    if run.budget is not None:
        run.budget.checkpoint_s = run.report.clock() - started
    return path


def save(run: Run, state: RunState) -> Path:
    """Checkpoint ``state.step`` (``state.save_step``) with its training_state.json record. Collective."""
    cfg, model = run.cfg, run.model
    record = {"step": state.step, "total_steps": state.total_steps, "per_step": run.per_step,
              "world_size": run.group.world, "parallel": model.parallel,
              "micro_batches_done": state.step * run.per_step, "fingerprint": cfg.schedule_fingerprint(),
              "config": cfg.to_dict(), "param_names": model.names, "mixed_precision": model.mixed,
              "best_expected_tau": state.best_tau, "best_step": state.best_step, "history": state.history,
              "target": run.target.info() if hasattr(run.target, "info") else None,
              "feature_cache": run.features.info, "schedule": state.schedule.to_dict(),
              "budget_used_s": _used_s(run, state),
              "budget_costs": {"validate_s": run.budget.validate_s, "checkpoint_s": run.budget.checkpoint_s}
              if run.budget is not None else None}
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
