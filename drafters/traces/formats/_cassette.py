"""VCR / pydantic-ai YAML cassettes of provider HTTP traffic (``interactions[{request, response}]``; Ruby VCR's
``http_interactions``, with ``!binary`` / ``base64_string`` bodies, too; a mock server's recorded mocks, one YAML
document per exchange, ``when: {path, method, body}`` / ``then: {status, body}``, as Rust's httpmock records them
for rig's tests). A body that is a recorded stream (SSE, JSON lines, a chunk list) is joined into the reply it
streams (``_streams``; a cut stream is refused).

Every request re-sends the whole history, so each interaction is one explicit ``LLMCall`` (context =
the request's messages, completion = the response's message): that is exactly what the model saw and
wrote, even when the agent rewrote its history between calls. Calls are grouped into conversations by
their first user message (a cassette can hold several agent runs, and one run can move between
providers: README "Some cassettes mix providers"); a request re-sending an earlier call's very context (a test's
second run, another sample), or the same first prompt without any earlier call's reply (no more assistant
messages than each call's context: another test sending the prompt afresh), opens another conversation; each
conversation's ``messages`` is its last call's context plus completion.

Providers are told apart by the request URI (and body shape): each provider module offers
``request_to_messages(body) -> (tools, messages)`` and ``response_to_message(body) -> Message | None``.
"""

from __future__ import annotations

import base64
import gzip
import importlib
import io
import json
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

from drafters.traces.cut_replies import body_stopped_by_length
from drafters.traces.formats import _reading, _records, _streams
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Conversation, LLMCall, Message, Source, TextPart

_PROVIDERS = {  # format name -> module implementing the converters
    "openai_chat": "drafters.traces.formats.openai_chat",
    "openai_responses": "drafters.traces.formats.openai_responses",
    "anthropic_messages": "drafters.traces.formats.anthropic_messages",
    "bedrock_converse": "drafters.traces.formats.bedrock_converse",
    "gemini_api": "drafters.traces.formats.gemini_api",
    "cohere_chat": "drafters.traces.formats.cohere_chat",
}
_URI_RE = re.compile(r"^\s*(?:uri|url):\s*(\S+)", re.MULTILINE)  # url: go-vcr
_REQUEST_LINE_RE = re.compile(r"^(?:GET|POST|PUT|PATCH|DELETE) (\S+) HTTP/\d", re.MULTILINE)
_MOCK_PATH_RE = re.compile(r"^\s*path:\s*(\S+)", re.MULTILINE)  # a recorded mock's request path (httpmock)
#: The head of a recorded mock's first exchange: ``when:`` then its request's path or method.
_MOCK_HEAD = re.compile(r"^when:[ \t]*\n(?:[ \t]+.*\n){0,3}?[ \t]+(?:path|method):", re.MULTILINE)
HTTPRR_HEADER = "httprr trace v1\n"


def _is_mock(text: str) -> bool:
    """Whether ``text`` (a file or its head) opens with a mock server's recorded exchange (``_MOCK_HEAD``)."""
    return _MOCK_HEAD.match(text.lstrip().removeprefix("---").lstrip()) is not None


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
    path = u.split("?")[0].rstrip("/")
    if path.endswith("/v2/chat") or "cohere" in u and path.endswith("/v1/chat"):
        return "cohere_chat"  # Cohere's chat, v2 (OpenAI-shaped) and v1 (chat_history) on Cohere's host
    return None


_MODEL_IN_URI = re.compile(r"/models?/([^/:?]+)")


def model_from_uri(uri: str) -> str | None:
    """The model id of Bedrock (``/model/<id>/converse``) and Gemini (``/models/<id>:generateContent``) URIs."""
    from urllib.parse import unquote

    m = _MODEL_IN_URI.search(uri)
    return unquote(m.group(1)) if m else None


