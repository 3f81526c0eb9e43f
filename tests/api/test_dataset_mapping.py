"""Dataset uploads with a declared mapping (the ``mapping`` multipart part): an in-house format read with
it, the same file without it, mappings refused at upload, and the mapping kept with the dataset (stored,
covered by the dataset's sha256, referenced for gc, used by a later validation)."""

from __future__ import annotations

import hashlib

import pytest

from service import datasets as datasets_mod
from tests._mapping_helpers import MAPPING, MAPPING_FORMAT, count_sessions, inhouse_export
from tests.api.conftest import make_settings


def _post(client, tenant, data: bytes, mapping: tuple[str, bytes] | None, *, mapping_first: bool = True, **form):
    files = [("file", ("export.jsonl", data))]
    if mapping is not None:
        files.insert(0 if mapping_first else 1, ("mapping", mapping))
    return client.post("/v1/datasets", headers=tenant.h(), files=files, data=form)


def _keys(app) -> set[str]:
    return {a.key for a in app.state.store.list()}


@pytest.mark.parametrize("mapping_first", [True, False])
def test_inhouse_upload_with_its_mapping_validates_to_the_counted_conversations(client, org_a, app, db,
                                                                                mapping_first):
    data, mapping = inhouse_export(), MAPPING.read_bytes()
    expected = count_sessions(data)
    assert (expected.readable, expected.unknown_speaker) == (26, 4)  # 30 sessions, 4 with a supervisor turn
    r = _post(client, org_a, data, (MAPPING.name, mapping), mapping_first=mapping_first)
    assert r.status_code == 201, r.text
    ds = r.json()
    assert ds["status"] == "ready", ds["error"]
    assert ds["counts"]["conversations"] == expected.readable
    assert ds["counts"]["train_conversations"] + ds["counts"]["heldout_conversations"] == expected.readable
    assert ds["counts"]["calls"] == 2 * expected.readable  # two agent turns per session
    # the report says the mapping was used, and the supervisor turns are errors with their code
    assert ds["format"] == MAPPING_FORMAT and ds["report"]["formats"] == {MAPPING_FORMAT: 1}
    mapping_sha = hashlib.sha256(mapping).hexdigest()
    assert ds["report"]["mapping"] == {"file": MAPPING.name, "sha256": mapping_sha, "format": MAPPING_FORMAT}
    assert ds["report"]["problem_counts"]["error:unknown_role"] == expected.unknown_speaker
    # kept with the dataset: shown, stored content-addressed, live for gc
    assert ds["mapping"]["name"] == MAPPING.name and ds["mapping"]["sha256"] == mapping_sha
    assert ds["mapping"]["size"] == len(mapping)
    assert f"raw/{mapping_sha}" in _keys(app)
    from service.gc import live_references

    assert live_references(db, app.state.store).holder(f"raw/{mapping_sha}") == f"dataset {ds['id']} mapping file"


def test_same_file_without_the_mapping_fails_as_the_general_path_does(client, org_a, tmp_path):
    from drafters.traces.ingest import ingest

    data = inhouse_export()
    expected = count_sessions(data)
    (tmp_path / "export.jsonl").write_bytes(data)
    general = ingest([tmp_path / "export.jsonl"]).report
    general_errors = {k: n for k, n in general.problem_counts.items() if k.startswith("error:")}
    # the general path finds the turns by their speakers but not the `utterance` key; a session with a
    # speaker it does not know has no message list at all
    assert general.counts["conversations"] == 0
    assert general_errors == {"error:content_not_mapped": expected.readable,
                              "error:no_messages_found": expected.unknown_speaker}

    r = _post(client, org_a, data, None)
    assert r.status_code == 201, r.text
    ds = r.json()
    assert ds["status"] == "failed" and ds["error"]["code"] == "no_valid_conversations"
    assert ds["mapping"] is None and ds["format"] is None
    assert {k: n for k, n in ds["report"]["problem_counts"].items() if k.startswith("error:")} == general_errors
    assert "export.jsonl:1 [content_not_mapped]" in ds["error"]["message"] and "utterance" in ds["error"]["message"]
    # the mapping is part of the dataset's identity: the same file with it is another dataset
    with_mapping = _post(client, org_a, data, (MAPPING.name, MAPPING.read_bytes())).json()
    assert with_mapping["files"][0]["sha256"] == ds["files"][0]["sha256"]
    assert with_mapping["sha256"] != ds["sha256"]


ALIAS_BOMB = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n".encode() for i in range(8)
) + b"messages: $.turns\nrole: speaker\nroles: {customer: *i}\n"


