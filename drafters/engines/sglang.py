"""The SGLang engine: accepted length as the serving engine sees it (docs/serving.md 1 and 3).

Per drafter: launch ``python -m sglang.launch_server --model-path TARGET --speculative-algorithm DSPARK
--speculative-draft-model-path DRAFT`` (no hot swap: one server per drafter), wait for /health, check that
/server_info names the algorithm and draft, POST /flush_cache, replay each prompt as ``input_ids`` through
the native /generate, read the speculative counters from ``meta_info`` under every field name SGLang has
used, stop the server. External-endpoint mode attaches to a server someone else runs (no launch, no stop).

Failures are loud, with stable codes: speculation_off (no or zero spec_verify_ct), engine_http_error (5xx
after retries), engine_timeout, engine_died (connection lost or the process exited), engine_misconfigured
(/server_info names another algorithm or draft), engine_start_failed (never became healthy).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import httpx

from drafters.engines.base import CallMeasurement, Engine, EngineRun, die_with_parent, stop_process_group
from drafters.errors import TracedraftError

# Field names, newest first (docs/serving.md 3). Extend here when SGLang renames them again.
VERIFY_FIELDS = ("spec_verify_ct",)
ACCEPTED_FIELDS = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")
PROPOSED_FIELDS = ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num")
HISTOGRAM_FIELDS = ("spec_correct_drafts_histogram", "spec_accept_histogram")
RATIO_FIELDS = ("spec_accept_length", "spec_accept_rate")
FLAG_COMPLETION_FALLBACK = "tau_from_completion_tokens"
FLAG_HISTOGRAM = "accepted_from_histogram"


def _first(meta: Mapping[str, Any], names: Sequence[str]) -> tuple[str | None, Any]:
    for n in names:
        if n in meta and meta[n] is not None:
            return n, meta[n]
    return None, None


def parse_spec_counters(body: Mapping[str, Any], where: str = "meta_info") -> dict[str, Any]:
    """Speculative counters of one /generate response (or an OpenAI-compatible one carrying
    ``sglext.spec_tokens_details``), whatever the SGLang release.

    Returns {"verify_rounds", "accepted_drafts" (None if no source), "proposed_drafts" (None if absent),
    "completion_tokens", "finish_reason", "e2e_latency", "fields": {quantity: field name}}.
    accepted_drafts comes from the newest accepted-drafts field present, else from the histogram of accepted
    drafts per round (sum_i i * h[i], exact), else None (the caller falls back to completion_tokens and flags
    it). Raises TracedraftError(code="speculation_off") when spec_verify_ct is missing or 0, and
    (code="engine_bad_response") when there is no meta_info at all.
    """
    meta = body.get("meta_info")
    if meta is None and isinstance(body.get("sglext"), Mapping):
        meta = dict(body["sglext"].get("spec_tokens_details") or {})
        usage = body.get("usage") or {}
        meta.setdefault("completion_tokens", usage.get("completion_tokens"))
    if not isinstance(meta, Mapping):
        raise TracedraftError("engine_bad_response", "response has no meta_info", where)
    fields: dict[str, str] = {}
    vname, verify = _first(meta, VERIFY_FIELDS)
    if vname is None or not verify:
        raise TracedraftError(
            "speculation_off",
            "spec_verify_ct is " + ("missing" if vname is None else "0") + ": speculation did not engage "
            "(is the server running with --speculative-algorithm DSPARK?); refusing to report tau 1", where)
    fields["verify_rounds"] = vname
    aname, accepted = _first(meta, ACCEPTED_FIELDS)
    if aname is None:
        hname, hist = _first(meta, HISTOGRAM_FIELDS)
        if hname is not None:
            accepted = sum(i * int(c) for i, c in enumerate(hist))
            aname = hname
    if aname is not None:
        fields["accepted_drafts"] = aname
    pname, proposed = _first(meta, PROPOSED_FIELDS)
    if pname is not None:
        fields["proposed_drafts"] = pname
    fr = meta.get("finish_reason")
    if isinstance(fr, Mapping):
        fr = fr.get("type")
    return {"verify_rounds": int(verify), "accepted_drafts": None if accepted is None else int(accepted),
            "proposed_drafts": None if proposed is None else int(proposed),
            "completion_tokens": int(meta.get("completion_tokens") or 0), "finish_reason": fr,
            "e2e_latency": meta.get("e2e_latency"), "fields": fields}


class SGLangClient:
    """A small httpx client for SGLang's native endpoints with retries on 5xx and connection resets.

    base_url: e.g. "http://127.0.0.1:30000". timeout: seconds per request. retries: extra attempts on a
    5xx or a dropped connection. process: the launched server (so a dead one is reported as engine_died
    with its log tail); log_path: that server's log.
    """

    def __init__(self, base_url: str, timeout: float = 600.0, retries: int = 2, backoff: float = 0.5,
                 process: subprocess.Popen | None = None, log_path: Path | None = None,
                 headers: Mapping[str, str] | None = None):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.process = process
        self.log_path = log_path
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, headers=dict(headers or {}))

    def close(self) -> None:
        self._http.close()

    def _log_tail(self) -> str:
        if self.log_path and Path(self.log_path).exists():
            return Path(self.log_path).read_text(errors="replace")[-2000:]
        return ""

    def _dead(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def request(self, method: str, path: str, json: Any = None, timeout: float | None = None) -> httpx.Response:
        """One request with retries. Raises TracedraftError engine_timeout / engine_died / engine_http_error."""
        where = f"{self.base_url}{path}"
        last = None
        for attempt in range(self.retries + 1):
            if self._dead():
                raise TracedraftError("engine_died", f"the SGLang server exited with code {self.process.returncode}"
                                      f"; log tail:\n{self._log_tail()}", where)
            try:
                r = self._http.request(method, path, json=json, timeout=timeout or self.timeout)
            except httpx.TimeoutException as e:
                raise TracedraftError("engine_timeout", f"no answer within {timeout or self.timeout:g} s", where) from e
            except httpx.TransportError as e:  # refused / reset: the server went away (or never came)
                last = e
                if self._dead() or attempt == self.retries:
                    raise TracedraftError("engine_died", f"connection to the SGLang server lost ({e!r})"
                                          + (f"; log tail:\n{self._log_tail()}" if self.log_path else ""),
                                          where) from e
                time.sleep(self.backoff * (attempt + 1))
                continue
            if r.status_code >= 500:
                last = r
                if attempt == self.retries:
                    raise TracedraftError("engine_http_error", f"HTTP {r.status_code} after {attempt + 1} "
                                          f"attempts: {r.text[:300]}", where)
                time.sleep(self.backoff * (attempt + 1))
                continue
            if r.status_code >= 400:
                raise TracedraftError("engine_http_error", f"HTTP {r.status_code}: {r.text[:300]}", where)
            return r
        raise TracedraftError("engine_http_error", f"request failed: {last!r}", where)  # pragma: no cover

    def healthy(self) -> bool:
        try:
            return self._http.get("/health", timeout=5.0).status_code == 200
        except httpx.HTTPError:
            return False

    def server_info(self) -> dict:
        """GET /server_info (older releases: /get_server_info)."""
        try:
            return self.request("GET", "/server_info").json()
        except TracedraftError as e:
            if e.code != "engine_http_error":
                raise
            return self.request("GET", "/get_server_info").json()

    def flush_cache(self) -> None:
        self.request("POST", "/flush_cache")

    def generate(self, input_ids: list[int], sampling_params: Mapping[str, Any], rid: str) -> dict:
        return self.request("POST", "/generate", json={"input_ids": list(map(int, input_ids)),
                                                       "sampling_params": dict(sampling_params), "rid": rid}).json()


def check_server_info(info: Mapping[str, Any], expected_draft: str | None, where: str) -> None:
    """/server_info must name speculative_algorithm DSPARK and (when given) the expected draft path.
    Raises TracedraftError(code="engine_misconfigured")."""
    algo = info.get("speculative_algorithm")
    if str(algo).upper() != "DSPARK":
        raise TracedraftError("engine_misconfigured", f"server speculative_algorithm is {algo!r}, expected DSPARK",
                              where)
    if expected_draft is not None:
        draft = info.get("speculative_draft_model_path")
        if draft is None or os.path.normpath(str(draft)) != os.path.normpath(str(expected_draft)):
            raise TracedraftError("engine_misconfigured", f"server draft is {draft!r}, expected {expected_draft!r}",
                                  where)


class SGLangServer:
    """A launched SGLang server for one drafter (context manager).

    command: the launcher prefix (default ``[sys.executable, "-m", "sglang.launch_server"]``; tests pass a
    stub). Adds --model-path, --speculative-algorithm DSPARK, --speculative-draft-model-path, --host,
    --port and ``extra_args``. The env gets SGLANG_RAGGED_VERIFY_MODE=static (docs/serving.md 1: measure the
    whole block). Logs go to a file whose tail is quoted on failure.
    """

    def __init__(self, target_path: str, draft_path: str, *, port: int = 30000, host: str = "127.0.0.1",
                 extra_args: Sequence[str] = (), command: Sequence[str] | None = None,
                 startup_timeout: float = 900.0, env: Mapping[str, str] | None = None,
                 log_dir: str | Path | None = None):
        self.argv = list(command or [sys.executable, "-m", "sglang.launch_server"]) + [
            "--model-path", str(target_path), "--speculative-algorithm", "DSPARK",
            "--speculative-draft-model-path", str(draft_path), "--host", host, "--port", str(port), *extra_args]
        self.base_url = f"http://{host}:{port}"
        self.draft_path = str(draft_path)
        self.startup_timeout = startup_timeout
        self.env = {**os.environ, "SGLANG_RAGGED_VERIFY_MODE": "static", **dict(env or {})}
        self.log_path = Path(log_dir or tempfile.mkdtemp(prefix="sglang-")) / f"server-{port}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> SGLangServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                            start_new_session=True,  # own process group: stop() ends workers
                                            preexec_fn=die_with_parent())
        client = SGLangClient(self.base_url, timeout=10.0, process=self.process, log_path=self.log_path)
        deadline = time.monotonic() + self.startup_timeout
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise TracedraftError("engine_start_failed", f"the SGLang server exited with code "
                                          f"{self.process.returncode} while starting; log tail:\n"
                                          f"{client._log_tail()}", " ".join(self.argv))
                if client.healthy():
                    return self
                time.sleep(0.5)
        finally:
            client.close()
        self.stop()
        raise TracedraftError("engine_start_failed", f"no healthy /health within {self.startup_timeout:g} s",
                              self.base_url)

    def stop(self) -> None:
        stop_process_group(self.process, 30)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SGLangEngine(Engine):
    """Measure drafters with SGLang.

    Launch mode: SGLangEngine(target_path=..., port=...) starts one server per ``measure`` call (the drafter
    is a checkpoint directory). External mode: SGLangEngine(base_url="http://host:port") attaches to a
    running server; ``measure(prompts, drafter)`` then checks /server_info names DSPARK and, if drafter is
    given, that draft path. Every pass flushes the prefix cache first. ``EngineRun.info`` records the SGLang
    version and server args; ``EngineRun.flags`` carries FLAG_COMPLETION_FALLBACK when some response had no
    accepted-drafts field (tau then from completion_tokens / verify rounds, which runs high; docs/serving.md 3).
    """

    name = "sglang"

    def __init__(self, target_path: str | None = None, *, base_url: str | None = None, port: int = 30000,
                 extra_args: Sequence[str] = (), command: Sequence[str] | None = None,
                 startup_timeout: float = 900.0, request_timeout: float = 600.0, retries: int = 2,
                 backoff: float = 0.5, log_dir: str | Path | None = None):
        if (target_path is None) == (base_url is None):
            raise TracedraftError("bad_config", "give target_path (launch mode) or base_url (external mode)",
                                  "SGLangEngine")
        self.target_path, self.base_url, self.port = target_path, base_url, port
        self.extra_args, self.command = list(extra_args), command
        self.startup_timeout, self.request_timeout = startup_timeout, request_timeout
        self.retries, self.backoff, self.log_dir = retries, backoff, log_dir

    def measure(self, prompts: Sequence[Any], drafter: Any, *, max_new_tokens: int, temperature: float = 0.0,
                seed: int = 0, stop_token_ids: Sequence[int] = ()) -> EngineRun:
        if self.base_url is not None:
            client = SGLangClient(self.base_url, self.request_timeout, self.retries, self.backoff)
            try:
                return self._replay(client, prompts, None if drafter is None else str(drafter),
                                    max_new_tokens, temperature, seed, stop_token_ids)
            finally:
                client.close()
        if drafter is None:
            raise TracedraftError("bad_drafter", "launch mode needs a drafter checkpoint directory", "drafter")
        server = SGLangServer(self.target_path, str(drafter), port=self.port, extra_args=self.extra_args,
                              command=self.command, startup_timeout=self.startup_timeout, log_dir=self.log_dir)
        with server:
            client = SGLangClient(server.base_url, self.request_timeout, self.retries, self.backoff,
                                  process=server.process, log_path=server.log_path)
            try:
                return self._replay(client, prompts, str(drafter), max_new_tokens, temperature, seed,
                                    stop_token_ids)
            finally:
                client.close()

    def _replay(self, client: SGLangClient, prompts: Sequence[Any], drafter: str | None, max_new_tokens: int,
                temperature: float, seed: int, stop_token_ids: Sequence[int]) -> EngineRun:
        info = client.server_info()
        check_server_info(info, drafter, f"{client.base_url}/server_info")
        client.flush_cache()
        calls, flags = [], []
        for i, p in enumerate(prompts):
            params: dict[str, Any] = {"temperature": float(temperature), "max_new_tokens": int(max_new_tokens)}
            if stop_token_ids:
                params["stop_token_ids"] = [int(s) for s in stop_token_ids]
            if temperature > 0:
                params["sampling_seed"] = seed + i
            rid = f"tracedraft-{uuid.uuid4().hex[:12]}-{i}"
            t0 = time.perf_counter()
            body = client.generate(p.prompt_ids, params, rid)
            secs = time.perf_counter() - t0
            c = parse_spec_counters(body, f"call {p.call_id} (rid {rid})")
            if c["accepted_drafts"] is None and FLAG_COMPLETION_FALLBACK not in flags:
                flags.append(FLAG_COMPLETION_FALLBACK)
            if c["fields"].get("accepted_drafts") in HISTOGRAM_FIELDS and FLAG_HISTOGRAM not in flags:
                flags.append(FLAG_HISTOGRAM)
            calls.append(CallMeasurement(
                call_id=p.call_id, completion_tokens=c["completion_tokens"], verify_rounds=c["verify_rounds"],
                accepted_drafts=c["accepted_drafts"], proposed_drafts=c["proposed_drafts"],
                tokens=body.get("output_ids"), seconds=secs, finish_reason=c["finish_reason"],
                fields=c["fields"], context_len=len(p.prompt_ids)))
        keep = ("version", "model_path", "speculative_algorithm", "speculative_draft_model_path",
                "speculative_dspark_block_size", "speculative_num_draft_tokens", "tp_size", "dtype")
        return EngineRun("sglang", drafter, calls, info={k: info.get(k) for k in keep if k in info}
                         | {"base_url": client.base_url}, flags=flags)
