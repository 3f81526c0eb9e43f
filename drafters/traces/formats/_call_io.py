"""Where one record of a request/response log keeps a call's input and output (the general path's
``request_response`` shape, ``_shapes.infer``): the input message list under an input-like key, and the output
beside it, as an assistant message, a list of them (the answers, or the conversation's continuation with its tool
results), a role-less result object or text; or a call's input and output as Responses-API item lists
(``items_call``). A text field is never taken while a list of answers elsewhere in
the record goes unread (docs/traces.md, "A completion that continues the prompt"). Answers sampled for one prompt
(``sampled_answers``, a response of several ``choices``: ``every_choice``) are a call each; tool definitions kept
with the call's settings are found by ``settings_tools``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from drafters.traces.formats._record_shapes import holds_role_message, is_items
from drafters.traces.formats._rendered_chats import rendered_chat
from drafters.traces.formats._spellings import (
    CALL_KEYS,
    CONTENT_KEYS,
    MESSAGE_WRAPPERS,
    get,
    is_message,
    role_key,
    role_value,
    snake,
)
from drafters.traces.json_paths import child_path, jsonpath

OUTPUT_KEYS = ("outputs", "output", "response", "completion", "result", "generation", "generations",
               "output_messages", "model_output_message", "llm_output", "answer",
               "replies", "sampled")  # replies: a Haystack chat generator's output; sampled: OpenAI evals' samples
INPUT_KEYS = ("inputs", "input", "request", "prompt", "input_messages", "model_input_messages", "messages",
              "contents", "query")  # contents: a Gemini request's turns; query: Azure AI evaluation's messages
#: A call written as two texts: the prompt's keys, and the model's answer's (never ``answer``: an eval's reference).
TEXT_INPUT_KEYS = ("instruction", "prompt", "question", "query", "input", "request", "inputs")  # inputs: TGI's
#: Keys of a recorded stream's chunks beside the request (an HTTP recorder's): once joined (``_streams``), the output.
STREAM_KEYS = ("chunks", "stream", "events")
TEXT_OUTPUT_KEYS = ("output", "response", "completion", "generation", "generated_text")  # generated_text: TGI's


#: Keys under which a message keeps a copy of the context it was answered in (PDL's model blocks: ``context``), not
#: a conversation of its own (a sub-agent's thread: ``nested_thread``).
CONTEXT_COPY_KEYS = frozenset({"context", "history", "chat_history", "input", "inputs", "prompt", "messages_before"})


def nested_thread(message: dict, read: Any, at: str) -> str | None:
    """The path of a conversation of its own kept inside ``message`` under a key outside ``read`` (a sub-agent's
    messages on the tool message answering its call), else None; never a context copy (``CONTEXT_COPY_KEYS``)."""
    return next((p for k, v in message.items() if k not in read and k not in CONTEXT_COPY_KEYS
                 and isinstance(v, (dict, list)) for p, _ in message_lists(v, f"{at}.{k}")), None)


def message_lists(value: Any, path: str = "$", depth: int = 0, need_assistant: bool = True) -> list[tuple[str, list]]:
    """Every list of messages in ``value`` (``(path, list)``; not looking inside a found list)."""
    if depth > 6:
        return []
    if isinstance(value, list):
        dicts = [m for m in value if isinstance(m, dict)]
        if dicts and len(dicts) == len(value) and role_key(dicts) and (
                not need_assistant or any(role_value(m, role_key(dicts) or "") == "assistant" for m in dicts)):
            return [(path, value)]
        return [f for i, item in enumerate(value[:1000]) for f in message_lists(item, f"{path}[{i}]", depth + 1,
                                                                                 need_assistant)]
    if isinstance(value, dict):  # tool definitions (``{"type": "function", ...}``) are no messages of role function
        return [f for k, v in value.items() if isinstance(v, (list, dict)) and not _tool_definitions(k, v)
                for f in message_lists(v, child_path(path, k), depth + 1, need_assistant)]
    return []


CALL_NAME_KEYS = ("name", "tool", "tool_name", "toolName", "api_name", "apiName")


def call_shaped(value: Any) -> bool:
    """Tool calls in some spelling: an object, or a list of objects, with a name and arguments (LobeChat's
    ``plugin``: ``apiName`` / ``arguments``)."""
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(c, dict) for c in items) and all(
        any(k in c or k in (c.get("function") or {}) for k in CALL_NAME_KEYS)
        and any(k in c or k in (c.get("function") or {}) for k in ("arguments", "args", "input", "parameters",
                                                                  "tool_input", "toolInput", "tool_args"))
        for c in items)


def messages_at(record: Any, path: str) -> list[dict]:
    found = jsonpath(record, path)
    value = found[0][1] if found else None
    return [m for m in (value if isinstance(value, list) else [value]) if isinstance(m, dict)]


def input_output(record: Any) -> tuple[str, str] | None:
    """(input messages path, output path) of a request/response record, or None. The output is read with the
    input's message keys, so of its spellings (``choices`` / ``choices[0].message``) the one whose messages
    carry the input's role key is taken."""
    if not isinstance(record, dict):
        return None
    if not message_lists(record, need_assistant=False):
        return text_pair(record)
    inputs = [(p, v) for p, v in message_lists(record, need_assistant=False)  # spanInputs (MLflow's) too
              if any(k in p.lower() for k in INPUT_KEYS) and not _ends_with_answer(v)]
    # one request's messages written twice (ProAgent's ``input.messages`` and ``input.base_kwargs.messages``): the
    # shortest path, once
    inputs = [(p, v) for p, v in sorted(inputs, key=lambda pv: len(pv[0]))
              if not any(v == w for q, w in inputs if len(q) < len(p))]
    pairs = [(inp, out) for inp, msgs in inputs for out in _output_paths(record)
             if not out.startswith(inp) and role_key(messages_at(record, out)) == role_key(msgs)]
    answers = [p for p, _ in message_lists(record) if not p.startswith(inputs[0][0])] if inputs else []
    if not pairs and len(inputs) == 1 and not answers and "[" not in inputs[0][0]:
        # never a text field while answers elsewhere go unread; nor for messages inside one item of a list (an
        # event of a trace: the record is the trace, and a text beside it is no answer to that item's messages)
        pairs = [(inputs[0][0], out) for out in _text_outputs(record)]
    prompt = _texts(record, TEXT_INPUT_KEYS) if not inputs else []
    if not pairs and len(prompt) == 1:  # a prompt string and the response object (STORM's, DSPy's call logs)
        pairs = [(prompt[0], out) for out in _output_paths(record)
                 if isinstance(messages_at(record, out), list) and len(messages_at(record, out)) == 1
                 and isinstance(jsonpath(record, out)[0][1], dict)]
    if not pairs:
        return None
    # Several spellings of one call (span attributes beside the raw request): the input and output written
    # side by side (the longest common path) belong together; a tie is not guessed.
    best = sorted(pairs, key=lambda io: -len(os.path.commonprefix(io)))
    if len(best) > 1 and len(os.path.commonprefix(best[0])) == len(os.path.commonprefix(best[1])):
        return None
    return best[0]


