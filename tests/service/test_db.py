"""Models, job state + event writer, API keys and settings, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from service import auth, jobs
from service.db import (
    Dataset,
    Drafter,
    Job,
    JobEvent,
    JobStatus,
    Organization,
    Role,
    Stage,
    new_id,
)
from service.settings import Settings, get_settings, override_settings

# --- models ------------------------------------------------------------------------------------------------


def test_json_and_timestamps_round_trip(db, org, Session):
    report = {"errors": [{"code": "bad_json", "line": 3}], "counts": {"conversations": 2}, "ünï": "ç"}
    ds = Dataset(org_id=org.id, name="t.jsonl", sha256="a" * 64, raw_uri="file:///x", report=report,
                 counts={"calls": 5}, size_bytes=2**40)
    db.add(ds)
    db.commit()
    with Session() as other:
        got = other.get(Dataset, ds.id)
        assert got.report == report
        assert got.counts == {"calls": 5}
        assert got.size_bytes == 2**40
        assert got.status == "validating"
        assert got.created_at.tzinfo is not None and got.created_at.utcoffset() == dt.timedelta(0)
        assert abs((got.created_at - ds.created_at).total_seconds()) < 1e-3


def test_naive_datetime_is_refused(db, org):
    db.add(Job(org_id=org.id, spec={}, started_at=dt.datetime(2024, 1, 1)))
    with pytest.raises(sa.exc.StatementError, match="naive datetime"):
        db.flush()
    db.rollback()


def test_ids_are_prefixed_unique_and_time_sorted():
    ids = [new_id("job") for _ in range(200)]
    assert len(set(ids)) == 200
    assert all(i.startswith("job_") and len(i) == 30 for i in ids)
    a = new_id("x")
    import time

    time.sleep(0.002)
    assert new_id("x") > a


def test_unique_constraints(db, org):
    other = Organization(name="other")
    db.add(other)
    db.commit()
    db.add(Drafter(org_id=org.id, name="d", target_model="t"))
    db.add(Drafter(org_id=other.id, name="d", target_model="t"))  # same name, other org: fine
    db.commit()
    db.add(Drafter(org_id=org.id, name="d", target_model="t2"))
    with pytest.raises(IntegrityError):
        db.commit()
    db.rollback()


def test_foreign_keys_are_enforced(db):
    db.add(Job(org_id="org_missing", spec={}))
    with pytest.raises(IntegrityError):
        db.commit()
    db.rollback()


# --- jobs ------------------------------------------------------------------------------------------------------


def test_create_job_is_idempotent_per_org(db, org):
    other = Organization(name="other")
    db.add(other)
    db.commit()
    a = jobs.create_job(db, org, None, {"recipe": {"lr": 1e-4}}, idempotency_key="k1", metadata={"team": "x"})
    assert a.status == JobStatus.queued and a.stage == Stage.validating and a.attempts == 0
    assert a.max_attempts == get_settings().job_max_attempts
    again = jobs.create_job(db, org, None, {"recipe": {"lr": 1e-4}}, idempotency_key="k1", metadata={"team": "x"})
    assert again.id == a.id
    with pytest.raises(jobs.JobError) as e:
        jobs.create_job(db, org, None, {"recipe": {"lr": 2e-4}}, idempotency_key="k1")
    assert e.value.code == "idempotency_conflict" and a.id in e.value.message
    b = jobs.create_job(db, other, None, {"recipe": {"lr": 1e-4}}, idempotency_key="k1")
    assert b.id != a.id  # keys are scoped per organization
    c = jobs.create_job(db, org, None, {"recipe": {"lr": 1e-4}})
    d = jobs.create_job(db, org, None, {"recipe": {"lr": 1e-4}})
    assert c.id != d.id  # no key: always a new job
    assert db.scalar(sa.select(sa.func.count()).select_from(Job)) == 4


def test_concurrent_idempotent_creates_make_one_job(Session, org):
    n = 6
    barrier = threading.Barrier(n)
    ids, errors = [], []

    def worker():
        with Session() as s:
            barrier.wait()
            try:
                ids.append(jobs.create_job(s, org.id, None, {"x": 1}, idempotency_key="same").id)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(ids)) == 1 and len(ids) == n
    with Session() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Job)) == 1


def test_lifecycle_and_events(db, org):
    job = jobs.create_job(db, org, None, {"x": 1})
    jobs.start_job(db, job.id, worker_task_id="task-1")
    assert job.status == JobStatus.running and job.attempts == 1 and job.started_at is not None
    jobs.set_stage(db, job.id, Stage.training)
    jobs.set_progress(db, job.id, 1.7, eta_seconds=-3)  # clamped
    assert job.progress == 1.0 and job.eta_seconds == 0.0
    jobs.set_progress(db, job.id, 0.25, eta_seconds=120, data={"step": 10, "loss": 1.5})
    jobs.set_result(db, job.id, Stage.training, {"checkpoints": ["jobs/x/step_10"]})
    jobs.add_event(db, job.id, "info", "metrics", "step 10", {"loss": 1.5})
    jobs.succeed_job(db, job.id, {"registering": {"version": 1}})
    assert job.status == JobStatus.succeeded and job.progress == 1.0 and job.finished_at >= job.started_at
    assert job.result == {"training": {"checkpoints": ["jobs/x/step_10"]}, "registering": {"version": 1}}
    jobs.succeed_job(db, job.id)  # idempotent
    events = jobs.list_events(db, job.id)
    assert [e.seq for e in events] == list(range(1, 8))
    assert [e.type for e in events] == ["stage", "stage", "stage", "progress", "progress", "metrics", "stage"]
    assert events[4].data == {"progress": 0.25, "eta_seconds": 120.0, "stage": "training", "step": 10,
                              "loss": 1.5}
    assert [e.seq for e in jobs.list_events(db, job.id, after_seq=3, limit=2)] == [4, 5]
    with pytest.raises(jobs.JobError) as e:
        jobs.request_cancel(db, job.id)
    assert e.value.code == "job_finished"
    with pytest.raises(jobs.JobError) as e:
        jobs.fail_job(db, job.id, "x", "y")
    assert e.value.code == "invalid_transition"
    with pytest.raises(jobs.JobError) as e:
        jobs.add_event(db, job.id, "loud", "message", "m")
    assert e.value.code == "invalid_value"
    with pytest.raises(jobs.JobError) as e:
        jobs.add_event(db, "job_nope", "info", "message", "m")
    assert e.value.code == "not_found"
    db.rollback()


def test_fail_and_cancel(db, org):
    a = jobs.create_job(db, org, None, {})
    jobs.start_job(db, a.id)
    jobs.fail_job(db, a.id, "out_of_memory", "CUDA OOM at batch 3", "recipe.tokens_per_batch")
    assert a.status == JobStatus.failed
    assert a.error == {"code": "out_of_memory", "message": "CUDA OOM at batch 3", "param": "recipe.tokens_per_batch"}
    jobs.fail_job(db, a.id, "other", "second")  # idempotent; keeps the first error
    assert a.error["code"] == "out_of_memory"
    assert jobs.list_events(db, a.id)[-1].level == "error"

    queued = jobs.create_job(db, org, None, {})
    jobs.request_cancel(db, queued.id)
    assert queued.status == JobStatus.cancelled and queued.cancel_requested
    with pytest.raises(jobs.JobError) as e:
        jobs.start_job(db, queued.id)  # a task delivered after the cancel does nothing
    assert e.value.code == "job_finished"
    db.rollback()

    running = jobs.create_job(db, org, None, {})
    jobs.start_job(db, running.id)
    assert not jobs.is_cancel_requested(db, running.id)
    jobs.request_cancel(db, running.id)
    assert running.status == JobStatus.running and jobs.is_cancel_requested(db, running.id)
    jobs.request_cancel(db, running.id)  # repeated: no-op
    jobs.cancel_job(db, running.id)
    assert running.status == JobStatus.cancelled and running.finished_at is not None


def test_reopen_resumes_at_the_same_stage(db, org):
    job = jobs.create_job(db, org, None, {})
    jobs.start_job(db, job.id, stage=Stage.training)
    jobs.set_result(db, job.id, Stage.preparing, {"shards": 3})
    jobs.fail_job(db, job.id, "transient_storage", "S3 timed out")
    jobs.reopen_job(db, job.id, "resumed")
    assert (job.status, job.stage, job.error, job.finished_at) == (JobStatus.queued, Stage.training, None, None)
    assert job.result == {"preparing": {"shards": 3}} and job.attempts == 1
    jobs.start_job(db, job.id)
    jobs.succeed_job(db, job.id)
    with pytest.raises(jobs.JobError) as e:
        jobs.reopen_job(db, job.id, "again")
    assert e.value.code == "job_finished"
    db.rollback()


def test_cancel_flag_is_seen_by_another_session(Session, org):
    with Session() as api, Session() as worker:
        job = jobs.create_job(api, org, None, {})
        jobs.start_job(worker, job.id)
        assert not jobs.is_cancel_requested(worker, job.id)
        jobs.request_cancel(api, job.id)
        assert jobs.is_cancel_requested(worker, job.id)


def test_concurrent_event_writers_get_gapless_sequence(Session, org):
    with Session() as s:
        job_id = jobs.create_job(s, org, None, {}).id
    n_threads, per_thread = 4, 15
    barrier = threading.Barrier(n_threads)
    errors = []

    def writer(i: int):
        try:
            with Session() as s:
                barrier.wait()
                for k in range(per_thread):
                    jobs.add_event(s, job_id, "info", "message", f"w{i} e{k}", {"w": i, "k": k})
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Session() as s:
        events = jobs.list_events(s, job_id, limit=1000)
        assert [e.seq for e in events] == list(range(1, 1 + 1 + n_threads * per_thread))
        # each writer's own events keep their order
        for i in range(n_threads):
            ks = [e.data["k"] for e in events if e.data and e.data.get("w") == i]
            assert ks == list(range(per_thread))
        assert s.get(Job, job_id).event_seq == 1 + n_threads * per_thread


def test_events_are_deleted_with_their_job(db, org):
    job = jobs.create_job(db, org, None, {})
    jobs.add_event(db, job.id, "info", "message", "hello")
    db.delete(job)
    db.commit()
    assert db.scalar(sa.select(sa.func.count()).select_from(JobEvent)) == 0


# --- auth ------------------------------------------------------------------------------------------------------


def test_api_keys(db):
    org = auth.create_org(db, "acme")
    with pytest.raises(auth.AuthError) as e:
        auth.create_org(db, "acme")
    assert e.value.code == "already_exists"
    plaintext, key = auth.create_api_key(db, org, "ci", role="admin")
    assert plaintext.startswith("td_") and len(plaintext) >= 40
    assert key.prefix == plaintext[:12] and key.role == Role.admin and key.is_admin
    # only a hash is stored: no column holds the plaintext
    row = db.execute(sa.text("SELECT * FROM api_keys")).mappings().one()
    assert plaintext not in {str(v) for v in row.values()}
    assert row["key_hash"] == hashlib.sha256(plaintext.encode()).hexdigest()  # no pepper configured

    got = auth.verify_api_key(db, plaintext)
    assert got is not None and got.id == key.id and got.last_used_at is not None
    assert auth.verify_api_key(db, plaintext[:-1] + ("A" if plaintext[-1] != "A" else "B")) is None
    assert auth.verify_api_key(db, "") is None
    assert auth.verify_api_key(db, "Bearer " + plaintext) is None
    member_plain, member = auth.create_api_key(db, org.id)
    assert member.role == Role.member
    assert [k.id for k in auth.list_api_keys(db, org)] == [key.id, member.id]
    auth.revoke_api_key(db, key.prefix, org)
    assert auth.verify_api_key(db, plaintext) is None
    assert auth.verify_api_key(db, member_plain) is not None
    assert [k.id for k in auth.list_api_keys(db, org)] == [member.id]
    with pytest.raises(auth.AuthError) as e:
        auth.create_api_key(db, org, role="root")
    assert e.value.code == "invalid_value"
    other = auth.create_org(db, "other")
    with pytest.raises(auth.AuthError) as e:
        auth.revoke_api_key(db, member.id, other)  # another org's key: not found
    assert e.value.code == "not_found"


def test_pepper_changes_the_hash():
    assert auth.hash_api_key("td_x", pepper="") == hashlib.sha256(b"td_x").hexdigest()
    assert auth.hash_api_key("td_x", pepper="s1") != auth.hash_api_key("td_x", pepper="s2")


# --- settings ---------------------------------------------------------------------------------------------------


def test_settings_defaults_and_env(monkeypatch, tmp_path: Path):
    for var in Settings.env_vars():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TRACEDRAFT_HOME", str(tmp_path / "home"))
    s = Settings()
    assert s.database_url == f"sqlite:///{tmp_path / 'home' / 'tracedraft.db'}"
    assert s.artifact_uri == f"file://{tmp_path / 'home' / 'artifacts'}"
    assert s.cache_dir == tmp_path / "home" / "cache"
    assert s.pipeline == "inline" and s.auto_migrate is True and s.is_sqlite
    assert s.result_backend == "redis://127.0.0.1:6379/1"
    monkeypatch.setenv("TRACEDRAFT_DATABASE_URL", "postgresql+psycopg://u@h/db")
    monkeypatch.setenv("TRACEDRAFT_PIPELINE", "celery")
    monkeypatch.setenv("TRACEDRAFT_MAX_UPLOAD_BYTES", "1000")
    monkeypatch.setenv("TRACEDRAFT_LOG_LEVEL", "debug")
    monkeypatch.setenv("TRACEDRAFT_ARTIFACT_STORAGE_OPTIONS", '{"endpoint_url": "http://minio:9000"}')
    s = Settings()
    assert s.database_url == "postgresql+psycopg://u@h/db" and s.auto_migrate is False
    assert s.pipeline == "celery" and s.max_upload_bytes == 1000 and s.log_level == "DEBUG"
    assert s.artifact_storage_options == {"endpoint_url": "http://minio:9000"}
    monkeypatch.setenv("TRACEDRAFT_PIPELINE", "threads")
    with pytest.raises(ValueError):
        Settings()


def test_settings_document_every_field_and_override():
    env = Settings.env_vars()
    assert set(env) == {f"TRACEDRAFT_{n.upper()}" for n in Settings.model_fields}
    assert all(len(desc) > 15 for desc in env.values()), "every setting needs a description"
    before = get_settings()
    with override_settings(max_upload_bytes=5) as s:
        assert get_settings() is s and s.max_upload_bytes == 5
    assert get_settings() is before
