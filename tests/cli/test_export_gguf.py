"""``drafters export --format gguf``: an operator converts a version to llama.cpp's draft GGUF and
publishes it beside the checkpoint in the registry (sha256 with the version's files, record in the lineage,
idempotent, verified on download, served to the owning organization only); on SQLite and PostgreSQL.

The fast tests stub the converter subprocess (``service.gguf_export.run_gguf_converter``) or stop the real
one at its first refusal; ``test_gguf_export_end_to_end_with_the_real_converter`` (slow) exports a real tiny
SmolLM2 drafter with the llama.cpp converter built by ``tracedraft engines install llamacpp``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from drafters.errors import TracedraftError
from tests.cli.conftest import LINEAGE, TARGET

NAME = "exports/draft-f32.gguf"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _version(stack, version: int, name: str = "smol-agent") -> Any:
    from service import registry

    with stack.Session() as s:
        v = registry.get_version(s, registry.get_drafter(s, stack.org, name), version)
        s.expunge(v)
        return v


def _stored(stack, version: int, rel: str) -> Path:
    v = _version(stack, version)
    return Path(stack.store.root) / stack.store.key(v.checkpoint_uri) / rel


class FakeConverter:
    """Stands in for ``python -m drafters.engines.llamacpp export``: writes bytes derived from the checkpoint's
    weights (same weights, same GGUF) and answers like the real one; records every call."""

    def __init__(self, block_size: int = 7, error: TracedraftError | None = None):
        self.calls: list[dict[str, Any]] = []
        self.block_size, self.error = block_size, error

    def __call__(self, checkpoint_dir, target, out, outtype, llamacpp_version, target_cache_dir):
        self.calls.append({"files": sorted(p.name for p in Path(checkpoint_dir).iterdir()), "target": target,
                           "outtype": outtype, "version": llamacpp_version})
        if self.error is not None:
            raise self.error
        weights = (Path(checkpoint_dir) / "model.safetensors").read_bytes()
        Path(out).write_bytes(b"GGUF" + hashlib.sha256(weights).digest() * 64)
        return {"ok": True, "gguf": str(out), "bytes": Path(out).stat().st_size, "block_size": self.block_size,
                "target_dir": "/t", "target_gguf": None, "llamacpp_version": llamacpp_version}


@pytest.fixture
def converter(monkeypatch):
    from service import gguf_export

    fake = FakeConverter()
    monkeypatch.setattr(gguf_export, "run_gguf_converter", fake)
    return fake


def test_service_defaults_match_the_converter(capsys):
    """The service writes llama.cpp's version and the GGUF tensor types again (it never imports drafters'
    engine code); they must be the export command's own."""
    import re

    from drafters.engines.llamacpp import build, gguf
    from service import gguf_export

    assert gguf_export.LLAMACPP_VERSION == build.DEFAULT_VERSION
    with pytest.raises(SystemExit):
        gguf.main(["export", "--help"])
    choices = re.search(r"--outtype \{([^}]*)\}", capsys.readouterr().out)
    assert choices and tuple(choices.group(1).split(",")) == gguf_export.GGUF_OUTTYPES


def test_publish_records_the_gguf_beside_the_checkpoint_and_is_idempotent(stack, cli, converter, tmp_path):
    stack.register(1)
    before = _version(stack, 1)

    r = cli("drafters", "export", "smol-agent", "1", "--format", "gguf", "--org", "acme", "--json", api=False)
    assert r.code == 0, r.err
    doc = r.json
    gguf = _stored(stack, 1, NAME).read_bytes()
    assert doc["published"] is True and doc["name"] == NAME and doc["version"] == 1
    assert doc["sha256"] == _sha(gguf) and doc["size"] == len(gguf) and doc["path"] is None
    # The converter got the verified checkpoint (its own files only) and the target recorded with the version.
    assert converter.calls == [{"files": ["config.json", "model.safetensors"], "target": TARGET, "outtype": "f32",
                                "version": "0.3.36"}]

    after = _version(stack, 1)
    assert after.files == {**before.files, NAME: doc["sha256"]}
    rec = after.lineage["exports"][NAME]
    assert rec["sha256"] == doc["sha256"] and rec["size"] == len(gguf) and rec["format"] == "gguf"
    assert rec["target"] == TARGET and rec["block_size"] == 7 and rec["created_by"].startswith("cli:")
    assert rec["checkpoint_files"] == before.files
    # The weights and everything else of the version are as they were.
    assert (after.config, after.size_bytes, after.checkpoint_uri, after.gate, after.report) == \
        (before.config, before.size_bytes, before.checkpoint_uri, before.gate, before.report)
    assert {k: v for k, v in after.lineage.items() if k != "exports"} == before.lineage
    assert stack.store.list("tmp/") == []  # the staging copy is gone

    # Again: nothing converted, nothing written, same answer; a copy goes to OUT_DIR when asked.
    out = tmp_path / "out"
    r = cli("drafters", "export", "smol-agent", "1", out, "--format", "gguf", "--org", "acme", "--json", api=False)
    assert r.code == 0, r.err
    assert len(converter.calls) == 1
    assert r.json["published"] is False and r.json["sha256"] == doc["sha256"] and r.json["size"] == len(gguf)
    assert (out / "draft-f32.gguf").read_bytes() == gguf and r.json["path"] == str(out / "draft-f32.gguf")
    assert _version(stack, 1).lineage == after.lineage
    r = cli("drafters", "export", "smol-agent", "1", "--format", "gguf", "--org", "acme", api=False)
    assert r.code == 0 and "already published" in r.out and doc["sha256"] in r.out