def text_pair(record: dict) -> tuple[str, str] | None:
    """(prompt path, answer path) of a record holding one call as two texts and no message (instruction/output
    rows, AlpacaEval's model outputs): exactly one non-empty text among TEXT_INPUT_KEYS and one among
    TEXT_OUTPUT_KEYS at its top level; None otherwise (two prompts, Alpaca's ``instruction`` with a non-empty
    ``input``, cannot be one user message without a rule the general path does not guess). A reference
    ``answer`` (an eval's ``question``/``answer``) is never the model's output, unless the record counts the tokens
    a model generated (``usage.completion_tokens``: simple-evals' results), whose answer that is."""
    ins, outs = _texts(record, TEXT_INPUT_KEYS), _texts(record, TEXT_OUTPUT_KEYS)
    if len(ins) == 1 and not outs:
        outs = sampled_answers(record)
    if len(ins) == 1 and not outs and _rendered_prompt(record, ins[0]):  # llama.cpp's /completion: its ``content``
        outs = _texts(record, RENDERED_OUTPUT_KEYS)
    if len(ins) == 1 and not outs:  # a completions response beside its prompt (vLLM's ``choices: [{text}]``)
        outs = _completion_choice(record)
    if len(ins) == 1 and not outs and _generated(record.get("usage")) and isinstance(record.get("answer"), str) \
            and record["answer"].strip():  # the record's own token usage: its answer is what the model generated
        outs = ["$.answer"]
    if not ins and not outs:  # each held one level down: {request: {prompt}, result: {completions: [{text}]}}
        ins = [p for k in TEXT_INPUT_KEYS if isinstance(record.get(k), dict)
               for p in _held_text(*_body(record[k], f"$.{k}"), PROMPT_TEXT_KEYS)]
        outs = [p for k in TEXT_OUTPUT_KEYS + ("result",) if isinstance(record.get(k), dict)
                for p in _held_text(*_body(record[k], f"$.{k}"), ANSWER_TEXT_KEYS)]
    return (ins[0], outs[0]) if len(ins) == 1 and len(outs) == 1 else None


