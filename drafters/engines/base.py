"""Where acceptance is measured: one interface for the in-process (hf), SGLang (GPU) and llama.cpp (CPU)
engines. An engine replays rendered prompts with one drafter and returns, per call, the counters the
report needs; tau itself is computed only in drafters/evaluate/metrics.py (``engine_summary``)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallMeasurement:
    """What one replayed call produced.

    call_id: the held-out call. completion_tokens: tokens generated (prefill token included).
    verify_rounds: verification rounds (target forwards after the prefill). accepted_drafts: sum over rounds
    of (round length - 1), i.e. the drafts the round convention credits (None when the engine does not
    report it). proposed_drafts: drafts verified (None if unknown). rounds: per-round records
    (speculate.Round) when the engine is in-process, else None. tokens: generated ids when known.
    seconds: wall-clock seconds of the call as the engine reports it (None if unknown).
    fields: which response field supplied each counter (remote engines; e.g. {"accepted": "spec_accepted_drafts"}).
    """

    call_id: str
    completion_tokens: int
    verify_rounds: int
    accepted_drafts: int | None
    proposed_drafts: int | None = None
    rounds: list | None = None
    tokens: list[int] | None = None
    seconds: float | None = None
    finish_reason: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    context_len: int | None = None


@dataclass
class EngineRun:
    """One pass of an engine over the prompts with one drafter.

    engine: "hf" | "sglang" | "llamacpp"; drafter: what was measured (path or proposer name);
    calls: per-call measurements in prompt order; info: engine facts to record in the report (version,
    server args, device); flags: caveats the report must show (e.g. "tau_from_completion_tokens")."""

    engine: str
    drafter: str | None
    calls: list[CallMeasurement]
    info: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


class Engine(abc.ABC):
    """An acceptance-measuring engine. Implementations: engines.hf.HFEngine (in-process, exact per-round
    data), engines.sglang.SGLangEngine (launches or attaches to an SGLang server); llama.cpp follows the
    same interface (its counters: timings.draft_n / draft_n_accepted, /metrics deltas; docs/serving.md 3)."""

    name: str = "engine"

    @abc.abstractmethod
    def measure(self, prompts: Sequence[Any], drafter: Any, *, max_new_tokens: int, temperature: float = 0.0,
                seed: int = 0, stop_token_ids: Sequence[int] = ()) -> EngineRun:
        """Replay every prompt (RenderedPrompt-like: call_id, prompt_ids) with ``drafter`` (a checkpoint
        directory, a Proposer for in-process engines, or None for plain decoding where supported).
        Raises TracedraftError with a stable code on any engine failure; never returns partial silence."""


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` for a server started in its own session: the kernel sends it SIGTERM when the thread
    that started it dies (Linux ``prctl(PR_SET_PDEATHSIG)``), so a worker killed with SIGKILL, or a job cut
    by a timeout, leaves no llama-server or SGLang server behind holding memory and a port (its own session
    keeps it out of the parent's signals otherwise). A child whose parent died before the call exits at
    once. None where prctl is not available (the server then outlives a killed parent, as before).

    Start servers from a thread that outlives them (the stage's own thread does)."""
    import ctypes
    import ctypes.util
    import os
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:  # runs in the child between fork and exec: keep it to two calls
        prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def stop_process_group(process: Any, grace_s: float) -> None:
    """Stop a server started in its own session: SIGTERM to its process group, SIGKILL after ``grace_s``
    seconds. Idempotent (a process that already exited, or None, is left alone)."""
    import os
    import signal
    import subprocess

    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace_s)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)
