"""Hand counts of the ninety-seventh held-out set (benchmarks/data/heldout_formats_97/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh set's):
- a thinking / reasoning part belongs to the reply it precedes; a reply streamed or split over several records with
  no new input between them (no user, tool-result or system record) is one call;
- text the model writes after it has seen a tool result is a new call;
- a branch the tool marks as discarded (not on the active path) is not counted;
- tool calls are the client-executed calls the model emitted (function / tool_use / toolCall parts and the like);
  calls the provider ran server-side during generation are not counted;
- LLM calls a file only mentions (a usage-ledger entry, a count printed in a tool result) without recording their
  context and reply are not counted;
- a conversation is a thread of calls in which each later call's context continues an earlier call's context and
  reply; single-shot calls recorded side by side with unrelated contexts are separate conversations;
- an LLM call recorded only through fields parsed out of its reply (a judge's extracted score) counts as mentioned,
  not recorded, and is not counted;
- an assistant record with no content at all whose stop reason is an error (the request failed before the model
  produced anything) is a failed request, not a call, and is left out of later contexts as well.
Rules made explicit for this set (written before the product was run):
- in a VCR cassette (vcrpy YAML: ``interactions`` of ``request`` {body, method, uri} and ``response`` {body.string,
  status}) an interaction is a call when it is a POST to a generation endpoint (``/chat/completions``, Replicate's
  ``/predictions``) answered with a 2xx status whose body holds the model's output; other interactions (a GET of a
  model's metadata or of its provider mapping, which may quote example prompts and answers of the model card's
  widget) are HTTP traffic of the client, not calls; request and response bodies are the YAML scalars decoded
  (quoted scalars folded as YAML folds them), then read as JSON;
- a streamed reply recorded as one Server-Sent-Events body (``data: {chunk}`` lines, ``data: [DONE]``) is one call;
  its completion is the concatenation of the chunks' ``delta.content``;
- two requests sent with the same messages (the same test run with another ``tool_choice``) are two calls in two
  conversations: neither continues the other's reply;
- a reply made only of tool calls has the empty string as its completion; each entry of ``message.tool_calls`` is one
  tool call (``tool_choice`` naming a function does not make the call the provider's: the client would run it);
- a benchmark or load-test result file that keeps, per request, the prompt sent and the text generated records one
  single-shot call per request (its own conversation); a raw text-completion prompt is the context, written ``user``,
  whatever chat template is rendered inside it; two requests that sent the same prompt are two calls; counts of
  requests a summary only states (``request_totals``, ``requests_made``) without their prompt and output are
  mentioned, not recorded;
- a reply that echoes its prompt or repeats itself until the token limit is still the model's reply (one call);
- ids, timestamps, latencies (TTFT, TPOT, inter-token), token counts, scheduler fields, metrics, HTTP headers,
  model names and configuration are metadata, not context.
Context roles: as recorded in the request (``system`` / ``user`` / ``assistant`` / ``tool`` messages); ``user`` for a
bare prompt string.

Run: ``python benchmarks/data/heldout_formats_97/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- a small reader for the vcrpy cassettes of this set (standard library has no YAML) -------------------------


def _fold(segments: list) -> str:
    """YAML line folding of a quoted flow scalar split at its line breaks: the first segment keeps its leading text,
    every break followed by a non-empty line becomes one space, a break followed by N empty lines becomes N newlines;
    whitespace around breaks is dropped."""
    if len(segments) == 1:
        return segments[0]
    out = segments[0].rstrip(" \t")
    empty = 0
    for k, seg in enumerate(segments[1:], start=1):
        last = k == len(segments) - 1
        text = seg.lstrip(" \t") if last else seg.strip(" \t")
        if not last and text == "":
            empty += 1
            continue
        out += "\n" * empty if empty else " "
        empty = 0
        out += text
    return out


def _double_unescape(text: str) -> str:
    return json.loads('"' + text.replace("\t", "\\t") + '"')


def _scalar(lines: list, i: int, start: str) -> tuple:
    """Read the scalar that begins with ``start`` (the text after ``key: `` on line ``i``); returns (value, next i)."""
    if start in ("null", "~"):
        return None, i + 1
    quote = start[:1]
    if quote not in ("'", '"'):
        return start, i + 1  # a plain one-line scalar (uri, method, code)
    segments, buf, text, pos = [], [], start[1:], 0
    while True:
        while pos < len(text):
            ch = text[pos]
            if quote == "'" and ch == "'":
                if text[pos + 1:pos + 2] == "'":
                    buf.append("'")
                    pos += 2
                    continue
                segments.append("".join(buf))
                return _fold(segments), i + 1
            if quote == '"' and ch == "\\":
                buf.append(text[pos:pos + 2])
                pos += 2
                continue
            if quote == '"' and ch == '"':
                segments.append("".join(buf))
                joined = []
                for k, seg in enumerate(segments):  # an escaped line break joins without a space
                    if seg.rstrip(" \t").endswith("\\") and not seg.rstrip(" \t").endswith("\\\\"):
                        segments[k + 1] = seg.rstrip(" \t")[:-1] + segments[k + 1].lstrip(" \t")
                        continue
                    joined.append(seg)
                return _double_unescape(_fold(joined)), i + 1
            buf.append(ch)
            pos += 1
        segments.append("".join(buf))
        buf, i, pos = [], i + 1, 0
        text = lines[i]


def _cassette(path: Path) -> list:
    """The interactions of a vcrpy cassette: dicts with method, uri, body (request), status and string (response)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out, cur, part, i = [], None, None, 0
    while i < len(lines):
        line = lines[i]
        if line == "- request:":
            cur, part = {}, "request"
            out.append(cur)
        elif line == "  response:":
            part = "response"
        elif cur is not None and part == "request" and line.startswith("    body: "):
            cur["body"], i = _scalar(lines, i, line[len("    body: "):])
            continue
        elif cur is not None and part == "request" and line.startswith("    method: "):
            cur["method"] = line.split(": ", 1)[1]
        elif cur is not None and part == "request" and line.startswith("    uri: "):
            cur["uri"] = line.split(": ", 1)[1]
        elif cur is not None and part == "response" and line.startswith("      string: "):
            cur["string"], i = _scalar(lines, i, line[len("      string: "):])
            continue
        elif cur is not None and part == "response" and line.startswith("      code: "):
            cur["status"] = int(line.split(": ", 1)[1])
        i += 1
    return out