#: Keys of a list of answers sampled for one prompt (open-instruct's ``completions: [{model, completion}]``,
#: Magpie's ``responses``): each one a call of its own.
SAMPLE_KEYS = ("completions", "responses", "outputs", "generations", "samples", "response")  # response: a cache's
_SAMPLE_META = 200  # characters: a longer text beside a sample's answer may be its own prompt, not guessed


def sampled_answers(record: dict) -> list[str]:
    """``["$.KEY[*]"]`` or ``["$.KEY[*].TEXT"]`` for the one list of sampled answers a prompt-text record holds
    (``SAMPLE_KEYS``): non-empty texts, or objects each holding its answer under the same text key and no other
    long text (a per-sample system prompt would be lost) and no message or tool call; else []."""
    found = []
    for k in SAMPLE_KEYS:
        items = record.get(k)
        if not isinstance(items, list) or not items:
            continue
        if all(isinstance(i, str) and i.strip() and not _looks_encoded(i) for i in items):
            found.append(f"$.{k}[*]")
        elif all(isinstance(i, dict) for i in items):
            held = {tuple(_held_text(i, f"$.{k}[*]", ANSWER_TEXT_KEYS)) for i in items}
            path = next(iter(held))[0] if len(held) == 1 and len(next(iter(held))) == 1 else None
            leaf = path.rsplit(".", 1)[-1] if path else ""
            if path and all(key == leaf or not (isinstance(v, str) and len(v) > _SAMPLE_META) and
                            not isinstance(v, (dict, list)) for i in items for key, v in i.items()):
                found.append(path)
    return found if len(found) == 1 else []


#: Inside a prompt object (promptfoo's ``prompt: {raw, label}``, HELM's ``request: {prompt, model, ...}``), the
#: keys of its text; inside an answer object (``response: {output}``, ``result: {completions: [{text}]}``), its.
PROMPT_TEXT_KEYS = ("raw", "prompt", "text", "content", "query", "question")  # query: an agent test's {input: {query}}
ANSWER_TEXT_KEYS = ("output", "text", "content", "completion", "response")


#: An answer key naming the model's own reply (PlanBench's ``llm_raw_response``, ``model_output``,
#: ``generated_response``): a model word, then the answer's; never a reference (``ground_truth_plan``).
_MODEL_ANSWER_KEY = re.compile(r"^(llm|model|raw|generated|assistant|ai|bot)(_(llm|model|raw))*_"
                               r"(response|completion|output|generation|answer)$")


#: A prompt or an answer under a key of a few words, one of which says so (``original_prompt``, ``input_text``;
#: ``result``, ``return``, ``llm_reply``), none of which says it is someone else's (a reference, a template).
#: Plurals and participles too where the key holds one text (TopicGPT's ``prompted_docs`` / ``responses``).
_PROMPT_WORDS = frozenset({"prompt", "prompted", "instruction", "question", "query", "input", "request"})
_ANSWER_WORDS = frozenset({"output", "outputs", "response", "responses", "resp", "completion", "generation", "result",
                           "return", "reply"})
_NOT_THE_CALL = frozenset({"expected", "reference", "ref", "gold", "golden", "target", "ground", "truth", "label",
                           "ideal", "correct", "template", "system", "parsed", "extracted", "score", "eval", "judge",
                           "error", "status", "type", "id", "format", "schema", "tokens", "time", "count", "hash"})


