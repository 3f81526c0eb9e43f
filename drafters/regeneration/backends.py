"""Where the target regenerates answers: llama.cpp's llama-server (CPU), an OpenAI-compatible endpoint
(SGLang, vLLM on GPU clusters), or the target in this process (transformers ``generate``, the fallback).

A backend turns a batch of prompts (exact token ids) into the target's raw continuations; the runner
(``drafters.regeneration.run``) cuts them at the end-of-turn token, stores and reports them. Every backend
samples with the same settings (``Sampling``) and a per-call seed; greedy answers are the same whichever
backend wrote them, up to the engine's arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from drafters.errors import TracedraftError
from drafters.regeneration.store import Sampling

__all__ = ["Backend", "GenerationCancelled", "HFBackend", "HTTPBackend", "LlamaServerBackend", "OpenAIBackend",
           "Request"]

Cancelled = Callable[[], bool]
#: ``on_step(n)``: a backend that decodes a batch in lock-step calls it after each decode step, n the tokens
#: each row has so far (the runner turns it into progress inside a batch that runs for minutes on a CPU).
OnStep = Callable[[int], None]


class GenerationCancelled(Exception):
    """A backend stopped a batch because ``cancelled()`` turned True: its answers are partial, never stored."""


@dataclass(frozen=True)
class Request:
    """One call to regenerate: ``prompt_ids`` [T] exactly as the serving engine tokenizes the context, and
    the call's own ``seed``."""

    call_id: str
    prompt_ids: list[int]
    seed: int


class Backend(Protocol):
    """``name`` (recorded with every answer), ``batch_size`` (answers in flight at once: parallel server
    slots or batch rows) and ``generate``: raw token ids [n_i] per request, at most ``sampling.max_tokens``
    each, possibly running past the end-of-turn token (the runner cuts there). A backend that can stop a batch
    part-way checks ``cancelled()`` while it decodes and raises GenerationCancelled; one that cannot ignores it
    (the runner checks between batches). One that decodes in lock-step reports each step to ``on_step`` and
    says so with ``lock_step = True`` (the runner then needs no clock to report a batch in flight); the
    others ignore it."""

    name: str
    batch_size: int

    def generate(self, requests: Sequence[Request], sampling: Sampling, cancelled: Cancelled | None = None,
                 on_step: OnStep | None = None) -> list[list[int]]: ...


