"""Tables and pair histories read by the general path (issue 30; docs/traces.md, "Tables"): a CSV / TSV file's
rows are records of its header's columns (a cell holding JSON read as that JSON), read as JSON records are; a
chat history kept as ``[user, assistant]`` text pairs (Gradio's tuple format, ChatGLM's ``history``) is read as
its messages. Every file below is hand-made, not a copy of a real file.
"""

from __future__ import annotations

import csv
import io
import json

from drafters.traces.formats._pair_turns import is_pair_history, pair_turns
from drafters.traces.ingest import ingest

from .conftest import codes, totals


def _csv(tmp_path, header, rows, name="log.csv", delimiter=","):
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter)
    writer.writerow(header)
    writer.writerows(rows)
    path = tmp_path / name
    path.write_text(buf.getvalue())
    return path


def test_a_chatbot_log_with_the_history_as_json_pairs(tmp_path):
    """Gradio's flagged / cached-examples log: ``component 0`` holds the history (multi-line replies quoted)."""
    rows = [[json.dumps([["Hello", "Hi! How can I help?"]]), "", "", "2024-02-02 22:56:43"],
            [json.dumps([["Read a JSON file in Python?", "Use json:\n\n```python\nimport json\n```"],
                         ["And write one?", "json.dump(data, f)"]]), "", "", "2024-02-02 22:57:18"]]
    path = _csv(tmp_path, ["component 0", "flag", "username", "timestamp"], rows)
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert result.report.formats == {"csv_rows": 1}
    assert totals(result.conversations) == (2, 3, 0)
    second = list(result.conversations[1].calls())
    assert [m.role for m in second[1].context] == ["user", "assistant", "user"]
    assert second[0].completion.text.startswith("Use json:\n\n```python")
    assert [s.line for s in (c.source for c in result.conversations)] == [2, 3]


def test_prompt_and_response_columns_and_a_tsv(tmp_path):
    path = _csv(tmp_path, ["prompt", "response", "score"],
                [["What is 2+2?", "4", "1"], ["Capital of France?", "Paris", "1"]], "eval.tsv", "\t")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)
    assert [c.completion.text for conv in result.conversations for c in conv.calls()] == ["4", "Paris"]


def test_a_row_with_too_many_cells_is_an_error_at_its_line_and_the_rest_is_read(tmp_path):
    path = _csv(tmp_path, ["prompt", "response"],
                [["What is 2+2?", "4"], ["Capital?", "Paris", "extra"], ["Colour of the sky?", "Blue"]])
    result = ingest([path], scrub=False)
    assert not result.report.ok
    (err,) = result.report.errors
    assert (err.code, err.line) == ("invalid_csv", 3)
    assert totals(result.conversations) == (2, 2, 0)


def test_a_table_without_calls_is_refused(tmp_path):
    path = _csv(tmp_path, ["name", "city"], [["Ada", "London"], ["Alan", "Wilmslow"]])
    result = ingest([path], scrub=False)
    assert not result.report.ok and not result.conversations
    assert codes(result)


def test_pair_histories():
    record = {"query": "x", "history": [["Hi", "Hello!"], ["2+2?", None]], "spans": [["DATE", 3]]}
    got = pair_turns(record)
    assert got["history"] == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                              {"role": "user", "content": "2+2?"}]
    assert got["spans"] == [["DATE", 3]]  # not text pairs: left as it is
    assert pair_turns({"labels": [["a", ""]]}) == {"labels": [["a", ""]]}  # no reply anywhere: not a history
    assert pair_turns([["a", "b"]]) == {"messages": [{"role": "user", "content": "a"},  # a record that is one
                                                     {"role": "assistant", "content": "b"}]}
    assert pair_turns([["a", 1]]) == [["a", 1]]


def test_a_cell_written_as_a_python_literal_is_that_value(tmp_path):
    """pandas writes a list of message dicts to a cell as its Python repr (``[{'role': 'user', ...}]``): read as
    the list (``ast.literal_eval``: literals only); other text in brackets stays text."""
    from drafters.traces.formats._table_rows import cell

    assert cell("[{'role': 'user', 'content': \"it's\"}]") == [{"role": "user", "content": "it's"}]
    assert cell("[see note] and more") == "[see note] and more"
    assert cell("{__import__('os')}") == "{__import__('os')}"  # not a literal: never evaluated


def test_settings_above_the_header_refuse_the_table(tmp_path):
    """A log whose first line holds its settings (a long system prompt among them) and whose header is the second:
    rows read against the first line would put every value under another column's name."""
    path = tmp_path / "run.csv"
    path.write_text('Model,m1,SYSTEM,"' + "Output hex integers only. " * 4 + '"\nturn,USER,ASSISTANT\n1,hi,0x1\n')
    result = ingest([path], scrub=False)
    assert not result.conversations and codes(result) == ["invalid_csv"]
    assert result.report.errors[0].line == 1


