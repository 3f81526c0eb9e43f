"""Property tests (hypothesis): OpenAI-messages round trip; corrupted files never crash the parsers."""

from __future__ import annotations

import io
import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drafters.traces.formats import claude_code, openai_chat
from drafters.traces.ingest import iter_conversations
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)
from drafters.traces.report import ValidationReport

from .conftest import DATA

texts = st.text(min_size=1, max_size=40)
names = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True)
json_scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3), max_leaves=8)


@st.composite
def tool_calls(draw):
    cid = draw(st.from_regex(r"call_[A-Za-z0-9]{1,10}", fullmatch=True))
    name = draw(names)
    if draw(st.booleans()):
        return ToolCallPart.from_raw(cid, name, draw(st.dictionaries(st.text(max_size=8), json_values, max_size=4)))
    raw = draw(st.text(max_size=30).filter(lambda s: ToolCallPart.from_raw(None, "x", s).arguments is None))
    return ToolCallPart.from_raw(cid, name, raw)  # invalid JSON arguments, kept raw


@st.composite
def messages(draw):
    kind = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    if kind in ("system", "user"):
        return Message(kind, [TextPart(t) for t in draw(st.lists(texts, max_size=3))])
    if kind == "tool":
        return Message("tool", [ToolResultPart(draw(st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True)),
                                               draw(st.text(max_size=40)), draw(st.booleans()),
                                               draw(st.none() | names))])
    parts: list = []
    if draw(st.booleans()):
        parts.append(ReasoningPart(draw(texts)))
    parts += [TextPart(t) for t in draw(st.lists(texts, max_size=2))]
    parts += draw(st.lists(tool_calls(), max_size=3))
    return Message("assistant", parts, model=draw(st.none() | names))


@st.composite
def conversations(draw):
    tools = [ToolDef(n, draw(st.text(max_size=20)), {"type": "object", "properties": {
        p: {"type": "string"} for p in draw(st.lists(names, max_size=3))}}) for n in draw(st.lists(names, max_size=3))]
    return Conversation("c", Source("openai_chat", "x"), tools, draw(st.lists(messages(), min_size=1, max_size=8)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_normalize_inverts_to_openai_messages(conv):
    msgs, tools = openai_chat.to_openai_messages(conv)
    line = json.dumps({"messages": msgs, "tools": tools})  # through the wire format as text
    report = ValidationReport()
    (back,) = list(openai_chat.parse(io.StringIO(line + "\n"), "x.jsonl", report))
    assert not report.errors
    assert back.messages == conv.messages
    assert back.tools == conv.tools


def _corrupt(line: str, rng: random.Random) -> str:
    how = rng.choice(["truncate", "flip", "delete_key", "delete_msg_key"])
    if how == "truncate":
        return line[: rng.randrange(1, max(2, len(line)))]
    if how == "flip":
        data = bytearray(line.encode())
        i = rng.randrange(len(data))
        data[i] = rng.choice([b for b in range(256) if b not in (0x0A, 0x0D)])
        return data.decode("utf-8", errors="replace")
    obj = json.loads(line)
    if how == "delete_key":
        obj.pop(rng.choice(sorted(obj)))
    else:
        msg = rng.choice(obj["messages"])
        msg.pop(rng.choice(sorted(msg)))
    return json.dumps(obj)


def _valid_lines(n: int) -> list[str]:
    out = []
    for i in range(n):
        out.append(json.dumps({"id": f"r{i}", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
                               "messages": [{"role": "user", "content": f"q{i}"},
                                            {"role": "assistant", "content": None, "tool_calls": [
                                                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
                                            {"role": "tool", "tool_call_id": "c", "content": "r"},
                                            {"role": "assistant", "content": "done"}]}))
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12))
def test_corrupted_jsonl_never_crashes_and_reports_each_bad_record(seed, n_bad):
    rng = random.Random(seed)
    lines = _valid_lines(15)
    bad = set(rng.sample(range(len(lines)), min(n_bad, len(lines))))
    for i in bad:
        lines[i] = _corrupt(lines[i], rng)
    import os
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    try:
        report = ValidationReport()
        convs = list(iter_conversations([f.name], format="openai_chat", report=report, scrub=False, dedup=False))
    finally:
        os.unlink(f.name)
    got_lines = {c.source.line for c in convs}
    err_lines = {p.line for p in report.errors}
    for i in range(len(lines)):
        if i not in bad:
            assert i + 1 in got_lines  # every good record kept
        else:
            assert i + 1 in got_lines | err_lines  # every bad record kept (still valid) or reported at its line
    assert len(convs) + len(err_lines - got_lines) >= len(lines)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_corrupted_claude_code_never_crashes(seed):
    path = DATA / "claude_code_jsonl/fasthooks__sample_main_transcript.jsonl"
    rng = random.Random(seed)
    lines = path.read_text().splitlines()
    bad = set(rng.sample(range(len(lines)), 8))
    for i in bad:
        how = rng.choice(["truncate", "flip", "delete"])
        if how == "truncate":
            lines[i] = lines[i][: rng.randrange(1, len(lines[i]))]
        elif how == "flip":
            data = bytearray(lines[i].encode())
            j = rng.randrange(len(data))
            data[j] = rng.choice([b for b in range(256) if b not in (0x0A, 0x0D)])
            lines[i] = data.decode("utf-8", errors="replace")
        else:
            obj = json.loads(lines[i])
            target = obj["message"] if isinstance(obj.get("message"), dict) and rng.random() < 0.5 else obj
            if target:
                target.pop(rng.choice(sorted(target)))
            lines[i] = json.dumps(obj)
    report = ValidationReport()
    list(claude_code.parse(io.StringIO("\n".join(lines)), "c.jsonl", report))
    for i in bad:
        try:
            ok = isinstance(json.loads(lines[i]), dict)
        except ValueError:
            ok = False
        if not ok:
            assert any(p.line == i + 1 for p in report.errors)