class HFBackend:
    """The target in this process: ``transformers`` ``generate`` on left-padded batches of ``batch_size``
    prompts, stopping rows at ``stop_ids``. Sampling uses one generator per batch seeded with the first
    request's seed, so answers at temperature > 0 depend on how calls were batched (greedy ones do not).
    ``cancelled()`` is asked after every decode step (a CPU batch of long answers runs for minutes), and a
    cancel raises GenerationCancelled within one step; ``on_step`` hears of every step too."""

    name = "hf"
    lock_step = True  # calls ``on_step`` after every decode step of a batch

    def __init__(self, target, stop_ids: Sequence[int], *, batch_size: int = 8, pad_id: int | None = None):
        self.target, self.stop_ids, self.batch_size = target, [int(t) for t in stop_ids], int(batch_size)
        tok = getattr(target, "tokenizer", None)
        self.pad_id = int(pad_id if pad_id is not None else
                          (getattr(tok, "pad_token_id", None) or getattr(tok, "eos_token_id", None) or 0))

    def generate(self, requests: Sequence[Request], sampling: Sampling, cancelled: Cancelled | None = None,
                 on_step: OnStep | None = None) -> list[list[int]]:
        import torch
        from transformers import StoppingCriteriaList

        width = max(len(r.prompt_ids) for r in requests)
        ids = torch.full((len(requests), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(requests):  # left padding: every row's next token is at the same column
            ids[i, width - len(r.prompt_ids):] = torch.tensor(r.prompt_ids)
            mask[i, width - len(r.prompt_ids):] = 1
        greedy = sampling.temperature < 1e-5
        kwargs: dict[str, Any] = {"do_sample": not greedy}
        if not greedy:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k or None)
            torch.manual_seed(requests[0].seed)
        device = self.target.device
        stop = _StepWatch(cancelled, on_step, width)
        with torch.no_grad():
            out = self.target.model.generate(
                input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=sampling.max_tokens,
                eos_token_id=self.stop_ids or None, pad_token_id=self.pad_id,
                stopping_criteria=StoppingCriteriaList([stop]), **kwargs)
        if stop.hit:
            raise GenerationCancelled
        return [row[width:].tolist() for row in out.cpu()]


class _StepWatch:
    """A ``generate`` stopping criterion, called after every decode step: it tells ``on_step`` how many
    tokens each row has (input_ids [B, prompt width + n]), and every row is done once ``cancelled()`` has
    said True."""

    def __init__(self, cancelled: Cancelled | None, on_step: OnStep | None, prompt_width: int):
        self.cancelled, self.on_step, self.prompt_width, self.hit = cancelled, on_step, prompt_width, False

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        if self.on_step is not None:
            self.on_step(int(input_ids.shape[1]) - self.prompt_width)
        self.hit = self.hit or bool(self.cancelled is not None and self.cancelled())
        return torch.full((input_ids.shape[0],), self.hit, dtype=torch.bool, device=input_ids.device)


class HTTPBackend:
    """Shared by the HTTP backends: ``batch_size`` requests in flight from a thread pool, each failure
    reported with the endpoint and the call (``regeneration_endpoint_unreachable`` when the server cannot be
    reached, ``regeneration_endpoint_error`` for an HTTP error or an answer of the wrong shape)."""

    name = "http"
    path = "/"

    def __init__(self, base_url: str, *, batch_size: int = 4, timeout: float = 600.0, transport: Any = None):
        import httpx

        self.base_url, self.batch_size = base_url.rstrip("/"), int(batch_size)
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def generate(self, requests: Sequence[Request], sampling: Sampling, cancelled: Cancelled | None = None,
                 on_step: OnStep | None = None) -> list[list[int]]:
        # requests in flight run to their end: the runner checks ``cancelled`` between batches
        with ThreadPoolExecutor(max_workers=self.batch_size) as pool:
            return list(pool.map(lambda r: self._one(r, sampling), requests))

    def _one(self, request: Request, sampling: Sampling) -> list[int]:
        import httpx

        where = f"{self.base_url}{self.path} (call {request.call_id})"
        try:
            r = self._http.post(self.path, json=self.body(request, sampling))
        except httpx.HTTPError as e:
            raise TracedraftError("regeneration_endpoint_unreachable",
                                  f"cannot reach the regeneration endpoint: {e!r}", where) from e
        if r.status_code >= 400:
            raise TracedraftError("regeneration_endpoint_error", f"HTTP {r.status_code}: {r.text[:300]}", where)
        try:
            return self.tokens(r.json())
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise TracedraftError("regeneration_endpoint_error",
                                  f"answer of unexpected shape ({e!r}): {r.text[:300]}", where) from e

    def body(self, request: Request, sampling: Sampling) -> dict[str, Any]:
        raise NotImplementedError

    def tokens(self, data: dict[str, Any]) -> list[int]:
        raise NotImplementedError


class LlamaServerBackend(HTTPBackend):
    """llama.cpp's ``llama-server`` ``POST /completion`` with token-id prompts. Start the server with
    ``-np batch_size`` parallel slots (``drafters.engines`` does: ``regeneration_server``). The server stops at
    its end-of-generation tokens without returning them or naming which; the template's end-of-turn id
    (``stop_ids``: one int, or a list) is then appended, so the answer ends as the target's turn ends. Raises
    TracedraftError(code="regeneration_stop_unknown") when several ids end a turn (gpt-oss: <|return|>,
    <|call|>) and the server stopped on one it did not name: the answer cannot be labelled."""

    name = "llamacpp"
    path = "/completion"

    def __init__(self, base_url: str, stop_ids: int | Sequence[int], **kw: Any):
        super().__init__(base_url, **kw)
        self.stop_ids = [int(stop_ids)] if isinstance(stop_ids, int) else [int(t) for t in stop_ids]

    def body(self, request: Request, sampling: Sampling) -> dict[str, Any]:
        return {"prompt": list(request.prompt_ids), "n_predict": sampling.max_tokens,
                "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": sampling.top_k,
                "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0, "seed": request.seed,
                "return_tokens": True, "cache_prompt": False, "stream": False}

    def tokens(self, data: dict[str, Any]) -> list[int]:
        ids = [int(t) for t in data["tokens"]]
        if data.get("stop_type") not in ("eos", "word") or (ids and ids[-1] in self.stop_ids):
            return ids
        if len(self.stop_ids) == 1:
            return [*ids, self.stop_ids[0]]
        raise TracedraftError("regeneration_stop_unknown", f"llama-server stopped on an end-of-generation token "
                              f"without naming it, and the template ends turns with any of {self.stop_ids}; "
                              "regenerate this target with the hf or openai engine", "data.regeneration.engine")


class OpenAIBackend(HTTPBackend):
    """An OpenAI-compatible ``POST /v1/completions`` (SGLang, vLLM) with token-id prompts. The answer's text
    is tokenized again with the target's tokenizer (``encode``: text -> ids); special tokens are kept in the
    text (``skip_special_tokens`` false), so tool-call markers survive. ``stop_ids``: the template's
    end-of-turn ids (one int or several: gpt-oss ends a turn with ``<|return|>`` or ``<|call|>``), sent as
    ``stop_token_ids``. An answer that finished on a stop ends with the id the server names
    (``matched_stop`` in SGLang, ``stop_reason`` in vLLM); raises TracedraftError(code=
    "regeneration_stop_unknown") when several ids end a turn and the server names none of them."""

    name = "openai"
    path = "/v1/completions"

    def __init__(self, base_url: str, model: str, encode: Callable[[str], list[int]],
                 stop_ids: int | Sequence[int], **kw: Any):
        super().__init__(base_url, **kw)
        self.model, self.encode = model, encode
        self.stop_ids = [int(stop_ids)] if isinstance(stop_ids, int) else [int(t) for t in stop_ids]

    def body(self, request: Request, sampling: Sampling) -> dict[str, Any]:
        body = {"model": self.model, "prompt": list(request.prompt_ids), "max_tokens": sampling.max_tokens,
                "temperature": sampling.temperature, "top_p": sampling.top_p, "seed": request.seed,
                "skip_special_tokens": False, "stop_token_ids": list(self.stop_ids)}
        if sampling.top_k:
            body["top_k"] = sampling.top_k
        return body

    def tokens(self, data: dict[str, Any]) -> list[int]:
        choice = data["choices"][0]
        ids = [int(t) for t in choice["token_ids"]] if choice.get("token_ids") else self.encode(choice["text"])
        if choice.get("finish_reason") != "stop" or (ids and ids[-1] in self.stop_ids):
            return ids
        named = choice.get("matched_stop", choice.get("stop_reason"))
        if isinstance(named, int) and named in self.stop_ids:
            return [*ids, named]
        if len(self.stop_ids) == 1:
            return [*ids, self.stop_ids[0]]
        raise TracedraftError("regeneration_stop_unknown", f"the server stopped without naming which of the "
                              f"end-of-turn ids {self.stop_ids} ended the answer (matched_stop / stop_reason: "
                              f"{named!r}); the answer cannot be labelled", "data.regeneration.endpoint")
