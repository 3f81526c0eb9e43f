"""Vercel AI SDK multi-step results (OpenAI and Anthropic providers).

Fixtures (written from the SDK's documented result shape, fixtures/README.md): ``vercel_ai_openai_steps
.json`` (AI SDK 5: Responses API request bodies as objects, ``input``/``output`` parts, cumulative
``response.messages``) and ``vercel_ai_anthropic_steps.json`` (AI SDK 4: request bodies as JSON strings,
``args``/``result`` parts, reasoning with a signature, two parallel calls). Expected values are walked
from the raw JSON here.
"""

from __future__ import annotations

import json
from pathlib import Path

from drafters.traces.detect import detect_format
from drafters.traces.ingest import ingest

from ._helpers_b import codes, parse_text

FIX = Path(__file__).parent / "fixtures"
OPENAI, ANTHROPIC = FIX / "vercel_ai_openai_steps.json", FIX / "vercel_ai_anthropic_steps.json"


def _tool_calls(raw: dict) -> int:
    return sum(len(s["toolCalls"]) if "toolCalls" in s else
               sum(p["type"] == "tool-call" for p in s["content"]) for s in raw["steps"])


def test_openai_provider_steps_are_calls_with_the_request_as_context():
    raw = json.loads(OPENAI.read_text(encoding="utf-8"))
    assert detect_format(OPENAI.read_text(encoding="utf-8"), OPENAI.name).name == "vercel_ai"
    result = ingest([OPENAI], scrub=False)
    report = result.report
    assert report.ok and not report.warnings
    assert (report.counts["calls"], report.counts["tool_calls"]) == (len(raw["steps"]), _tool_calls(raw)) == (2, 1)
    conv = result.conversations[0]
    first, second = conv.explicit_calls
    assert [m.role for m in first.context] == ["system", "user"]
    assert [m.role for m in second.context] == ["system", "user", "assistant", "tool"]
    assert second.context[3].tool_results[0].call_id == first.completion.tool_calls[0].id
    assert second.completion.text == raw["text"] and second.completion.model == "gpt-4o-2024-08-06"
    assert conv.tools[0].parameters["required"] == ["location"]
    assert conv.append_only  # the cumulative response.messages were not read twice


def test_anthropic_provider_parallel_calls_and_signed_reasoning():
    raw = json.loads(ANTHROPIC.read_text(encoding="utf-8"))
    result = ingest([ANTHROPIC], scrub=False)
    report = result.report
    assert report.ok and not report.warnings
    assert (report.counts["calls"], report.counts["tool_calls"], report.counts["parallel_calls"]) == (
        2, _tool_calls(raw), 1)
    first, second = result.conversations[0].explicit_calls
    (reasoning,) = [p for p in first.completion.parts if p.type == "reasoning"]
    assert reasoning.signature == raw["steps"][0]["reasoningDetails"][0]["signature"]
    assert first.context[0].role == "system" and first.tools[0].name == "weather"
    assert [r.call_id for r in second.context[-1].tool_results] == ["toolu_01Paris", "toolu_01Berlin"]
    assert report.chars["reasoning"] == len(raw["steps"][0]["reasoning"])


def test_step_without_request_uses_earlier_messages_and_bad_steps_are_reported():
    raw = json.loads(ANTHROPIC.read_text(encoding="utf-8"))
    del raw["steps"][1]["request"]
    raw["steps"].insert(1, "not a step")
    (conv,), report = parse_text("vercel_ai", json.dumps(raw), "r.json")
    assert codes(report) == ["bad_record"] and report.errors[0].field == "steps[1]"
    second = conv.explicit_calls[1]
    assert [m.role for m in second.context] == ["system", "user", "assistant", "tool"]
    del raw["steps"][0]["request"]
    _, report = parse_text("vercel_ai", json.dumps(raw), "r.json")
    assert "missing_context" in [p.code for p in report.warnings]
