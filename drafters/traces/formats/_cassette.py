"""VCR / pydantic-ai YAML cassettes of provider HTTP traffic (``interactions[{request, response}]``; Ruby VCR's
``http_interactions``, with ``!binary`` / ``base64_string`` bodies, too). A body that is a recorded stream (SSE,
JSON lines, a chunk list) is joined into the reply it streams (``_streams``; a cut stream is refused).

Every request re-sends the whole history, so each interaction is one explicit ``LLMCall`` (context =
the request's messages, completion = the response's message): that is exactly what the model saw and
wrote, even when the agent rewrote its history between calls. Calls are grouped into conversations by
their first user message (a cassette can hold several agent runs, and one run can move between
providers: README "Some cassettes mix providers"); each conversation's ``messages`` is its last call's
context plus completion.

Providers are told apart by the request URI (and body shape): each provider module offers
``request_to_messages(body) -> (tools, messages)`` and ``response_to_message(body) -> Message | None``.
"""

from __future__ import annotations

import base64
import gzip
import importlib
import json
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

from drafters.traces.formats import _reading, _records, _streams
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Conversation, LLMCall, Message, Source, TextPart

_PROVIDERS = {  # format name -> module implementing the converters
    "openai_chat": "drafters.traces.formats.openai_chat",
    "openai_responses": "drafters.traces.formats.openai_responses",
    "anthropic_messages": "drafters.traces.formats.anthropic_messages",
    "bedrock_converse": "drafters.traces.formats.bedrock_converse",
    "gemini_api": "drafters.traces.formats.gemini_api",
}
_URI_RE = re.compile(r"^\s*uri:\s*(\S+)", re.MULTILINE)


def provider_of(uri: str) -> str | None:
    """The provider format a request URI belongs to, or None for non-LLM traffic."""
    u = uri.lower()
    if "/chat/completions" in u:
        return "openai_chat"
    if u.rstrip("/").endswith("/responses") or "/responses?" in u:
        return "openai_responses"
    if "bedrock-runtime" in u and ("/converse" in u):
        return "bedrock_converse"
    if ":generatecontent" in u or ":streamgeneratecontent" in u:
        return "gemini_api"
    if "/v1/messages" in u and "count_tokens" not in u:
        return "anthropic_messages"
    if u.split("?")[0].rstrip("/").endswith("/api/chat"):  # Ollama: OpenAI-shaped messages and tools
        return "openai_chat"
    return None


_MODEL_IN_URI = re.compile(r"/models?/([^/:?]+)")


def model_from_uri(uri: str) -> str | None:
    """The model id of Bedrock (``/model/<id>/converse``) and Gemini (``/models/<id>:generateContent``) URIs."""
    from urllib.parse import unquote

    m = _MODEL_IN_URI.search(uri)
    return unquote(m.group(1)) if m else None


def is_cassette(head: str) -> bool:
    """Whether ``head`` (the start of a file) is a YAML cassette rather than JSON(L) records: vcrpy /
    pydantic-ai ``interactions:``, or Ruby VCR ``http_interactions:`` (after an optional ``---``)."""
    text = head.lstrip()
    if text.startswith("---"):
        text = text[3:].lstrip()
    return text.startswith(("interactions:", "http_interactions:"))


def sniff_provider(head: str) -> str | None:
    """The provider of the last LLM request URI in ``head`` (the conversation a mixed cassette ends in)."""
    found = None
    for uri in _URI_RE.findall(head):
        found = provider_of(uri) or found
    return found


def _text(raw: bytes | str) -> str:
    """A recorded body as text: bytes gunzipped when gzip-compressed, decoded as UTF-8."""
    if isinstance(raw, str):
        return raw
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


