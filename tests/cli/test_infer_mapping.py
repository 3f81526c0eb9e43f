"""``tracedraft datasets infer-mapping FILE``: writes the mapping the general path inferred, which then reads
the file with ``datasets validate --mapping`` (offline, no API)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from service.cli import app

SHAPES = Path(__file__).resolve().parents[1] / "traces" / "fixtures" / "shapes"
ROOT = Path(__file__).resolve().parents[2]


def test_infer_mapping_writes_a_mapping_that_validate_reads(tmp_path):
    runner = CliRunner()
    out = tmp_path / "runs.mapping.yaml"
    r = runner.invoke(app, ["datasets", "infer-mapping", str(SHAPES / "runs_inputs_outputs.jsonl"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert text.startswith("# inferred by the general path: shape request_response")
    assert "response: $.outputs.choices[0].message" in text
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--mapping", str(out),
                            str(SHAPES / "runs_inputs_outputs.jsonl")])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["ok"] and (report["counts"]["conversations"], report["counts"]["calls"]) == (2, 4)


def test_infer_mapping_refuses_with_a_code(tmp_path):
    """No shape; or several lists none of which holds both sides of a conversation (two responses' ``choices``):
    nothing to rank, so nothing written."""
    runner = CliRunner()
    path = tmp_path / "answers.json"
    choices = [{"index": 0, "message": {"role": "assistant", "content": "b"}, "finish_reason": "stop"}]
    path.write_text(json.dumps({"intermediate": {"llm": {"choices": choices}}, "final": {"choices": choices}}))
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path)])
    assert r.exit_code != 0 and "ambiguous_shape" in r.output
    path.write_text(json.dumps({"rows": [1, 2, 3]}))
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path)])
    assert r.exit_code != 0 and "no_messages_found" in r.output
    chat = tmp_path / "chat.md"  # text: the way to a mapping is an example reply, not a JSON error
    chat.write_text("# 2025-03-14 conversation: 01j\n\n## Ada\n\nHi there\n\n## Bo\n\nHello there, Ada.\n")
    r = runner.invoke(app, ["datasets", "infer-mapping", str(chat)])  # no heading names a side: nothing guessed
    assert r.exit_code != 0 and "no_messages_found" in r.output and "--reply" in r.output
    assert "invalid_json" not in r.output
    table = tmp_path / "tutoring.csv"  # a table's rows are records, not text: the refusal says so
    table.write_text('turn,question,answer_text\n1,"What is 3/4 in twelfths?","9/12."\n')
    r = runner.invoke(app, ["datasets", "infer-mapping", str(table)])
    assert r.exit_code != 0 and "no_messages_found" in r.output and "the file is text" not in r.output


def test_infer_mapping_json_names_the_shape_and_the_mapping():
    r = CliRunner().invoke(app, ["datasets", "infer-mapping", "--json", str(SHAPES / "runs_inputs_outputs.jsonl")])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["shape"] == "request_response" and got["mapping"]["response"] == "$.outputs.choices[0].message"
    assert got["calls_not_read"] == []


def test_roles_nobody_spells_get_a_skeleton_to_complete(tmp_path):
    """No shape fits (role names the general path does not know), but a list of objects looks like messages:
    infer-mapping still exits 1 with the code, and writes a skeleton whose unknown roles ``--mapping`` refuses
    until filled; filled, it reads the file."""
    log = [{"who": "SYS", "said": "You are a support bot for Acme."}, {"who": "CUST", "said": "My order is late."},
           {"who": "BOT", "said": "Let me check that order."}, {"who": "CUST", "said": "Thanks, please hurry."},
           {"who": "BOT", "said": "It ships tomorrow morning."}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"threads": [{"id": "t1", "log": log}, {"id": "t2", "log": log[:3]}]}))
    out = tmp_path / "chat.mapping.yaml"
    runner = CliRunner()
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)])
    assert r.exit_code != 0 and "no_messages_found" in r.output and "skeleton" in r.output
    text = out.read_text()
    assert text.startswith("# a SKELETON to complete") and "messages: $.threads[*].log" in text
    assert "role: who" in text and "content: said" in text and "BOT: assistant" in text
    r = runner.invoke(app, ["datasets", "validate", "--json", "--mapping", str(out), str(path)])
    assert r.exit_code != 0 and "bad_mapping" in r.output  # the roles marked "?" are not guessed
    out.write_text(text.replace("SYS: '?'", "SYS: system").replace("CUST: '?'", "CUST: user"))
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--mapping", str(out), str(path)])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["ok"] and (report["counts"]["conversations"], report["counts"]["calls"]) == (2, 3)


def test_a_skeleton_never_takes_a_timestamp_or_an_id_for_the_text(tmp_path):
    """A new user's log of short replies: its ``at`` timestamps were the longest strings and became the skeleton's
    text; values that are times, dates, numbers or ids are neither role nor text."""
    log = [{"at": "2026-11-02T10:00:01Z", "who": "K", "msg": "hi, anyone there?"},
           {"at": "2026-11-02T10:00:01Z", "who": "B", "msg": "hello! yes"},
           {"at": "2026-11-02T10:00:09Z", "who": "K", "msg": "the price?"},
           {"at": "2026-11-02T10:00:09Z", "who": "B", "msg": "12 EUR each"}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"log": log}))
    out = tmp_path / "chat.mapping.yaml"
    r = CliRunner().invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)])
    assert r.exit_code != 0 and "skeleton" in r.output, r.output
    text = out.read_text()
    assert "role: who" in text and "content: msg" in text, text


def test_a_content_key_no_message_holds_is_named_with_the_keys_holding_text(tmp_path):
    """The one message key holding words is taken as the text, said in a comment (a new user's export, ``said``,
    had been written ``content: content`` beside a comment naming it); with two such keys, the comment names both and
    the mapping is left for the user to complete."""
    lines = [{"sid": "s1", "author": "user", "body": "list the files please"},
             {"sid": "s1", "author": "assistant", "body": "Running ls now and reading the output."}]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    out = tmp_path / "odd.yaml"
    r = CliRunner().invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "'body', the one key holding words, is read as the text (keys holding text: body, sid)" in text
    assert "content: body" in text and "does not read: body" not in text
    r = CliRunner().invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--mapping", str(out), str(path)])
    assert r.exit_code == 0 and json.loads(r.stdout)["counts"]["calls"] == 1, r.output
    path.write_text("\n".join(json.dumps({**line, "note": "a second text of words"}) for line in lines))
    r = CliRunner().invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)])
    assert "keys holding text: body, note, sid (set content: to the one" in out.read_text()


def _chat(user: str, answer: str) -> list[dict]:
    return [{"role": "system", "content": "You negotiate."}, {"role": "user", "content": user},
            {"role": "assistant", "content": answer}]


def test_several_message_lists_write_the_first_ranked_reading_and_name_the_others(tmp_path):
    """A game state holding each player's conversation and, per turn, snapshots of them: the general path refuses
    it (which list is the conversation is not guessed); infer-mapping writes the players' lists as one ``[*]``
    path (fewer ``[*]`` than the snapshots, ranked first), names the snapshots' path as the one line to change,
    and that mapping reads one conversation per player."""
    red, blue = _chat("Offer 5?", "I accept 5."), _chat("Sell for 5?", "Deal at 5.")
    state = {"players": [{"name": "red", "conversation": red}, {"name": "blue", "conversation": blue}],
             "game_state": [{"turn": i, "player_state": [{"conversation": red[:2 + i]}, {"conversation": blue}]}
                            for i in (0, 1)]}
    path = tmp_path / "game_state.json"
    path.write_text(json.dumps(state))
    runner = CliRunner()
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", str(path)])
    assert r.exit_code != 0 and "ambiguous_shape" in r.output
    out = tmp_path / "game.mapping.yaml"
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "messages: $.players[*].conversation" in text
    assert "#   messages: $.game_state[*].player_state[*].conversation" in text and "# AMBIGUOUS: 2" in text
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--no-dedup", "--mapping", str(out),
                            str(path)])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["ok"] and (report["counts"]["conversations"], report["counts"]["calls"]) == (2, 2)


def test_a_list_holding_answers_only_is_not_offered(tmp_path):
    """A response's ``choices`` beside the request's messages: only the messages hold both sides; the shallower
    path loses to them, and the ``--json`` output names no other reading."""
    record = {"request": {"body": {"messages": _chat("Hi", "Hello")}},
              "response": {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}]},
              "saved": {"history": _chat("Hi", "Hello")}}
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    r = CliRunner().invoke(app, ["datasets", "infer-mapping", "--json", str(path)])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["mapping"]["messages"] == "$.saved.history" and got["other_messages"] == ["$.request.body.messages"]


def test_a_log_of_one_message_a_line_with_roles_nobody_spells_gets_a_skeleton(tmp_path):
    """JSONL whose every line is one message, its role under a key no spelling knows: the skeleton reads the lines
    as messages (``records: messages``), the role under the key whose values the spellings know (``BOT``) over
    one with as few values; with the one unknown role filled, it reads the file."""
    lines = [{"kind": "in", "who": "CUST", "said": "My order is late."},
             {"kind": "out", "who": "BOT", "said": "Checking."},
             {"kind": "in", "who": "CUST", "said": "Thanks, please hurry."},
             {"kind": "out", "who": "BOT", "said": "It ships."}]  # kind: as few values, shorter, none spelled
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    out = tmp_path / "chat.mapping.yaml"
    runner = CliRunner()
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)])
    assert r.exit_code != 0 and "skeleton" in r.output
    text = out.read_text()
    assert "one message a record" in text and "records: messages" in text and "messages: $" in text
    assert "role: who" in text
    out.write_text(text.replace("CUST: '?'", "CUST: user"))
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--mapping", str(out), str(path)])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["ok"] and (report["counts"]["conversations"], report["counts"]["calls"]) == (1, 2)


def test_rows_that_are_no_messages_get_no_skeleton(tmp_path):
    """Generated rows (an id, a category, an instruction and answers sampled for it): an id's values never repeat
    and a category's are no role's spelling, so no skeleton reads the rows as messages; the answers are read as
    samples of one prompt."""
    rows = [{"uuid": f"u{i}", "difficulty": ("easy", "hard")[i % 2], "instruction": "Write a haiku about tea.",
             "responses": ["Steam rises slowly", "Green leaves unfold"]} for i in range(4)]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))
    r = CliRunner().invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(tmp_path / "rows.yaml")])
    assert r.exit_code == 0 and "skeleton" not in r.output, r.output
    assert "response: $.responses[*]" in (tmp_path / "rows.yaml").read_text()
    rows[0]["responses"] = [{"text": "Steam rises slowly"}, {"score": 3}]  # no answer in the second: not guessed
    path.write_text(json.dumps(rows))
    r = CliRunner().invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(tmp_path / "rows.yaml")])
    assert r.exit_code != 0 and "skeleton" not in r.output


def test_infer_mapping_learns_from_an_example_reply(tmp_path):
    """``--reply``: the user copies one of the model's replies; the mapping learned from where it sits reads the
    file with ``validate --mapping``; a role left to name exits 1 (``roles_unnamed``) after writing the mapping."""
    runner = CliRunner()
    path, out = tmp_path / "support.json", tmp_path / "support.mapping.yaml"
    log = [{"party": "CUST", "line": "My parcel has not arrived yet."},
           {"party": "AGT", "line": "Sorry to hear that, let me look up the tracking number."},
           {"party": "CUST", "line": "It is 123."}, {"party": "AGT", "line": "It arrives tomorrow."}]
    path.write_text(json.dumps({"chats": [{"log": log}]}))
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "--reply", "let me look up the tracking", "-o",
                            str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("# learned from the example reply, found at $.chats[0].log[1].line")
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--mapping", str(out), str(path)])
    report = json.loads(r.stdout)
    assert report["ok"] and (report["counts"]["conversations"], report["counts"]["calls"]) == (1, 2)
    path.write_text(json.dumps({"chats": [{"log": [{"party": "SYS", "line": "Be brief and polite."}, *log]}]}))
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "--reply", "let me look up the tracking", "-o",
                            str(out), "--json"])
    assert r.exit_code == 1 and "roles_unnamed" in r.output
    learned, _ = json.JSONDecoder().raw_decode(r.stdout)  # the mapping, then the coded error
    assert learned["unnamed_roles"] == ["SYS", "CUST"] and learned["mapping"]["roles"]["AGT"] == "assistant"


def test_infer_mapping_learns_a_text_files_markers_from_an_example_reply(tmp_path):
    """``--reply`` on a text log: the marker line above the reply and the prompt's are written as a text mapping,
    which ``validate --mapping`` reads; a reply under lines naming no sides exits 1 with ``example_not_read``."""
    runner = CliRunner()
    path, out = tmp_path / "evals.md", tmp_path / "evals.mapping.yaml"
    path.write_text("# Run\n\n## Case 1\n#### Input Prompt\nTranslate 'chat' to English.\n#### LLM Output\n"
                    "The word is 'cat' in English.\n#### Grade\npass\n\n## Case 2\n#### Input Prompt\n"
                    "Translate 'chien'.\n#### LLM Output\nIt means 'dog'.\n#### Grade\npass\n")
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "--reply", "The word is 'cat' in English",
                            "-o", str(out)])
    assert r.exit_code == 0, r.output
    written = out.read_text()
    assert "# learned from the example reply, found at line 7" in written and "'#### Grade': skip" in written
    assert "conversation: '## Case 1'" in written
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--mapping", str(out), str(path)])
    report = json.loads(r.stdout)
    assert report["ok"] and (report["counts"]["conversations"], report["counts"]["calls"]) == (2, 2)
    path.write_text("**Setup**:\nrules\n**Note**:\nThe word is 'cat' in English.\n")
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "--reply", "The word is 'cat' in English"])
    assert r.exit_code == 1 and "example_not_read" in r.output


def test_content_the_general_path_refuses_is_named_in_the_written_mapping(tmp_path):
    """A record keeping a turn beside its message list (``message_prompt``): the general path refuses it
    (``content_not_mapped``), and so does the written mapping read unchanged (it reads the text beside the list
    the same way), naming the key: never a mapping that reads the file ok without the turn. Where the mapping read
    unchanged would not refuse (a turn it does not look at), it is written with a ``# NOT READ`` line and the
    command exits 1 with that code (the test below)."""
    path, out = tmp_path / "sample.json", tmp_path / "sample.mapping.yaml"
    path.write_text(json.dumps({"message_history": [{"role": "user", "content": "Rename parse to parse_config."},
                                                    {"role": "assistant", "content": "Renamed it everywhere."}],
                                "message_prompt": "Now add a test for parse_config."}))
    runner = CliRunner()
    assert runner.invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)]).exit_code == 0
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--mapping", str(out), str(path)])
    report = json.loads(r.stdout)
    assert not report["ok"] and [(e["code"], e["field"]) for e in report["errors"]] == [
        ("content_not_mapped", "message_prompt")]


def test_a_mapping_that_would_lose_a_refused_turn_says_not_read(tmp_path):
    """A list ending before the model's answer, the answer kept as text beside it (``output_text``): the general
    path refuses it; the mapping read unchanged would read the earlier call ok without it, so it is written with a
    ``# NOT READ`` line and the command exits 1 with that code."""
    path, out = tmp_path / "sample.json", tmp_path / "sample.mapping.yaml"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "Rename parse to parse_config."},
                                             {"role": "assistant", "content": "Renamed it everywhere."},
                                             {"role": "user", "content": "Now add a test for it."}],
                                "output_text": "Added test_parse_config to the tests."}))
    r = CliRunner().invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)])
    assert r.exit_code == 1 and "content_not_mapped" in r.output
    assert "# NOT READ: the general path refuses this file's content (content_not_mapped" in out.read_text()


