"""``tracedraft datasets infer-mapping FILE`` without ``--reply`` where no shape fits: the model's reply taken from a
key that names it, and the mapping learned from it as from a user's example (``infer_example.learn_mapping``).

Many tools keep one call a record, its input and its output under keys of their own (``question`` / ``model_output``,
``prompt`` / ``completion``, ``input.text`` / ``response.text``): the general path, which reads messages, finds no
shape there, but a key's name says which text the model wrote. This tries the texts under such keys as the example
reply, and writes a reading only where the learner would for a user's example (every check of ``learn_mapping``)
and, since nobody vouched for the reply, only a request/response reading whose input sits under a key naming an
input too (``prompt``, ``question``, ``instruction``): a reading guessing both sides is not offered, nor a text
under a key naming a reference (``expected_output``, ``gold_answer``: a dataset's answer, not the model's), nor a
bare ``answer`` (a benchmark's). A text file (Markdown, a log) is learned from the first line below a marker naming
the model's side where a marker of its form above names the prompt's (``## Task`` / ``## Model Response``:
``infer_text_example.learn_text_from_named_reply``). The mapping says what it guessed, for the user to check
(docs/traces.md, "A mapping learned from one reply"). Standard library plus PyYAML.
"""

from __future__ import annotations

import os
import re
from itertools import islice

from drafters.traces import io as tio
from drafters.traces.infer import SHAPE_CODES, general_path_errors, mapping_name
from drafters.traces.infer_example import MIN_EXAMPLE, learn_mapping
from drafters.traces.infer_example_places import Hit, Learned, holding, normal, path_of, value_at
from drafters.traces.infer_example_records import (
    HTTP_METADATA,
    INPUT_WORDS,
    NOT_TEXT_WORDS,
    in_prompt,
    key_words,
)
from drafters.traces.infer_text_example import NOT_REPLY_WORDS, learn_text_from_named_reply
from drafters.traces.mapping_records import file_records
from drafters.traces.report import TraceError, ValidationReport

#: Words of a key naming a model's output, and of one naming an answer as the model's (``model_answer``).
REPLY_WORDS = {"response", "completion", "output", "reply", "generation", "generated", "prediction", "predicted"}
ANSWER_WORDS = {"answer"}
MODEL_WORDS = {"model", "llm", "agent", "assistant", "bot", "ai", "gpt"}
#: Records searched for candidate replies, and candidates tried (each reads the file's first conversations).
RECORDS = 3
CANDIDATES = 4
#: Scripts written without spaces between words (Chinese, Japanese kana, Thai): a text of these reads as words.
UNSPACED = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def learn_from_named_reply(path: str | os.PathLike[str], name: str | None = None) -> Learned | None:
    """The request/response mapping learned from a text under a key naming the model's output in the file's first
    ``RECORDS`` records (``candidates``), tried in order as ``learn_mapping``'s example; the first reading at the
    candidate's own place, of a response with a prompt under a key naming an input (no guessed prompt) and no role
    left to name, with a note saying where the reply was guessed; None when no candidate gives one. Raises OSError
    when the file cannot be read."""
    problems = ValidationReport()
    with tio.open_text(path) as stream:
        sample = [v for _, v in islice(file_records(stream, str(path), problems, "generic", "each"), RECORDS)]
    if not any(isinstance(v, (dict, list)) for v in sample) and any(p.code == "invalid_json" for p in problems.errors):
        # text, not JSON (a line of a Markdown file that parses, ``-12``, is no record)
        return _learn_text(path, mapping_name(path, name, "learned"))
    found = candidates(sample)[:CANDIDATES]
    refused = general_path_errors(path) if found else []  # read once for every candidate
    for hit, text in found:
        try:
            learned = learn_mapping(path, text, name, refused)
        except TraceError:
            continue
        guessed_prompt = any(n.startswith("# PROMPT: guessed") for n in learned.notes)
        if learned.unnamed or "response" not in learned.mapping or guessed_prompt or learned.found_at != path_of(hit):
            continue
        note = (f"# REPLY: no example given; the model's reply guessed as the text under {path_of(hit, star=True)} "
                "(a key naming an output): check it is what the model wrote, not a reference answer")
        return Learned(learned.mapping, learned.found_at, [], [note, *learned.notes])
    return None


def candidates(sample: list) -> list[tuple[Hit, str]]:
    """The texts of a file's first records under a key naming the model's output (``reply_key``), of at least
    ``MIN_EXAMPLE`` characters and several words (``reads_as_words``), not in a message of the input's side (a tool
    result's ``output`` in a request's messages), as ``(place, text)``: the shallowest first, one per JSONPath (every list index ``[*]``)."""
    found: dict[str, tuple[Hit, str]] = {}
    for i, value in enumerate(sample):
        for steps in holding(value, "", ()):
            text = normal(value_at(value, steps))
            hit = Hit(i, steps)
            if len(text) >= MIN_EXAMPLE and reads_as_words(text) and reply_key(steps) and not in_prompt(value, steps):
                found.setdefault(path_of(hit, star=True), (hit, text))
    return sorted(found.values(), key=lambda ht: (len(ht[0].steps), ht[0].record))


def reads_as_words(text: str) -> bool:
    """Whether a text reads as words, not as an identifier or a code: two words with a space between, or four
    characters of a script written without spaces (``你经常交新朋友吗``: a Chinese reply, a Japanese one)."""
    return " " in text.strip() or len(UNSPACED.findall(text)) >= 4


def _learn_text(path: str | os.PathLike[str], label: str) -> Learned | None:
    """A text file's mapping learned from the first text below a marker naming the model's side, unless the product
    refuses content of the file reading it (format detection, no mapping): ``content_not_mapped`` where a transcript
    prints tool calls as JSON, which a text mapping would read as text."""
    from drafters.traces.ingest import ingest

    report = ingest([path], scrub=False, dedup=False).report
    if any(e.code not in (*SHAPE_CODES, "invalid_json") for e in report.errors):
        return None
    text = learn_text_from_named_reply(path, label, MIN_EXAMPLE)
    return Learned(text.mapping, text.found_at, [], text.notes) if text is not None else None


def reply_key(steps: tuple[str | int, ...]) -> bool:
    """Whether the keys down to a text name the model's output: one names an output (``response``, ``completion``,
    ``model_output``) or an answer as the model's (``model_answer``); none names a reference, an input or something
    about a text (``expected_output``, ``response_id``) or an HTTP message's metadata (``response.headers``), and the
    last names no input (``response.prompt``)."""
    keys = [key_words(step) for step in steps if isinstance(step, str)]
    if not keys or (NOT_TEXT_WORDS | INPUT_WORDS) & keys[-1] or any(k & NOT_REPLY_WORDS for k in keys):
        return False
    if any(k & HTTP_METADATA for k in keys):
        return False  # a recorded response's headers (``response.headers.Alt-Svc``): the server's, not the model's
    return any(k & REPLY_WORDS or (k & ANSWER_WORDS and k & MODEL_WORDS) for k in keys)