@pytest.mark.parametrize("content, field", [
    (MAPPING.read_bytes().replace(b"customer: user", b"customer: human"), "(roles)"),
    (MAPPING.read_bytes().replace(b"messages: $.turns", b"messages: turns"), "(messages)"),
    (MAPPING.read_bytes() + b"colour: blue\n", "(colour)"),
    (MAPPING.read_bytes().replace(b"role: speaker\n", b""), "(role)"),
    (b"messages: [unclosed\n", None),
    (b"\xff\xfe\x00m\x00e\x00s", None),
    (ALIAS_BOMB, "((file))"),
])
def test_bad_mapping_is_refused_at_upload_with_where(client, org_a, app, content, field):
    data = inhouse_export(5)
    r = _post(client, org_a, data, ("bot.mapping.yaml", content))
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "bad_mapping" and "bot.mapping.yaml" in err["message"]
    assert err["param"] == ("bot.mapping.yaml" + (f" {field}" if field else ""))
    # refused before anything was kept: no dataset, and (sent first) not even the trace bytes
    assert client.get("/v1/datasets", headers=org_a.h()).json()["data"] == []
    assert f"raw/{hashlib.sha256(data).hexdigest()}" not in _keys(app)


def test_mapping_part_limits_and_conflicts(client, org_a):
    data, mapping = inhouse_export(5), (MAPPING.name, MAPPING.read_bytes())
    big = MAPPING.read_bytes() + b"#" * datasets_mod.MAX_MAPPING_BYTES
    r = _post(client, org_a, data, (MAPPING.name, big))
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
    assert r.json()["error"]["param"] == "mapping"
    r = client.post("/v1/datasets", headers=org_a.h(),
                    files=[("mapping", mapping), ("mapping", mapping), ("file", ("export.jsonl", data))])
    assert r.status_code == 422 and r.json()["error"]["param"] == "mapping"
    r = _post(client, org_a, data, mapping, format="openai_chat")
    assert r.status_code == 422 and r.json()["error"]["code"] == "format_and_mapping"
    assert client.get("/v1/datasets", headers=org_a.h()).json()["data"] == []


def test_large_upload_is_validated_later_with_its_stored_mapping(tmp_path, db_url, dispatched):
    """Above the inline limit the dataset stays ``validating``; the validation a job's validate stage runs
    (``service.datasets.validate_dataset``) fetches the stored mapping and reads the files with it."""
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from tests.api.conftest import _tenant

    app = create_app(make_settings(tmp_path, db_url, inline_validation_max_bytes=100))
    data = inhouse_export()
    expected = count_sessions(data)
    with TestClient(app) as client, app.state.sessionmaker() as s:
        tenant = _tenant(s, "big")
        ds = _post(client, tenant, data, (MAPPING.name, MAPPING.read_bytes())).json()
        assert ds["status"] == "validating" and ds["mapping"]["name"] == MAPPING.name
        forced = datasets_mod.validate_dataset(s, app.state.store, ds["id"], tmp_path / "w1", heldout_fraction=0.1,
                                               format="openai_chat")
        assert forced.status == "failed" and forced.error["code"] == "format_and_mapping"
        done = datasets_mod.validate_dataset(s, app.state.store, ds["id"], tmp_path / "w2", heldout_fraction=0.1)
        assert done.status == "ready", done.error
        assert done.counts["conversations"] == expected.readable and done.format == MAPPING_FORMAT
    app.state.engine.dispose()


def test_a_text_log_uploads_with_its_text_mapping(client, org_a):
    """A Markdown log of an eval (DeathMath's details file, real and public: tests/traces/fixtures/learned) with the
    text mapping ``infer-mapping --reply`` writes for it: five conversations of one call, the sections marked skip
    warned, not lost quietly."""
    from pathlib import Path

    log = Path(__file__).parents[1] / "traces" / "fixtures" / "learned" / \
        "deathmath-details-md__gpt-4o-mini__details_20250407_174507.md"
    mapping = (b"name: deathmath\ntext:\n  markers:\n    '### Task': user\n    '### Model Response': assistant\n"
               b"    '### Correct Answer': skip\n    '### Extracted Answer': skip\n    '### Score': skip\n"
               b"    '### Tokens Used': skip\n  conversation: '## Example 1'\n")
    files = [("mapping", ("deathmath.yaml", mapping)), ("file", (log.name, log.read_bytes()))]
    r = client.post("/v1/datasets", headers=org_a.h(), files=files)
    assert r.status_code == 201, r.text
    ds = r.json()
    assert ds["status"] == "ready", ds["error"]
    assert (ds["counts"]["conversations"], ds["counts"]["calls"]) == (5, 5)
    assert ds["format"] == "mapping:deathmath" and ds["report"]["problem_counts"]["warning:sections_not_read"] == 5
