"""OpenHands software-agent-sdk event streams.

Fixture ``fixtures/openhands_sdk/events/``: the 8 real event files of a conversation the SDK repository
publishes (OpenHands/software-agent-sdk, MIT; system prompt and tool descriptions cut, see
fixtures/README.md), and ``openhands_sdk_events.jsonl``, the same events one per line. Expected values are
walked from the raw event JSON here and were checked by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

from drafters.traces import io as tio
from drafters.traces.detect import detect_format
from drafters.traces.ingest import expand_paths, ingest

from ._helpers_b import parse_text

FIX = Path(__file__).parent / "fixtures"
EVENTS_DIR = FIX / "openhands_sdk" / "events"
JSONL = FIX / "openhands_sdk_events.jsonl"


def _raw_events() -> list[dict]:
    return [json.loads(f.read_text(encoding="utf-8")) for f in sorted(EVENTS_DIR.iterdir())]


def test_event_directory_is_one_conversation_with_exact_counts():
    events = _raw_events()
    kinds = [e["kind"] for e in events]
    responses = {e["llm_response_id"] for e in events if "llm_response_id" in e}
    n_actions = kinds.count("ActionEvent")
    assert (len(responses), n_actions, len(events[0]["tools"])) == (3, 2, 3)  # by hand
    assert expand_paths([FIX / "openhands_sdk"]) == [EVENTS_DIR]
    assert detect_format(tio.read_head(EVENTS_DIR), EVENTS_DIR.name).name == "openhands_sdk"
    result = ingest([EVENTS_DIR], scrub=False)
    report = result.report
    assert report.ok and report.formats == {"openhands_sdk": 1}
    assert [p.code for p in report.warnings] == ["tool_parameters_missing"]
    assert (report.counts["conversations"], report.counts["calls"], report.counts["tool_calls"]) == (
        1, len(responses), n_actions)
    conv = result.conversations[0]
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                               "user", "assistant"]
    assert [t.name for t in conv.tools] == ["terminal", "finish", "think"]
    call = conv.messages[2].tool_calls[0]
    assert call.name == "terminal" and call.arguments["command"] == "pwd > tool_output.txt"
    result_part = conv.messages[3].tool_results[0]
    assert result_part.call_id == call.id
    assert result_part.content == "\n[The command completed with exit code 0.]"  # empty output + suffix
    assert conv.messages[-1].text == events[7]["llm_message"]["content"][0]["text"]


def test_jsonl_of_the_same_events_reads_the_same():
    a = ingest([EVENTS_DIR], scrub=False).conversations[0]
    b = ingest([JSONL], scrub=False).conversations[0]
    assert a.messages == b.messages and a.tools == b.tools


def test_parallel_actions_of_one_response_are_one_message_and_bad_events_are_reported():
    events = [json.loads(line) for line in JSONL.read_text(encoding="utf-8").splitlines()]
    twin = json.loads(json.dumps(events[2]))
    twin["tool_call"]["id"] = twin["tool_call_id"] = "call_second"
    obs = json.loads(json.dumps(events[3]))
    obs["tool_call_id"] = "call_second"
    stream = events[:3] + [twin, events[3], obs] + events[4:]
    lines = [json.dumps(e) for e in stream]
    lines.insert(5, json.dumps(json.dumps(events[4])))  # a JSON string where an event object belongs
    lines.insert(6, json.dumps({"kind": "BrandNewEvent", "id": "x"}))
    convs, report = parse_text("openhands_sdk", "\n".join(lines) + "\n", "ev.jsonl")
    (conv,) = convs
    assert [c.id for c in conv.messages[2].tool_calls] == ["call_KaQ0kUcBb5tbMzhxbIx9dvoZ", "call_second"]
    assert len(conv.messages[3].tool_results) == 2
    assert [(p.code, p.line) for p in report.errors] == [("bad_record", 6)]
    assert "unknown_event" in [p.code for p in report.warnings]
