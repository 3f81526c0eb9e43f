"""Langfuse trace exports: GENERATION observations as explicit LLM calls."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from ._helpers_b import codes, parse_text, read
from .conftest import DATA, parse_file, sample, totals

D = "langfuse_trace_export/"


def test_sample_counts():
    # Independent count (python json.load; observations with type == "GENERATION" and the tool calls in
    # their output): google-adk 2 generations, 1 function_call; koog 2, output of the first lists 2
    # function objects; langgraph 2, 1 additional_kwargs.tool_calls; microsoft-agent 2, 1 tool_call part;
    # pydantic-ai 4, with 3 + 0 + 0 + 1 tool_call parts. One conversation per trace.
    expected = {
        "langfuse__google-adk-2025-08-28.json": (1, 2, 1),
        "langfuse__koog-2025-08-26.json": (1, 2, 2),
        "langfuse__langgraph-2025-08-22.json": (1, 2, 1),
        "langfuse__microsoft-agent-2025-10-14.json": (1, 2, 1),
        "langfuse__pydantic-ai-tools-2025-12-04.json": (1, 4, 4),
    }
    for name, want in expected.items():
        convs, report = parse_file("langfuse", sample(D + name))
        assert not report.errors and not report.warnings, name
        assert totals(convs) == want, name


def test_google_adk_contents_and_agent_loop():
    (conv,), _ = parse_file("langfuse", sample(D + "langfuse__google-adk-2025-08-28.json"))
    first, second = conv.explicit_calls
    assert first.context[0].role == "system" and first.context[0].text.startswith("Always greet using the say_hello tool.")
    assert [t.name for t in first.tools] == ["say_hello"]
    assert first.completion.tool_calls[0].name == "say_hello" and first.completion.model == "gemini-2.0-flash"
    assert second.context[3].role == "tool" and second.context[3].tool_results[0].content == '{"greeting": "Hello Langfuse \U0001f44b"}'
    assert conv.append_only  # the second request extends the first plus its completion


def test_langchain_tool_definitions_are_not_messages():
    """LangChain's callback logs tool definitions as role "tool" messages: they are ToolDefs."""
    (conv,), _ = parse_file("langfuse", sample(D + "langfuse__langgraph-2025-08-22.json"))
    first = conv.explicit_calls[0]
    assert [m.role for m in first.context] == ["user", "user"]
    assert [t.name for t in first.tools] == ["Web-Search"] and first.tools[0].parameters["required"] == ["query"]
    call = first.completion.tool_calls[0]
    assert call.id == "call_1oGK863sxQHlPreFhDdEs3yl" and call.arguments == {"query": "example"}
    assert conv.explicit_calls[1].context[3].tool_results[0].call_id == call.id


def test_tool_call_id_arrays_and_koog_quirks():
    """README: tool-call ids can be arrays (Microsoft Agent Framework on the Assistants API)."""
    (ms,), _ = parse_file("langfuse", sample(D + "langfuse__microsoft-agent-2025-10-14.json"))
    call = ms.explicit_calls[0].completion.tool_calls[0]
    assert call.id == "call_Sz1QP8T7fuJkIECGDLFWOorq"
    assert ms.explicit_calls[1].context[1].tool_results[0].call_id == call.id
    assert [t.name for t in ms.explicit_calls[0].tools] == ["get_weather"]
    (koog,), _ = parse_file("langfuse", sample(D + "langfuse__koog-2025-08-26.json"))
    first, second = koog.explicit_calls
    assert [c.name for c in first.completion.tool_calls] == ["HelloTool", "ByeTool"]  # two output entries, one turn
    roles = [m.role for m in second.context]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]  # calls logged as role tool
    assert [m.tool_results[0].call_id for m in second.context if m.role == "tool"] == [c.id for c in first.completion.tool_calls]


def test_trace_input_in_a_string_and_scores_ignored():
    """README: trace.input/output are JSON inside a string; evaluation scores are not conversation."""
    (conv,), _ = parse_file("langfuse", sample(D + "langfuse__pydantic-ai-tools-2025-12-04.json"))
    assert conv.explicit_calls[3].context[0].text.startswith("You are a joke critic.")
    assert not conv.append_only  # a second agent (the critic) shares the trace
    # the tools' schemas are Gemini's parameters_json_schema (they had been read as empty schemas)
    assert conv.tools and all(t.parameters.get("properties", {}).get("topic") for t in conv.tools)
    doc = {"trace": {"id": "t", "projectId": "p", "input": "{\"q\": 1}", "scores": [{"name": "s", "value": 1}]},
           "observations": [{"id": "o", "type": "GENERATION", "startTime": "1", "model": "m",
                             "input": "[{\"role\": \"user\", \"content\": \"hi\"}]", "output": "hello"}]}
    (c,), report = parse_text("langfuse", json.dumps(doc), "t.json")
    assert not report.errors and c.explicit_calls[0].completion.text == "hello"
    assert c.explicit_calls[0].context[0].text == "hi"


def test_truncated_export():
    text = read(sample(D + "langfuse__koog-2025-08-26.json"))
    convs, report = parse_text("langfuse", text[:3000], "cut.json")
    assert convs == [] and codes(report) == ["invalid_json"]


