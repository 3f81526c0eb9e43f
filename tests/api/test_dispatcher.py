"""The API's stage dispatcher (service.api.dispatcher) when the broker is down: one publish waits out
kombu's retry window, the jobs queued behind it are left to the reconciler at once, and publishing resumes
after BROKER_DOWN_S."""

from __future__ import annotations

import pytest

from service.api import dispatcher as dispatcher_mod
from service.settings import Settings


@pytest.fixture
def broker(monkeypatch):
    """service.queue.dispatch replaced by a broker that is down while ``state["down"]``; records attempts,
    successful publishes and the dispatches marked in the database; the clock is ``state["now"]``."""
    from service import queue

    state = {"down": True, "now": 1000.0, "tried": [], "sent": [], "marked": []}

    def dispatch(stage, job_id, *, settings=None):
        state["tried"].append(job_id)
        if state["down"]:
            raise ConnectionRefusedError("redis at 127.0.0.1:1 refused the connection")
        state["sent"].append((stage, job_id))
        return f"{job_id}-{stage}"

    monkeypatch.setattr(queue, "dispatch", dispatch)
    monkeypatch.setattr(dispatcher_mod, "_mark_dispatched", lambda job_id, settings: state["marked"].append(job_id))
    monkeypatch.setattr(dispatcher_mod.time, "monotonic", lambda: state["now"])
    return state


def _drain(d: dispatcher_mod.StageDispatcher) -> None:
    thread = d._thread
    d.close(timeout=10)
    assert thread is not None and not thread.is_alive()


def test_jobs_behind_a_failed_publish_go_to_the_reconciler_at_once(broker, caplog):
    d = dispatcher_mod.StageDispatcher(Settings(pipeline="celery"))
    for i in range(4):
        d.submit(f"job{i}")
    _drain(d)
    assert broker["tried"] == ["job0"]  # one retry window spent, not four
    assert broker["sent"] == [] and broker["marked"] == []  # dispatched_at stays NULL: the reconciler sends them
    assert sum("the reconciler dispatches it" in r.getMessage() for r in caplog.records) == 3


def test_publishing_resumes_after_the_broker_down_window(broker):
    d = dispatcher_mod.StageDispatcher(Settings(pipeline="celery"))
    d.submit("job0")
    _drain(d)
    broker["down"] = False
    broker["now"] += dispatcher_mod.BROKER_DOWN_S - 1  # inside the window: left to the reconciler
    d.submit("job1")
    _drain(d)
    assert broker["tried"] == ["job0"]
    broker["now"] += 2  # past it: published and marked
    d.submit("job2", "training")
    d.submit("job3")
    _drain(d)
    assert broker["tried"] == ["job0", "job2", "job3"]
    assert broker["sent"] == [("training", "job2"), ("validate", "job3")]
    assert broker["marked"] == ["job2", "job3"]
