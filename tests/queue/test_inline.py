"""The embedded pipeline (pipeline="inline", SQLite): the same stage tasks run in-process, right away.

No Redis, no PostgreSQL, no worker process: ``service.queue.dispatch`` runs the task through
``Task.apply`` and each stage dispatches the next, so ``dispatch("validate", job)`` returns when the job
is finished. Stage functions are the stand-ins of ``fake_stages`` injected through
``workers.tasks.STAGE_FUNCTIONS``.
"""

from __future__ import annotations

import pytest

from tests.queue import fake_stages
from tests.queue.fake_stages import read_calls


@pytest.fixture
def inline(tmp_path, monkeypatch):
    from service.db import Organization, get_sessionmaker
    from service.settings import Settings, override_settings
    from workers import tasks

    monkeypatch.setattr(tasks, "STAGE_FUNCTIONS", dict(fake_stages.STAGES))
    # The fake stages' specs name no target: the worker-side job policy is off, as in the embedded run.
    settings = Settings(home=tmp_path, pipeline="inline", database_url=f"sqlite:///{tmp_path}/td.db",
                        enforce_job_policy=False)
    with override_settings(settings):
        sessions = get_sessionmaker(settings.database_url)
        with sessions() as s:
            org = Organization(name="inline")
            s.add(org)
            s.commit()
            org_id = org.id

        def submit(spec):
            from service import jobs
            from service.queue import dispatch

            with sessions() as s:
                job_id = jobs.create_job(s, org_id, None, spec).id
            dispatch("validate", job_id)
            with sessions() as s:
                return s.get(__import__("service.db", fromlist=["Job"]).Job, job_id)

        yield settings, sessions, submit


def test_inline_job_runs_every_stage_in_process(inline):
    settings, sessions, submit = inline
    job = submit({"fake": {"train_steps": 4}})
    assert job.status == "succeeded" and job.attempts == 1 and job.progress == pytest.approx(1.0)
    assert sorted(job.result) == sorted(["validating", "preparing", "regenerating", "training", "evaluating",
                                         "registering"])
    assert job.result["training"]["steps"] == 4
    import os

    assert job.result["validating"]["pid"] == os.getpid()
    calls = read_calls(settings.home / "work" / job.id)
    assert [c["stage"] for c in calls if c["event"] == "end"] == ["validate", "prepare", "regenerate", "train", "evaluate",
                                                                   "register"]


def test_inline_transient_failure_retries(inline):
    _, sessions, submit = inline
    job = submit({"fake": {"transient": 1, "train_steps": 1}})
    assert job.status == "succeeded" and job.attempts == 2
    from service import jobs

    with sessions() as s:
        runs = [e.data.get("run") for e in jobs.list_events(s, job.id, limit=1000) if e.data]
    assert runs.count("retrying") == 1


def test_inline_deterministic_failure(inline):
    _, _, submit = inline
    fail = {"stage": "train", "code": "out_of_memory", "message": "CUDA out of memory", "where": "batch"}
    job = submit({"fake": {"fail": fail}})
    assert job.status == "failed" and job.stage == "training"
    assert job.error == {"code": "out_of_memory", "message": "CUDA out of memory", "param": "batch"}


def test_inline_cancel_requested_during_training(inline, monkeypatch):
    _, sessions, submit = inline
    from service import jobs

    real_train = fake_stages.train

    def train_then_cancel(ctx):
        with sessions() as s:
            jobs.request_cancel(s, ctx.job_id)
        ctx._cancel_cache = (float("-inf"), False)  # skip the 1 s poll throttle
        return real_train(ctx)

    from workers import tasks

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "train", train_then_cancel)
    job = submit({"fake": {"train_steps": 5}})
    assert job.status == "cancelled"
    assert "training" not in job.result  # not done: a resume runs the stage again from its checkpoint
    with sessions() as s:
        stopped = [e.data["result"] for e in jobs.list_events(s, job.id) if (e.data or {}).get("result")]
    assert stopped == [{"cancelled": True, "checkpoint": stopped[0]["checkpoint"], "step": 0}]
    assert "registering" not in job.result


def test_an_inline_stage_renews_its_lease(inline, monkeypatch):
    """In-process stages keep a live lease as a worker's do, so a job a stopped server left running is told
    from one that runs (the API resumes the first only: tests/api/test_jobs.py)."""
    import time

    from service.db import Job
    from service.settings import override_settings
    from workers import tasks

    settings, sessions, submit = inline
    seen = {}

    def slow_train(ctx):
        with sessions() as s:
            seen["before"] = s.get(Job, ctx.job_id).lease_expires_at
        time.sleep(1.0)  # three beats of a 0.9 s lease
        with sessions() as s:
            seen["after"] = s.get(Job, ctx.job_id).lease_expires_at
        return fake_stages.train(ctx)

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "train", slow_train)
    with override_settings(settings.model_copy(update={"job_lease_s": 0.9})):
        job = submit({"fake": {"train_steps": 1}})
    assert job.status == "succeeded"
    assert (seen["after"] - seen["before"]).total_seconds() >= 0.5  # renewed while the stage ran


def test_unknown_exception_fails_with_internal_error(inline, monkeypatch):
    _, _, submit = inline
    from workers import tasks

    def broken(ctx):
        raise KeyError("shards")

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "prepare", broken)
    job = submit({})
    assert job.status == "failed" and job.error["code"] == "internal_error"
    assert "KeyError" in job.error["message"]


def test_is_transient_classification():
    from drafters.errors import TracedraftError
    from workers.context import TransientError
    from workers.tasks import is_transient, retry_countdown

    class Resp:
        status_code = 503

    class HTTPStatusError(Exception):
        response = Resp()

    assert is_transient(TransientError("503"))
    assert is_transient(ConnectionResetError())
    assert is_transient(HTTPStatusError())
    assert not is_transient(TracedraftError("bad_data", "x"))
    assert not is_transient(ValueError("x"))
    assert 4.0 <= retry_countdown(0) <= 6.0 and 16.0 <= retry_countdown(2) <= 24.0
    assert retry_countdown(20) <= 300 * 1.2
