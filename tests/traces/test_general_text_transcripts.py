"""Text transcripts read by the general path (issue 30; ``formats/text_transcript.py``; docs/traces.md, "Text
transcripts"): a chat kept as text, each message opened by a role-marker line of one decoration. Documents are
hand-made in the layouts such tools write, not copies of real files."""

from __future__ import annotations

from drafters.traces.ingest import ingest

from .conftest import codes, totals

DELIMITED = '''+++
model = "some-model"
userDelimiter = "# === USER ==="
+++

How do I read a file in Lua?

# === ASSISTANT ===

Use io.open:

```markdown
# === USER ===
this is an example inside a code block
```

### Summary

Open, read, close.

# === USER ===

And write one?

# === ASSISTANT ===

Open it with "w".

# === USER ===

'''


def _read(tmp_path, text, name="chat.md"):
    path = tmp_path / name
    path.write_text(text)
    return ingest([path], scrub=False)


def test_delimited_markdown_with_front_matter_and_a_leading_prompt(tmp_path):
    result = _read(tmp_path, DELIMITED)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, second = result.conversations[0].calls()
    assert [(m.role, m.text) for m in first.context] == [("user", "How do I read a file in Lua?")]
    assert "this is an example inside a code block" in first.completion.text  # a fenced marker is text
    assert first.completion.text.endswith("### Summary\n\nOpen, read, close.")  # a heading that is no role
    assert [m.role for m in second.context] == ["user", "assistant", "user"]
    assert second.completion.text == 'Open it with "w".'
    assert codes(result, "warnings") == ["leading_text_read_as_user"]  # the empty last prompt: no message


def test_bold_labels_with_a_heading_before_them(tmp_path):
    text = ("# Chat about tea\nExported on Monday\n\n**System:**\nBe brief.\n\n**User:**\nGreen or black?\n\n"
            "**Assistant:**\nGreen.\n\n## Answer\n\nIt is lighter.\n\n**User:**\nWhy?\n\n**Assistant:**\nLess caffeine.\n")
    result = _read(tmp_path, text, "tea.txt")
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, second = result.conversations[0].calls()
    assert [m.role for m in first.context] == ["system", "user"]
    assert first.completion.text == "Green.\n\n## Answer\n\nIt is lighter."
    assert second.completion.text == "Less caffeine."
    assert "preamble_not_read" in codes(result, "warnings")


def test_two_decorations_that_both_label_a_chat_are_not_guessed(tmp_path):
    text = "## User\nq\n## Assistant\na\n**User:**\nq2\n**Assistant:**\na2\n"
    result = _read(tmp_path, text)
    assert not result.conversations and codes(result) == ["ambiguous_shape"]


def test_a_tool_message_in_text_is_refused(tmp_path):
    text = "## User\nlist files\n## Assistant\nI will run ls.\n## Tool\na.txt\n## Assistant\nOne file.\n"
    result = _read(tmp_path, text)
    assert not result.conversations and codes(result) == ["content_not_mapped"]
    assert result.report.errors[0].line == 5


def test_prose_without_markers_of_both_roles_is_not_a_transcript(tmp_path):
    for text in ("Notes\n\n## User\n\nThe user guide says hello.\n", "User:\nonly one side\n",
                 "Assistant\nUser\nundecorated words on their own lines\n"):
        result = _read(tmp_path, text, "notes.md")
        assert not result.conversations and codes(result) == ["unknown_format"], text
