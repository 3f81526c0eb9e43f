"""A declared text mapping (``drafters/traces/mapping_text.py``): marker lines the file spells its own way open
messages, ``skip`` sections are not read, a conversation line opens conversations, declared tool-call lines are
calls and their results; results with no declared call, tool calls written in a reply and replies lost under an
unnamed marker are refused with codes; bad mapping files are
``bad_mapping`` naming the field."""

from __future__ import annotations

import pytest

from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict, parse_mapping
from drafters.traces.mapping_text import TextMapping, opens_conversation
from drafters.traces.report import TraceError

LOG = """# Eval log
run 7

## Example 1
### Task
What is 2+2?
### Model Response
It is 4.
### Score
1.0

## Example 2
### Task
Name a prime above 10.
### Model Response
11 is one.
```
### Task
(inside a fence: text of the reply)
```
### Score
1.0
"""
MAPPING = {"name": "evallog", "text": {"markers": {"### Task": "user", "### Model Response": "assistant",
                                                  "### Score": "skip"}, "conversation": "## Example 1"}}


def _read(tmp_path, text, mapping, name="log.md"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return ingest([str(path)], mapping=mapping_from_dict(mapping), scrub=False, dedup=False)


def test_markers_skip_sections_and_conversation_lines(tmp_path):
    result = _read(tmp_path, LOG, MAPPING)
    assert result.report.ok, result.report.errors
    calls = [call for c in result.conversations for call in c.calls()]
    assert [c.id for c in result.conversations] == ["log.md:text:0", "log.md:text:1"]
    assert [call.completion.text for call in calls] == [
        "It is 4.", "11 is one.\n```\n### Task\n(inside a fence: text of the reply)\n```"]
    assert [[m.text for m in call.context] for call in calls] == [["What is 2+2?"], ["Name a prime above 10."]]
    codes = [w.code for w in result.report.warnings]
    # the file's heading above the first "## Example" is named, not read; "## Example N" itself heads a conversation
    assert codes.count("sections_not_read") == 2 and codes.count("preamble_not_read") == 1


def test_one_conversation_inline_markers_and_a_heading(tmp_path):
    text = "Chat export\n\n**Q:** hi there\n**A:**\nhello, how can I help?\n**Q:** two\nlines\n**A:** ok\n**Q:**\n"
    mapping = {"name": "qa", "text": {"markers": {"**Q:**": "user", "**A:**": "assistant"}}}
    result = _read(tmp_path, text, mapping)
    assert result.report.ok, result.report.errors
    (conv,) = result.conversations
    assert [(m.role, m.text) for m in conv.messages] == [
        ("user", "hi there"), ("assistant", "hello, how can I help?"), ("user", "two\nlines"), ("assistant", "ok")]
    assert [w.code for w in result.report.warnings] == ["preamble_not_read"]


def test_a_marker_is_not_the_beginning_of_a_longer_word(tmp_path):
    text = "## User\nhi\n## Username: bob\n## Bot\nhello\n"
    result = _read(tmp_path, text, {"name": "x", "text": {"markers": {"## User": "user", "## Bot": "assistant"}}})
    assert [m.text for m in result.conversations[0].messages] == ["hi\n## Username: bob", "hello"]


@pytest.mark.parametrize(("text", "where"), [
    ("## Q\nrun it\n## A\nsure\n## Tool\n{\"ok\": true}\n## A\ndone\n",
     "line 5 opens a tool message that no tool call precedes"),
    ("## Q\nrun it\n## A\n<tool_call>{\"name\": \"ls\"}</tool_call>\n", "writes a tool call as text"),
])
def test_tool_messages_and_written_tool_calls_are_refused(tmp_path, text, where):
    mapping = {"name": "x", "text": {"markers": {"## Q": "user", "## A": "assistant", "## Tool": "tool"}}}
    result = _read(tmp_path, text, mapping)
    assert not result.report.ok and not result.conversations
    (error,) = result.report.errors
    assert error.code == "content_not_mapped" and where in error.message


def test_a_prompt_without_reply_is_an_error_unless_it_is_the_last(tmp_path):
    mapping = {"name": "x", "text": {"markers": {"## Q": "user", "## A": "assistant"}, "conversation": "# Run 1"}}
    lost = "# Run 1\n## Q\nfirst\n## Answer\nits reply, under a marker not named\n# Run 2\n## Q\nsecond\n## A\nok\n"
    result = _read(tmp_path, lost, mapping)
    assert not result.report.ok and [e.code for e in result.report.errors] == ["no_assistant_message"]
    assert (result.report.errors[0].line, result.report.errors[0].format) == (1, "mapping:x")
    last = "# Run 1\n## Q\nfirst\n## A\nok\n# Run 2\n## Q\nnext turn, not sent yet\n"
    result = _read(tmp_path, last, mapping)
    assert result.report.ok and len(result.conversations) == 1
    assert [w.code for w in result.report.warnings] == ["no_assistant_message"]


def test_a_file_with_no_marker_or_no_reply_is_refused(tmp_path):
    mapping = {"name": "x", "text": {"markers": {"## Q": "user", "## A": "assistant"}}}
    assert [e.code for e in _read(tmp_path, "nothing here\n", mapping).report.errors] == ["unknown_format"]
    assert [e.code for e in _read(tmp_path, "## Q\nhi\n## A\n\n", mapping).report.errors] == ["no_assistant_message"]


def test_conversation_lines_match_any_number():
    assert opens_conversation("## Example 12", "## Example 1")
    assert opens_conversation("**2025-06-21 09:01:02 | OPENAI (gpt-4)**", "**2025-06-20 23:51:16")
    assert not opens_conversation("## Examples", "## Example 1")
    assert not opens_conversation("## Example 1a", "## Example 1")


def test_a_text_mapping_file_round_trips_and_names_itself():
    mapping = parse_mapping("name: evallog\ntext:\n  markers:\n    '### Task': user\n    '### Model Response': "
                            "assistant\n  conversation: '## Example 1'\n", "m.yaml")
    assert isinstance(mapping, TextMapping) and mapping.format().name == "mapping:evallog"
    assert mapping_from_dict(mapping.to_dict()) == mapping


@pytest.mark.parametrize(("data", "field"), [
    ({"text": {"markers": {"## Q": "user"}}}, "text.markers"),  # no assistant marker
    ({"text": {"markers": {"## Q": "user", "## A": "model"}}}, "text.markers"),
    ({"text": {"markers": {"": "user", "## A": "assistant"}}}, "text.markers"),
    ({"text": {"markers": {}}}, "text.markers"),
    ({"text": {"markers": {"## A": "assistant"}, "conversation": 3}}, "text.conversation"),
    ({"text": {"markers": {"## A": "assistant"}, "conversation_id": "conversation:"}}, "text.conversation_id"),
    ({"text": {"markers": {"## A": "assistant"}, "roles": {}}}, "text"),
    ({"text": {"markers": {"## A": "assistant"}}, "messages": "$"}, "messages"),
    ({"name": 5, "text": {"markers": {"## A": "assistant"}}}, "name"),
    ({"text": {"markers": {f"## M{i}": "assistant" for i in range(41)}}}, "text.markers"),
])
def test_bad_text_mappings_name_the_field(data, field):
    with pytest.raises(TraceError) as err:
        mapping_from_dict(data, "m.yaml")
    assert err.value.code == "bad_mapping" and err.value.where == f"m.yaml ({field})"


def test_a_fence_never_closed_hides_no_marker(tmp_path):
    """A reply's stray backticks open a fence that never closes: the markers after it still open messages (read
    as code to the end of the file, two calls would be lost inside the first reply: found by a new user's trial)."""
    text = "Input: a\nOutput: see\n```\ncode\n``\nInput: b\nOutput: two\nInput: c\nOutput: three\n"
    result = _read(tmp_path, text, {"name": "x", "text": {"markers": {"Input:": "user", "Output:": "assistant"}}})
    assert result.report.ok
    assert [c.completion.text for c in result.conversations[0].calls()] == ["see\n```\ncode\n``", "two", "three"]


def test_rules_closing_a_section_are_no_content_and_adjacent_answers_as_declared(tmp_path):
    text = "**Query:** hi\n**Response:**\nhello\n\n---\n**Response:**\nhi again\n---\n"
    mapping = {"name": "x", "text": {"markers": {"**Query:**": "user", "**Response:**": "assistant"}}}
    result = _read(tmp_path, text, mapping)
    (call,) = result.conversations[0].calls()
    assert call.completion.text == "hello\n\nhi again"
    assert [w.code for w in result.report.warnings] == ["adjacent_answers_joined"]
    result = _read(tmp_path, text, {**mapping, "adjacent_answers": "separate"})
    assert [c.completion.text for c in result.conversations[0].calls()] == ["hello", "hi again"]
    result = _read(tmp_path, text, {**mapping, "adjacent_answers": "refuse"})
    assert [e.code for e in result.report.errors] == ["ambiguous_turns"] and not result.conversations
    assert mapping_from_dict({**mapping, "adjacent_answers": "separate"}).to_dict()["adjacent_answers"] == "separate"
    with pytest.raises(TraceError, match="adjacent_answers"):
        mapping_from_dict({**mapping, "adjacent_answers": "both"})


def test_a_number_in_a_marker_matches_any_number(tmp_path):
    """Markers holding a timestamp or a count (a log's ``2025-06-20 23:51:16 - LLM reply``) fit every run."""
    text = "2025-06-20 23:51:16 - prompt\nhi\n2025-06-20 23:51:18 - LLM reply\nhello\n" \
           "2026-01-02 08:00:05 - prompt\nmore\n2026-01-02 08:00:09 - LLM reply\nsure\n"
    mapping = {"name": "x", "text": {"markers": {"2025-06-20 23:51:16 - prompt": "user",
                                                 "2025-06-20 23:51:18 - LLM reply": "assistant"}}}
    result = _read(tmp_path, text, mapping)
    assert [c.completion.text for c in result.conversations[0].calls()] == ["hello", "sure"]


def test_a_reasoning_section_is_the_next_replys_reasoning(tmp_path):
    """A chat buffer whose replies open with the model's thinking (CodeCompanion's ``### Reasoning`` and
    ``### Response``): the thinking is the reply's reasoning, not its text."""
    text = ("## ana\nwhy?\n## Helper (Claude)\n### Reasoning\nThe user asks why.\n### Response\nBecause.\n"
            "## ana\nok\n## Helper (Claude)\n### Response\nGood.\n### Reasoning\nlate thought\n")
    mapping = {"name": "cc", "text": {"markers": {"## ana": "user", "## Helper (Claude)": "assistant",
                                                  "### Reasoning": "reasoning", "### Response": "assistant"}}}
    result = _read(tmp_path, text, mapping)
    assert result.report.ok, result.report.errors
    first, second = result.conversations[0].calls()
    assert (first.completion.reasoning, first.completion.text) == ("The user asks why.", "Because.")
    assert (second.completion.reasoning, second.completion.text) == ("late thought", "Good.")
    assert [w.code for w in result.report.warnings] == []


AGENT_LOG = """AGENTIC WORKFLOW STARTED
User Request: Run a DFT optimization on water.

--- Iteration 1 ---
Agent is calling 1 tool(s)...
Tool: submit_simulation
Arguments: {
  "molecule_smiles": "O"
}
Result: Job submitted with ID: b00e

--- Iteration 2 ---
Agent is calling 2 tool(s)...
Tool: **check_status**
Arguments: {"job_id": "b00e"}
Tool: get_results
Arguments: {"job_id": "b00e"}
Result: Status = DONE
Result: energy -76.4
================
AGENT RESPONSE:
================
The energy is -76.4 Hartree.
User Request: And ammonia?
Tool: submit_simulation
Arguments: {"molecule_smiles": "N"}
Result: Job submitted with ID: c11f
================
AGENT RESPONSE:
================
Submitted.
"""
AGENT_MAPPING = {"name": "agentlog", "text": {
    "markers": {"User Request:": "user", "AGENT RESPONSE:": "assistant", "Tool:": "tool_call",
                "Arguments:": "arguments", "Result:": "tool", "--- Iteration": "skip", "Agent is calling": "skip"},
    "conversation": "User Request:"}}


def test_declared_tool_call_lines_are_the_replys_calls_and_results_answer_them_in_order(tmp_path):
    """An agent loop's console log (Backplane's): ``Tool:`` opens a call of the reply it follows, or of a new reply
    after a result; ``Arguments:`` are the call's; each ``Result:`` answers the oldest call not answered; the ``====``
    frame around a marker is no text."""
    result = _read(tmp_path, AGENT_LOG, AGENT_MAPPING, name="run.log")
    assert result.report.ok, result.report.errors
    first, second = result.conversations
    roles = [(m.role, [c.name for c in m.tool_calls], [r.call_id for r in m.tool_results]) for m in first.messages]
    assert roles == [("user", [], []), ("assistant", ["submit_simulation"], []), ("tool", [], ["text:6"]),
                     ("assistant", ["check_status", "get_results"], []), ("tool", [], ["text:14", "text:16"]),
                     ("assistant", [], [])]
    assert first.messages[1].tool_calls[0].arguments == {"molecule_smiles": "O"}
    assert [r.content for r in first.messages[4].tool_results] == ["Status = DONE", "energy -76.4"]
    assert first.messages[-1].text == "The energy is -76.4 Hartree." and first.messages[4].text == ""
    assert [len(list(c.calls())) for c in (first, second)] == [3, 2]
    assert sum(len(m.tool_calls) for c in (first, second) for m in c.messages) == 4


@pytest.mark.parametrize(("text", "where"), [
    ("User Request: go\nArguments: {}\nAGENT RESPONSE:\ndone\n", "line 2 opens a tool call's arguments with no tool"),
    ("User Request: go\nTool:\nResult: 1\nAGENT RESPONSE:\ndone\n", "line 2 opens a tool call without the tool's"),
    ("User Request: go\nTool: a\nResult: 1\nResult: 2\nAGENT RESPONSE:\ndone\n", "line 4 opens a tool message"),
])
def test_tool_sections_that_answer_no_declared_call_are_refused(tmp_path, text, where):
    result = _read(tmp_path, text, AGENT_MAPPING)
    assert not result.report.ok and not result.conversations
    (error,) = result.report.errors
    assert error.code == "content_not_mapped" and where in error.message and error.line == int(where.split()[1])


def test_a_printed_tool_call_no_marker_declares_is_refused(tmp_path):
    """A mapping naming only the prompt and the answer: the loop's ``Tool:`` / ``Arguments:`` lines would be read as
    the user's text, every call but the answers lost, ``ok``; refused, naming the message and the markers to
    declare. A system prompt describing the format is no printed call."""
    mapping = {"name": "x", "text": {"markers": {"User Request:": "user", "AGENT RESPONSE:": "assistant"}}}
    result = _read(tmp_path, AGENT_LOG, mapping, name="run.log")
    assert not result.report.ok and not result.conversations
    (error,) = result.report.errors
    assert error.code == "content_not_mapped" and error.line == 2
    assert "user message opened at line 2 holds a printed tool call ('Tool: submit_simulation'" in error.message
    described = ("## System\nCall tools as\nTool: NAME\nArguments: {JSON}\n## User\nHi\n## Assistant\nHello.\n")
    mapping = {"name": "y", "text": {"markers": {"## System": "system", "## User": "user", "## Assistant": "assistant"}}}
    assert _read(tmp_path, described, mapping).report.ok


def test_reasoning_before_a_call_of_the_same_reply_is_kept(tmp_path):
    """A reply's text, then a reasoning section, then its tool call: the reasoning stays with the reply (it was
    dropped where the call joined the reply rather than opening one)."""
    text = "Q: go\nA: Let me look.\nTHINK: the weather tool answers this\nTool: weather\nResult: 12 C\nA: It is 12 C.\n"
    mapping = {"name": "x", "text": {"markers": {"Q:": "user", "A:": "assistant", "THINK:": "reasoning",
                                                 "Tool:": "tool_call", "Result:": "tool"}}}
    result = _read(tmp_path, text, mapping)
    assert result.report.ok, result.report.errors
    (conv,) = result.conversations
    reply = conv.messages[1]
    assert (reply.text, reply.reasoning, [c.name for c in reply.tool_calls]) == (
        "Let me look.", "the weather tool answers this", ["weather"])
