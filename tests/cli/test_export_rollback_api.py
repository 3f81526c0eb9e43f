"""``drafters export`` through the API's files route (sha256 checked by the server and by the CLI, nothing
partial left on error), ``rollback`` through the API's rollback route (recorded as a rollback), and the
server's target allow-list as the CLI reports it; on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any

import pytest

from service.cli._common import CliError
from tests.cli.conftest import LINEAGE


def _files(stack, version: int) -> dict[str, str]:
    from service import registry

    with stack.Session() as s:
        return dict(registry.get_version(s, registry.get_drafter(s, stack.org, "smol-agent"), version).files)


def _stored(stack, version: int, name: str) -> Path:
    from service import registry

    with stack.Session() as s:
        v = registry.get_version(s, registry.get_drafter(s, stack.org, "smol-agent"), version)
        return Path(stack.store.root) / stack.store.key(v.checkpoint_uri) / name


def test_export_downloads_through_the_api_and_verifies(stack, cli, tmp_path, monkeypatch):
    stack.register(1)
    stack.register(2)
    # The CLI must not read the artifact store itself (a user's machine has no access to it).
    from service.cli import _common, registry_admin, registry_cmds

    for mod in (_common, registry_admin, registry_cmds):
        monkeypatch.setattr(mod, "artifact_store", lambda: pytest.fail("export read the store directly"))

    out = tmp_path / "deep"
    r = cli("drafters", "export", "smol-agent", "latest", out, "--format", "deepspec", "--json")
    assert r.code == 0, r.err
    files = _files(stack, 2)
    assert r.json["files"] == files and r.json["version"] == 2
    for name, digest in files.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in out.iterdir()) == ["SHA256SUMS", "config.json", "model.safetensors"]
    assert (out / "SHA256SUMS").read_text() == "".join(f"{d}  {f}\n" for f, d in sorted(files.items()))

    ready = tmp_path / "ready"
    r = cli("drafters", "export", "smol-agent", "1", ready, "--format", "gguf-ready")
    assert r.code == 0, r.err
    assert "sha256 verified" in r.out and "--spec-draft-n-max 7" in (ready / "README.md").read_text()

    # A stored file altered after registration: the server refuses it (409) -> exit 4, nothing written,
    # and the directory this call would have created does not exist.
    _stored(stack, 1, "model.safetensors").write_bytes(b"tampered")
    bad = tmp_path / "bad"
    r = cli("drafters", "export", "smol-agent", "1", bad)
    assert r.code == 4 and "[checksum_mismatch]" in r.err
    assert not bad.exists()
    # An existing directory keeps what it had and gains nothing (config.json sorted first was fetched fine).
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    r = cli("drafters", "export", "smol-agent", "1", keep)
    assert r.code == 4
    assert [p.name for p in keep.iterdir()] == ["notes.txt"]
    # Unknown version / another organization's drafter: not found (exit 3), nothing created.
    assert cli("drafters", "export", "smol-agent", "9", tmp_path / "nine").code == 3
    assert not (tmp_path / "nine").exists()


class _FakeResponse:
    def __init__(self, chunks: list[bytes], headers: dict[str, str]):
        self._chunks, self.headers = chunks, headers

    def iter_bytes(self):
        for c in self._chunks:
            if isinstance(c, Exception):
                raise c
            yield c


class _FakeClient:
    """Serves ``bodies[file name]`` (a list of chunks, an exception among them cuts the stream)."""

    def __init__(self, bodies: dict[str, list[Any]], headers: dict[str, dict[str, str]] | None = None):
        self.bodies, self.headers, self.urls = bodies, headers or {}, []

    @contextlib.contextmanager
    def stream(self, method: str, url: str):
        self.urls.append(url)
        name = url.split("/files/", 1)[1]
        yield _FakeResponse(self.bodies[name], self.headers.get(name, {}))


def test_download_checks_hashes_client_side_and_leaves_nothing(tmp_path):
    from service.cli.registry_api import download_files

    good = {"a.json": b"{}", "b.bin": b"weights", "sub dir/c.bin": b"c"}
    view = {"drafter": "my drafter", "version": 3,
            "files": {k: hashlib.sha256(v).hexdigest() for k, v in good.items()}}

    out = tmp_path / "ok"
    client = _FakeClient({"a.json": [b"{}"], "b.bin": [b"wei", b"ghts"], "sub%20dir/c.bin": [b"c"]})
    assert download_files(client, view, out) == view["files"]
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == set(good)
    assert client.urls[0] == "/v1/drafters/my%20drafter/versions/3/files/a.json"
    # Intact files are not fetched again.
    client = _FakeClient({})
    download_files(client, view, out)
    assert client.urls == []

    # The server sends other bytes than registered (a proxy, a bug): refused, nothing left.
    for name, bodies, headers in (
        ("wrong", {"a.json": [b"{}"], "b.bin": [b"WEIGHTS"], "sub%20dir/c.bin": [b"c"]}, {}),
        ("short", {"a.json": [b"{}"], "b.bin": [b"wei"], "sub%20dir/c.bin": [b"c"]}, {}),
        ("cut", {"a.json": [b"{}"], "b.bin": [b"wei", CliError("unavailable", "connection reset")],
                 "sub%20dir/c.bin": [b"c"]}, {}),
        ("header", {"a.json": [b"{}"], "b.bin": [b"weights"], "sub%20dir/c.bin": [b"c"]},
         {"b.bin": {"x-content-sha256": "0" * 64}}),
    ):
        dest = tmp_path / name
        with pytest.raises(CliError) as e:
            download_files(_FakeClient(bodies, headers), view, dest)
        assert e.value.code == ("unavailable" if name == "cut" else "checksum_mismatch"), name
        assert not dest.exists(), f"{name}: left {list(dest.rglob('*'))}"
    # A registry name escaping the directory is refused before anything is written.
    with pytest.raises(CliError) as e:
        download_files(_FakeClient({}), {**view, "files": {"../evil": "0" * 64}}, tmp_path / "evil")
    assert e.value.code == "invalid_value" and not (tmp_path / "evil").exists()


def test_rollback_uses_the_rollback_route(stack, cli):
    for seed in (1, 2):
        stack.register(seed)
    for v in (1, 2):
        assert cli("promote", "smol-agent", str(v), "--reason", f"to v{v}", "--yes", key="admin").code == 0
    r = cli("rollback", "smol-agent", "--reason", "latency regression", "--yes", "--json", key="admin")
    assert r.code == 0, r.err
    assert r.json == {"drafter": "smol-agent", "alias": "champion", "from_version": 2, "to_version": 1,
                      "moved": True, "overridden": [], "dry_run": False}
    r = cli("alias", "history", "smol-agent", "--alias", "champion", "--json")
    last = r.json[-1]
    assert (last["action"], last["from_version"], last["to_version"], last["reason"]) == (
        "rollback", 2, 1, "latency regression")
    assert last["actor"].startswith("key:td_")
    # Going back to a version that never held the alias and is incompatible: refused, then forced.
    other = stack.register(3, lineage={**LINEAGE, "tokenizer_sha256": "u" * 64})
    r = cli("rollback", "smol-agent", "--to", str(other), "--yes", key="admin")
    assert r.code == 4 and "[incompatible_version]" in r.err
    r = cli("rollback", "smol-agent", "--to", f"v{other}", "--force", "--reason", "tokenizer rollout", "--yes",
            "--json", key="admin")
    assert r.code == 0 and r.json["overridden"] and r.json["to_version"] == other
    # A checksum failure on the version to go back to: exit 4, nothing moves.
    _stored(stack, 1, "config.json").write_bytes(b"{}")
    r = cli("rollback", "smol-agent", "--to", "1", "--yes", key="admin")
    assert r.code == 4 and "[checksum_mismatch]" in r.err
    assert cli("drafters", "show", "smol-agent", "champion", "--json").json["version"] == other
    # Unknown drafter: exit 3; bad --to: exit 2.
    assert cli("rollback", "ghost", "--yes", key="admin").code == 3
    assert cli("rollback", "smol-agent", "--to", "champion", "--yes", key="admin").code == 2


def test_submit_with_a_target_the_server_does_not_allow(stack, cli):
    from tests.cli.conftest import EXAMPLE_TRACE

    ds = cli("datasets", "upload", EXAMPLE_TRACE, "--wait", "--json").json
    r = cli("jobs", "submit", "--dataset", ds["id"], "--target", "/etc/passwd")
    assert r.code == 2 and "[target_not_allowed]" in r.err and "(at target.model)" in r.err
    r = cli("jobs", "submit", "--dataset", ds["id"], "--target", "Qwen/Qwen3-4B")
    assert r.code == 2 and "[target_not_allowed]" in r.err
    assert cli("jobs", "list", "--json").json == []
