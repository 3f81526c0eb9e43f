"""``LlamaCppEngine``: accepted length as llama.cpp's ``llama-server`` sees it, on CPU (docs/serving.md
section 3).

The flow and why its outputs match the target alone token for token: see the package docstring
(``drafters.engines.llamacpp``). Failure codes of its own: speculation_off (no verification round: drafting
never engaged), bad_config, bad_drafter; the server's, the counters' and the export's come through.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from drafters.engines.base import CallMeasurement, Engine, EngineRun
from drafters.engines.llamacpp.build import DEFAULT_VERSION, find_llama_server
from drafters.engines.llamacpp.gguf import export_gguf, read_gguf_metadata
from drafters.engines.llamacpp.metrics import METRIC_ACCEPTED, METRIC_DRAFTED, METRIC_ROUNDS, SpecCounters
from drafters.engines.llamacpp.server import LlamaClient, LlamaServer
from drafters.errors import TracedraftError

FLAG_NOT_LOSSLESS = "not_lossless"
FLAG_NEAR_TIES = "near_tie_differences"  # outputs differ from the target alone only where its argmax is nearly tied
FLAG_STOP_IDS = "stop_token_ids_not_enforced"
STOP_TYPES = {"eos": "stop", "limit": "length", "word": "stop_string", "none": None}


def gguf_eog_ids(target_gguf: str | Path) -> set[int]:
    """End-of-generation ids a GGUF declares (eos, eot, eom); llama.cpp also treats some special tokens as
    EOG by their text, so this is a lower bound used only to warn about stop ids it may not enforce."""
    meta = read_gguf_metadata(target_gguf)
    return {int(meta[k]) for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                   "tokenizer.ggml.eom_token_id") if meta.get(k) is not None}


def top2_margins(body: Mapping[str, Any]) -> list[float | None]:
    """Per generated token, the target's top-1 minus top-2 logit (= the log-probability gap) from a
    /completion answer requested with ``n_probs`` >= 2 (``completion_probabilities[i].top_logprobs``);
    None where fewer than two candidates were reported."""
    out: list[float | None] = []
    for item in body.get("completion_probabilities") or []:
        top = item.get("top_logprobs") if isinstance(item, Mapping) else None
        if isinstance(top, list) and len(top) >= 2:
            out.append(float(top[0]["logprob"]) - float(top[1]["logprob"]))
        else:
            out.append(None)
    return out


def _tokens_equal_report(spec: Sequence[CallMeasurement], plain: Sequence[CallMeasurement],
                         margins: Sequence[Sequence[float | None]] | None = None,
                         tie_tolerance: float = 1e-3) -> dict:
    """Token identity of the speculative outputs with the target alone, call by call.

    For a call that differs, ``first_difference`` is the first differing generated token and ``margin``
    the target-alone pass's top-1/top-2 logit gap there (from ``margins``, None if unknown). A difference
    at a margin below ``tie_tolerance`` is a near tie: llama.cpp verifies a block in one batched forward
    and decodes the target alone one token at a time, and the two kernel paths sum in different orders,
    so an fp32 argmax that is nearly tied can flip (the same rule as drafters.evaluate's lossless check).
    ``identical``: every call equal; ``lossless``: every difference is a near tie."""
    mismatched = []
    for k, (s, p) in enumerate(zip(spec, plain)):
        a, b = list(s.tokens or []), list(p.tokens or [])
        if a != b:
            i = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            m = margins[k][i] if margins is not None and k < len(margins) and i < len(margins[k]) else None
            mismatched.append({"call_id": s.call_id, "first_difference": i, "len_spec": len(a), "len_plain": len(b),
                               "margin": m, "near_tie": m is not None and m < tie_tolerance})
    return {"identical": not mismatched, "lossless": all(x["near_tie"] for x in mismatched),
            "calls": len(spec), "mismatched_calls": mismatched, "near_ties": sum(x["near_tie"] for x in mismatched),
            "tie_tolerance": tie_tolerance, "tokens_compared": sum(len(s.tokens or []) for s in spec)}


class LlamaCppEngine(Engine):
    """Measure DSpark drafters with llama.cpp's llama-server (CPU).

    target_gguf: the target as GGUF (for SmolLM2, ``drafters.target_cache.smollm2_gguf_path()``; or
    ``export_target_gguf`` of a transformers directory). target_dir: the target's transformers directory,
    needed to export checkpoint-directory drafters (``export_gguf``). llama_server: an existing binary (else
    $TRACEDRAFT_LLAMA_SERVER, else the cached build of ``version``; never builds). check_lossless: also run
    the target alone on the same prompts and compare the generated ids (cached per prompt set, so several
    drafters share one plain pass; it also records the target's top-1/top-2 logit margin of every token, so
    a difference is classed as a near tie when that margin is below ``tie_tolerance``, see
    ``_tokens_equal_report``). ctx_size: tokens per slot (None: longest prompt + max_new_tokens + 64,
    rounded up to 256). threads: CPU threads for target and draft. work_dir: where exported drafter GGUFs go
    (default a temporary directory).

    ``measure(prompts, drafter)``: drafter = a DSpark checkpoint directory (exported first), a ``.gguf``
    draft, or None (the target alone: rounds 0, no tau). Returns an EngineRun whose calls carry per-call
    counter deltas (verify_rounds, accepted_drafts, proposed_drafts = drafted tokens), generated ids,
    seconds and finish reason; ``info`` holds the pass totals from /metrics (``metrics_delta``), the pass
    tau from ``tau_from_metrics``, the server argv and version, and ``lossless`` (identity report);
    ``flags`` holds FLAG_NOT_LOSSLESS when the ids differ. Summarise with ``drafters.evaluate.engine_summary``.
    """

    name = "llamacpp"

    def __init__(self, target_gguf: str | Path, *, target_dir: str | Path | None = None,
                 llama_server: str | Path | None = None, version: str = DEFAULT_VERSION,
                 cache_dir: str | Path | None = None, check_lossless: bool = True, ctx_size: int | None = None,
                 threads: int | None = None, startup_timeout: float = 300.0, request_timeout: float = 900.0,
                 extra_args: Sequence[str] = (), work_dir: str | Path | None = None,
                 log_dir: str | Path | None = None, draft_outtype: str = "f32", tie_tolerance: float = 1e-3):
        self.target_gguf = Path(target_gguf)
        if not self.target_gguf.is_file():
            raise TracedraftError("bad_config", f"target GGUF {self.target_gguf} does not exist", str(self.target_gguf))
        self.target_dir = None if target_dir is None else Path(target_dir)
        self.binary = find_llama_server(llama_server, version, cache_dir)
        self.version, self.cache_dir = version, cache_dir
        self.check_lossless, self.ctx_size, self.threads = check_lossless, ctx_size, threads
        self.startup_timeout, self.request_timeout = startup_timeout, request_timeout
        self.extra_args = list(extra_args)
        self.work_dir = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="tracedraft-llamacpp-"))
        self.log_dir = Path(log_dir) if log_dir else self.work_dir / "logs"
        self.draft_outtype = draft_outtype
        self._plain_cache: dict[tuple, list[CallMeasurement]] = {}
        self._plain_margins: dict[tuple, list[list[float | None]]] = {}
        self.tie_tolerance = tie_tolerance
        self._eog: set[int] | None = None

    # -- drafters --------------------------------------------------------------------------------------
    def draft_gguf(self, drafter: str | Path) -> tuple[Path, int]:
        """(draft GGUF path, block size) for a checkpoint directory (exported into work_dir) or a .gguf."""
        path = Path(drafter)
        if path.is_dir():
            if self.target_dir is None:
                raise TracedraftError("bad_config", "exporting a checkpoint directory needs target_dir (the "
                                      "target's transformers directory)", "target_dir")
            out = self.work_dir / "drafts" / f"{path.resolve().name}-{abs(hash(str(path.resolve()))) % 10**8}.gguf"
            export_gguf(path, self.target_dir, out, version=self.version, cache_dir=self.cache_dir,
                        outtype=self.draft_outtype)
            path = out
        if not path.is_file():
            raise TracedraftError("bad_drafter", f"drafter {drafter} is neither a checkpoint directory nor a "
                                  "GGUF file", str(drafter))
        meta = read_gguf_metadata(path)
        arch = meta.get("general.architecture")
        block = meta.get(f"{arch}.block_size")
        if not block:
            raise TracedraftError("bad_drafter", f"{path} has no {arch}.block_size: not a DSpark/DFlash draft",
                                  str(path))
        return path, int(block)

    # -- passes ----------------------------------------------------------------------------------------
    def _ctx(self, prompts: Sequence[Any], max_new_tokens: int, block: int) -> int:
        if self.ctx_size:
            return int(self.ctx_size)
        need = max((len(p.prompt_ids) for p in prompts), default=0) + max_new_tokens + block + 64
        return int(math.ceil(need / 256) * 256)

    def _replay(self, server: LlamaServer, prompts: Sequence[Any], max_new_tokens: int, temperature: float,
                seed: int, speculative: bool, margins: list | None = None
                ) -> tuple[list[CallMeasurement], SpecCounters, SpecCounters, dict]:
        """Replay ``prompts`` on ``server``; with ``margins`` (a list), also ask for the top-2 log-probabilities
        of every generated token and append each call's ``top2_margins`` to it."""
        client = LlamaClient(server, timeout=self.request_timeout)
        try:
            props = client.props()
            first = client.counters()
            prev = first
            calls = []
            for i, p in enumerate(prompts):
                t0 = time.perf_counter()
                body = client.complete(p.prompt_ids, max_new_tokens, temperature, seed + i,
                                       n_probs=2 if margins is not None else 0)
                secs = time.perf_counter() - t0
                if margins is not None:
                    margins.append(top2_margins(body))
                timings = body.get("timings") or {}
                cur = client.counters()
                # Slot counters reach /metrics at slot release; confirm this call's drafted tokens are in.
                for _ in range(20):
                    if not speculative or (cur - prev).drafted == int(timings.get("draft_n", 0)):
                        break
                    time.sleep(0.05)
                    cur = client.counters()
                d = cur - prev
                if speculative and d.drafted != int(timings.get("draft_n", 0)):
                    raise TracedraftError("engine_bad_response", f"/metrics drafted-token delta {d.drafted} != "
                                          f"timings.draft_n {timings.get('draft_n')} for call {p.call_id}",
                                          server.base_url + "/metrics")
                if speculative and "draft_n_accepted" in timings and d.accepted != int(timings["draft_n_accepted"]):
                    raise TracedraftError("engine_bad_response", f"/metrics accepted delta {d.accepted} != "
                                          f"timings.draft_n_accepted {timings['draft_n_accepted']} for call "
                                          f"{p.call_id}", server.base_url + "/metrics")
                tokens = [int(t) for t in body.get("tokens") or []]
                calls.append(CallMeasurement(
                    call_id=p.call_id, completion_tokens=int(body.get("tokens_predicted", len(tokens))),
                    verify_rounds=d.rounds if speculative else 0,
                    accepted_drafts=d.accepted if speculative else None,
                    proposed_drafts=d.drafted if speculative else None, tokens=tokens,
                    seconds=float(timings["predicted_ms"] + timings.get("prompt_ms", 0.0)) / 1000.0
                    if "predicted_ms" in timings else secs,
                    finish_reason=STOP_TYPES.get(str(body.get("stop_type")), body.get("stop_type")),
                    fields={"verify_rounds": METRIC_ROUNDS, "accepted_drafts": METRIC_ACCEPTED,
                            "proposed_drafts": METRIC_DRAFTED, "source": "/metrics delta per call"}
                    if speculative else {"source": "/completion"},
                    context_len=len(p.prompt_ids)))
                prev = cur
            return calls, first, prev, props
        finally:
            client.close()

    def _server(self, draft: Path | None, block: int, ctx: int) -> LlamaServer:
        return LlamaServer(self.binary, self.target_gguf, draft, block_size=block or None, ctx_size=ctx,
                           threads=self.threads, extra_args=self.extra_args, startup_timeout=self.startup_timeout,
                           log_dir=self.log_dir)

    def plain(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
              seed: int = 0) -> list[CallMeasurement]:
        """The target alone (no -md) on ``prompts``; cached per (prompt ids, budget, temperature, seed)."""
        key = self._plain_key(prompts, max_new_tokens, temperature, seed)
        if key not in self._plain_cache:
            margins: list = []
            with self._server(None, 0, self._ctx(prompts, max_new_tokens, 0)) as server:
                calls, *_ = self._replay(server, prompts, max_new_tokens, temperature, seed, speculative=False,
                                         margins=margins)
            self._plain_cache[key] = calls
            self._plain_margins[key] = margins
        return self._plain_cache[key]

    @staticmethod
    def _plain_key(prompts: Sequence[Any], max_new_tokens: int, temperature: float, seed: int) -> tuple:
        return (tuple(tuple(p.prompt_ids) for p in prompts), max_new_tokens, float(temperature), seed)

    def measure(self, prompts: Sequence[Any], drafter: Any, *, max_new_tokens: int, temperature: float = 0.0,
                seed: int = 0, stop_token_ids: Sequence[int] = ()) -> EngineRun:
        from drafters.evaluate import tau_from_counts

        prompts = list(prompts)
        flags: list[str] = []
        if self._eog is None:
            self._eog = gguf_eog_ids(self.target_gguf)
        eog = self._eog
        extra_stops = sorted({int(s) for s in stop_token_ids} - eog)
        if extra_stops:
            # llama-server stops only on the vocabulary's end-of-generation tokens; say so rather than pretend.
            flags.append(FLAG_STOP_IDS)
        if drafter is None:
            calls = self.plain(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
            return EngineRun("llamacpp", None, calls, info={"target_gguf": str(self.target_gguf),
                                                            "llama_server": str(self.binary)}, flags=flags)
        draft, block = self.draft_gguf(drafter)
        ctx = self._ctx(prompts, max_new_tokens, block)
        with self._server(draft, block, ctx) as server:
            calls, first, last, props = self._replay(server, prompts, max_new_tokens, temperature, seed,
                                                     speculative=True)
            argv = list(server.argv)
            log_path = str(server.log_path)
            if "draft-dspark" not in server.log_tail(10**7):
                flags.append("dspark_not_confirmed_in_log")  # the server log names the spec type it added
        delta = last - first
        if delta.rounds <= 0:
            raise TracedraftError("speculation_off", f"llama-server ran {len(prompts)} calls with draft {draft} but "
                                  f"counted no verification round ({METRIC_ROUNDS} did not move): drafting never "
                                  f"engaged; server log {log_path}", str(draft))
        info: dict[str, Any] = {
            "engine_version": self.version, "llama_server": str(self.binary), "server_argv": argv,
            "server_log": log_path, "target_gguf": str(self.target_gguf), "draft_gguf": str(draft),
            "block_size": block, "ctx_size": ctx, "build_info": props.get("build_info"),
            "metrics_delta": {"rounds": delta.rounds, "accepted": delta.accepted, "drafted": delta.drafted,
                              "predicted": delta.predicted, "accepted_per_position": list(delta.per_pos)},
            "tau_metrics": tau_from_counts(delta.accepted, delta.rounds),
            "stop_token_ids_enforced": sorted(eog), "stop_token_ids_not_enforced": extra_stops,
        }
        if self.check_lossless:
            plain = self.plain(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
            margins = self._plain_margins.get(self._plain_key(prompts, max_new_tokens, temperature, seed))
            rep = _tokens_equal_report(calls, plain, margins if temperature == 0 else None, self.tie_tolerance)
            info["lossless"] = rep
            info["plain_seconds"] = sum(c.seconds or 0.0 for c in plain)
            info["plain_tokens"] = sum(c.completion_tokens for c in plain)
            if temperature == 0 and not rep["lossless"]:
                flags.append(FLAG_NOT_LOSSLESS)
            elif temperature == 0 and not rep["identical"]:
                flags.append(FLAG_NEAR_TIES)
        return EngineRun("llamacpp", str(drafter), calls, info=info, flags=flags)
