"""Response caches read by the general path (issue 30; ``formats/_entries.py``; docs/traces.md, "Response
caches"): a JSON object whose every entry is one call, the request as its key and the response as its value
(prompt text -> reply text; the JSON text of the messages sent -> the JSON text of those messages and the
reply). Documents are hand-made in those layouts, not copies of real files."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from .conftest import codes, inferred_mapping_totals, totals


def _msg(kind, text):
    return {"type": kind, "data": {"content": text, "additional_kwargs": {}}}


def _write(tmp_path, doc, name="cache.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_prompt_text_to_reply_text(tmp_path):
    doc = {"Write a function that adds two numbers.": "def add(a, b):\n    return a + b",
           "Write a test for the add function please.": "assert add(1, 2) == 3",
           "Name three prime numbers below ten.": "2, 3 and 5."}
    path = _write(tmp_path, doc)
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    calls = [c for conv in result.conversations for c in conv.calls()]
    assert (calls[0].context[0].text, calls[0].completion.text) == ("Write a function that adds two numbers.",
                                                                     "def add(a, b):\n    return a + b")
    assert inferred_mapping_totals(path, "request_response", tmp_path) == (3, 3, 0)


def test_message_lists_as_keys_their_values_restating_them_with_the_reply(tmp_path):
    system, ask = _msg("system", "You write code."), _msg("human", "Make a CLI that greets.")
    first = [system, ask]
    first_out = [*first, _msg("ai", "Nothing to clarify")]
    second = [*first_out, _msg("human", "Use argparse.")]  # continues the first entry's thread
    doc = {json.dumps(first): json.dumps(first_out),
           json.dumps(second): json.dumps([*second, _msg("ai", "Nothing to clarify")]),
           json.dumps([system, _msg("human", "Print the date in a shell script.")]):
               json.dumps([system, _msg("human", "Print the date in a shell script."), _msg("ai", "date")])}
    path = _write(tmp_path, doc)
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    # three entries, three calls: the second continues the first (one conversation), the same reply after a
    # beginning of its input is a call of its own (a cache's keys are distinct requests)
    assert totals(result.conversations) == (2, 3, 0)
    calls = [c for conv in result.conversations for c in conv.calls()]
    thread = max(result.conversations, key=lambda c: len(list(c.calls())))
    assert [m.role for m in list(thread.calls())[1].context] == ["system", "user", "assistant", "user"]
    assert sorted(c.completion.text for c in calls) == ["Nothing to clarify", "Nothing to clarify", "date"]
    assert inferred_mapping_totals(path, "request_response", tmp_path) == (2, 3, 0)


def test_an_object_of_settings_or_ids_is_no_cache(tmp_path):
    for doc in ({"model": "gpt-x", "temperature": "0.2", "system": "be brief"},
                {"run 1 of the nightly eval": 3, "run 2 of the nightly eval": 4}):
        result = ingest([_write(tmp_path, doc, "settings.json")], scrub=False)
        assert not result.conversations and not result.report.ok, doc


def test_a_cache_keeping_a_list_of_replies_per_prompt(tmp_path):
    # a layout planner's cache (LLM-grounded Diffusion's cache_*.json): prompt text -> the list of replies cached
    # for it, each reply a call of its own
    doc = {"In an indoor scene, a blue cube above a red cube": ["[('a blue cube', [202, 120, 110, 110])]"],
           "A realistic photo of a wooden table without bananas": ["[('a wooden table', [65, 243, 344, 206])]",
                                                                   "[('a table', [60, 240, 340, 200])]"]}
    path = tmp_path / "cache_demo_v0.1_gpt-4.json"
    path.write_text(json.dumps(doc, indent=4))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert [c.completion.text for conv in result.conversations for c in conv.calls()] == [
        "[('a blue cube', [202, 120, 110, 110])]", "[('a wooden table', [65, 243, 344, 206])]",
        "[('a table', [60, 240, 340, 200])]"]
