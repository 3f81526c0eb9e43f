"""Text transcripts that write the agent loop as sections (issue 30; ``formats/_text_tool_sections.py``;
docs/traces.md, "Text transcripts"): a tool call, its result and the model's thinking each under a marker of the
role markers' decoration, as editor agents' chat buffers keep them. Buffers are hand-made in such a layout, not copies
of real files."""

from __future__ import annotations

from drafters.traces.ingest import ingest
from drafters.traces.model import ReasoningPart, UnsupportedPart

from .conftest import codes, totals

# One buffer: a reply with thinking, text and a call (arguments one per heading, a value in a tag block); the
# result quotes a file holding the buffer's own markers (opaque: its tag block); a second reply with two calls
# answered by ID in the other order; the provider's search inside the last reply; an empty prompt at the end.
BUFFER = """# SYSTEM

You are a careful coding agent.

# USER

Add a changelog entry for the parser fix.

# THINKING

Signature: c2lnbmF0dXJl

The user wants a changelog entry. I should read the changelog first.

# ASSISTANT

Let me read the changelog first.

# TOOL USE

Name: read-file
ID: toolu_01

## path

<tool.toolu_01>
CHANGELOG.md
</tool.toolu_01>

## include_line_numbers

<tool.toolu_01>
true
</tool.toolu_01>

# TOOL RESULT

ID: toolu_01

<tool.toolu_01>
# Changelog

# USER

This heading is text of the file, not a prompt.

# ASSISTANT

Nor is this a reply.
</tool.toolu_01>

# ASSISTANT

I will add the entry and check the tests.

# TOOL USE

Name: str-replace
ID: toolu_02

## path

<tool.toolu_02>
CHANGELOG.md
</tool.toolu_02>

# TOOL USE

Name: shell-command
ID: toolu_03

## command

<tool.toolu_03>
make test
</tool.toolu_03>

# TOOL RESULT

ID: toolu_03

<tool.toolu_03>
42 passed
</tool.toolu_03>

# TOOL RESULT

ID: toolu_02

<tool.toolu_02>
Replaced 1 line.
</tool.toolu_02>

# ASSISTANT

Let me check the release notes format online.

# SERVER TOOL USE

Name: web_search
ID: srvtoolu_01

## query

<tool.srvtoolu_01>
keep a changelog format
</tool.srvtoolu_01>

# WEB SEARCH TOOL RESULT

ID: srvtoolu_01

<tool.srvtoolu_01>
[{"title": "Keep a Changelog", "url": "https://keepachangelog.com"}]
</tool.srvtoolu_01>

# ASSISTANT

Done: the entry follows Keep a Changelog, and the tests pass.

# USER


"""


