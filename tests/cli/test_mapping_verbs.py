"""``--mapping`` on the verbs that create datasets: ``datasets upload`` (through the running API) and
``tracedraft run`` (the embedded job; its pipeline is stopped right after the dataset and job exist, so
no model runs)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drafters.errors import TracedraftError
from tests._mapping_helpers import MAPPING, MAPPING_FORMAT, count_sessions, inhouse_export


def _bad_mapping(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.mapping.yaml"
    bad.write_text(MAPPING.read_text(encoding="utf-8").replace("agent: assistant", "agent: bot"), encoding="utf-8")
    return bad


def test_datasets_upload_with_mapping(stack, cli, tmp_path: Path):
    export = tmp_path / "export.jsonl"
    export.write_bytes(inhouse_export())
    expected = count_sessions(export.read_bytes())
    r = cli("datasets", "upload", export, "--mapping", MAPPING, "--wait", "--json")
    assert r.code == 0, r.err
    ds = r.json
    assert ds["status"] == "ready" and ds["counts"]["conversations"] == expected.readable
    assert ds["format"] == MAPPING_FORMAT
    assert ds["mapping"]["sha256"] == hashlib.sha256(MAPPING.read_bytes()).hexdigest()
    r = cli("datasets", "show", ds["id"])
    assert r.code == 0 and f"read with the declared mapping {MAPPING.name}" in r.out

    r = cli("datasets", "upload", export, "--mapping", _bad_mapping(tmp_path))
    assert r.code == 2 and r.err.startswith("error [bad_mapping]"), r.err
    assert "(at bad.mapping.yaml (roles))" in r.err
    assert cli("datasets", "upload", export, "--mapping", tmp_path / "nope.yaml").code == 1  # file_not_found, as from run
    assert [d["id"] for d in cli("datasets", "list", "--json").json] == [ds["id"]]


@pytest.fixture
def embedded_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``run(*args)`` drives ``tracedraft run`` in-process on a private SQLite database and artifact
    directory; the pipeline stops with ``stopped_for_test`` once the job exists. Yields (run, started job
    ids, settings)."""
    from service import embedded
    from service.cli import app
    from service.db.session import upgrade
    from service.settings import Settings

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    upgrade(url)
    settings = Settings(home=tmp_path / "home", database_url=url, artifact_uri=f"file://{tmp_path / 'artifacts'}",
                        pipeline="inline")
    started: list[tuple[str, str]] = []

    def stop(_settings, job_id, stage, _console):
        started.append((job_id, stage))
        raise TracedraftError("stopped_for_test", "the pipeline does not run in this test")

    monkeypatch.setattr(embedded, "default_settings", lambda: settings)
    monkeypatch.setattr(embedded, "run_job", stop)
    runner = CliRunner()

    def run(*args: object):
        return runner.invoke(app, ["run", *map(str, args), "--target", "smollm2-135m-instruct"],
                             catch_exceptions=False)

    return run, started, settings


def test_run_keeps_the_mapping_with_its_dataset(embedded_run, tmp_path: Path):
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from service import datasets
    from service.db.models import Dataset, Job
    from service.db.session import make_engine
    from service.storage import ArtifactStore

    run, started, settings = embedded_run
    export = tmp_path / "export.jsonl"
    export.write_bytes(inhouse_export())
    r = run(export, "--mapping", MAPPING)
    assert r.exit_code == 1 and "[stopped_for_test]" in r.stderr, r.stderr
    ((job_id, stage),) = started
    assert stage == "validate"
    engine = make_engine(settings.database_url)
    with Session(engine) as s:
        ds = s.get(Dataset, s.get(Job, job_id).dataset_id)
        assert datasets.mapping_entry(ds)["sha256"] == hashlib.sha256(MAPPING.read_bytes()).hexdigest()
        done = datasets.validate_dataset(s, ArtifactStore.from_settings(settings), ds.id, tmp_path / "work",
                                         heldout_fraction=0.1)
        assert done.status == "ready", done.error
        assert done.counts["conversations"] == count_sessions(export.read_bytes()).readable
        assert done.report["mapping"]["format"] == MAPPING_FORMAT
        assert len(s.scalars(select(Dataset)).all()) == 1
    engine.dispose()


@pytest.mark.parametrize("extra, code", [
    (("--mapping", "BAD"), "bad_mapping"),
    (("--mapping", "MISSING"), "file_not_found"),
    (("--mapping", MAPPING, "--format", "openai_chat"), "format_and_mapping"),
])
def test_run_refuses_a_mapping_before_anything_is_created(embedded_run, tmp_path: Path, extra, code):
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    from service.db.models import Dataset, Job
    from service.db.session import make_engine

    run, started, settings = embedded_run
    export = tmp_path / "export.jsonl"
    export.write_bytes(inhouse_export(5))
    paths = {"BAD": _bad_mapping(tmp_path), "MISSING": tmp_path / "missing.yaml"}
    r = run(export, *[paths.get(a, a) if isinstance(a, str) else a for a in extra])
    assert r.exit_code == 1 and f"error [{code}]" in r.stderr, r.stderr
    assert started == []
    engine = make_engine(settings.database_url)
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(Dataset)) == 0
        assert s.scalar(select(func.count()).select_from(Job)) == 0
    engine.dispose()


def test_validate_refuses_a_format_with_a_mapping(cli, tmp_path: Path):
    """`datasets validate` refuses --format with --mapping as `run` and the API do (it read with the
    mapping and ignored --format)."""
    export = tmp_path / "export.jsonl"
    export.write_bytes(inhouse_export(3))
    r = cli("datasets", "validate", export, "--mapping", MAPPING, "--format", "openai_chat", api=False)
    assert r.code == 1 and "error [format_and_mapping]" in r.err, (r.code, r.err)
    assert cli("datasets", "validate", export, "--mapping", MAPPING, api=False).code == 0
