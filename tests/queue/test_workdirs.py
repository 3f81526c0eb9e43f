"""Work directories: no raw copy outlives validation, a finished job's directory goes, a resumable one
keeps only what its resume reads (no broker, no worker: the cleanup functions and the inline pipeline)."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pytest

from service import datasets
from service.db.models import Organization
from service.db.session import make_engine, upgrade
from service.storage import ArtifactStore
from workers import workdirs


def _fill(workdir: Path, result_local: Path | None = None) -> None:
    for name in (
        "raw/000-abc.jsonl",
        "canonical/train.jsonl",
        "prepared/train.safetensors",
        "checkpoints/step_000010/model.safetensors",
        "best/model.safetensors",
        "engine-logs/x.log",
    ):
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text("x")


def test_finish_succeeded_removes_the_directory(tmp_path):
    w = tmp_path / "work" / "job_1"
    _fill(w)
    removed = workdirs.finish(w, "succeeded")
    assert "raw" in removed and not w.exists()


@pytest.mark.parametrize("status", ["failed", "cancelled"])
def test_finish_resumable_keeps_checkpoints_and_local_results(tmp_path, status):
    w = tmp_path / "work" / "job_1"
    _fill(w)
    result = {"validating": {"canonical": {"uri": None, "files": {}, "local": str(w / "canonical")}}}
    workdirs.finish(w, status, result)
    assert sorted(p.name for p in w.iterdir()) == ["canonical", "checkpoints"]
    assert (w / "checkpoints/step_000010/model.safetensors").is_file()


def test_prune_removes_finished_missing_and_expired(tmp_path):
    now = dt.datetime.now(dt.UTC)
    for job in ("job_ok", "job_gone", "job_old_fail", "job_new_fail", "job_running"):
        _fill(tmp_path / "work" / job)
    states = {
        "job_ok": ("succeeded", now),
        "job_old_fail": ("failed", now - dt.timedelta(days=4)),
        "job_new_fail": ("failed", now - dt.timedelta(hours=1)),
        "job_running": ("running", None),
    }
    removed = workdirs.prune(tmp_path, lambda ids: {i: states[i] for i in ids if i in states}, 72, now=now)
    assert removed == ["job_gone", "job_ok", "job_old_fail"]
    assert not (tmp_path / "work/job_new_fail/raw").exists()  # a failed job's leftover raw copy goes
    assert (tmp_path / "work/job_new_fail/checkpoints").is_dir()
    assert (tmp_path / "work/job_running/raw").is_dir()  # a running validation still reads it


def test_validation_removes_its_raw_copies(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    upgrade(url)
    from sqlalchemy.orm import Session

    engine = make_engine(url)
    store = ArtifactStore(f"file://{tmp_path / 'artifacts'}")
    rec = b'{"messages": [{"role": "user", "content": "hi %d"}, {"role": "assistant", "content": "ok"}]}\n'
    data = b"".join(rec.replace(b"%d", str(i).encode()) for i in range(20))
    with Session(engine) as s:
        org = Organization(name="o")
        s.add(org)
        s.commit()
        ds = datasets.create_dataset(
            s, store, org.id, [("a.jsonl", io.BytesIO(data)), ("b.jsonl", io.BytesIO(data[:200]))]
        )
        work = tmp_path / "work" / "job_x"
        out = datasets.validate_dataset(s, store, ds.id, work, heldout_fraction=0.2)
        assert out.status == "ready", out.error
    assert not (work / "raw").exists()
    assert (work / "canonical" / "train.jsonl").is_file()  # scrubbed canonical form only
    engine.dispose()
