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
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})

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
        tail = log_path.read_bytes()[-2000:].decode("utf-8", "replace")
        raise TracedraftError("training_failed", f"torchrun with {nproc} processes exited with code "
                              f"{proc.returncode}; end of its log:\n{tail}", where=str(log_path))
    return result