def _worded(key: str, words: frozenset[str]) -> bool:
    parts = snake(key).split("_")
    return len(parts) <= 3 and bool(words.intersection(parts)) and not _NOT_THE_CALL.intersection(parts)


def answers_beside(record: dict, read: tuple[str, str]) -> list[str]:
    """Paths of the model's answers a text-pair record holds besides the one read (``read``: the prompt and answer
    paths), down to three keys: a key worded as an answer (``raw_outputs``, ``llm_response``) holding other answer
    text (``_other_answers``). Reading only the pair would drop those calls (FactReasoner's ``results.raw_outputs``,
    a checker's raw replies keyed by claim)."""
    texts = {t for p in read for _, t in jsonpath(record, p, raw=True) if isinstance(t, str)}  # JSON text as written

    def walk(value: dict, path: str, depth: int) -> list[str]:
        found = []
        for k, v in value.items():
            p = child_path(path, str(k))
            if any(r == p or r.startswith((p + "[", p + ".")) for r in read):  # what is read, or holds it
                continue
            if isinstance(k, str) and (_MODEL_ANSWER_KEY.match(k) or _worded(k, _ANSWER_WORDS)) and \
                    _other_answers(v, texts):
                found.append(p)
            elif isinstance(v, dict) and depth < 3:
                found += walk(v, p, depth + 1)
        return found
    return walk(record, "$", 0)


def _other_answers(value: Any, texts: set[str]) -> bool:
    """Whether ``value`` holds answer text other than ``texts``: a text of several words that is none of them (not a
    label: ``response_source: live``), or an object or list of at least two texts not all inside them (the answer's
    JSON parsed, its strings as written there, is a copy: VideoLingo's ``resp`` beside ``resp_content``)."""
    if isinstance(value, str):
        return len(value.split()) > 1 and value not in texts
    many = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else None
    if many is None or len(many) < 2 or not all(isinstance(t, str) and t.strip() for t in many):
        return False
    return not all(any(t in r or json.dumps(t, ensure_ascii=False)[1:-1] in r for r in texts) for t in many)


def _texts(record: dict, keys: tuple[str, ...]) -> list[str]:
    if keys is TEXT_OUTPUT_KEYS:  # the model's answer under a key that says so
        keys = keys + tuple(k for k in record if isinstance(k, str) and k not in keys and
                            (_MODEL_ANSWER_KEY.match(k) or _worded(k, _ANSWER_WORDS)))
    elif keys is TEXT_INPUT_KEYS:
        keys = keys + tuple(k for k in record if isinstance(k, str) and k not in keys and _worded(k, _PROMPT_WORDS))
    return [child_path("$", k) for k in keys if isinstance(record.get(k), str) and record[k].strip()
            and not _looks_encoded(record[k])]


#: Beside a prompt rendered by a chat template (an LLM call beyond doubt), the keys of the model's answer.
RENDERED_OUTPUT_KEYS = ("content", "text", "generated_text")


def _completion_choice(record: dict) -> list[str]:
    """``["$.choices[0].text"]`` for a Completions API response of one choice holding text, else []."""
    choices = record.get("choices")
    one = choices[0] if isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], dict) else {}
    text = one.get("text")
    return ["$.choices[0].text"] if isinstance(text, str) and text.strip() and "message" not in one else []


def _rendered_prompt(record: dict, path: str) -> bool:
    found = jsonpath(record, path)
    rendered = rendered_chat(found[0][1]) if found else None
    return rendered is not None and rendered.prompt


def _generated(usage: Any) -> bool:
    """Whether ``usage`` counts tokens a model generated (``completion_tokens`` / ``output_tokens`` above 0)."""
    return isinstance(usage, dict) and any(isinstance(usage.get(k), int) and usage[k] > 0
                                           for k in ("completion_tokens", "output_tokens", "candidates_token_count"))


def _body(holder: dict, path: str) -> tuple[dict, str]:
    """An HTTP exchange's ``body`` object (``request.body``: a legacy completions call's ``prompt``), else the
    object itself, with its path."""
    return (holder["body"], f"{path}.body") if isinstance(holder.get("body"), dict) else (holder, path)


