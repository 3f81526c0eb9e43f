"""Redis restarts with nothing on disk (append-only off): no job is lost, none runs twice.

The broker is a Redis server of this module's own (``tests.queue.fault_stack.PrivateRedis``, its own port
and directory), killed and restarted by the tests: the machine's shared Redis is never touched.
"""

from __future__ import annotations

import json

import pytest
import redis

from tests.queue.conftest import make_queue_env
from tests.queue.fake_stages import ckpt_path, read_calls
from tests.queue.fault_stack import PrivateRedis

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.redis_restart, pytest.mark.timeout(120)]

STAGES = ("validate", "prepare", "regenerate", "train", "evaluate", "register")


@pytest.fixture(scope="module")
def private_redis(tmp_path_factory: pytest.TempPathFactory):
    server = PrivateRedis(tmp_path_factory.mktemp("redis"), appendonly=False).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def queue_env(tmp_path_factory: pytest.TempPathFactory, private_redis: PrivateRedis):
    with make_queue_env(tmp_path_factory, f"redis://127.0.0.1:{private_redis.port}") as qe:
        yield qe


def _broker(private_redis: PrivateRedis) -> redis.Redis:
    return redis.Redis.from_url(private_redis.url, socket_timeout=5)


def _assert_each_stage_completed_once(queue_env, job_id):
    calls = read_calls(queue_env.workdir(job_id))
    for stage in STAGES:
        ends = [c for c in calls if c["stage"] == stage and c["event"] == "end"]
        assert len(ends) == 1, (stage, calls)


def test_restart_while_queued_loses_the_message_but_not_the_job(queue_env, workers, private_redis):
    job_id = queue_env.submit({"fake": {"train_steps": 2}})  # no worker yet: the message waits in Redis
    assert _broker(private_redis).llen("cpu") == 1
    private_redis.restart()
    assert _broker(private_redis).llen("cpu") == 0  # the message is gone with the restart
    assert queue_env.job(job_id).status == "queued"

    workers.start("cpu,gpu")  # its reconciler re-dispatches the stale queued job
    job = queue_env.wait(job_id, timeout=45)

    assert job.status == "succeeded", job.error
    assert job.attempts == 1
    _assert_each_stage_completed_once(queue_env, job_id)
    assert any("re-dispatching stage validating" in e.message for e in queue_env.events(job_id))


def test_restart_while_running_finishes_once(queue_env, workers, private_redis):
    w = workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"train_steps": 40, "step_s": 0.1}})
    ckpt = ckpt_path(queue_env.workdir(job_id))
    queue_env.wait(job_id, lambda j: ckpt.exists() and json.loads(ckpt.read_text())["step"] >= 3, timeout=30)
    private_redis.restart()  # the training task's un-acked message is lost; the task itself keeps running

    job = queue_env.wait(job_id, timeout=60)

    assert job.status == "succeeded", job.error
    assert w.alive()  # the worker reconnected instead of dying
    assert job.attempts == 1  # training was never restarted
    calls = read_calls(queue_env.workdir(job_id))
    assert len([c for c in calls if c["stage"] == "train" and c["event"] == "start"]) == 1
    _assert_each_stage_completed_once(queue_env, job_id)
    assert job.result["registering"] == {"job_id": job_id, "version": 1}
