"""``every``: call a function on a clock thread while a block of work runs (progress reports of work that
cannot report itself: a server answering a batch, a model conversion)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def every(seconds: float, call: Callable[[], None] | None) -> Iterator[None]:
    """Run ``call`` every ``seconds`` on a daemon thread while the block runs (nothing when ``call`` is
    None). The thread is joined on exit, so no call runs after the block."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(seconds):
            call()

    thread = threading.Thread(target=beat, name="periodic", daemon=True) if call is not None else None
    if thread is not None:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if thread is not None:
            thread.join()