def _held_text(value: dict, path: str, keys: tuple[str, ...]) -> list[str]:
    """The one text an object holds for a prompt or an answer (``keys``; an answer also as the one entry of a
    ``completions`` / ``choices`` list), when it holds no message and no tool call: [] when it holds none or
    several (a template beside its rendering is not guessed)."""
    if is_message(value) or any(("tool" in str(k).lower() or "function" in str(k).lower()) and v not in
                                (None, "", [], {}) for k, v in value.items()):
        return []
    found = [f"{path}.{k[2:]}" for k in _texts(value, keys)]
    if keys is ANSWER_TEXT_KEYS:
        for k in ("completions", "choices"):
            items = value.get(k)
            if isinstance(items, list) and len(items) == 1 and isinstance(items[0], dict) and \
                    isinstance(items[0].get("text"), str):
                found.append(f"{path}.{k}[0].text")
    return found if len(found) == 1 else []


def _text_outputs(record: dict, path: str = "$", depth: int = 0) -> list[str]:
    """Paths of an output given as text (``response.text``, ``completion: {text}``), where the object holding
    it has no tool calls beside it (reading only the text would lose them)."""
    out: list[str] = []
    if depth > 5 or not isinstance(record, dict):
        return out
    for k, v in record.items():
        p = child_path(path, k)
        if k in OUTPUT_KEYS and (isinstance(v, str) and v and not _looks_encoded(v)
                                 or isinstance(v, dict) and _result_object(v)):  # text, or a role-less result
            out.append(p)
        elif k in OUTPUT_KEYS and isinstance(v, dict):
            hit = _text_in(v, p)
            if hit:
                out.append(hit)
        elif k in OUTPUT_KEYS and isinstance(v, list) and len(v) == 1 and isinstance(v[0], str) and v[0].strip() \
                and not _looks_encoded(v[0]):  # one answer sampled (OpenAI evals' ``sampled``); several: not guessed
            out.append(f"{p}[0]")
        elif isinstance(v, dict):
            out += _text_outputs(v, p, depth + 1)
    return out


# A model's result object without a role (AutoGen's CreateResult: {finish_reason, content, usage, ...}; NodeLLM's
# cassettes: {content, usage, reasoning}): the keys that may hold data beside its content, the first five saying
# it is a model's result; any other key holding data (a thought, tool calls) is not guessed.
_RESULT_META = ("finish_reason", "finishReason", "stop_reason", "stopReason", "usage", "cached", "logprobs",
                "model", "id", "created")


def _result_object(value: dict) -> bool:
    """An output object with no role that is the model's reply: a stop reason or token usage, ``content`` text,
    and nothing else holding data but metadata (the general path reads it as the assistant message, its content
    the text)."""
    return not is_message(value) and any(value.get(k) for k in _RESULT_META[:5]) and \
        isinstance(value.get("content"), str) and all(
            k == "content" or k in _RESULT_META or v in (None, "", [], {}) for k, v in value.items())


def _looks_encoded(text: str) -> bool:
    """Hex or base64 without a space (a recorded binary event stream), or a Python object's repr (DSPy's history
    keeps ``response: "ModelResponse(id=..., choices=[...])"`` beside its ``outputs``): not an answer's text."""
    return len(text) >= 64 and re.fullmatch(r"[0-9A-Fa-f]+|[A-Za-z0-9+/=_-]+", text) is not None or \
        _REPR.match(text) is not None


_REPR = re.compile(r"[A-Z]\w*\(\w+=")  # ModelResponse(id=..., a dataclass's or pydantic model's repr


def _text_in(value: dict, path: str, depth: int = 0) -> str | None:
    """The ``text`` of an output object (or of its ``value``), when no tool call sits beside it."""
    if any(("tool" in str(k).lower() or "function" in str(k).lower()) and v not in (None, "", [], {})
           for k, v in value.items()):
        return None
    if isinstance(value.get("text"), str) and not _looks_encoded(value["text"]):
        return f"{path}.text"
    inner = value.get("value")
    return _text_in(inner, f"{path}.value", depth + 1) if isinstance(inner, dict) and depth < 2 else None


