"""Multi-GPU training from a stage: the gpu worker starts ``torchrun -m drafters.train`` (docs/architecture.md 2).

A Celery worker process cannot itself become N ranks, so a training stage that should use N > 1 processes
(``Settings.train_processes``; 0 = one per visible CUDA GPU) launches the trainer's own command line under
``torch.distributed.run --standalone`` and follows it: rank 0 prints each progress report as a JSON line
(``--progress-jsonl``), relayed to the job's events, and the result as the last line. A job cancel sends
SIGTERM to the whole process group; every rank checkpoints and stops at the same step (the trainer's SIGTERM
handling), so the stage resumes from that checkpoint like an in-process run. Output other than JSON lines
goes to a log file in the job's work directory, whose tail is quoted if the launch fails.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from drafters.errors import TracedraftError

#: Seconds the ranks get to write their checkpoint after SIGTERM before the group is killed.
STOP_GRACE_S = 120.0
#: Characters of the launch's log a failure quotes: the ranks' own error first, then the log's end.
QUOTE_CHARS = 2000
#: Lines that start a rank's own report of a failure (torchrun's summary of it comes after, in its own words);
#: torchrun writes a rank's lines as "[rank1]: ..."; the faulthandler's, written to the descriptor, may lack it.
RANK_ERROR = re.compile(r"^(\[rank\d+\]: ?)?(Fatal Python error|Traceback \(most recent call last\)|"
                        r"terminate called|free\(\): |double free|Segmentation fault)", re.MULTILINE)


def train_processes(setting: int) -> int:
    """Processes a training stage runs: ``setting`` if > 0, else the number of visible CUDA GPUs (at least 1)."""
    if setting > 0:
        return setting
    import torch

    return max(1, torch.cuda.device_count())


def run_torchrun(
    nproc: int,
    trainer_args: list[str],
    *,
    log_path: Path,
    progress: Callable[[dict[str, Any]], None],
    should_stop: Callable[[], bool],
    poll_s: float = 0.5,
) -> dict[str, Any] | None:
    """Run ``python -m drafters.train TRAINER_ARGS --progress-jsonl`` as ``nproc`` torchrun processes.

    Calls ``progress(report)`` for every progress line of rank 0 (``TrainProgress.to_dict()``); polls
    ``should_stop`` every ``poll_s`` seconds and stops the run with SIGTERM when it turns true. Returns the
    trainer's result (``TrainResult.to_dict()``), whose ``cancelled`` is True after a stop, or None when it
    stopped before reporting one. Raises TracedraftError ``training_failed`` (where: the log file) when the
    launch exits non-zero without a stop.
    """
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           "-m", "drafters.train", *trainer_args, "--progress-jsonl"]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {}
    with open(log_path, "ab") as log:
        start = log.tell()  # a resume appends: quote only this launch
        # PYTHONFAULTHANDLER: a rank that aborts or crashes writes every thread's Python stack to the log
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"})

        def follow() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                try:
                    msg = json.loads(raw)
                except ValueError:
                    log.write(raw)
                    continue
                if "progress" in msg:
                    progress(msg["progress"])
                elif "result" in msg:
                    result.update(msg["result"])

        reader = threading.Thread(target=follow, name="torchrun-follow", daemon=True)
        reader.start()
        stopped_at: float | None = None
        while proc.poll() is None:
            if stopped_at is None and should_stop():
                stopped_at = time.monotonic()
                os.killpg(proc.pid, signal.SIGTERM)
            elif stopped_at is not None and time.monotonic() - stopped_at > STOP_GRACE_S:
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(poll_s)
        reader.join(timeout=10)
    if stopped_at is not None:
        return result or None
    if proc.returncode != 0 or not result:
        launch_log = log_path.read_bytes()[start:].decode("utf-8", "replace")
        raise TracedraftError("training_failed", f"torchrun with {nproc} processes exited with code "
                              f"{proc.returncode}; from its log:\n{failure_excerpt(launch_log)}",
                              where=str(log_path))
    return result


def failure_excerpt(log: str, chars: int = QUOTE_CHARS) -> str:
    """What a failed launch's log says about the failure, in about ``2 * chars`` characters at most: the first
    rank's own error report (its Python traceback with any chained causes, a fatal error with the
    faulthandler's stacks, a C++ terminate), shortened to its first and last ``chars / 2`` when longer, then
    the log's last ``chars``. torchrun's own traceback and summary fill the end of the log, so its last lines
    alone rarely say why a rank died."""
    matches = list(RANK_ERROR.finditer(log))
    for i, match in enumerate(matches):
        if _is_torchrun_traceback(log, match):
            continue
        start, prefix = match.start(), match.group(1)
        # the report runs on while the same rank writes errors (chained tracebacks), up to another's
        end = next((m.start() for m in matches[i + 1:]
                    if m.group(1) != prefix or _is_torchrun_traceback(log, m)), len(log))
        if len(log) - start <= 2 * chars:
            return log[start:]
        report = log[start:end]
        if len(report) > chars:
            report = f"{report[:chars // 2]}\n[...]\n{report[-(chars // 2):]}"
        return f"{report}\n[...]\n{log[-chars:]}"
    return log[-chars:]


def _is_torchrun_traceback(log: str, match: re.Match[str]) -> bool:
    """Whether an error report is the launcher's own traceback (unprefixed, naming torch.distributed.run)."""
    return (match.group(1) is None and match.group(2).startswith("Traceback")
            and "torch/distributed/run.py" in log[match.start():match.start() + 400])