def _body(part: dict[str, Any]) -> Any:
    """A request's or response's body as JSON. Spellings: pydantic-ai ``parsed_body``; vcrpy
    ``body: {string: ...}`` or ``body: "..."``; Ruby VCR ``body: {encoding, string}`` with the string possibly a
    ``!binary`` (base64) scalar, or ``body: {base64_string: ...}``. A recorded stream (SSE ``data:`` lines, JSON
    lines, a list of chunks) is joined into the body it streams (``_streams``).

    Raises:
        _streams.StreamError when the body is a recorded stream that cannot be joined (its code says why).
    """
    body = part.get("parsed_body")
    if body is None:
        body = part.get("body")
        if isinstance(body, dict) and "base64_string" in body:  # Ruby VCR preserve_exact_body_bytes
            try:
                body = base64.b64decode(str(body["base64_string"]))
            except ValueError:
                return None
        elif isinstance(body, dict) and "string" in body:  # vcrpy's / Ruby VCR's {"string": "..."} form
            body = body["string"]
        if isinstance(body, (bytes, str)):
            try:
                text = _text(body)
            except (OSError, EOFError):
                return None
            try:
                body = json.loads(text)
            except ValueError:
                chunks = _streams.chunks_of_text(text)
                return _streams.join(chunks) if chunks is not None else None
    if _streams.is_chunk_list(body):
        return _streams.join(body)
    if isinstance(body, dict) and _streams.kind(body) == "ollama_chat" and body.get("done") is True:
        return _streams.join([body])  # an unstreamed Ollama /api/chat reply: read as a chat.completion
    return body