_CALL_KEYS = frozenset({*INPUT_KEYS, *OUTPUT_KEYS, *TEXT_INPUT_KEYS, "choices", "content", "text"})


#: Where a span says its kind (OpenInference's attribute, or the exporter's field), and the kinds that are no LLM call.
SPAN_KIND_KEYS = ("openinference.span.kind", "span_kind", "spanKind", "run_type",  # run_type: LangSmith's runs
                  "mlflow.spanType")  # MLflow's, a JSON string: '"CHAIN"'
OTHER_SPANS = frozenset({"chain", "agent", "tool", "retriever", "embedding", "reranker", "guardrail", "evaluator",
                         "prompt", "parser"})


def other_span(record: Any) -> bool:
    """Whether a record is a span of a kind that is no LLM call (an agent's ``CHAIN`` span holding the run's input
    and final answer as texts, a ``TOOL`` span): its texts are no prompt and reply of a call."""
    holders = (record, record.get("attributes")) if isinstance(record, dict) else ()
    kinds = [h.get(k) for h in holders if isinstance(h, dict) for k in SPAN_KIND_KEYS]
    return any(isinstance(k, str) and k.strip('"').lower() in OTHER_SPANS for k in kinds)


def direct_tool_run(record: Any) -> bool:
    """Whether a record is a tool run with no model turn (an agent's test results run a tool directly beside the
    queries it answers): an input object naming a tool and its arguments and holding no prompt text, and outputs
    holding no answer text."""
    if not isinstance(record, dict):
        return False
    ins = [v for k in INPUT_KEYS if isinstance(v := record.get(k), dict)]
    outs = [v for k in OUTPUT_KEYS if isinstance(v := record.get(k), dict)]
    named = [i for i in ins if any(isinstance(i.get(k), str) for k in CALL_NAME_KEYS) and
             any("arg" in str(k).lower() or "param" in str(k).lower() for k in i)]
    return bool(named) and not any(_texts(i, TEXT_INPUT_KEYS) or _texts(i, PROMPT_TEXT_KEYS) for i in ins) and \
        bool(outs) and not any(_texts(o, ANSWER_TEXT_KEYS) for o in outs)


def call_free(record: Any, depth: int = 0) -> bool:
    """Whether a record holds no part of an LLM call: a span of another kind (``other_span``), or no message (an
    object with a role) and no value under an input, output or text key at any depth, flattened keys' segments
    included (a root task span, a metric event beside the calls' records)."""
    if depth == 0 and (other_span(record) or direct_tool_run(record)):
        return True
    if depth == 0 and (holds_role_message(record) or isinstance(record, dict) and text_pair(record)):
        return False
    if depth > 6 or not isinstance(record, (dict, list)):
        return True
    if isinstance(record, list):
        return all(call_free(v, depth + 1) for v in record[:1000])
    return not any(_CALL_KEYS.intersection(str(k).split(".")) and v not in (None, "", [], {})
                   for k, v in record.items()) and \
        all(call_free(v, depth + 1) for v in record.values())


#: Keys naming what a log record records (a recorder's wrapped function, an event's kind): records of the LLM calls
#: share their values, an application's own records beside them (Agent Cassette's ``flowfuse.deploy``) do not.
RECORD_KIND_KEYS = ("call_name", "callName", "event_type", "eventType", "record_type", "operation", "op", "kind",
                    "type", "span_kind", "run_type", "method", "op_name")  # op_name: W&B Weave's calls


def note_call_kinds(record: Any, kinds: dict[str, set[str]]) -> None:
    """Add a record that holds a call's messages to ``kinds`` (``RECORD_KIND_KEYS`` -> the text values seen)."""
    for key in RECORD_KIND_KEYS:
        if isinstance(record, dict) and isinstance(record.get(key), str):
            kinds.setdefault(key, set()).add(record[key])


def other_kind(record: Any, kinds: dict[str, set[str]]) -> bool:
    """Whether a record holding no messages is of another kind than the calls' records seen so far (``kinds``):
    its value under a kind key that every one of them has is none of theirs. Only after calls were seen."""
    return isinstance(record, dict) and any(
        isinstance(record.get(key), str) and record[key] not in seen for key, seen in kinds.items())