def _read(tmp_path, text: str, name: str = "chat.greger"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return ingest([path], scrub=False, dedup=False)


def test_tool_use_and_result_sections_are_calls_and_results(tmp_path):
    result = _read(tmp_path, BUFFER)
    assert result.report.ok, result.report.to_dict()["errors"]
    assert totals(result.conversations) == (1, 3, 3)
    calls = list(result.conversations[0].calls())
    first, second, third = (c.completion for c in calls)
    assert [p.name for p in first.tool_calls] == ["read-file"]
    assert first.tool_calls[0].arguments == {"path": "CHANGELOG.md", "include_line_numbers": "true"}
    assert isinstance(first.parts[0], ReasoningPart) and first.parts[0].signature == "c2lnbmF0dXJl"
    assert first.text == "Let me read the changelog first."
    # the file the result quotes is its content, not a prompt and a reply
    quoted = calls[1].context[-1]
    assert quoted.role == "tool" and "This heading is text of the file" in quoted.tool_results[0].content
    assert [p.name for p in second.tool_calls] == ["str-replace", "shell-command"]
    results = [m.tool_results[0] for m in calls[2].context if m.role == "tool"][1:]
    assert [(r.call_id, r.content) for r in results] == [("toolu_03", "42 passed"), ("toolu_02", "Replaced 1 line.")]
    # the provider's search runs inside the last reply: placeholders of it, no tool call, no new input
    assert not third.tool_calls and [p.kind for p in third.parts if isinstance(p, UnsupportedPart)] == [
        "server_tool_use", "server_tool_result"]
    assert third.text.startswith("Let me check") and third.text.endswith("the tests pass.")
    assert [m.role for m in calls[2].context] == ["system", "user", "assistant", "tool", "assistant", "tool", "tool"]


def test_the_earlier_layout_with_colons_and_deeper_argument_headings(tmp_path):
    text = ("## SYSTEM:\n\nBe brief.\n\n## USER:\n\nRun the tests.\n\n## ASSISTANT:\n\nRunning them.\n\n"
            "## TOOL USE:\n\nName: shell-command\nID: toolu_9\n\n### command\n\n<tool.toolu_9>\nmake test\n"
            "</tool.toolu_9>\n\n## TOOL RESULT:\n\nID: toolu_9\n\n<tool.toolu_9>\nok\n</tool.toolu_9>\n\n"
            "## ASSISTANT:\n\nAll green.\n\n## USER:\n\n")
    result = _read(tmp_path, text, "fix.grgr")
    assert result.report.ok and totals(result.conversations) == (1, 2, 1)
    call = next(iter(result.conversations[0].calls())).completion.tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("toolu_9", "shell-command", {"command": "make test"})


def test_a_call_written_as_one_json_object(tmp_path):
    text = ("## User\nWeather in Oslo?\n## Tool Call\n```json\n{\"name\": \"weather\", \"arguments\": "
            "{\"city\": \"Oslo\"}}\n```\n## Tool Result\n-3 C, snow\n## Assistant\nIt is -3 C with snow.\n")
    result = _read(tmp_path, text, "weather.md")
    assert result.report.ok and totals(result.conversations) == (1, 2, 1)
    first = next(iter(result.conversations[0].calls())).completion
    assert first.text == "" and first.tool_calls[0].arguments == {"city": "Oslo"}


def test_a_call_section_not_read_is_refused_with_its_line(tmp_path):
    """No tool name, or arguments neither per heading nor JSON: not guessed; a result answering no recorded call
    (an ID no call has) likewise."""
    for body, line in (("Let me look it up.\n", 5), ("Name: search\n\nsome free text\n", 5)):
        text = f"# USER\n\nFind it.\n\n# TOOL USE\n\n{body}\n# ASSISTANT\n\nFound.\n"
        result = _read(tmp_path, text)
        assert not result.conversations and codes(result) == ["content_not_mapped"], body
        assert result.report.errors[0].line == line
    text = ("# USER\n\nFind it.\n\n# TOOL USE\n\nName: search\nID: a\n\n# TOOL RESULT\n\nID: b\n\nhit\n\n"
            "# ASSISTANT\n\nFound.\n")
    result = _read(tmp_path, text)
    assert not result.conversations and codes(result) == ["content_not_mapped"]
    assert "names no unanswered tool call" in result.report.errors[0].message


def test_a_reasoning_heading_inside_a_prompt_stays_the_prompt_s_text(tmp_path):
    """A thinking marker is the model's only next to another output section: between two prompts' sections it is
    a heading of the prompt (the file's markers read as before)."""
    text = ("## User\nPlan the trip.\n## Reasoning\nShow your steps.\n## User\nAnd keep it cheap.\n"
            "## Assistant\nTake the train.\n")
    result = _read(tmp_path, text, "plan.md")
    assert result.report.ok and totals(result.conversations) == (1, 1, 0)
    prompt = next(iter(result.conversations[0].calls())).context
    assert [m.role for m in prompt] == ["user"] and "## Reasoning\nShow your steps." in prompt[0].text


def test_tool_call_blocks_in_a_reply_and_results_under_a_tool_marker(tmp_path):
    """``# %% ROLE`` cells (a notebook-style chat file): each reply's ``<tool_call>`` block, fenced as ``tool_call``
    and written with XML elements (its fence may open at the end of a line of text), is a call; the ``tool_execute``
    cell after it is its result; a reply's JSON block (Hermes) likewise; a block inside a code block of another
    kind is an example, the reply's text."""
    text = ("# %% user\nMake a todo app in /tmp/app.\n# %% assistant\nLet me start.```tool_call\n<tool_call>\n"
            "<tool_name>Initialize</tool_name>\n<param name=\"any_workspace_path\">/tmp/app</param>\n</tool_call>\n"
            "```\n\n# %% tool_execute\n<tool_result>\nready\n</tool_result>\n\n# %% assistant\nNow the page.\n"
            "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"index.html\"}}\n</tool_call>\n\n"
            "# %% tool_execute\n```\n<tool_result>\nwritten\n</tool_result>\n```\n\n# %% assistant\n"
            "Done. A call looks like:\n```json\n<tool_call>{\"name\": \"x\"}</tool_call>\n```\n\n# %% user\n")
    result = _read(tmp_path, text, "todo.chat.md")
    assert result.report.ok, result.report.to_dict()["errors"]
    assert totals(result.conversations) == (1, 3, 2)
    first, second, third = (c.completion for c in result.conversations[0].calls())
    assert first.text == "Let me start." and first.tool_calls[0].arguments == {"any_workspace_path": "/tmp/app"}
    assert second.tool_calls[0].name == "write_file" and not third.tool_calls and "<tool_call>" in third.text
    context = list(result.conversations[0].calls())[2].context
    assert [m.role for m in context] == ["user", "assistant", "tool", "assistant", "tool"]
    assert context[2].tool_results[0].content == "ready"


def test_a_tool_marker_answering_no_call_is_still_refused(tmp_path):
    text = "# %% user\nList files.\n# %% assistant\nI ran ls.\n# %% tool_execute\na.txt\n# %% assistant\nOne file.\n"
    result = _read(tmp_path, text, "ls.chat.md")
    assert not result.conversations and codes(result) == ["content_not_mapped"]
    assert result.report.errors[0].line == 5
