"""Redis restarts (the machine's Redis keeps nothing on disk): no job is lost, none runs twice.

These tests restart the shared Redis server (``redis-cli shutdown nosave`` and the machine doc's start
command), so every Redis user on the machine sees it; they are kept in this one module, marked
``redis_restart`` (deselect with ``-m 'not redis_restart'``), and Redis is up again after each.
"""

from __future__ import annotations

import json

import pytest

from tests.queue.conftest import ensure_redis_up, redis_client, restart_redis
from tests.queue.fake_stages import ckpt_path, read_calls

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.redis_restart, pytest.mark.timeout(120)]

STAGES = ("validate", "prepare", "train", "evaluate", "register")


@pytest.fixture(autouse=True)
def _redis_back_up():
    yield
    ensure_redis_up()


def _assert_each_stage_completed_once(queue_env, job_id):
    calls = read_calls(queue_env.workdir(job_id))
    for stage in STAGES:
        ends = [c for c in calls if c["stage"] == stage and c["event"] == "end"]
        assert len(ends) == 1, (stage, calls)


def test_restart_while_queued_loses_the_message_but_not_the_job(queue_env, workers):
    job_id = queue_env.submit({"fake": {"train_steps": 2}})  # no worker yet: the message waits in Redis
    broker = redis_client(queue_env.redis_db)
    assert broker.llen("cpu") == 1
    restart_redis()
    assert redis_client(queue_env.redis_db).llen("cpu") == 0  # the message is gone with the restart
    assert queue_env.job(job_id).status == "queued"

    workers.start("cpu,gpu")  # its reconciler re-dispatches the stale queued job
    job = queue_env.wait(job_id, timeout=45)

    assert job.status == "succeeded", job.error
    assert job.attempts == 1
    _assert_each_stage_completed_once(queue_env, job_id)
    assert any("re-dispatching stage validating" in e.message for e in queue_env.events(job_id))


def test_restart_while_running_finishes_once(queue_env, workers):
    w = workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"train_steps": 40, "step_s": 0.1}})
    ckpt = ckpt_path(queue_env.workdir(job_id))
    queue_env.wait(job_id, lambda j: ckpt.exists() and json.loads(ckpt.read_text())["step"] >= 3, timeout=30)
    restart_redis()  # the training task's un-acked message is lost; the task itself keeps running

    job = queue_env.wait(job_id, timeout=60)

    assert job.status == "succeeded", job.error
    assert w.alive()  # the worker reconnected instead of dying
    assert job.attempts == 1  # training was never restarted
    calls = read_calls(queue_env.workdir(job_id))
    assert len([c for c in calls if c["stage"] == "train" and c["event"] == "start"]) == 1
    _assert_each_stage_completed_once(queue_env, job_id)
    assert job.result["registering"] == {"job_id": job_id, "version": 1}
