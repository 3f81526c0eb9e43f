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
    assert lines[0].startswith("call 1 · log.md:text · read at ") and lines[0].endswith("3 context messages")
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