def answer_as_written(record: Any, path: str, found: Any) -> Any:
    """The output at ``path`` as the mapping reads it: ``found`` (JSON text decoded, as JSONPath reads it), or the
    text as written where that text decoded to no message and no response object (the model answered with JSON:
    its answer is that text, indentation and all, not an object to read)."""
    text = jsonpath(record, path, raw=True)
    text = text[0][1] if text else None
    if isinstance(text, str) and found is not text and not holds_role_message(found) and \
            not (isinstance(found, dict) and ("choices" in found or "candidates" in found)):
        return text
    return found


def _ends_with_answer(msgs: list) -> bool:
    key = role_key(msgs) or "role"
    return role_value(msgs[-1], key) == "assistant"


def _output_paths(record: dict, path: str = "$", depth: int = 0) -> list[str]:
    """Paths under an output-like key holding an assistant message (or a list of them), in each spelling."""
    out: list[str] = []
    if depth > 5 or not isinstance(record, dict):
        return out
    for k, v in record.items():
        p = child_path(path, k)
        if k in OUTPUT_KEYS or k in STREAM_KEYS or (k in ("choices", "candidates") and isinstance(v, list)) or \
                k == "message" and isinstance(record.get("messages"), list):  # Ollama's chat reply beside its request
            hits = _assistant_at(v, p)
            if hits:
                out += hits
                continue
        if isinstance(v, dict):
            out += _output_paths(v, p, depth + 1)
    return out


def _assistant_at(value: Any, path: str) -> list[str]:
    """The paths at ``value`` holding the assistant's output: the message, a list of them, or, for a list of
    wrappers (``choices``: ``[{message: ...}]``; Gemini's ``candidates``: ``[{content: ...}]``), both the list and
    its first item's message."""
    if isinstance(value, dict) and "message" not in value and role_value(value, role_key([value]) or "") == "assistant":
        return [path]
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        return _assistant_at(value[0], f"{path}[0]")  # a batch of one prompt's generations (LangChain's LLMResult)
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict) and "candidates" in value[0]:
        return _assistant_at(value[0], f"{path}[0]")  # a body in one segment (google-genai's replays)
    hits = []
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value) and role_key(value) and \
            any(role_value(m, role_key(value) or "") == "assistant" for m in value):
        hits.append(path)  # the answers, or the conversation's continuation (answers, tool results, ...)
    wrapped = next((k for k in ("message", "content") if isinstance(value, list) and value and
                    isinstance(value[0], dict) and isinstance(value[0].get(k), dict)), None)
    if wrapped is not None:
        hits += _assistant_at(value[0][wrapped], f"{path}[0].{wrapped}")
    if isinstance(value, dict):
        # body: an HTTP response's; body_segments: google-genai's replays
        for k in ("message", "choices", "candidates", "messages", "body", "body_segments", *OUTPUT_KEYS):
            if k in value:
                hits += _assistant_at(value[k], child_path(path, k))
                if hits:
                    break
        har = value.get("content")
        if not hits and isinstance(har, dict) and "mimeType" in har:  # a HAR response's body: content.text
            hits += _assistant_at(har.get("text"), f"{path}.content.text")
    return hits


def item_lists(value: Any, path: str = "$", depth: int = 0, loose: bool = False) -> list[str]:
    """The paths of the Responses-API item lists in ``value`` (down to 4 keys deep; ``loose``: see ``is_items``)."""
    if is_items(value, loose):
        return [path]
    if depth > 3 or not isinstance(value, dict):
        return []
    return [p for k, v in value.items() for p in item_lists(v, child_path(path, k), depth + 1, loose)]


def items_call(value: Any) -> tuple[str, str] | None:
    """(input, output) paths of a record holding one call's input items and output items."""
    lists = item_lists(value, loose=True)
    # by whole key names, the list's own key first: "responses_create_params.input" is an input though
    # "response" is in its first key, and "response.tools" (tool definitions) is no output
    outs = [p for p in lists if _named(p, OUTPUT_KEYS)]
    ins = [p for p in lists if _named(p, INPUT_KEYS) and p not in outs]
    return (ins[0], outs[0]) if len(ins) == 1 and len(outs) == 1 else None