def is_cassette(head: str) -> bool:
    """Whether ``head`` (the start of a file) is a YAML cassette rather than JSON(L) records: vcrpy /
    pydantic-ai ``interactions:``, Ruby VCR ``http_interactions:``, go-vcr ``version: 2`` then ``interactions:``
    (after an optional ``---``), or a Go httprr trace (``httprr trace v1``)."""
    if head.startswith(HTTPRR_HEADER):
        return True
    text = head.lstrip()
    if text.startswith("---"):
        text = text[3:].lstrip()
    text = re.sub(r"^version:\s*\d+\s*\n", "", text)
    return text.startswith(("interactions:", "http_interactions:")) or _is_mock(text)


def sniff_provider(head: str) -> str | None:
    """The provider of the last LLM request URI in ``head`` (the conversation a mixed cassette ends in)."""
    found = None
    lines = _REQUEST_LINE_RE if head.startswith(HTTPRR_HEADER) else _MOCK_PATH_RE if _is_mock(head) else _URI_RE
    for uri in lines.findall(head):
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
        return yaml.load(stream, Loader=loader)
    except (yaml.YAMLError, ValueError) as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.error("invalid_json", f"file is not valid YAML: {getattr(exc, 'problem', exc)}",
                       Source(fmt, filename, line=mark.line + 1 if mark else None))
        return None


def _mocks(text: str, filename: str, problems: ProblemSink, fmt: str) -> dict[str, Any] | None:
    """A mock server's recorded exchanges (one YAML document each: ``when: {path, method, body}``, ``then: {status,
    body}``) as cassette ``interactions`` (the path as the request's URI, the status as its code); a document that
    is no exchange is ``not_an_object``. Parse errors are ``invalid_json`` (None returned)."""
    import yaml

    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.error("invalid_json", f"file is not valid YAML: {getattr(exc, 'problem', exc)}",
                       Source(fmt, filename, line=mark.line + 1 if mark else None))
        return None
    interactions: list[Any] = []
    for doc in (d for d in docs if d is not None):
        when, then = (doc.get("when"), doc.get("then")) if isinstance(doc, dict) else (None, None)
        if not isinstance(when, dict) or not isinstance(then, dict):
            interactions.append(None)  # reported where the interactions are read: no request
            continue
        interactions.append({"request": {**when, "uri": str(when.get("path") or "")},
                             "response": {**then, "code": then.get("status")}})
    return {"interactions": interactions}


class _NotHttp(ValueError):
    pass


def _http_message(data: bytes, pos: int, follows: Callable[[int], bool]) -> tuple[str, dict[str, str], bytes, int,
                                                                                int]:
    """One HTTP/1.1 message of an httprr record at ``pos``: (start line, headers (lower-case names), body, end
    position, lines in its head). The body by ``Content-Length`` or ``Transfer-Encoding: chunked``, else empty
    (a request without a body; a response without either is read by its record length, see ``_httprr``).
    Line ends may have lost their CR (the file was read as text): a ``Content-Length`` body must end where
    ``follows(position)`` says the next message starts."""
    def line() -> str:
        nonlocal pos
        end = data.find(b"\n", pos)
        if end < 0:
            raise _NotHttp("a header line without its end")
        text, pos = data[pos:end].rstrip(b"\r").decode("utf-8", errors="replace"), end + 1
        return text

    start = line()
    headers: dict[str, str] = {}
    n_lines = 2
    while (h := line()) != "":
        n_lines += 1
        name, sep, value = h.partition(":")
        if not sep:
            raise _NotHttp(f"a header line without a colon: {h[:60]!r}")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while True:
            size_line = line()
            n_lines += 1
            try:
                size = int(size_line.split(";")[0].strip(), 16)
            except ValueError:
                raise _NotHttp(f"a chunk size that is not hex: {size_line[:20]!r}") from None
            if size == 0:
                while line() != "":  # trailers, then the blank line
                    n_lines += 1
                return start, headers, body, pos, n_lines
            body += data[pos:pos + size]
            pos += size
            if data[pos:pos + 2] == b"\r\n":
                pos += 2
            elif data[pos:pos + 1] == b"\n":
                pos += 1
            else:
                raise _NotHttp("a chunk whose length does not match its size line")
    if "content-length" in headers:
        try:
            n = int(headers["content-length"])
        except ValueError:
            raise _NotHttp("a Content-Length that is not a number") from None
        # The body ends where the next message or record starts: at n bytes, or short of it by at most one
        # byte per line break in it (a CR dropped by the text read; Gemini's JSON arrays use CRLF).
        # Exactly one end may fit: a body that could end at two places is not guessed.
        newlines = data.count(b"\n", pos, pos + n)
        ends = [end for end in range(min(pos + n, len(data)), max(pos + n - newlines, pos) - 1, -1)
                if follows(end) and pos + n - end <= data.count(b"\n", pos, end)]
        if len(ends) != 1:
            raise _NotHttp("a body that does not end where its Content-Length says" if not ends else
                           "a body whose end is ambiguous once line ends lost their CR")
        return start, headers, data[pos:ends[0]], ends[0], n_lines
    return start, headers, b"", pos, n_lines