def test_openai_responses_output_is_read_not_dropped():
    """GENERATIONs whose output is an OpenAI Responses object (written fixture, see fixtures/README.md)
    used to read as "no output": 0 conversations and ok. Expected values walked from the raw JSON."""
    from pathlib import Path

    from drafters.traces.ingest import ingest

    path = Path(__file__).parent / "fixtures" / "langfuse_openai_responses_output.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    gens = [o for o in raw["observations"] if o["type"] == "GENERATION"]
    items = [i for g in gens for i in g["output"]["output"]]
    want_calls = sum(i["type"] == "function_call" for i in items)
    want_reasoning = sum(len(s["text"]) for i in items if i["type"] == "reasoning" for s in i["summary"])
    assert (len(gens), want_calls) == (2, 1)  # by hand
    result = ingest([path], scrub=False)
    report = result.report
    assert report.ok and not report.warnings
    assert report.formats == {"langfuse": 1}
    assert (report.counts["conversations"], report.counts["calls"], report.counts["tool_calls"]) == (1, 2, want_calls)
    assert report.chars["reasoning"] == want_reasoning
    first, second = result.conversations[0].explicit_calls
    assert [t.name for t in first.tools] == ["get_weather"]
    assert first.completion.tool_calls[0].arguments == {"city": "Portland"}
    assert first.completion.model == "gpt-5-mini-2025-08-07"
    assert second.context[-1].tool_results[0].call_id == "call_Sz1QP8T7fuJkIECGDLFWOorq"
    assert second.completion.text == gens[1]["output"]["output"][0]["content"][0]["text"]
    assert result.conversations[0].append_only


def test_generation_without_readable_output_refuses_the_file(tmp_path):
    """A recognized export from which no call can be read is an error (no_conversations), never ok."""
    from drafters.traces.ingest import ingest

    doc = {"trace": {"id": "t1", "projectId": "p1"}, "observations": [
        {"id": "g1", "type": "GENERATION", "startTime": "2025-01-01T00:00:00Z",
         "input": [{"role": "user", "content": "hi"}], "output": None}]}
    path = tmp_path / "lf.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    report = ingest([path], scrub=False).report
    assert not report.ok and [p.code for p in report.errors] == ["no_conversations"]
    assert report.errors[0].file == str(path)


def test_chars_count_every_agent_of_a_trace_once():
    """The report's characters per kind cover every call of a trace, not only the final transcript: in
    the pydantic-ai export a joke-writer agent makes three tool calls before a critic agent's single call
    ends the trace; the writer's three tool results (found in the raw file by their text, 92 + 97 + 88
    characters) were missing (tool_results 0). A history repeated in every logged call counts once, and
    Koog's two parallel calls, logged in one message and later split over two, count twice, not four
    times (HelloTool and ByeTool, each with {"name":"Bob"})."""
    import re

    folder = DATA / "langfuse_trace_export"
    path = folder / "langfuse__pydantic-ai-tools-2025-12-04.json"
    raw = path.read_text(encoding="utf-8")
    results = set(re.findall(r"(?:Pun|Dad joke|One-liner) idea:[^\"\\]*", raw))
    assert len(results) == 3
    assert ingest([path], scrub=False).report.chars["tool_results"] == sum(map(len, results)) == 277
    koog = ingest([folder / "langfuse__koog-2025-08-26.json"], scrub=False).report.chars
    assert koog["tool_args"] == len("HelloTool") + len("ByeTool") + 2 * len('{"name":"Bob"}')


def test_a_trace_as_the_public_api_returns_it(tmp_path):
    """``GET /api/public/traces/{id}``: the trace's own fields with its observations inside (a SPAN whose input is
    an object, the generations, a tool span). Read by this reader (was the general path, refused ``not_an_object``)."""
    ask = [{"role": "system", "content": "You are a support agent."}, {"role": "user", "content": "Reset my password"}]
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
        "name": "send_reset_link", "arguments": '{"user_id": "u-1"}'}}]}
    def obs(n, kind, start, **kw):
        return {"id": f"obs-{n}", "traceId": "tr-1", "type": kind, "startTime": f"2025-02-01T09:00:0{start}.000Z",
                "parentObservationId": None if n == 0 else "obs-0", **kw}
    trace = {"id": "tr-1", "name": "support-agent", "input": {"question": "Reset my password"}, "sessionId": "s-9",
             "observations": [obs(0, "SPAN", 0, input={"question": "Reset my password"}, output=None),
                              obs(1, "GENERATION", 1, model="gpt-4o-mini", input=ask, output=call),
                              obs(2, "SPAN", 2, name="send_reset_link", input={"user_id": "u-1"}, output="sent"),
                              obs(3, "GENERATION", 3, model="gpt-4o-mini", output={"role": "assistant",
                                                                                    "content": "Sent a link."},
                                  input=[*ask, call, {"role": "tool", "tool_call_id": "call_1", "content": "sent"}])]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and result.report.formats == {"langfuse": 1}, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 2, 1) and result.conversations[0].id == "tr-1"
