"""Aider .aider.llm.history (explicit calls) and .aider.chat.history.md."""

from __future__ import annotations

from ._helpers_b import parse_text, read
from .conftest import parse_file, sample, totals

LLM = "aider_chat_history/jkassemi-friendly_names__.aider.llm.history"
MD = "aider_chat_history/zen-mcp-server__.aider.chat.history.md"

CHAT = """
# aider chat started at 2025-01-01 10:00:00

> /usr/bin/aider --model gpt-4o  
> Main model: gpt-4o with diff edit format  

#### /add foo.py  
> Added foo.py to the chat  

#### rename x to y  
#### in foo.py  

foo.py
```python
<<<<<<< SEARCH
x = 1
=======
y = 1
>>>>>>> REPLACE
```

> Applied edit to foo.py  
> Tokens: 1k sent, 20 received. Cost: $0.01 message, $0.01 session.  

#### /ask why?  

Because y is clearer.
"""


def test_llm_log_counts():
    # Independent count: grep -c '^TO LLM' and grep -c '^LLM RESPONSE' both give 33; every response is
    # ASSISTANT-prefixed text, no structured tool calls: 1 conversation of 33 explicit calls.
    (conv,), report = parse_file("aider", sample(LLM))
    assert not report.errors and not report.warnings
    assert totals([conv]) == (1, 33, 0)
    first = conv.explicit_calls[0]
    assert [m.role for m in first.context] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert first.context[0].text.startswith("Act as an expert code analyst.\nAnswer questions")
    assert first.completion.text.startswith("I notice that while the project structure is set up")


def test_llm_log_resends_rewritten_context():
    """README: the LLM log re-sends the repo map and files every turn, so it is very redundant; each
    request is its own call, and the history is not append-only (the system prompt changes)."""
    (conv,), _ = parse_file("aider", sample(LLM))
    calls = conv.explicit_calls
    assert calls[1].context[: len(calls[0].context)] == calls[0].context  # turn 2 extends turn 1 ...
    assert calls[2].context[0] != calls[1].context[0]  # ... turn 3 switches to the edit-format system prompt
    assert conv.append_only is False


def test_chat_md_sample_has_only_commands():
    # Independent read: every '#### ' line of the sample is a slash command (/add, /copy-context) and
    # there is no unquoted assistant text, so no session holds an LLM call.
    convs, report = parse_file("aider", sample(MD))
    assert convs == [] and not report.errors
    assert {w.code for w in report.warnings} == {"no_assistant_message"}


def test_chat_md_quotes_are_not_replace_markers():
    """README: stripping '> ' quotes by prefix also eats '>>>>>>> REPLACE' markers."""
    (conv,), report = parse_text("aider", CHAT, ".aider.chat.history.md")
    assert not report.errors
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    assert conv.messages[0].text == "rename x to y\nin foo.py"  # /add dropped, hard-break spaces removed
    edit = conv.messages[1].text
    assert edit.endswith(">>>>>>> REPLACE\n```") and "<<<<<<< SEARCH\nx = 1\n=======\ny = 1\n" in edit
    assert "Applied edit" not in edit and "Tokens:" not in edit
    assert conv.messages[2].text == "why?"  # /ask sends its text
    assert conv.messages[1].model == "gpt-4o"


def test_truncated_llm_log_keeps_complete_calls():
    text = read(sample(LLM))
    cut = text[: text.index("TO LLM 2025-01-31T11:23:42")] + "TO LLM 2025-01-31T11:23:42\n-------\nSYSTEM partial"
    (conv,), report = parse_text("aider", cut, "x.aider.llm.history")
    assert len(conv.explicit_calls) == 2
    assert [w.code for w in report.warnings] == ["no_assistant_message"] and report.warnings[0].line == 360


def test_an_edit_retry_and_an_ask_command_in_the_chat_log():
    """``/ask X`` is logged, then ``X`` as the message sent: one user message (was two). An edit error Aider sent
    back (a reflection) and the model's second answer: the first answer is its own call and the retry, whose
    context holds a message the chat log does not, is not read (was joined to the first answer into one
    completion, ``ok``: a new-user trial)."""
    import io

    from drafters.traces.formats.aider import parse
    from drafters.traces.report import ValidationReport
    lines = [
        "# aider chat started at 2025-05-01 10:00:00", "", "> Main model: sonnet  ", "",
        "#### /ask what does bar do?  ", "", "#### what does bar do?  ", "", "`bar` sums.", "",
        "#### rename baz to qux  ", "", "core.py", "```python", "<<<<<<< SEARCH", "def bazz():", "=======",
        "def qux():", ">>>>>>> REPLACE", "```", "", "> The LLM did not conform to the edit format.  ",
        "> # 1 SEARCH/REPLACE block failed to match!", "", "core.py", "```python", "<<<<<<< SEARCH", "def baz():",
        "=======", "def qux():", ">>>>>>> REPLACE", "```", "", "> Applied edit to core.py  "]
    text = "\n".join(lines)
    report = ValidationReport()
    (conv,) = parse(io.StringIO(text), ".aider.chat.history.md", report)
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    assert "bazz" in conv.messages[-1].text and "def baz():" not in conv.messages[-1].text
    assert [e.code for e in report.errors] == ["reflection_not_recorded"]