_RECORD_RE = re.compile(rb"(\d+) (\d+)\n")


def _record_follows(data: bytes) -> Callable[[int], bool]:
    """Whether an httprr record (or the end of the file, blank lines aside) starts at a position."""
    return lambda e: not data[e:].strip() or _RECORD_RE.match(data, e) is not None


def _httprr(text: str, filename: str, problems: ProblemSink, fmt: str) -> dict[str, Any] | None:
    """A Go httprr trace (``httprr trace v1``, then per exchange a line ``N M`` and the raw HTTP request of N
    bytes and response of M bytes) as cassette ``interactions``. Each message is parsed by HTTP framing
    (headers, then a ``Content-Length`` or chunked body), and must fit its record's byte count (up to the CRs a
    text read drops from line ends) and end where the next record starts; anything else is
    ``recording_not_parsed`` and the rest of the file is not read (None when no exchange was read)."""
    raw = _raw_bytes(text, filename)
    data = raw if raw is not None else text.encode("utf-8")
    pos = len(HTTPRR_HEADER)
    interactions: list[dict[str, Any]] = []
    while pos < len(data):
        src = Source(fmt, filename, record=f"exchange[{len(interactions)}]")
        m = _RECORD_RE.match(data, pos)
        try:
            if m is None:
                raise _NotHttp("no 'N M' record line where an exchange starts")
            n_req, n_resp = int(m.group(1)), int(m.group(2))
            pos = m.end()
            if raw is not None:  # exact bytes: each message is exactly its record's length
                exchange = _exact_exchange(data, pos, n_req, n_resp)
                pos += n_req + n_resp
                interactions.append(exchange)
                continue
            req_start, req_headers, req_body, end, head_lines = _http_message(
                data, pos, lambda e: data.startswith(b"HTTP/", e))
            if not (end - pos <= n_req <= end - pos + head_lines):
                raise _NotHttp(f"the request is {end - pos} bytes, its record says {n_req}")
            pos = end
            resp_start, resp_headers, resp_body, end, head_lines = _http_message(data, pos, _record_follows(data))
            if not resp_body and "content-length" not in resp_headers:  # no framing: the record's length
                end = min(len(data), pos + n_resp)
                while end > pos and not (end == len(data) or _RECORD_RE.match(data, end)):
                    end -= 1
                resp_start, resp_headers, _, body_at, head_lines = _http_message(data[:end], pos, _record_follows(data))
                resp_body = data[body_at:end]
            if not (end - pos <= n_resp <= end - pos + head_lines + resp_body.count(b"\n")):
                raise _NotHttp(f"the response is {end - pos} bytes, its record says {n_resp}")
            if "gzip" in resp_headers.get("content-encoding", "").lower():
                raise _NotHttp("a gzip-encoded response body (not readable from a text read)")
            pos = end
        except _NotHttp as exc:
            problems.error("recording_not_parsed", f"httprr trace: {exc}; the rest of the file is not read",
                           src)
            break
        interactions.append(_interaction(req_start, req_body, resp_start, resp_body))
    return {"interactions": interactions} if interactions else None


def _interaction(req_start: str, req_body: bytes, resp_start: str, resp_body: bytes) -> dict[str, Any]:
    method, _, rest = req_start.partition(" ")
    status = resp_start.split(" ")
    return {"request": {"method": method, "uri": rest.rsplit(" ", 1)[0],
                        "body": req_body.decode("utf-8", errors="replace")},
            "response": {"status": {"code": int(status[1]) if len(status) > 1 and status[1].isdigit() else None},
                         "body": resp_body.decode("utf-8", errors="replace")}}