def _conversations(calls: list) -> int:
    """Number of threads among chat calls given as message lists: a call whose messages are an earlier call's
    messages plus an assistant message (and more) continues that call's thread."""
    threads = 0
    for k, msgs in enumerate(calls):
        if not any(len(msgs) > len(prev) and msgs[:len(prev)] == prev and msgs[len(prev)].get("role") == "assistant"
                   for prev in calls[:k]):
            threads += 1
    return threads


def hf_chat_cassette(path: Path) -> dict:
    """huggingface_hub ``InferenceClient`` VCR cassette (``tests/cassettes/*.yaml``, recorded by vcrpy through
    pytest-vcr while the client's tests ran against the Hugging Face Inference API, TGI behind it, or its router to
    third-party providers). Each POST to ``.../v1/chat/completions`` answered 200 is one call: its context the roles of
    the request's ``messages``; a JSON body (``chat.completion``) gives the completion ``choices[0].message.content``
    (empty string where the reply holds only ``tool_calls``) and its tool calls (the entries of
    ``choices[0].message.tool_calls``); an SSE body (``data: {chat.completion.chunk}`` lines) is one streamed call whose
    completion is the concatenated ``delta.content`` and whose tool calls are the distinct ``delta.tool_calls``
    indices. The GET of ``huggingface.co/api/models/...`` (the provider mapping) is not a call. Conversations: calls
    whose messages continue an earlier call's messages and reply share its thread; here every call is its own."""
    completions, contexts, tools, messages = [], [], 0, []
    for it in _cassette(path):
        if it.get("method") != "POST" or "/chat/completions" not in it.get("uri", ""):
            continue
        if not 200 <= it.get("status", 0) < 300 or not it.get("string"):
            continue
        request = json.loads(it["body"])
        body = it["string"]
        if body.lstrip().startswith("data:"):
            text, indices = "", set()
            for line in body.split("\n"):
                if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                    continue
                chunk = json.loads(line[5:])
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    text += delta.get("content") or ""
                    for call in delta.get("tool_calls") or []:
                        indices.add(call.get("index", 0))
            reply, n_tools = text, len(indices)
        else:
            message = json.loads(body)["choices"][0]["message"]
            reply, n_tools = message.get("content") or "", len(message.get("tool_calls") or [])
        completions.append(reply)
        contexts.append([m["role"] for m in request["messages"]])
        tools += n_tools
        messages.append(request["messages"])
    return _result("huggingface_hub InferenceClient VCR cassette (vcrpy YAML, chat completions)",
                   _conversations(messages), completions, contexts, tools)