def _load(stream: IO[str], filename: str, problems: ProblemSink, fmt: str) -> Any:
    """The cassette's YAML; Ruby VCR's ``!binary`` scalars (base64) are read as bytes (``_body`` decodes them).
    Parse errors are reported as ``invalid_json`` (None returned)."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = type("CassetteLoader", (base,), {})
    loader.add_constructor("!binary", lambda ld, node: base64.b64decode(ld.construct_scalar(node)))
    try:
        return yaml.load(stream, Loader=loader)  # noqa: S506 - a SafeLoader with one more scalar tag
    except (yaml.YAMLError, ValueError) as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.error("invalid_json", f"file is not valid YAML: {getattr(exc, 'problem', exc)}",
                       Source(fmt, filename, line=mark.line + 1 if mark else None))
        return None


def _first_user_text(messages: list[Message]) -> str:
    for m in messages:
        if m.role == "user" and m.text:
            return m.text
    return ""


def _same(a: Message, b: Message) -> bool:
    """Equal up to the model name (requests do not say which model wrote a history message)."""
    return a.role == b.role and a.parts == b.parts and a.meta == b.meta


def _share_prefix(previous: list[Message], context: list[Message]) -> list[Message]:
    """``context`` with its leading messages replaced by the previous call's objects when they are the
    same messages: the re-sent history keeps the model names of the responses, the conversation is
    recognized as append-only, and shared messages are stored and scrubbed once."""
    n = 0
    while n < min(len(previous), len(context)) and _same(previous[n], context[n]):
        n += 1
    if n == 0:
        return context
    return previous[:n] + context[n:]


def parse(stream: IO[str], filename: str, problems: ProblemSink, fmt: str) -> Iterator[Conversation]:
    """Yield the conversations of one cassette (see module doc). Bad interactions are reported."""
    data = _load(stream, filename, problems, fmt)
    if data is None:
        return
    interactions = None
    if isinstance(data, dict):
        interactions = data.get("interactions", data.get("http_interactions"))
    if not isinstance(interactions, list):
        problems.error("missing_field", "cassette has no 'interactions' list", Source(fmt, filename, record="$"))
        return
    stem = filename.rsplit("/", 1)[-1]
    groups: dict[str, list[LLMCall]] = {}
    group_src: dict[str, Source] = {}
    for i, inter in enumerate(interactions):
        src = Source(fmt, filename, record=f"interactions[{i}]")
        _reading.count(problems, "records")
        if not isinstance(inter, dict) or not isinstance(inter.get("request"), dict):
            problems.error("not_an_object", "interaction has no request", src)
            continue
        req, resp = inter["request"], inter.get("response") or {}
        provider = provider_of(str(req.get("uri", "")))
        if provider is None:
            continue  # auth, model listing, file uploads: not an LLM call
        status = (resp.get("status") or {}).get("code") if isinstance(resp.get("status"), dict) else None
        if status is not None and status != 200:
            problems.warning("error_response", f"HTTP {status} response skipped", src)
            continue
        try:
            req_body, resp_body = _body(req), _body(resp)
        except _streams.StreamError as exc:
            problems.error(exc.code, f"recorded streamed response: {exc} (docs/traces.md, streamed responses)",
                           src, field="response.body")
            continue
        if not isinstance(req_body, dict) or not isinstance(resp_body, dict):
            problems.error("invalid_json", "request or response body is not a JSON object", src, field="body")
            continue
        try:
            module = importlib.import_module(_PROVIDERS[provider])
        except ImportError:
            problems.warning("unsupported_provider", f"no converter for {provider} recordings yet", src)
            continue
        try:
            tools, context = module.request_to_messages(req_body)
            completion = module.response_to_message(resp_body)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            problems.error("not_an_object", f"{provider} body not understood: {exc}", src, field="body")
            continue
        if completion is None:
            problems.error("missing_field", "response holds no assistant message", src, field="response")
            continue
        if completion.model is None:
            completion.model = model_from_uri(str(req.get("uri", ""))) or req_body.get("model")
        key = _first_user_text(context)
        calls = groups.setdefault(key, [])
        group_src.setdefault(key, src)
        if calls:
            context = _share_prefix(calls[-1].context + [calls[-1].completion], context)
        calls.append(LLMCall("", len(calls), tools, context, completion))
    for n, (key, calls) in enumerate(groups.items()):
        conv_id = f"cassette:{stem}" + (f":{n}" if n else "")
        for c in calls:
            c.conversation_id = conv_id
        last = calls[-1]
        yield Conversation(
            id=conv_id,
            source=group_src[key],
            tools=last.tools,
            messages=list(last.context) + [last.completion],
            explicit_calls=calls,
        )


def sniff_cassette_or_records(head: str, fmt: str, is_record: Callable[[dict[str, Any]], bool]) -> bool:
    """The ``sniff`` of a provider format ``fmt``: a cassette whose last LLM request goes to ``fmt``, or
    JSON(L) whose first record (the first item when the first line is an array) is an object that
    ``is_record`` accepts."""
    if is_cassette(head):
        return sniff_provider(head) == fmt
    first = _reading.first_json_line(head)
    if isinstance(first, list) and first:
        first = first[0]
    return isinstance(first, dict) and is_record(first)


def parse_cassette_or_records(
    stream: IO[str], filename: str, problems: ProblemSink, fmt: str,
    parse_records: Callable[[IO[str]], Iterator[Conversation]],
) -> Iterator[Conversation]:
    """The ``parse`` of a provider format ``fmt``: a cassette goes to :func:`parse`, anything else to
    ``parse_records(stream)`` (the stream given back whole: the 64 characters read to decide are put
    back in front)."""
    head = stream.read(64)
    stream = _reading.Prefixed(head, stream)  # type: ignore[assignment]
    if is_cassette(head):
        yield from parse(stream, filename, problems, fmt)
    else:
        yield from parse_records(stream)


def provider_sniff_parse(
    fmt: str,
    request_to_messages: Callable[[dict[str, Any]], tuple[list, list[Message]]],
    response_to_message: Callable[[dict[str, Any]], Message | None],
    is_record: Callable[[dict[str, Any]], bool],
) -> tuple[Callable[[str, str], bool], Callable[[IO[str], str, ProblemSink], Iterator[Conversation]]]:
    """``(sniff, parse)`` of a provider format whose JSON(L) records are request bodies (optionally with
    the response under ``"response"``, see ``_records.parse_request_records``) and whose recordings are
    cassettes."""

    def sniff(head: str, filename: str) -> bool:
        return sniff_cassette_or_records(head, fmt, is_record)

    def parse_(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
        yield from parse_cassette_or_records(
            stream, filename, problems, fmt,
            lambda s: _records.parse_request_records(s, filename, problems, fmt, request_to_messages,
                                                    response_to_message, is_record))

    return sniff, parse_


__all__ = [
    "TextPart",
    "is_cassette",
    "parse",
    "parse_cassette_or_records",
    "provider_of",
    "provider_sniff_parse",
    "sniff_cassette_or_records",
    "sniff_provider",
]