def test_published_gguf_downloads_verified_for_its_organization_only(stack, cli, converter, tmp_path):
    stack.register(1)
    doc = cli("drafters", "export", "smol-agent", "latest", "--format", "gguf", "--org", stack.org, "--json",
              api=False).json
    gguf = _stored(stack, 1, NAME).read_bytes()

    # The API's files route serves it, sha256 announced and checked.
    url = f"{stack.url}/v1/drafters/smol-agent/versions/1/files/{NAME}"
    r = httpx.get(url, headers={"Authorization": f"Bearer {stack.member_key}"})
    assert r.status_code == 200 and r.content == gguf and r.headers["x-content-sha256"] == doc["sha256"]
    # The CLI without --org downloads it through that route (a member key is enough).
    out = tmp_path / "dl"
    r = cli("drafters", "export", "smol-agent", "1", out, "--format", "gguf", "--json")
    assert r.code == 0, r.err
    assert (out / "draft-f32.gguf").read_bytes() == gguf and r.json["record"]["sha256"] == doc["sha256"]
    assert sorted(p.name for p in out.iterdir()) == ["draft-f32.gguf"]
    # A deepspec export is the checkpoint alone: the derived GGUF is not part of it.
    deep = tmp_path / "deep"
    r = cli("drafters", "export", "smol-agent", "1", deep, "--format", "deepspec", "--json")
    assert r.code == 0, r.err
    assert sorted(p.name for p in deep.iterdir()) == ["SHA256SUMS", "config.json", "model.safetensors"]
    assert NAME not in r.json["files"]

    # Another organization sees nothing: 404, exit 3, and it cannot publish onto it either.
    from service import auth

    with stack.Session() as s:
        other = auth.create_org(s, "globex")
        key, _ = auth.create_api_key(s, other, "x", role="admin")
    assert httpx.get(url, headers={"Authorization": f"Bearer {key}"}).status_code == 404
    r = cli("drafters", "export", "smol-agent", "1", tmp_path / "x", "--format", "gguf", key=key)
    assert r.code == 3 and "[not_found]" in r.err
    r = cli("drafters", "export", "smol-agent", "1", "--format", "gguf", "--org", "globex", api=False)
    assert r.code == 3 and "[not_found]" in r.err

    # An altered stored GGUF: the route refuses it (409), promotion refuses the version (its checksums cover
    # the export), and publishing again puts the recorded bytes back without changing the record.
    stored = _stored(stack, 1, NAME)
    stored.write_bytes(b"GGUF tampered")
    assert httpx.get(url, headers={"Authorization": f"Bearer {stack.member_key}"}).status_code == 409
    r = cli("promote", "smol-agent", "1", "--reason", "x", "--yes", key="admin")
    assert r.code == 4 and "[checksum_mismatch]" in r.err
    r = cli("drafters", "export", "smol-agent", "1", "--format", "gguf", "--org", "acme", "--json", api=False)
    assert r.code == 0, r.err
    assert r.json["published"] is False and stored.read_bytes() == gguf and len(converter.calls) == 2
    assert cli("promote", "smol-agent", "1", "--reason", "x", "--yes", key="admin").code == 0


