"""Registry: exactly-once registration, promotion with verification and compatibility, serialized alias
moves, rollback, references, gc and diffs; on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from service import jobs, registry
from service.db import Alias, AliasEvent, Dataset, Drafter, DrafterVersion, Organization
from service.db.session import lock_row
from service.registry import RegistryError

TARGET = "HuggingFaceTB/SmolLM2-135M-Instruct"
LINEAGE = {"target_model": TARGET, "target_revision": "main", "tokenizer_sha256": "t" * 64,
           "chat_template_sha256": "c" * 64, "target_layer_ids": [1, 8, 15, 22, 28], "block_size": 7,
           "dataset_sha256s": ["d" * 64], "base_version": None, "code_version": "0.1.0"}
PASSED = {"passed": True, "reasons": ["tau +12.0% (95% CI 8.1..15.7)"]}
FAILED = {"passed": False, "reasons": ["tau gain 0.4% < min_gain 2%"]}


def make_checkpoint(root: Path, seed: int) -> Path:
    d = root / f"ckpt{seed}"
    (d / "extra").mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps({"block_size": 7, "seed": seed}))
    (d / "model.safetensors").write_bytes(os.urandom(2048) + bytes([seed]))
    (d / "extra" / "tokenizer_hash.txt").write_text("t" * 64)
    return d


@pytest.fixture
def reg(db, org, store, tmp_path):
    """register(n, gate=..., lineage=...) -> DrafterVersion, each from its own job and checkpoint."""

    def register(seed: int, gate=PASSED, lineage=None, name="smol-agent", **kw):
        job = jobs.create_job(db, org, None, {"seed": seed})
        return registry.register_version(
            db, store, org, name, TARGET, job.id, make_checkpoint(tmp_path, seed),
            config={"block_size": 7, "lr": 1e-4 * seed}, lineage=lineage or LINEAGE,
            report={"tau": {"candidate": 3.0 + seed / 10}}, gate=gate, **kw,
        )

    return register


def test_register_version(db, org, store, reg, tmp_path):
    v1 = reg(1, report_dir=None)
    assert v1.version == 1 and v1.drafter.name == "smol-agent" and v1.drafter.target_model == TARGET
    assert set(v1.files) == {"config.json", "model.safetensors", "extra/tokenizer_hash.txt"}
    assert v1.checkpoint_uri == store.uri(f"drafters/{org.id}/smol-agent/{v1.job_id}/checkpoint")
    assert v1.lineage["job_id"] == v1.job_id and v1.lineage["tokenizer_sha256"] == "t" * 64
    assert v1.size_bytes == sum((tmp_path / "ckpt1" / n).stat().st_size for n in v1.files)
    registry.verify_version(store, v1)
    assert registry.list_aliases(db, v1.drafter) == {"challenger": 1}
    (ev,) = registry.alias_history(db, org, "smol-agent")
    assert (ev.alias, ev.from_version, ev.to_version, ev.actor, ev.action) == ("challenger", None, 1, "system",
                                                                               "register")
    v2 = reg(2, gate=FAILED)
    assert v2.version == 2
    assert registry.list_aliases(db, v1.drafter) == {"challenger": 1}  # a losing version moves nothing


def test_register_is_exactly_once_per_job(db, org, store, tmp_path, Session):
    job = jobs.create_job(db, org, None, {})
    ckpt = make_checkpoint(tmp_path, 1)
    args = (store, org.id, "d", TARGET, job.id, ckpt, {"a": 1}, LINEAGE, {"tau": 3.1}, PASSED)
    a = registry.register_version(db, *args)
    b = registry.register_version(db, *args)
    assert a.id == b.id and a.version == b.version == 1
    # concurrent re-deliveries of the same registration task: still one version
    results, errors = [], []
    barrier = threading.Barrier(3)

    def again():
        try:
            with Session() as s:
                barrier.wait()
                results.append(registry.register_version(s, *args).id)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=again) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and set(results) == {a.id}
    assert db.scalar(sa.select(sa.func.count()).select_from(DrafterVersion)) == 1
    assert db.scalar(sa.select(sa.func.count()).select_from(AliasEvent)) == 1


def test_concurrent_registrations_of_different_jobs_get_distinct_versions(db, org, store, tmp_path, Session):
    job_ids = [jobs.create_job(db, org, None, {"i": i}).id for i in range(4)]
    ckpts = [make_checkpoint(tmp_path, i) for i in range(4)]
    barrier = threading.Barrier(4)
    errors = []

    def register(i):
        try:
            with Session() as s:
                barrier.wait()
                registry.register_version(s, store, org.id, "d", TARGET, job_ids[i], ckpts[i], {}, LINEAGE, None, FAILED)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=register, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    versions = db.scalars(sa.select(DrafterVersion.version).order_by(DrafterVersion.version)).all()
    assert versions == [1, 2, 3, 4]


def test_register_refuses_bad_input(db, org, store, tmp_path, reg):
    reg(1)
    with pytest.raises(RegistryError) as e:
        registry.register_version(db, store, org, "smol-agent", "other/target", None, make_checkpoint(tmp_path, 9),
                                  {}, LINEAGE)
    assert e.value.code == "incompatible_version"
    with pytest.raises(RegistryError) as e:
        registry.register_version(db, store, org, "bad name!", TARGET, None, make_checkpoint(tmp_path, 9), {}, LINEAGE)
    assert e.value.code == "invalid_value"
    with pytest.raises(RegistryError) as e:
        registry.register_version(db, store, org, "x", TARGET, None, tmp_path / "missing", {}, LINEAGE)
    assert e.value.code == "artifact_missing"


def test_failed_commit_leaves_no_entry_and_gc_collects_the_upload(db, org, store, tmp_path, monkeypatch):
    job = jobs.create_job(db, org, None, {})

    def boom(*a, **k):
        raise RuntimeError("database went away")

    monkeypatch.setattr(registry, "_move_alias", boom)
    with pytest.raises(RuntimeError):
        registry.register_version(db, store, org, "d", TARGET, job.id, make_checkpoint(tmp_path, 1), {}, LINEAGE,
                                  None, PASSED)
    db.rollback()
    assert db.scalar(sa.select(sa.func.count()).select_from(DrafterVersion)) == 0
    uploaded = [i.key for i in store.list()]
    assert len(uploaded) == 3
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=8)
    report = registry.gc(db, store, dt.timedelta(days=7), dry_run=False, now=later)
    assert sorted(report.deleted) == sorted(uploaded) and store.list() == []
    monkeypatch.undo()
    v = registry.register_version(db, store, org, "d", TARGET, job.id, make_checkpoint(tmp_path, 1), {}, LINEAGE,
                                  None, PASSED)
    assert v.version == 1  # the retry succeeds


def test_register_from_store_copy(db, org, store, tmp_path):
    job = jobs.create_job(db, org, None, {})
    src_uri, files = store.put_dir(f"jobs/{job.id}/best", make_checkpoint(tmp_path, 3))
    v = registry.register_version(db, store, org, "d", TARGET, job.id, src_uri, {}, LINEAGE,
                                  checkpoint_files=files)
    assert v.files == files and v.checkpoint_uri != src_uri
    registry.verify_version(store, v)


def test_promote_and_history(db, org, store, reg):
    v1, v2 = reg(1), reg(2)
    assert v1.drafter_id == v2.drafter_id
    m = registry.promote(db, store, org, "smol-agent", 1, actor="alice", reason="first champion")
    assert (m.alias, m.from_version, m.to_version, m.moved) == ("champion", None, 1, True)
    m = registry.promote(db, store, org, "smol-agent", 2, actor="bob", reason="v2 wins by 9%")
    assert (m.from_version, m.to_version) == (1, 2)
    assert registry.promote(db, store, org, "smol-agent", 2, actor="bob").moved is False
    assert registry.resolve_ref(db, org, "smol-agent@champion").id == v2.id
    hist = registry.alias_history(db, org, "smol-agent", "champion")
    assert [(h.from_version, h.to_version, h.actor, h.reason, h.forced) for h in hist] == [
        (None, 1, "alice", "first champion", False), (1, 2, "bob", "v2 wins by 9%", False)]
    assert all(h.ts.tzinfo is not None for h in hist)
    alias = db.scalars(sa.select(Alias).where(Alias.name == "champion")).one()
    assert alias.version == 2
    with pytest.raises(RegistryError) as e:
        registry.promote(db, store, org, "smol-agent", 7, actor="bob")
    assert e.value.code == "not_found"
    other = Organization(name="other")
    db.add(other)
    db.commit()
    with pytest.raises(RegistryError) as e:  # another organization's drafter does not exist for it
        registry.promote(db, store, other, "smol-agent", 1, actor="mallory")
    assert e.value.code == "not_found"


def test_promote_refuses_incompatible_unless_forced_with_reason(db, org, store, reg):
    reg(1)
    registry.promote(db, store, org, "smol-agent", 1, actor="alice")
    reg(2, lineage={**LINEAGE, "chat_template_sha256": "e" * 64})
    with pytest.raises(RegistryError) as e:
        registry.promote(db, store, org, "smol-agent", 2, actor="alice")
    assert e.value.code == "incompatible_version" and "chat_template_sha256" in e.value.message
    with pytest.raises(RegistryError) as e:
        registry.promote(db, store, org, "smol-agent", 2, actor="alice", force=True)
    assert e.value.code == "reason_required"
    assert registry.list_aliases(db, registry.get_drafter(db, org, "smol-agent"))["champion"] == 1
    m = registry.promote(db, store, org, "smol-agent", 2, actor="alice", force=True, reason="template fix")
    assert m.moved and m.overridden and "chat_template_sha256" in m.overridden[0]
    assert registry.alias_history(db, org, "smol-agent", "champion")[-1].forced is True


def test_champion_needs_a_passed_gate_or_force_with_a_reason(db, org, store, reg):
    reg(1)
    registry.promote(db, store, org, "smol-agent", 1, actor="alice")
    reg(2, gate=FAILED)
    reg(3, gate=None)  # registered without an evaluation: no gate decision
    for v, why in ((2, "tau gain 0.4% < min_gain 2%"), (3, "no gate decision recorded")):
        plan = registry.promote(db, store, org, "smol-agent", v, actor="alice", dry_run=True)
        assert not plan.moved and plan.from_version == 1 and why in plan.overridden[0]
        with pytest.raises(RegistryError) as e:
            registry.promote(db, store, org, "smol-agent", v, actor="alice", reason="I like it")
        assert e.value.code == "gate_not_passed" and why in e.value.message
        with pytest.raises(RegistryError) as e:
            registry.promote(db, store, org, "smol-agent", v, actor="alice", force=True)
        assert e.value.code == "reason_required"
    assert registry.list_aliases(db, registry.get_drafter(db, org, "smol-agent"))["champion"] == 1
    # other aliases do not need a gate; champion moves when forced with a reason, recorded as forced
    assert registry.promote(db, store, org, "smol-agent", 2, "canary", actor="alice").moved
    m = registry.promote(db, store, org, "smol-agent", 2, actor="alice", force=True, reason="hotfix, gate flaky")
    assert m.moved and m.overridden == ["gate not passed for v2: tau gain 0.4% < min_gain 2%"]
    last = registry.alias_history(db, org, "smol-agent", "champion")[-1]
    assert last.forced is True and last.reason.startswith("hotfix, gate flaky [forced past: gate not passed")
    # a rollback to a version that never held champion is checked the same way
    with pytest.raises(RegistryError) as e:
        registry.rollback(db, store, org, "smol-agent", to_version=3, actor="bob", reason="x")
    assert e.value.code == "gate_not_passed" and e.value.where == "to_version"
    plan = registry.rollback(db, store, org, "smol-agent", actor="bob", dry_run=True)
    assert (plan.from_version, plan.to_version, plan.moved) == (2, 1, False)
    assert registry.list_aliases(db, registry.get_drafter(db, org, "smol-agent"))["champion"] == 2


def test_version_score_tolerates_every_report_shape():
    assert registry.version_score(None) == {"tau": None, "speedup_vs_plain": None, "gate": None}
    full = {"proposers": {"candidate": {"tau": 3.2, "speedup_vs_plain": 1.7, "new_key": [1]}, "ngram": {"tau": 2}}}
    assert registry.version_score(full, PASSED) == {"tau": 3.2, "speedup_vs_plain": 1.7, "gate": True}
    no_speed = {"proposers": {"candidate": {"tau": 3.2}}}
    assert registry.version_score(no_speed, FAILED) == {"tau": 3.2, "speedup_vs_plain": None, "gate": False}
    named = {"proposers": {"mine": {"tau": 2.5, "speedup_vs_plain": "n/a"}}}
    assert registry.version_score(named, {"passed": True, "details": {"candidate": "mine"}})["tau"] == 2.5
    assert registry.version_score({"tau": {"candidate": 3.1}})["tau"] == 3.1
    assert registry.version_score({"proposers": "odd"})["tau"] is None


def test_promote_refuses_tampered_or_missing_checkpoint(db, org, store, reg):
    v1 = reg(1)
    registry.promote(db, store, org, "smol-agent", 1, actor="alice")
    v2 = reg(2)
    assert v2.version == 2
    path = store._path(store.key(v2.checkpoint_uri) + "/model.safetensors")
    with store.fs.open(path, "rb") as f:
        data = bytearray(f.read())
    data[100] ^= 0xFF  # one flipped byte
    with store.fs.open(path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(RegistryError) as e:
        registry.promote(db, store, org, "smol-agent", 2, actor="alice", force=True, reason="even forced")
    assert e.value.code == "checksum_mismatch" and "model.safetensors" in e.value.message
    v3 = reg(3)
    store.delete(v3.checkpoint_uri + "/config.json")
    with pytest.raises(RegistryError) as e:
        registry.promote(db, store, org, "smol-agent", 3, actor="alice")
    assert e.value.code == "artifact_missing" and "config.json" in e.value.message
    assert registry.list_aliases(db, v1.drafter)["champion"] == 1
    assert len(registry.alias_history(db, org, "smol-agent", "champion")) == 1


def test_rollback(db, org, store, reg):
    for i in (1, 2, 3):
        reg(i)
        registry.promote(db, store, org, "smol-agent", i, actor="alice")
    m = registry.rollback(db, store, org, "smol-agent", actor="bob", reason="v3 regressed")
    assert (m.from_version, m.to_version) == (3, 2)
    m = registry.rollback(db, store, org, "smol-agent", actor="bob")
    assert (m.from_version, m.to_version) == (2, 1)  # repeated rollbacks walk further back
    with pytest.raises(RegistryError) as e:
        registry.rollback(db, store, org, "smol-agent", actor="bob")
    assert e.value.code == "nothing_to_rollback"
    m = registry.rollback(db, store, org, "smol-agent", to_version=3, actor="bob", reason="fixed serving")
    assert (m.from_version, m.to_version) == (1, 3)
    hist = registry.alias_history(db, org, "smol-agent", "champion")
    assert [(h.action, h.from_version, h.to_version) for h in hist][-3:] == [
        ("rollback", 3, 2), ("rollback", 2, 1), ("rollback", 1, 3)]
    with pytest.raises(RegistryError) as e:
        registry.rollback(db, store, org, "smol-agent", alias="production", actor="bob")
    assert e.value.code == "nothing_to_rollback"


def test_resolve_ref(db, org, reg):
    v1, v2 = reg(1), reg(2, gate=FAILED)
    assert registry.resolve_ref(db, org, "smol-agent@v2").id == v2.id
    assert registry.resolve_ref(db, org, "smol-agent:1").id == v1.id
    assert registry.resolve_ref(db, org, "smol-agent@latest").id == v2.id
    assert registry.resolve_ref(db, org, "smol-agent@challenger").id == v1.id
    for ref, code in [("smol-agent", "not_found"), ("smol-agent@v9", "not_found"), ("nope@v1", "not_found"),
                      ("a@b@c", "invalid_ref"), ("", "invalid_ref"), ("x:y", "invalid_ref")]:
        with pytest.raises(RegistryError) as e:
            registry.resolve_ref(db, org, ref)
        assert e.value.code == code, ref


def test_diff_versions(reg):
    v1 = reg(1)
    v2 = reg(2, lineage={**LINEAGE, "base_version": "smol-agent@v1"})
    d = registry.diff_versions(v1, v2)
    assert d["config"] == {"lr": [1e-4, 2e-4]}
    assert d["lineage"]["base_version"] == [None, "smol-agent@v1"]
    assert d["lineage"]["job_id"] == [v1.job_id, v2.job_id]
    assert d["report"] == {"tau.candidate": [3.1, 3.2]}
    assert d["score"] == {"tau": [3.1, 3.2]} and d["recipe"] == {} and d["data"] == {}
    assert d["files"] == {"added": [], "removed": [], "changed": ["config.json", "model.safetensors"]}


def test_gc(db, org, store, reg):
    v1 = reg(1)
    registry.promote(db, store, org, "smol-agent", 1, actor="alice")
    raw = store.put_raw(b"dataset bytes")
    db.add(Dataset(org_id=org.id, sha256=raw.sha256, raw_uri=raw.uri))
    running = jobs.create_job(db, org, None, {})
    store.put_bytes(f"jobs/{running.id}/step_000010/model.safetensors", b"in progress")
    done = jobs.create_job(db, org, None, {})
    jobs.succeed_job(db, done.id)  # finished for good: only what its result names stays
    best = store.put_bytes(f"jobs/{done.id}/best/model.safetensors", b"kept: referenced by result")
    store.put_bytes(f"jobs/{done.id}/step_000005/model.safetensors", b"stale working file")
    jobs.set_result(db, running.id, "training", {"best": best.uri})  # any store URI in a result is kept
    store.put_bytes("orphans/upload.bin", b"never referenced")
    db.commit()

    assert registry.gc(db, store, dt.timedelta(hours=1), dry_run=False).deleted == []  # all too recent
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    dry = registry.gc(db, store, 24.0, dry_run=True, now=later)
    assert sorted(dry.deleted) == sorted([f"jobs/{done.id}/step_000005/model.safetensors", "orphans/upload.bin"])
    assert dry.bytes_freed == len(b"stale working file") + len(b"never referenced")
    assert store.exists("orphans/upload.bin")  # dry run deletes nothing
    real = registry.gc(db, store, 24.0, dry_run=False, now=later)
    assert real.deleted == dry.deleted and not store.exists("orphans/upload.bin")
    registry.verify_version(store, v1)  # the champion's files are intact
    assert store.exists(raw.uri) and store.exists(best.uri)
    assert store.exists(f"jobs/{running.id}/step_000010/model.safetensors")


def test_promotion_waits_for_the_drafter_lock(Session, db, org, store, reg):
    """While one transaction holds the drafter row, another promotion blocks, then sees its result."""
    reg(1), reg(2), reg(3)
    registry.promote(db, store, org, "smol-agent", 1, actor="init")
    drafter_id = registry.get_drafter(db, org, "smol-agent").id
    done = threading.Event()
    result = {}

    with Session() as holder:
        d = lock_row(holder, Drafter, drafter_id)

        def other():
            with Session() as s:
                result["move"] = registry.promote(s, store, org.id, "smol-agent", 3, actor="bob", reason="b")
            done.set()

        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.6)
        assert not done.is_set(), "the second promotion did not wait for the row lock"
        v2 = registry.get_version(holder, d, 2)
        registry._move_alias(holder, d, "champion", v2, actor="alice", action="promote", reason="a", forced=False)
        holder.commit()
    t.join(timeout=30)
    assert done.is_set()
    assert (result["move"].from_version, result["move"].to_version) == (2, 3)
    hist = registry.alias_history(db, org, "smol-agent", "champion")
    assert [(h.from_version, h.to_version) for h in hist] == [(None, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("rounds", [4])
def test_concurrent_promotions_serialize(Session, db, org, store, reg, rounds):
    """Two admins promote different versions at once: the alias ends on one of them and the history has
    two rows in a serial order (the second move starts from the first one's version)."""
    reg(1), reg(2), reg(3)
    for r in range(rounds):
        registry.promote(db, store, org, "smol-agent", 1, actor="reset", reason=f"round {r}")
        barrier = threading.Barrier(2)
        errors = []

        def promote(version, barrier=barrier, errors=errors, r=r):
            try:
                with Session() as s:
                    barrier.wait()
                    registry.promote(s, store, org.id, "smol-agent", version, actor=f"admin{version}",
                                     reason=f"r{r}")
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=promote, args=(v,)) for v in (2, 3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        with Session() as s:
            hist = [h for h in registry.alias_history(s, org.id, "smol-agent", "champion") if h.reason == f"r{r}"]
            assert len(hist) == 2
            first, second = hist
            assert first.from_version == 1 and second.from_version == first.to_version
            assert {first.to_version, second.to_version} == {2, 3}
            assert registry.list_aliases(s, registry.get_drafter(s, org.id, "smol-agent"))["champion"] == \
                second.to_version


def test_alias_names_are_validated(db, org, store, reg):
    reg(1)
    for bad in ("v2", "latest", "Has Space", ""):
        with pytest.raises(RegistryError) as e:
            registry.promote(db, store, org, "smol-agent", 1, alias=bad, actor="a")
        assert e.value.code == "invalid_value"
    m = registry.promote(db, store, org, "smol-agent", 1, alias="canary-eu", actor="a")
    assert m.moved and registry.resolve_ref(db, org, "smol-agent@canary-eu").version == 1


def test_auto_promotion(db, org, store, reg):
    v1 = reg(1, auto_promote=True)
    assert registry.list_aliases(db, v1.drafter) == {"challenger": 1, "champion": 1}
    reg(2, auto_promote=True, lineage={**LINEAGE, "tokenizer_sha256": "x" * 64})  # incompatible: challenger only
    assert registry.list_aliases(db, v1.drafter) == {"challenger": 2, "champion": 1}