def test_without_a_reply_the_text_under_a_key_naming_the_output_is_learned_from(tmp_path):
    """No shape fits a benchmark report's requests (``prompt`` / ``output`` two lists down): plain infer-mapping
    learns the mapping from the text under ``output`` as if it were the --reply example, says so, exits 0, and the
    mapping reads every request; a file with no such key still exits 1 with the code."""
    runner = CliRunner()
    reqs = [{"request_id": f"r{i}", "prompt": f"Continue the story about the lighthouse keeper, part {i}.",
             "output": f"The keeper climbed the stairs for the {i}th time that night.", "prompt_tokens": 12}
            for i in range(3)]
    path, out = tmp_path / "bench.json", tmp_path / "bench.mapping.yaml"
    path.write_text(json.dumps({"benchmarks": [{"type_": "generative_benchmark",
                                                "requests": {"successful": reqs, "errored": []}}]}))
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", str(path)])
    assert not json.loads(r.stdout)["ok"]  # the general path refuses it
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert text.startswith("# learned from a text under a key naming the model's output")
    assert "# REPLY: no example given" in text and "response: $.output" in text
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", "--mapping", str(out), str(path)])
    report = json.loads(r.stdout)
    assert report["ok"] and (report["counts"]["conversations"], report["counts"]["calls"]) == (3, 3)
    path.write_text(json.dumps({"benchmarks": [{"requests": {"successful": [
        {**q, "output": None, "expected_output": q["output"]} for q in reqs]}}]}))  # a reference, not the model's
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path)])
    assert r.exit_code == 1 and "no_messages_found" in r.output and "--reply" in r.output