def test_other_bytes_under_a_published_name_are_refused(stack, converter, tmp_path):
    from service import registry_exports
    from service.registry import RegistryError

    stack.register(1)
    first, second = tmp_path / "a.gguf", tmp_path / "b.gguf"
    first.write_bytes(b"GGUF one")
    second.write_bytes(b"GGUF two")
    with stack.Session() as s:
        pub = registry_exports.publish_export(s, stack.store, stack.org, "smol-agent", 1, first, NAME, {"format": "gguf"},
                                      actor="t")
        assert pub.published and pub.sha256 == _sha(b"GGUF one")
        again = registry_exports.publish_export(s, stack.store, stack.org, "smol-agent", 1, first, NAME, {}, actor="t2")
        assert again.published is False and again.record["created_by"] == "t"
        with pytest.raises(RegistryError) as e:
            registry_exports.publish_export(s, stack.store, stack.org, "smol-agent", 1, second, NAME, {}, actor="t")
        assert e.value.code == "export_conflict"
        with pytest.raises(RegistryError) as e:
            registry_exports.publish_export(s, stack.store, stack.org, "smol-agent", 1, first, "model.safetensors", {},
                                    actor="t")
        assert e.value.code == "invalid_value"
    assert _version(stack, 1).files[NAME] == _sha(b"GGUF one")
    assert _stored(stack, 1, NAME).read_bytes() == b"GGUF one"
    assert stack.store.list("tmp/") == []


@pytest.mark.parametrize(("code", "exit_code"), [("llamacpp_not_installed", 1), ("target_not_found", 3),
                                                 ("gguf_export_unsupported", 4), ("gguf_export_failed", 1)])
def test_converter_errors_exit_with_their_code_and_publish_nothing(stack, cli, monkeypatch, code, exit_code):
    from service import gguf_export

    stack.register(1)
    fake = FakeConverter(error=TracedraftError(code, "said so", "w"))
    monkeypatch.setattr(gguf_export, "run_gguf_converter", fake)
    r = cli("drafters", "export", "smol-agent", "1", "--format", "gguf", "--org", "acme", api=False)
    errors = [line for line in r.err.splitlines() if line.startswith("error")]
    assert r.code == exit_code and errors == [f"error [{code}] said so (at w)"]
    assert NAME not in _version(stack, 1).files and not _stored(stack, 1, NAME).exists()


def test_gguf_export_refusals(stack, cli, monkeypatch, converter):
    from service import gguf_export

    stack.register(1)
    # Not published yet: the download names the operator command (exit 3).
    r = cli("drafters", "export", "smol-agent", "1", stack.tmp / "g", "--format", "gguf")
    assert r.code == 3 and "[not_published]" in r.err and "--org" in r.err
    assert not (stack.tmp / "g").exists()
    # A GGUF that does not say the version's block size is not published.
    monkeypatch.setattr(gguf_export, "run_gguf_converter", FakeConverter(block_size=16))
    r = cli("drafters", "export", "smol-agent", "1", "--format", "gguf", "--org", "acme", api=False)
    assert r.code == 1 and "[gguf_export_mismatch]" in r.err and NAME not in _version(stack, 1).files
    # Unknown version, bad options.
    r = cli("drafters", "export", "smol-agent", "9", "--format", "gguf", "--org", "acme", api=False)
    assert r.code == 3 and "[not_found]" in r.err
    assert cli("drafters", "export", "smol-agent", "1", "--format", "gguf", "--org", "acme", "--outtype", "q2",
               api=False).code == 2
    assert cli("drafters", "export", "smol-agent", "1", stack.tmp / "d", "--org", "acme").code == 2


def test_real_converter_subprocess_reports_a_stable_code(stack, cli, tmp_path, monkeypatch):
    """The real ``python -m drafters.engines.llamacpp export`` behind the CLI, stopped at its first refusal
    (no llama.cpp needed): a target that cannot be found exits 3 with target_not_found; an install without
    the converter exits 1 with llamacpp_not_installed naming the install command."""
    from service import jobs, registry

    ckpt = tmp_path / "ck"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3DSparkModel"], "block_size": 7, "markov_head_type": "vanilla", "vocab_size": 256,
        "hidden_size": 64, "target_layer_ids": [0, 2], "mask_token_id": 3}))
    (ckpt / "model.safetensors").write_bytes(os.urandom(64))
    tgt = tmp_path / "tgt"
    tgt.mkdir()
    (tgt / "config.json").write_text(json.dumps({"vocab_size": 256, "hidden_size": 64}))
    (tgt / "tokenizer.json").write_text("{}")
    with stack.Session() as s:
        job = jobs.create_job(s, stack.org, None, {"seed": 0})
        registry.register_version(s, stack.store, stack.org, "tiny", "nowhere/not-a-model", job.id, ckpt,
                                  config={"block_size": 7}, lineage={**LINEAGE, "target_model": "nowhere/not-a-model"})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = cli("drafters", "export", "tiny", "1", "--format", "gguf", "--org", "acme", api=False)
    assert r.code == 3 and "[target_not_found]" in r.err, r.err
    monkeypatch.setenv("TRACEDRAFT_LLAMACPP_DIR", str(tmp_path / "no-llamacpp"))
    r = cli("drafters", "export", "tiny", "1", "--format", "gguf", "--org", "acme", "--target", tgt, api=False)
    assert r.code == 1 and "[llamacpp_not_installed]" in r.err and "engines install llamacpp" in r.err, r.err
    with stack.Session() as s:
        assert NAME not in registry.get_version(s, registry.get_drafter(s, stack.org, "tiny"), 1).files