def _exact_exchange(data: bytes, pos: int, n_req: int, n_resp: int) -> dict[str, Any]:
    """One httprr exchange read from the file's exact bytes: request and response each exactly fill their
    record lengths (``_NotHttp`` otherwise)."""
    req, resp = data[pos:pos + n_req], data[pos + n_req:pos + n_req + n_resp]
    if len(req) != n_req or len(resp) != n_resp:
        raise _NotHttp("the file ends inside an exchange (cut)")
    req_start, _, req_body, end, _ = _http_message(req, 0, lambda e: e == len(req))
    if end != len(req):
        raise _NotHttp(f"the request frames as {end} bytes, its record says {n_req}")
    resp_start, headers, resp_body, end, _ = _http_message(resp, 0, lambda e: e == len(resp))
    if not resp_body and "content-length" not in headers and "transfer-encoding" not in headers:
        resp_body, end = resp[end:], len(resp)  # no framing: the rest of the record
    if end != len(resp):
        raise _NotHttp(f"the response frames as {end} bytes, its record says {n_resp}")
    if "gzip" in headers.get("content-encoding", "").lower():
        resp_body = _text(resp_body).encode("utf-8")
    return _interaction(req_start, req_body, resp_start, resp_body)


def _raw_bytes(text: str, filename: str) -> bytes | None:
    """The file's exact bytes when ``filename`` is the file ``text`` was read from (the text read drops CRs,
    and httprr lengths count them); None otherwise (then the text is framed by ``_http_message``'s rules)."""
    from drafters.traces import io as tio

    try:
        with tio.open_binary(filename) as f:
            raw = f.read()
    except (OSError, EOFError, ValueError):
        return None
    decoded = raw.decode("utf-8-sig", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return raw.removeprefix(b"\xef\xbb\xbf") if decoded == text else None


def _first_user_text(messages: list[Message]) -> str:
    for m in messages:
        if m.role == "user" and m.text:
            return m.text
    return ""


def _same(a: Message, b: Message) -> bool:
    """Equal up to the model name (requests do not say which model wrote a history message)."""
    return a.role == b.role and a.parts == b.parts and a.meta == b.meta


def _holds_reply(context: list[Message], previous: LLMCall) -> bool:
    """Whether ``context`` may continue ``previous``: it holds more assistant messages than that call's context (a
    client may rewrite a reply's ids or split its parallel calls into messages of their own; a request holding fewer
    answers than every call of a conversation sends the first prompt afresh: another one)."""
    return sum(m.role == "assistant" for m in context) > sum(m.role == "assistant" for m in previous.context)


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
    text = stream.read()
    if text.startswith(HTTPRR_HEADER):
        data = _httprr(text, filename, problems, fmt)
    elif _is_mock(text):
        data = _mocks(text, filename, problems, fmt)
    else:
        data = _load(io.StringIO(text), filename, problems, fmt)
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
        uri = str(req.get("uri") or req.get("url") or "")  # url: go-vcr
        provider = provider_of(uri)
        if provider is None:
            continue  # auth, model listing, file uploads: not an LLM call
        status = (resp.get("status") or {}).get("code") if isinstance(resp.get("status"), dict) else \
            resp.get("code") if isinstance(resp.get("code"), int) else None  # go-vcr: code beside a status text
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
        completion.cut = body_stopped_by_length(resp_body)  # cut_replies: reported
        if completion.failed and not completion.parts:
            problems.warning("failed_turn_skipped", "the response records a failed request (its stop reason) and "
                             "no content: no model turn, not read", src)
            continue
        if completion.model is None:
            completion.model = model_from_uri(uri) or req_body.get("model")
        key = _first_user_text(context)
        while any(len(c.context) == len(context) and all(map(_same, c.context, context)) for c in groups.get(key, [])) \
                or groups.get(key) and not any(_holds_reply(context, c) for c in groups[key]):
            key += "\0"  # the same request sent again, or the same prompt without the reply: another conversation
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