def replicate_cassette(path: Path) -> dict:
    """replicate-python VCR cassette (``tests/cassettes/*.yaml``, recorded by vcrpy through pytest-recording while the
    client's tests ran against api.replicate.com). Each POST to ``/v1/models/OWNER/NAME/predictions`` (or
    ``/v1/predictions``) answered 2xx whose prediction object carries an ``output`` is one single-shot call: its
    context the request's ``input`` (``system_prompt`` written ``system`` when present, ``prompt`` written ``user``),
    its completion the ``output`` token list joined without separators (Replicate streams language-model output as a
    list of string pieces). The prediction was answered with ``Prefer: wait`` and is recorded with status
    ``processing``: the output as recorded is the reply. A prediction recorded without any ``output`` (created only)
    would be a call whose reply is not recorded (none here). Each call is its own conversation; no tool calls."""
    completions, contexts = [], []
    for it in _cassette(path):
        if it.get("method") != "POST" or "predictions" not in it.get("uri", ""):
            continue
        if not 200 <= it.get("status", 0) < 300 or not it.get("string"):
            continue
        prediction = json.loads(it["string"])
        output = prediction.get("output")
        if output is None:
            continue
        inputs = json.loads(it["body"]).get("input", {})
        completions.append("".join(output) if isinstance(output, list) else str(output))
        contexts.append((["system"] if inputs.get("system_prompt") else []) + (["user"] if "prompt" in inputs else []))
    return _result("replicate-python VCR cassette (vcrpy YAML, Replicate predictions)", len(completions), completions,
                   contexts, 0)


def llm_load_test_output(path: Path) -> dict:
    """llm-load-test output JSON (``output/output.json``, written by ``load_test.py`` of the v2 draft with the
    caikit-nlp client plugin over HTTP, streaming): ``{"results": [...], "config": {...}}``, one result per request
    with ``input_string`` (the prompt sent: an OpenOrca question rendered into the Llama-2 chat template, ``<s>[INST]
    <<SYS>> ... <</SYS>> ... [/INST]``), ``response_string`` (the text generated) and metrics (``TT_ack``, ``TTFT``,
    ``TPOT``, token counts, ``worker_id``). Each result is one single-shot call, its own conversation, context ``user``
    (the whole rendered prompt), completion ``response_string`` (many replies echo the prompt or loop on ``[/SYS]``;
    they are still the replies). Results are listed by worker, not by time. No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for result in data["results"]:
        if result.get("response_string") is None:
            continue
        completions.append(result["response_string"])
        contexts.append(["user"] if result.get("input_string") else [])
    return _result("llm-load-test output JSON (results with input_string / response_string)", len(completions),
                   completions, contexts, 0)


def guidellm_report(path: Path) -> dict:
    """GuideLLM benchmark report JSON (``benchmarks.json`` as ``guidellm benchmark --output-path`` writes it; this copy
    is the one the maintainers committed as a test asset after stripping a real sweep run: one benchmark, the
    synchronous strategy, with ``request_totals`` of 46 successful and 1 incomplete requests but only one request kept
    in ``requests.successful``). Each entry of ``benchmarks[].requests.successful`` (and of ``errored`` /
    ``incomplete`` where such an entry kept a non-empty ``output``) is one single-shot call: context the ``prompt``
    (``text_completions`` request, written ``user``), completion the ``output``. The totals and metric distributions
    are mentioned, not recorded. Each call is its own conversation; no tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for bench in data["benchmarks"]:
        requests = bench.get("requests") or {}
        for status in ("successful", "errored", "incomplete"):
            for request in requests.get(status) or []:
                if status != "successful" and not request.get("output"):
                    continue
                completions.append(request.get("output") or "")
                contexts.append(["user"] if request.get("prompt") else [])
    return _result("GuideLLM benchmark report JSON (generative_benchmark, requests with prompt / output)",
                   len(completions), completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("huggingface_hub__"):
        out = hf_chat_cassette(path)
    elif name.startswith("replicate-python__"):
        out = replicate_cassette(path)
    elif name.startswith("llm-load-test__"):
        out = llm_load_test_output(path)
    else:
        out = guidellm_report(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