def test_json_commands_print_their_errors_as_json(tmp_path):
    """With --json, a coded error is a JSON document on stdout too (``{"error": {"code", "message", "param"}}``, as
    the API answers), not only a line on stderr: a script reading stdout gets JSON either way, and one document."""
    runner = CliRunner()
    bad = tmp_path / "bad.mapping.yaml"
    bad.write_text("name: bad\nmessages: $.messages\nrole: role\nroles: {agent: bot}\ncontent: content\n")
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": [{"role": "agent", "content": "hi"}]}))
    r = runner.invoke(app, ["datasets", "validate", "--json", "--mapping", str(bad), str(path)])
    assert r.exit_code != 0
    assert json.loads(r.stdout)["error"]["code"] == "bad_mapping"
    table = tmp_path / "rows.json"
    table.write_text(json.dumps({"rows": [1, 2, 3]}))
    r = runner.invoke(app, ["datasets", "infer-mapping", "--json", str(table)])
    assert r.exit_code != 0
    got = json.loads(r.stdout)["error"]
    assert got["code"] == "no_messages_found" and got["param"] == str(table)


def test_a_text_transcript_the_general_path_reads_with_its_tool_calls_needs_no_mapping(tmp_path):
    """A chat buffer writing tool calls as sections: ``validate`` reads it; ``infer-mapping`` (with or without an
    example reply) says no mapping is needed and why none can say it, not a JSON parse error."""
    path = tmp_path / "chat.md"
    path.write_text("# USER\n\nRead the config.\n\n# ASSISTANT\n\nLet me read it.\n\n# TOOL USE\n\nName: read-file\n"
                    "ID: t1\n\n## path\n\nconfig.py\n\n# TOOL RESULT\n\nID: t1\n\nDEBUG = True\n\n# ASSISTANT\n\n"
                    "Debug mode is on.\n")
    runner = CliRunner()
    r = runner.invoke(app, ["datasets", "validate", "--json", "--no-scrub", str(path)])
    assert r.exit_code == 0 and json.loads(r.stdout)["counts"]["tool_calls"] == 1
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path)])
    assert r.exit_code == 1 and "no mapping is needed" in r.output and "invalid_json" not in r.output
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "--reply", "Let me read it."])
    assert r.exit_code == 1 and "no mapping is needed" in r.output


def test_a_file_a_format_module_reads_is_said_so(tmp_path):
    """infer-mapping on a file a reader of its own reads (a LLaMA-Factory ShareGPT file) says so before its mapping
    or skeleton: the user may not need one (a new user's trial wrote a skeleton without a word)."""
    runner = CliRunner()
    path = ROOT / "examples" / "traces" / "llamafactory__glaive_toolcall_en_demo.json"
    r = runner.invoke(app, ["datasets", "infer-mapping", str(path), "-o", str(tmp_path / "m.yaml")])
    assert "the sharegpt reader reads this file already" in r.output
    shaped = tmp_path / "export.json"  # read by the general path: no note
    shaped.write_text(json.dumps({"chat": {"turns": [{"role": "user", "content": "Hi there, who are you?"},
                                                     {"role": "assistant", "content": "A helpful assistant."}]}}))
    r = runner.invoke(app, ["datasets", "infer-mapping", str(shaped)])
    assert r.exit_code == 0 and "reads this file already" not in r.output
