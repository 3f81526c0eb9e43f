"""drafters.toolcalls on a template that writes tool-call arguments as key/value pairs (GLM-4.5/4.6's
<arg_key>/<arg_value>, tests/fixtures/chat_templates/zai-org-GLM-4.6.jinja, with the tokenizer of
tests/test_render_glm_kimi.py): each value typed by the tool's JSON schema, then validated. The JSON form
(examples/chat_templates/chatml_tools.jinja) is covered by tests/test_regeneration.py and
tests/test_tool_call_eval.py."""

from __future__ import annotations

import pytest

from drafters.render import tools_to_openai
from drafters.tool_call_eval import outcome_of
from drafters.toolcalls import ToolCallStats, check_tool_calls, find_tool_calls
from drafters.traces.model import LLMCall, Message, TextPart, ToolCallPart, ToolDef
from tests.test_render_glm_kimi import make
from tests.test_tool_call_eval import WEATHER

GET_TIME = ToolDef("get_time", "Time now", {"type": "object", "properties": {}})
NOTE = ToolDef("note", "Keep a note", {"type": "object"})  # its properties are not typed
TOOLS = tools_to_openai([WEATHER, GET_TIME, NOTE])


@pytest.fixture(scope="module")
def glm():
    return make("glm")


def glm_call(name: str, *pairs: tuple[str, str]) -> str:
    """A call as GLM writes it: values verbatim, strings and JSON alike."""
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in pairs)
    return f"<tool_call>{name}\n{body}</tool_call>"


def checked(renderer, text: str) -> list[tuple]:
    return [(c.name, c.arguments, c.error) for c in check_tool_calls(find_tool_calls(renderer, text), TOOLS)]


def answered(*parts) -> LLMCall:
    return LLMCall("conv", 0, [WEATHER, GET_TIME], [Message("user", [TextPart("Weather?")])],
                   Message("assistant", list(parts)))


def test_calls_the_template_writes_parse_back_to_the_logged_arguments(glm):
    """Two parallel calls rendered by the template itself, where the string "3" and the number 3 are both
    written <arg_value>3</arg_value>: read back, each argument has its logged value and type."""
    tok, r = glm
    first = {"city": "3", "days": 3, "unit": "C", "tags": ["a", "b"]}
    second = {"city": "Rome", "days": 2}
    call = answered(ToolCallPart.from_raw("c1", "get_weather", first),
                    ToolCallPart.from_raw("c2", "get_weather", second))
    text = tok.decode(r.render_prompt(call).completion_ids, skip_special_tokens=False)
    assert text.count("<arg_value>3</arg_value>") == 2 and text.endswith("</tool_call><|observation|>")
    assert checked(r, text) == [("get_weather", first, None), ("get_weather", second, None)]


def test_string_and_integer_values_are_typed_by_the_schema(glm):
    _, r = glm
    text = glm_call("get_weather", ("city", "3"), ("days", "3"), ("tags", '["x"]')) + "<|observation|>"
    (call,) = find_tool_calls(r, text)
    assert call.pairs == {"city": "3", "days": "3", "tags": '["x"]'}
    assert call.arguments == {"city": 3, "days": 3, "tags": ["x"]}  # before the schema: JSON when it parses
    assert call.arguments_text == 'city</arg_key>\n<arg_value>3</arg_value>\n<arg_key>days</arg_key>\n' \
                                  '<arg_value>3</arg_value>\n<arg_key>tags</arg_key>\n<arg_value>["x"]'
    assert checked(r, text) == [("get_weather", {"city": "3", "days": 3, "tags": ["x"]}, None)]
    # Without a type in the schema: JSON when it parses, else the text.
    note = glm_call("note", ("n", "3"), ("city", "Oslo"), ("flag", "true")) + "<|observation|>"
    assert checked(r, note) == [("note", {"n": 3, "city": "Oslo", "flag": True}, None)]


@pytest.mark.parametrize(("value", "detail"), [
    ("three", "days: 'three' is not JSON of type 'integer'"),
    ("", "days: '' is not JSON of type 'integer'"),
    ("true", "days: True is not of type 'integer'"),  # JSON, of another type: jsonschema says so
    ("2.5", "days: 2.5 is not of type 'integer'"),
])
def test_a_value_that_is_not_an_integer_fails_with_a_code(glm, value, detail):
    _, r = glm
    text = glm_call("get_weather", ("city", "Oslo"), ("days", value)) + "<|observation|>"
    o = outcome_of(answered(), text, r)
    assert (o.tool_calls, o.parsed, o.valid) == (1, 1, 0)
    assert o.problems == [f"schema_mismatch: {detail}"]


def test_parallel_glm_calls_are_both_found(glm):
    """Text, then two calls (the second without arguments), ended by the role token GLM hands over with."""
    _, r = glm
    text = ("\n<think>Two tools.</think>\nChecking.\n" + glm_call("get_weather", ("city", "Paris"), ("days", "2"))
            + "\n" + glm_call("get_time") + "<|observation|>")
    assert checked(r, text) == [("get_weather", {"city": "Paris", "days": 2}, None), ("get_time", {}, None)]
    o = outcome_of(answered(), text, r)
    assert (o.tool_calls, o.parsed, o.valid, o.first_name) == (2, 2, 2, "get_weather")


def test_empty_values_keep_keys_and_values_paired(glm):
    """An empty value is a value: the keys after it keep theirs."""
    _, r = glm
    text = glm_call("get_weather", ("city", ""), ("days", "4"), ("tags", "[]")) + "<|observation|>"
    assert checked(r, text) == [("get_weather", {"city": "", "days": 4, "tags": []}, None)]


@pytest.mark.parametrize(("text", "detail"), [
    # Cut inside a value, and after a pair: the call never closes (it is not {"city": "Os"}).
    ("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Os", "cut short"),
    ("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n<arg_key>", "cut short"),
    (glm_call("get_weather", ("city", "Oslo"), ("city", "Rome")) + "<|observation|>", "'city' is written twice"),
])
def test_broken_key_value_arguments_are_counted_with_their_code(glm, text, detail):
    _, r = glm
    (call,) = check_tool_calls(find_tool_calls(r, text), TOOLS)
    assert (call.name, call.error, call.parsed, call.arguments) == ("get_weather", "invalid_pairs", False, None)
    assert detail in call.detail
    stats = ToolCallStats()
    stats.add([call])
    assert stats.to_dict()["tool_calls_failed"] == {"invalid_pairs": 1}
