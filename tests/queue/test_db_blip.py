"""A database restart while a stage runs is waited out: the stage goes on once PostgreSQL answers again, its
delivery is not counted as a dead worker and uses no attempt, the worker's log gets a line (no traceback)
and the job an event naming the cause. The blip is a TCP proxy in front of PostgreSQL that resets every
connection and refuses new ones for a while (``fault_proxy``), as a restart does to its clients."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from tests.queue.fault_proxy import FaultProxy


def test_a_database_blip_mid_stage_is_waited_out(queue_env, monkeypatch, caplog):
    from service import jobs, queue
    from service.settings import reload_settings
    from workers import tasks

    proxy = FaultProxy(5432).start()
    job_id = queue_env.submit({"fake": {}}, dispatch=False)
    with queue_env.sessions() as s:
        jobs.set_stage(s, job_id, "training")
    seen: dict = {}

    def train(ctx):
        ctx.progress(0.1)
        proxy.cut(2.0)  # PostgreSQL "restarts": connections reset, new ones refused for 2 s
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3.0:  # the stage keeps reporting through the outage
            ctx.progress(min(0.9, 0.1 + (time.monotonic() - t0) / 4))
            seen["cancelled"] = ctx.cancelled()
            time.sleep(0.05)
        ctx.event("info", "message", "after the blip")
        return {"steps": 2}

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "train", train)
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(queue, "dispatch", lambda stage, jid, settings=None: sent.append((stage, jid)))
    monkeypatch.setenv("TRACEDRAFT_DATABASE_URL", queue_env.database_url.replace(":5432/", f":{proxy.port}/"))
    reload_settings()
    task = SimpleNamespace(request=SimpleNamespace(id=f"{job_id}.train", retries=0, is_eager=False))
    try:
        with caplog.at_level(logging.INFO):
            out = tasks.run_stage(task, "train", job_id)
    finally:
        proxy.stop()
        monkeypatch.setenv("TRACEDRAFT_DATABASE_URL", queue_env.database_url)
        reload_settings()

    assert out["outcome"] == "done", out
    assert sent == [("evaluate", job_id)] and seen["cancelled"] is False
    job = queue_env.job(job_id)
    assert job.stage == "evaluating" and job.result["training"] == {"steps": 2} and job.attempts == 1
    events = queue_env.events(job_id)
    outage = [e for e in events if (e.data or {}).get("cause") == "database_unavailable"]
    assert len(outage) == 1 and outage[0].level == "warning"
    assert "job database was unavailable for" in outage[0].message and "no attempt used" in outage[0].message
    assert outage[0].data["stage"] == "training" and outage[0].data["seconds"] >= 1.0
    assert outage[0].data["error"].startswith("OperationalError")
    runs = [(e.data or {}).get("run") for e in events]
    assert "retrying" not in runs and "lost" not in runs
    assert not any("restarted" in e.message for e in events)
    assert any(e.message == "after the blip" for e in events)
    assert "Traceback" not in caplog.text
    outage_lines = [r for r in caplog.records if "unavailable" in r.getMessage()]
    assert 1 <= len(outage_lines) <= 4, [r.getMessage() for r in outage_lines]
    assert all("\n" not in r.getMessage() for r in caplog.records if r.name.startswith("workers"))


def test_retry_db_waits_out_an_outage_and_gives_up_after_its_limit(monkeypatch):
    from service import jobs
    from workers.db import is_db_outage, retry_db

    recorded: list[tuple] = []
    monkeypatch.setattr(jobs, "add_event", lambda session, job_id, *args: recorded.append((job_id, *args)))

    class Session:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    down = sa.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused\nmore lines"))
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] < 3:
            raise down
        return "ok"

    slept: list[float] = []
    assert retry_db(flaky, "a progress update", job_id="job_1", stage="training", make_session=Session,
                    sleep=slept.append) == "ok"
    assert slept == [0.5, 1.0] and len(recorded) == 1
    job_id, level, kind, message, data = recorded[0]
    assert (job_id, level, kind) == ("job_1", "warning", "message") and "a progress update" in message
    assert data["cause"] == "database_unavailable" and data["error"] == "ConnectionRefusedError: connection refused"
    assert is_db_outage(down) and not is_db_outage(ValueError("x"))
    assert is_db_outage(_masked_outage())  # a pre-ping's closed socket behind the error restoring autocommit
    assert not is_db_outage(sa.exc.ProgrammingError("SELECT nope", {}, Exception("syntax error")))

    def refused():  # a statement the database refused is no outage: raised at once, no retry
        raise sa.exc.IntegrityError("INSERT", {}, Exception("duplicate key"))

    with pytest.raises(sa.exc.IntegrityError):
        retry_db(refused, "x", job_id="j", stage=None, make_session=Session, sleep=slept.append)
    assert len(slept) == 2

    def always_down():
        raise down

    with pytest.raises(sa.exc.OperationalError):
        retry_db(always_down, "x", job_id="j", stage=None, make_session=Session, max_s=0.0, sleep=slept.append)


def _masked_outage() -> BaseException:
    """The chain a pool's pre-ping raised during a PostgreSQL restart (seen in a test run): the ping met a
    closed socket, restoring autocommit then failed, and SQLAlchemy wrapped that second error."""
    import psycopg

    try:
        try:
            raise psycopg.OperationalError("connection socket closed")
        except psycopg.OperationalError:
            raise psycopg.ProgrammingError("can't change 'autocommit' now: connection in transaction status ACTIVE")
    except psycopg.ProgrammingError as inner:
        try:
            raise sa.exc.ProgrammingError("SELECT 1", {}, inner) from inner
        except sa.exc.ProgrammingError as outer:
            return outer

