"""Garbage collection keeps everything a live row references (every kind of reference), deletes the rest
past the retention, and says why; ``tracedraft gc --dry-run`` lists nothing live."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service import datasets, jobs
from service.db.models import Drafter, DrafterVersion, Job
from service.gc import gc, live_references

REPO = Path(__file__).resolve().parents[2]
LATER = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)


def _live_world(db, org, store) -> tuple[set[str], set[str]]:
    """Rows with every kind of store reference, plus orphans. Returns (live keys, orphan keys)."""
    live: set[str] = set()

    def put(key: str, data: bytes) -> str:
        stored = store.put_bytes(key, data)
        live.add(key)
        return stored.uri

    # a three-file dataset: files 2..3 are referenced only through the manifest, not raw_uri
    ds = datasets.create_dataset(
        db, store, org.id, [(f"part{i}.jsonl", io.BytesIO(f"file {i}".encode())) for i in range(3)]
    )
    live |= {store.key(f["uri"]) for f in datasets.raw_files(ds)}
    assert len(live) == 3
    ds.canonical_uri = put(f"datasets/{ds.id}/canonical-train.jsonl", b"train")
    put(f"datasets/{ds.id}/canonical-heldout.jsonl", b"heldout")  # only the dataset's prefix names it
    put(f"datasets/{ds.id}/report.json", b"{}")

    # a registered version: checkpoint files, a published export, a report
    drafter = Drafter(org_id=org.id, name="d", target_model="t")
    db.add(drafter)
    db.flush()
    ckpt = put("versions/d/v1/model.safetensors", b"weights").rsplit("/", 1)[0]
    put("versions/d/v1/config.json", b"{}")
    put("versions/d/v1/exports/draft-f32.gguf", b"gguf")
    rep = put("versions/d/v1/report/report.html", b"<html>").rsplit("/", 1)[0]
    db.add(
        DrafterVersion(
            drafter_id=drafter.id,
            version=1,
            checkpoint_uri=ckpt,
            files={"model.safetensors": "a", "config.json": "b", "exports/draft-f32.gguf": "c"},
            report_uri=rep,
            report_files={"report.html": "d"},
        )
    )

    # a succeeded job: its result's URIs stay, its other working files go
    done = jobs.create_job(db, org, ds, {})
    shards = put(f"jobs/{done.id}/shards/train-000.bin", b"shards")
    jobs.set_result(db, done.id, "preparing", {"shards": {"uri": shards}})
    jobs.succeed_job(db, done.id)
    orphans = {f"jobs/{done.id}/checkpoints/step_000010/model.safetensors"}
    store.put_bytes(next(iter(orphans)), b"stale")

    # a failed job that can resume: its checkpoints (named by a checkpoint event) stay
    failed = jobs.create_job(db, org, ds, {})
    step = put(f"jobs/{failed.id}/checkpoints/step_000020/model.safetensors", b"resume from here")
    jobs.add_event(
        db,
        failed.id,
        "info",
        "metrics",
        "checkpoint saved",
        {"checkpoint": {"latest": {"uri": step.rsplit("/", 1)[0], "files": {"model.safetensors": "x"}}}},
    )
    jobs.fail_job(db, failed.id, "worker_lost", "the worker died")

    # a cancelled job (resumable too) and a running one: whole working prefixes stay
    cancelled = jobs.create_job(db, org, ds, {})
    put(f"jobs/{cancelled.id}/checkpoints/step_000005/model.safetensors", b"cancelled run")
    jobs.cancel_job(db, cancelled.id)
    running = jobs.create_job(db, org, ds, {})
    jobs.start_job(db, running.id)
    put(f"jobs/{running.id}/prepare/shard.bin", b"in progress")

    orphans.add("orphans/upload.bin")
    store.put_bytes("orphans/upload.bin", b"never referenced")
    orphans.add("raw/.tmp-0123-upload")
    store.put_bytes("raw/.tmp-0123-upload", b"interrupted")
    db.commit()
    return live, orphans


def test_gc_keeps_every_live_reference_and_explains_each_deletion(db, org, store):
    live, orphans = _live_world(db, org, store)
    assert {i.key for i in store.list()} == live | orphans

    refs = live_references(db, store)
    for key in live:
        assert refs.holder(key) is not None, key
    assert refs.holder("orphans/upload.bin") is None

    dry = gc(db, store, 24.0, dry_run=True, now=LATER)
    assert set(dry.deleted) == orphans
    reasons = {c.key: c.reason for c in dry.candidates}
    assert reasons["orphans/upload.bin"].startswith("no dataset, version or job references it")
    assert "over the 24 h retention" in reasons["orphans/upload.bin"]
    assert reasons["raw/.tmp-0123-upload"].startswith("temporary file of an interrupted write")
    assert dry.to_dict()["candidates"][0]["reason"]
    assert {i.key for i in store.list()} == live | orphans  # a dry run deletes nothing

    real = gc(db, store, 24.0, dry_run=False, now=LATER)
    assert set(real.deleted) == orphans and real.kept_referenced == len(live)
    assert {i.key for i in store.list()} == live
    # the multi-file dataset is whole: every raw file still verifies against its manifest
    ds = db.query(Job).filter(Job.status == "succeeded").one().dataset
    for f in datasets.raw_files(ds):
        store.verify(f["uri"], f["sha256"], f["size"])


def test_gc_keeps_recent_unreferenced_files(db, org, store):
    store.put_bytes("orphans/new.bin", b"just written")
    report = gc(db, store, 24.0, dry_run=False)
    assert report.deleted == [] and report.kept_recent == 1 and store.exists("orphans/new.bin")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_cli_gc_dry_run_lists_nothing_live(db, org, store, db_url, tmp_path):
    live, orphans = _live_world(db, org, store)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TRACEDRAFT_HOME": str(tmp_path / "home"),
        "TRACEDRAFT_DATABASE_URL": db_url,
        "TRACEDRAFT_ARTIFACT_URI": store.root_uri,
    }
    out = subprocess.run(
        [sys.executable, "-m", "service.cli", "gc", "--dry-run", "--retention-hours", "0", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed = json.loads(out.stdout)
    assert set(listed["deleted"]) == orphans  # files younger than an hour: retention 0 lists them all
    assert not set(listed["deleted"]) & live
    assert all(c["reason"] for c in listed["candidates"])