def _named(path: str, keys: tuple[str, ...]) -> bool:
    """Whether a list's path names it one of ``keys``: its own key is one, or (for a list under a plain key such as
    ``items``) a key above it is, with no key naming it otherwise (``tools``)."""
    names = re.findall(r"\.([^.\[]+)", path)
    if not names or names[-1] in ("tools", "functions", "tool_definitions"):
        return False

    def says(name: str) -> bool:  # input, model_input, input_items; not responses_create_params
        return any(name == k or name.endswith("_" + k) or name.startswith(k + "_") for k in keys)
    return says(names[-1]) or (names[-1] in ("items", "messages", "list", "data") and any(map(says, names)))


def _tool_definitions(key: str, value: Any) -> bool:
    """Whether ``value`` under ``key`` is a list of tool definitions (under ``tools`` / ``functions``: objects
    with a ``function``, or a ``name`` and a schema or a description)."""
    return key in ("tools", "functions") and isinstance(value, list) and bool(value) and all(
        isinstance(t, dict) and (isinstance(t.get("function"), dict) or "name" in t and any(
            s in t for s in ("parameters", "input_schema", "inputSchema", "description"))) for t in value)


def tool_lists(value: Any, path: str = "$", depth: int = 0) -> list[str]:
    """Paths of the lists of tool definitions (objects with a ``function``, or a ``name`` and a schema or a
    description) under a ``tools`` / ``functions`` key in a record's settings objects, down to four keys deep."""
    if depth > 4 or not isinstance(value, dict):
        return []
    out = []
    for k, v in value.items():
        p = child_path(path, k)
        if _tool_definitions(k, v):
            out.append(p)
        elif isinstance(v, dict):
            out += tool_lists(v, p, depth + 1)
    return out


def settings_tools(values: list) -> str | None:
    """The one path at which the records keep their tool definitions with the call's settings (``tool_lists``:
    LangSmith's ``extra.invocation_params.tools``, LiteLLM's ``model_parameters.tools``), else None (none, or
    several places: not guessed)."""
    found = {p for v in values for p in tool_lists(v)}
    return found.pop() if len(found) == 1 else None


def every_choice(values: list, out: str) -> str:
    """``out`` reading each choice where a record holds several (a request sampled with ``n`` > 1: each choice is
    an answer of its own, a call each: ``choices[*]``), else as it is."""
    for key in ("choices", "candidates"):
        at = out.find(f".{key}[0]")
        if at >= 0 and any(len(found[0][1]) > 1 for v in values if (found := jsonpath(v, out[:at + len(key) + 1]))
                           and isinstance(found[0][1], list)):
            return f"{out[:at]}.{key}[*]{out[at + len(key) + 4:]}"
    return out


def settings_only(msgs: list) -> bool:
    """Objects with a role word that hold nothing said (``said``) and no text of three words or more at their top
    level (LobeChat's ``type: agent`` sessions beside the messages): no message list. A list whose text sits under a
    key no spelling knows (``body``) is not one: it holds turns."""
    return not said(msgs) and not any(isinstance(v, str) and len(v.split()) >= 3
                                      for m in msgs if isinstance(m, dict) for v in m.values())


def said(msgs: list) -> bool:
    """Whether some message holds content or calls in a known spelling, is a call, or holds tool calls deeper (an
    Assistants run step's ``step_details.tool_calls``); LobeChat's sessions, ``type: agent`` objects of settings
    beside the messages, hold none."""
    return any(get(m, w + k) not in (None, "", [], {}) for m in msgs for w in MESSAGE_WRAPPERS
               for k in (*CONTENT_KEYS, *CALL_KEYS)) or any(call_shaped(m) or _calls_within(m) for m in msgs)


def _calls_within(value: Any, depth: int = 0) -> bool:
    if depth > 3 or not isinstance(value, (dict, list)):
        return False
    if isinstance(value, list) and value and call_shaped(value):
        return True
    items = value.values() if isinstance(value, dict) else value
    return any(_calls_within(v, depth + 1) for v in items)
