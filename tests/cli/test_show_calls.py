"""``tracedraft datasets show-calls FILE``: each call's context and completion as read (offline), to check a
reading by eye; --json gives the texts whole."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from service.cli import app

LOG = "## Q\nWhat is 2+2?\n## A\nIt is 4.\n## Q\nAnd 3+3?\n## A\nIt is 6, " + "and six " * 30 + "is the end.\n"


def _files(tmp_path):
    log, mapping = tmp_path / "log.md", tmp_path / "log.mapping.yaml"
    log.write_text(LOG)
    mapping.write_text("name: qa\ntext:\n  markers:\n    '## Q': user\n    '## A': assistant\n")
    return log, mapping


def test_show_calls_prints_each_calls_context_and_completion(tmp_path):
    log, mapping = _files(tmp_path)
    r = CliRunner().invoke(app, ["datasets", "show-calls", str(log), "--mapping", str(mapping), "--width", "60",
                                 "--call", "1", "--call", "7"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("call 1 · log.md:text · conversation from ") and lines[0].endswith("3 context messages")
    assert lines[1:4] == ["  [user] What is 2+2?", "  [assistant] It is 4.", "  [user] And 3+3?"]
    assert lines[4].startswith("  [completion] It is 6, and six") and lines[4].endswith("… (200 more characters)")
    assert lines[-1] == "1 of 2 calls shown; no call 7; result: ok"


def test_show_calls_json_has_the_texts_whole_and_the_result(tmp_path):
    log, mapping = _files(tmp_path)
    r = CliRunner().invoke(app, ["datasets", "show-calls", str(log), "--mapping", str(mapping), "--json"])
    out = json.loads(r.stdout)
    assert out["ok"] and out["errors"] == [] and out["counts"]["calls"] == 2
    assert [c["completion"]["text"] for c in out["calls"]] == ["It is 4.", LOG.split("## A\n")[2].strip()]
    assert out["calls"][0]["context"] == [{"role": "user", "text": "What is 2+2?"}]
    log.write_text(LOG.replace("## Q", "## User").replace("## A", "## Assistant"))
    r = CliRunner().invoke(app, ["datasets", "show-calls", str(log), "--json"])  # no mapping: the general path
    out = json.loads(r.stdout)
    assert len(out["calls"]) == 2 and out["calls"][1]["context"][-1] == {"role": "user", "text": "And 3+3?"}


def test_show_calls_on_a_refused_file_exits_1_with_the_errors(tmp_path):
    """No call read: exit 1, as ``datasets validate``; the errors with their messages, in the text and in --json
    (objects, as ``validate --json`` gives them); a tool message's result labelled ``[tool result]``."""
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"rows": [1, 2, 3]}))
    r = CliRunner().invoke(app, ["datasets", "show-calls", str(path)])
    assert r.exit_code == 1 and "[unknown_format]" in r.stdout and "no trace format recognizes" in r.stdout
    r = CliRunner().invoke(app, ["datasets", "show-calls", "--json", str(path)])
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and not out["ok"] and out["errors"][0]["code"] == "unknown_format"
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "-3 C"},
        {"role": "assistant", "content": "It is -3 C."}]}))
    r = CliRunner().invoke(app, ["datasets", "show-calls", str(chat), "--call", "1"])
    assert r.exit_code == 0 and "[tool result] -3 C" in r.stdout and "tool tool" not in r.stdout


def test_show_calls_marks_a_failed_tool_result(tmp_path):
    """A result flagged as an error (Anthropic's ``is_error``) is kept by the reading; show-calls said nothing of it,
    so a new user took the flag for dropped."""
    msgs = [{"role": "user", "content": "Read a.py"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "a.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "FileNotFoundError",
                                          "is_error": True}]},
            {"role": "assistant", "content": "a.py does not exist."}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": msgs}))
    r = CliRunner().invoke(app, ["datasets", "show-calls", str(path)], env={"COLUMNS": "200"})
    assert "  [tool error] FileNotFoundError" in r.output.splitlines(), r.output
    out = json.loads(CliRunner().invoke(app, ["datasets", "show-calls", str(path), "--json"]).stdout)
    assert out["calls"][1]["context"][-1]["tool_results"] == [{"id": "t1", "content": "FileNotFoundError",
                                                               "is_error": True}]


def test_a_turns_tool_results_show_before_its_text_as_the_prompt_renders_them(tmp_path):
    """Cline's history: a user turn holds the tool result, then ``<environment_details>`` text. The prompt is rendered
    results first (drafters/render/messages.py); show-calls printed the text first (a new-user trial read it as the
    order being lost)."""
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps([
        {"role": "user", "content": [{"type": "text", "text": "<task>Fix the test</task>"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file",
                                           "input": {"path": "test.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "assert add(2, 2) == 4"},
                                     {"type": "text", "text": "<environment_details>ACT MODE</environment_details>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "The test looks right."}]}]))
    r = CliRunner().invoke(app, ["datasets", "show-calls", str(path), "--call", "1"], env={"COLUMNS": "200"})
    lines = r.output.splitlines()
    assert lines[3:5] == ["  [user tool result] assert add(2, 2) == 4",
                          "  [user] <environment_details>ACT MODE</environment_details>"], r.output
