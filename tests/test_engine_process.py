"""Servers the engines start die with the process that started them (drafters.engines.base.die_with_parent)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from drafters.engines.base import die_with_parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux's")

PARENT = """
import subprocess, sys, time
from drafters.engines.base import die_with_parent
fn = die_with_parent() if sys.argv[1] == "with" else None
child = subprocess.Popen(["sleep", "120"], start_new_session=True, preexec_fn=fn)
print(child.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie waiting for init to reap it is gone too
        return f.read().split(")")[-1].split()[0] != "Z"


def _orphan_after_kill(mode: str) -> bool:
    """Start a parent that starts a server-like child in its own session; SIGKILL the parent; whether the
    child is still running 5 s later."""
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True, env=env)
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    return alive


def test_a_server_dies_when_the_process_that_started_it_is_killed():
    """A worker killed with SIGKILL (or a job cut by a timeout) left its llama-server running, in its own
    session, holding memory and a port; with die_with_parent the kernel ends it."""
    assert die_with_parent() is not None
    assert _orphan_after_kill("without") is True  # what happened before: the child outlives its parent
    assert _orphan_after_kill("with") is False
