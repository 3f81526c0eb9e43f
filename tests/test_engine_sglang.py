"""SGLang engine client against a local stub HTTP server returning recorded response shapes of
each SGLang field-name generation and each failure: speculation off, 5xx, timeouts, a server that dies."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from drafters.engines.base import CallMeasurement, EngineRun
from drafters.engines.sglang import (
    FLAG_COMPLETION_FALLBACK,
    FLAG_HISTOGRAM,
    SGLangEngine,
    parse_spec_counters,
)
from drafters.errors import TracedraftError
from drafters.evaluate import engine_summary

DRAFT = "/models/drafter-v3"


@dataclass
class Prompt:
    call_id: str
    prompt_ids: list[int]


PROMPTS = [Prompt("c/0", [1, 2, 3]), Prompt("c/1", [4, 5, 6, 7])]


def _meta(generation: str, verify: int, accepted: int, completion: int) -> dict:
    """Recorded meta_info shapes (docs/serving.md 3), newest first."""
    base = {"id": "x", "finish_reason": {"type": "length", "length": completion}, "prompt_tokens": 3,
            "completion_tokens": completion, "cached_tokens": 0, "e2e_latency": 0.05}
    hist = [verify - accepted // 3, 0, 0, accepted // 3] if accepted % 3 == 0 else None
    if generation == "newest":
        base |= {"spec_verify_ct": verify, "spec_num_correct_drafts": accepted,
                 "spec_num_proposed_drafts": 7 * verify, "spec_accept_length": completion / verify,
                 "spec_correct_drafts_histogram": hist}
    elif generation == "middle":
        base |= {"spec_verify_ct": verify, "spec_accepted_drafts": accepted, "spec_proposed_drafts": 7 * verify,
                 "spec_accept_rate": accepted / (7 * verify), "spec_accept_histogram": hist}
    elif generation == "oldest":
        base |= {"spec_verify_ct": verify, "spec_accept_token_num": accepted, "spec_draft_token_num": 7 * verify,
                 "spec_accept_length": completion / verify}
    elif generation == "histogram_only":
        base |= {"spec_verify_ct": verify, "spec_accept_histogram": hist}
    elif generation == "completion_only":
        base |= {"spec_verify_ct": verify, "spec_accept_length": completion / verify}
    elif generation == "spec_off":
        pass
    elif generation == "verify_zero":
        base |= {"spec_verify_ct": 0, "spec_num_correct_drafts": 0}
    return base


class Stub:
    """A stub SGLang server in a thread on 127.0.0.1 (port 0 = any free port)."""

    def __init__(self, generation="newest", server_info=None, fail_5xx=0, sleep=0.0, die_after=None):
        self.generation, self.fail_5xx, self.sleep, self.die_after = generation, fail_5xx, sleep, die_after
        self.info = server_info or {"version": "0.5.10", "speculative_algorithm": "DSPARK",
                                    "speculative_draft_model_path": DRAFT, "model_path": "/models/target"}
        self.log: list[tuple[str, dict | None]] = []
        self.generates = 0
        stub = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                stub.log.append((self.path, None))
                if self.path == "/health":
                    self._send(200, {})
                elif self.path == "/server_info":
                    self._send(200, stub.info)
                else:
                    self._send(404, {"detail": "not found"})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"null")
                stub.log.append((self.path, body))
                if self.path == "/flush_cache":
                    return self._send(200, {})
                if self.path != "/generate":
                    return self._send(404, {})
                if stub.die_after is not None and stub.generates >= stub.die_after:
                    threading.Thread(target=stub.close, daemon=True).start()
                    self.close_connection = True
                    return  # drop the connection without an answer, then go away for good
                if stub.fail_5xx:
                    stub.fail_5xx -= 1
                    return self._send(503, {"error": "overloaded"})
                if stub.sleep:
                    time.sleep(stub.sleep)
                stub.generates += 1
                i = stub.generates
                verify, accepted = (8, 24) if i % 2 else (10, 21)
                completion = 1 + verify + accepted
                self._send(200, {"text": "...", "output_ids": list(range(completion)),
                                 "meta_info": _meta(stub.generation, verify, accepted, completion)})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    closed = False

    def close(self):
        self.closed = True
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub(request):
    s = Stub(**getattr(request, "param", {}))
    yield s
    if not s.closed:
        s.close()


def _engine(url, **kw):
    return SGLangEngine(base_url=url, request_timeout=kw.pop("timeout", 5.0), backoff=0.01, **kw)


# Calls alternate (verify 8, accepted 24) and (10, 21): tau = 1 + 45/18 = 3.5 summed over requests,
# not the mean of per-request ratios (4.0 + 3.1) / 2 = 3.55.
@pytest.mark.parametrize("stub", [{"generation": g} for g in ("newest", "middle", "oldest")], indirect=True)
def test_field_name_generations(stub):
    run = _engine(stub.url).measure(PROMPTS, DRAFT, max_new_tokens=64)
    s = engine_summary(run)
    assert s["tau"] == pytest.approx(1 + 45 / 18) and s["rounds"] == 18 and s["accepted_drafts"] == 45
    assert s["proposed_drafts"] == 7 * 18 and s["flags"] == [] and s["info"]["version"] == "0.5.10"
    assert s["per_call"][0]["tau"] == pytest.approx(4.0) and s["per_call"][1]["tau"] == pytest.approx(3.1)
    # The cache was flushed before the first generate; prompts went as input_ids with the sampling params.
    paths = [p for p, _ in stub.log]
    assert paths.index("/flush_cache") < paths.index("/generate")
    gen = [b for p, b in stub.log if p == "/generate"]
    assert gen[1]["input_ids"] == [4, 5, 6, 7] and gen[0]["sampling_params"]["max_new_tokens"] == 64
    assert gen[0]["rid"] != gen[1]["rid"]


@pytest.mark.parametrize("stub", [{"generation": "histogram_only"}], indirect=True)
def test_histogram_only_is_exact_and_flagged(stub):
    s = engine_summary(_engine(stub.url).measure(PROMPTS, DRAFT, max_new_tokens=64))
    assert s["tau"] == pytest.approx(1 + 45 / 18) and FLAG_HISTOGRAM in s["flags"]


@pytest.mark.parametrize("stub", [{"generation": "completion_only"}], indirect=True)
def test_completion_fallback_is_flagged(stub):
    s = engine_summary(_engine(stub.url).measure(PROMPTS, DRAFT, max_new_tokens=64))
    assert s["tau"] == pytest.approx((33 + 32) / 18)  # completion tokens count the prefill token: runs high
    assert FLAG_COMPLETION_FALLBACK in s["flags"] and s["tau_source"].startswith("FALLBACK")


@pytest.mark.parametrize("stub", [{"generation": "spec_off"}, {"generation": "verify_zero"}], indirect=True)
def test_speculation_off_fails_loudly(stub):
    with pytest.raises(TracedraftError) as e:
        _engine(stub.url).measure(PROMPTS, DRAFT, max_new_tokens=64)
    assert e.value.code == "speculation_off" and "c/0" in e.value.where


@pytest.mark.parametrize("stub", [{"fail_5xx": 100}], indirect=True)
def test_persistent_5xx(stub):
    with pytest.raises(TracedraftError) as e:
        _engine(stub.url, retries=2).measure(PROMPTS, DRAFT, max_new_tokens=8)
    assert e.value.code == "engine_http_error" and "503" in e.value.message
    assert sum(1 for p, _ in stub.log if p == "/generate") == 3


@pytest.mark.parametrize("stub", [{"fail_5xx": 1}], indirect=True)
def test_transient_5xx_is_retried(stub):
    s = engine_summary(_engine(stub.url, retries=2).measure(PROMPTS, DRAFT, max_new_tokens=8))
    assert s["calls"] == 2 and s["tau"] == pytest.approx(3.5)


@pytest.mark.parametrize("stub", [{"sleep": 1.0}], indirect=True)
def test_timeout(stub):
    with pytest.raises(TracedraftError) as e:
        _engine(stub.url, timeout=0.3).measure(PROMPTS, DRAFT, max_new_tokens=8)
    assert e.value.code == "engine_timeout"


@pytest.mark.parametrize("stub", [{"die_after": 1}], indirect=True)
def test_server_dies_mid_run(stub):
    with pytest.raises(TracedraftError) as e:
        _engine(stub.url, retries=2).measure(PROMPTS, DRAFT, max_new_tokens=8)
    assert e.value.code == "engine_died"
    assert stub.generates == 1


@pytest.mark.parametrize("stub", [{"server_info": {"speculative_algorithm": "EAGLE",
                                                   "speculative_draft_model_path": DRAFT}},
                                  {"server_info": {"speculative_algorithm": "DSPARK",
                                                   "speculative_draft_model_path": "/models/other"}}],
                         indirect=True)
def test_server_info_mismatch(stub):
    with pytest.raises(TracedraftError) as e:
        _engine(stub.url).measure(PROMPTS, DRAFT, max_new_tokens=8)
    assert e.value.code == "engine_misconfigured"
    assert not any(p == "/generate" for p, _ in stub.log)


def test_parse_openai_compatible_shape():
    body = {"choices": [{"text": "x"}], "usage": {"completion_tokens": 33},
            "sglext": {"spec_tokens_details": {"spec_verify_ct": 8, "spec_accepted_drafts": 24}}}
    c = parse_spec_counters(body)
    assert (c["verify_rounds"], c["accepted_drafts"], c["completion_tokens"]) == (8, 24, 33)
    with pytest.raises(TracedraftError) as e:
        parse_spec_counters({"text": "no meta"})
    assert e.value.code == "engine_bad_response"


def test_engine_summary_refuses_zero_rounds():
    run = EngineRun("sglang", DRAFT, [CallMeasurement("c/0", 5, 0, 0)])
    with pytest.raises(TracedraftError) as e:
        engine_summary(run)
    assert e.value.code == "speculation_off"


# ----------------------------------------------------------------------------- launch mode

FAKE_SERVER = textwrap.dedent('''
    """A stand-in for `python -m sglang.launch_server`: serves recorded newest-generation responses."""
    import json, sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer
    args = sys.argv[1:]
    opt = lambda k: args[args.index(k) + 1]
    open(sys.argv[0] + ".argv.json", "w").write(json.dumps(args))
    mode = open(sys.argv[0] + ".mode").read().strip()
    if mode == "crash":
        print("CUDA error: out of memory", flush=True)
        sys.exit(3)
    served = [0]
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def _send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers()
            self.wfile.write(data)
        def do_GET(self):
            if self.path == "/health": return self._send({})
            self._send({"version": "0.5.10", "speculative_algorithm": opt("--speculative-algorithm"),
                        "speculative_draft_model_path": opt("--speculative-draft-model-path")})
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/generate":
                if mode == "die" and served[0] >= 1:
                    print("worker crashed", flush=True); import os; os._exit(9)
                served[0] += 1
                return self._send({"meta_info": {"completion_tokens": 9, "spec_verify_ct": 2,
                                                  "spec_num_correct_drafts": 6}})
            self._send({})
    time.sleep(0.3)  # a server is not healthy at once
    HTTPServer(("127.0.0.1", int(opt("--port"))), H).serve_forever()
''')


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launcher(tmp_path, mode):
    script = tmp_path / "fake_sglang.py"
    script.write_text(FAKE_SERVER)
    (tmp_path / "fake_sglang.py.mode").write_text(mode)
    return [sys.executable, str(script)], script


def test_launch_mode_runs_one_server_per_drafter(tmp_path):
    cmd, _ = _launcher(tmp_path, "ok")
    eng = SGLangEngine("/models/target", port=_free_port(), command=cmd, startup_timeout=20, backoff=0.01,
                       log_dir=tmp_path)
    s = engine_summary(eng.measure(PROMPTS, "/models/d1", max_new_tokens=16))
    assert s["tau"] == pytest.approx(4.0) and s["drafter"] == "/models/d1"
    argv = json.loads((tmp_path / "fake_sglang.py.argv.json").read_text())
    assert argv[argv.index("--speculative-algorithm") + 1] == "DSPARK"
    assert argv[argv.index("--speculative-draft-model-path") + 1] == "/models/d1"
    assert argv[argv.index("--model-path") + 1] == "/models/target"
    # The server was stopped: the port is free again for the next drafter's server.
    s2 = engine_summary(eng.measure(PROMPTS, "/models/d2", max_new_tokens=16))
    assert s2["drafter"] == "/models/d2"


def test_launch_mode_start_failure_quotes_log(tmp_path):
    cmd, _ = _launcher(tmp_path, "crash")
    eng = SGLangEngine("/models/target", port=_free_port(), command=cmd, startup_timeout=20, log_dir=tmp_path)
    with pytest.raises(TracedraftError) as e:
        eng.measure(PROMPTS, "/models/d1", max_new_tokens=16)
    assert e.value.code == "engine_start_failed" and "out of memory" in e.value.message


def test_launch_mode_server_dies_mid_run(tmp_path):
    cmd, _ = _launcher(tmp_path, "die")
    eng = SGLangEngine("/models/target", port=_free_port(), command=cmd, startup_timeout=20, backoff=0.2,
                       log_dir=tmp_path)
    with pytest.raises(TracedraftError) as e:
        eng.measure(PROMPTS, "/models/d1", max_new_tokens=16)
    assert e.value.code == "engine_died" and "worker crashed" in e.value.message


def test_engine_report_feeds_the_gate(stub, tmp_path):
    from drafters.evaluate import engine_report, gate, write_report

    cand = CallMeasurement
    inc_calls = [cand(f"c/{i}", 30, 10, 15) for i in range(30)]          # tau 2.5 per call
    win_calls = [cand(f"c/{i}", 30, 10, 20 + i % 3) for i in range(30)]  # tau 3.0-3.2 per call
    rep = engine_report({"new": EngineRun("sglang", "/d/new", win_calls, info={"version": "0.5.10"}),
                         "old": EngineRun("sglang", "/d/old", inc_calls, info={"version": "0.5.10"})},
                        target="qwen3-4b", temperature=0.0, max_new_tokens=64)
    assert rep["proposers"]["old"]["tau"] == pytest.approx(2.5)
    assert rep["settings"]["engine_info"]["new"]["version"] == "0.5.10"
    d = gate(rep, None, candidate_name="new", incumbent_name="old")
    assert d.passed, d.reasons
    assert not gate(rep, None, candidate_name="old", incumbent_name="new").passed
    assert (tmp_path / "report.html").exists() is False and write_report(rep, tmp_path)["html"]