# ---------------------------------------------------------------------------------------------------------
# slow: the real converter, a real tiny drafter
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_gguf_export_end_to_end_with_the_real_converter(stack, cli, tmp_path, monkeypatch):
    """Register a real (randomly initialised, 1-layer) DSpark drafter of SmolLM2-135M-Instruct, publish it
    as GGUF with llama.cpp's converter through the CLI, then: the file is in the store where the registry
    says, its sha256 matches, the GGUF says what the checkpoint says, the API serves it, and a second export
    reuses it without converting."""
    from drafters.engines.llamacpp import build as lb
    from drafters.engines.llamacpp import read_gguf_metadata

    if not lb.is_installed():
        pytest.skip("llama.cpp is not installed; run `tracedraft engines install llamacpp`")
    import torch

    from drafters.dspark.checkpoint import save_checkpoint
    from drafters.dspark.config import DSparkConfig
    from drafters.dspark.model import DSparkDrafter
    from drafters.target import load_target
    from drafters.target_cache import SMOLLM2_SPEC, default_cache_dir
    from service import jobs, registry

    torch.manual_seed(0)
    target = load_target(SMOLLM2_SPEC)
    cfg = DSparkConfig.from_target(target.model.config, tokenizer=target.tokenizer, num_hidden_layers=1,
                                   block_size=5, markov_rank=8)
    ckpt = tmp_path / "tiny"
    save_checkpoint(DSparkDrafter(cfg, target.embed_weight, target.lm_head_weight), ckpt)
    with stack.Session() as s:
        job = jobs.create_job(s, stack.org, None, {"seed": 0})
        registry.register_version(s, stack.store, stack.org, "smol-gguf", SMOLLM2_SPEC, job.id, ckpt,
                                  config=json.loads((ckpt / "config.json").read_text()),
                                  lineage={**LINEAGE, "target_model": SMOLLM2_SPEC})
    # The CLI resolves the recorded target as the workers do, from the settings' cache (converted once there).
    monkeypatch.setattr(stack.settings, "cache_dir", default_cache_dir())

    r = cli("drafters", "export", "smol-gguf", "latest", "--format", "gguf", "--org", "acme", "--json", api=False)
    assert r.code == 0, r.err
    doc = r.json
    stored = Path(stack.store.root) / stack.store.key(doc["uri"])
    assert doc["published"] is True and stored.is_file()
    assert _sha(stored.read_bytes()) == doc["sha256"] and stored.stat().st_size == doc["size"]
    v = _version(stack, 1, "smol-gguf")
    assert v.files[NAME] == doc["sha256"] and v.lineage["exports"][NAME]["llamacpp_version"] == lb.DEFAULT_VERSION
    meta = read_gguf_metadata(stored)
    arch = meta["general.architecture"]
    assert meta[f"{arch}.block_size"] == 5
    assert list(meta[f"{arch}.target_layers"]) == [i + 1 for i in cfg.target_layer_ids]
    assert any(n.endswith("markov_w1.weight") for n in meta["__tensors__"])

    r = httpx.get(f"{stack.url}/v1/drafters/smol-gguf/versions/1/files/{NAME}",
                  headers={"Authorization": f"Bearer {stack.member_key}"}, timeout=60)
    assert r.status_code == 200 and _sha(r.content) == doc["sha256"]
    assert r.headers["x-content-sha256"] == doc["sha256"]

    from service import gguf_export

    monkeypatch.setattr(gguf_export, "run_gguf_converter", lambda *a, **k: pytest.fail("converted twice"))
    r = cli("drafters", "export", "smol-gguf", "1", tmp_path / "copy", "--format", "gguf", "--org", "acme",
            "--json", api=False)
    assert r.code == 0, r.err
    assert r.json["published"] is False and r.json["sha256"] == doc["sha256"]
    assert _sha((tmp_path / "copy" / "draft-f32.gguf").read_bytes()) == doc["sha256"]
    assert _version(stack, 1, "smol-gguf").files == v.files