def test_a_reply_example_in_a_table_of_messages_groups_dialogues_by_the_id_under_which_turns_run(tmp_path):
    """A study's chat table, one message a row: a session holds several dialogues, each numbering its turns from 1.
    The learned mapping opens a conversation where ``client_id`` changes (no dialogue repeats a turn under it), not
    ``session_id`` (under which turn 1 of the participant comes twice): 3 conversations of 4 calls, not 2 whose
    second reads one dialogue's history as the next one's context."""
    from drafters.traces.infer_example import learn_mapping
    from drafters.traces.mapping_file import mapping_from_dict

    rows = [("s1", "c1", 1, "participant", "My pizza was burnt."), ("s1", "c1", 1, "bot", "Sorry to hear that."),
            ("s1", "c1", 2, "participant", "Fix it."), ("s1", "c1", 2, "bot", "A refund is on its way."),
            ("s1", "c2", 1, "participant", "Where is my order?"), ("s1", "c2", 1, "bot", "It left at noon."),
            ("s2", "c3", 1, "participant", "Cancel it."), ("s2", "c3", 1, "bot", "Cancelled.")]
    path = tmp_path / "chat_history.csv"
    out = io.StringIO()
    csv.writer(out).writerows([("session_id", "client_id", "turn_number", "sender", "message"), *rows])
    path.write_text(out.getvalue())
    learned = learn_mapping(path, "A refund is on its way")
    assert learned.mapping["group"] == "$.client_id"
    result = ingest([path], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (3, 4, 0)
    assert [m.text for m in next(result.conversations[1].calls()).context] == ["Where is my order?"]


def test_rows_of_a_prompt_and_its_reply_continue_their_session(tmp_path):
    """A chat log exported as a table, one prompt and reply a row, a ``session_id`` and a ``turn`` column: each
    row continues the rows of its session (the general path read each row as its own conversation, the second
    turn without its history; a learned mapping read ``turn`` as the role), so 2 conversations of 2 calls each."""
    from drafters.traces.infer_example import learn_mapping
    from drafters.traces.mapping_file import mapping_from_dict

    rows = [("a", 1, "Suggest a name for a bakery.", "How about The Wild Yeast?"),
            ("a", 2, "Write a tagline for it.", "Slow-fermented, fast devoured."),
            ("b", 1, "Say good morning in Spanish.", "Buenos días."), ("b", 2, "And in Italian?", "Buongiorno.")]
    path = tmp_path / "chat_pairs.csv"
    out = io.StringIO()
    csv.writer(out).writerows([("session_id", "turn", "prompt", "response"), *rows])
    path.write_text(out.getvalue())
    learned = learn_mapping(path, "Slow-fermented, fast devoured")
    assert (learned.mapping["messages"], learned.mapping["group"]) == ("$.prompt", "$.session_id")
    for result in (ingest([path], scrub=False, dedup=False),
                   ingest([path], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)):
        assert result.report.ok, result.report.errors
        assert totals(result.conversations) == (2, 4, 0)
        second = list(result.conversations[0].calls())[1]
        assert [m.text for m in second.context] == ["Suggest a name for a bakery.", "How about The Wild Yeast?",
                                                    "Write a tagline for it."]


def test_fine_tuning_rows_of_one_turn_after_their_history(tmp_path):
    # ms-swift's / Qwen's {system, query, response, history} rows (ChatGLM's prompt / response / history): each row
    # one conversation, every reply of its history a call as the last one is; two prompts (Alpaca's instruction and
    # input) are not guessed
    rows = [{"system": "You are terse.", "query": "55555", "response": "66666"},
            {"query": "eeeee", "response": "fffff", "history": []},
            {"query": "EEEEE", "response": "FFFFF", "history": [["AAAAA", "BBBBB"], ["CCCCC", "DDDDD"]]}]
    path = tmp_path / "swift.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 5, 0)
    calls = [c for conv in result.conversations for c in conv.calls()]
    assert [m.role for m in calls[0].context] == ["system", "user"]
    assert [m.text for m in calls[-1].context] == ["AAAAA", "BBBBB", "CCCCC", "DDDDD", "EEEEE"]
    assert pair_turns({"instruction": "Translate.", "input": "Hallo", "output": "Hello", "history": []})[
        "history"] == []  # left as it is


def test_turn_objects_of_a_user_text_and_its_reply(tmp_path):
    """A dialogue system's run results keep each turn as ``{turn_idx, user, agent}`` (the list at the record's top
    level, or one object down): read as the turns' messages, one call per reply. Two such lists in one record (the
    run and a reference dialogue) are not guessed; a turn list holding a longer text besides (a thought) is not read
    (its text would be lost), nor a list of question / answer pairs (references as often as replies)."""
    turns = [{"turn_idx": 1, "user": "A gastropub in the centre, please.", "agent": "The Eagle is one."},
             {"turn_idx": 2, "user": "Book it for eight people.", "agent": "Booked: reference 00000013."}]
    path = tmp_path / "runs.jsonl"
    rows = [{"dialog_id": "d1", "run_result": turns}, {"dialog_id": "d2", "run_result": {"cost": 0.1,
                                                                                          "dialog_pred": turns[:1]}}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 3, 0)
    first = list(result.conversations[0].calls())[1]
    assert [m.role for m in first.context] == ["user", "assistant", "user"]
    # the report's inferred mapping is of the rewritten records: it says a --mapping cannot use it
    said = next(w.message for w in result.report.warnings if w.code == "generic_mapping")
    assert "--mapping reads the file as written, so this mapping does not read it" in said
    assert first.completion.text == "Booked: reference 00000013."
    both = {"dialog_id": "d3", "run_result": {"dialog_pred": turns, "dialog_refer": turns}}
    path.write_text(json.dumps(both) + "\n")
    assert codes(ingest([path], scrub=False)) == ["ambiguous_shape"]
    assert not pair_turns({"t": [{**turns[0], "thought": "The user wants a gastropub; search the centre first."}]})[
        "t"][0].get("role")
    qa = [{"question": "Capital of France?", "answer": "Paris"}]
    assert pair_turns({"qa": qa}) == {"qa": qa}
    runs = [{"user": "u42", "agent": "planner", "cost": 0.1}, {"user": "u43", "agent": "coder", "cost": 0.2}]
    assert pair_turns({"runs": runs}) == {"runs": runs}  # names, not a dialogue


def test_pair_histories_in_a_top_level_array(tmp_path):
    """A list of saved chats, each a Gradio tuple history: the sniffer read the array's items before rewriting them
    (the file was ``unknown_format``, yet ``--format generic`` read it), on one line or pretty-printed."""
    chats = [{"history": [["how do I reverse a list in python?", "Use reversed(x) or x[::-1]."],
                          ["and sort it?", "sorted(x), or x.sort() in place."]]},
             {"history": [["what is a tuple?", "An immutable sequence."]]}]
    for i, text in enumerate((json.dumps(chats), json.dumps(chats, indent=2))):
        path = tmp_path / f"chats{i}.json"
        path.write_text(text)
        result = ingest([path], scrub=False)
        assert result.report.ok and totals(result.conversations) == (2, 3, 0), codes(result)
    # the histories themselves as the file's items, and a file that is one history (Gradio's saved as it is)
    bare = [c["history"] for c in chats]
    for i, (doc, want) in enumerate(((bare, (2, 3, 0)), (bare[0], (1, 2, 0)))):
        for text in (json.dumps(doc), json.dumps(doc, indent=2)):
            path = tmp_path / f"bare{i}.json"
            path.write_text(text)
            result = ingest([path], scrub=False)
            assert result.report.ok and totals(result.conversations) == want, (i, codes(result))


def test_a_history_of_bare_texts_and_the_answer_beside(tmp_path):
    """ZeroEval / WildBench results: ``chat_history`` the turns as bare texts (the user's first, alternating), the
    model's answer a list of one text; read as messages. An even count (whose turn is the answer?), a second
    prompt beside, or several answers are not guessed."""
    rows = [{"session_id": "a", "chat_history": ["What is 2+2? Think step by step."], "model_input": "n/a",
             "output": ["2+2 equals 4."], "generator": "m"},
            {"session_id": "b", "chat_history": ["Name a prime.", "7 is prime.", "And an even one?"],
             "output": ["2 is the only even prime."], "generator": "m"}]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(rows))
    result = ingest([path], scrub=False)
    assert result.report.ok and totals(result.conversations) == (2, 3, 0), codes(result)
    last = list(result.conversations[1].calls())[-1]
    assert [m.role for m in last.context] == ["user", "assistant", "user"]
    assert last.completion.text == "2 is the only even prime."
    for bad in ({"chat_history": ["Name a prime.", "7 is prime."], "output": ["2"]},
                {"chat_history": ["Name a prime."], "output": ["7", "11"]},
                {"chat_history": ["Name a prime."], "prompt": "Name an even prime.", "output": ["2"]}):
        assert pair_turns(bad) == bad, bad


def test_score_pairs_are_no_chat_history(tmp_path):
    """lm-eval-harness's multiple-choice samples keep ``[["-1.5", "True"], ...]``: each choice's log-likelihood and
    whether it is the greedy answer, no prompt and reply (were read as a chat history, user ``-1.5`` answered
    ``True``, ``ok``: a new-user trial)."""
    assert not is_pair_history([["-1.5", "True"], ["-2.5", "False"]])
    assert is_pair_history([["Hi", "Hello!"], ["2+2?", "4"]])
    row = {"doc_id": 0, "doc": {"question": "The sky is", "choices": ["blue", "green"]}, "target": 0,
           "resps": [[["-1.5", "True"]], [["-2.5", "False"]]], "filtered_resps": [["-1.5", "True"], ["-2.5", "False"]]}
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(row) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert not result.conversations and not result.report.ok
