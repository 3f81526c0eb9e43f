"""``infer-mapping --reply`` on text: a text mapping (drafters/traces/mapping_text.py) learned from the line that
opens the message holding the user's example reply.

A log or Markdown transcript whose marker lines no role label spells (``## Crystalyse Response``, ``=====
gemini-pro response (500) =====``) still shows, above each reply, the line that opens it. Above each line holding
the example (a prompt's history may repeat it before its own reply), each marker-shaped line (a heading, a bold,
tagged or bracketed label, a title inside a rule, a ``Label:`` line or a ``Label:`` opening a line) is tried as the
assistant's marker, decorated lines first, nearest first:

- the user's marker is the nearest line above it of the same form (the same decoration around another label) whose
  label names no output (``Reasoning``, ``Score``, ``Tokens``); the pair must name the two sides (a prompt word and a
  reply word: ``Task`` / ``Model Response``) or, decorated, open alternating turns of a dialogue (named speakers);
- the other labels of that form: a role the common labels name (``## System``, ``system:``); a label repeating as
  often as the reply's, or naming no model text (``Tokens Used``), never inside a prompt, a section not read
  (``skip``); one inside prompts is the prompt's text; a line of that form seen once
  after the reply, and a footer past a rule after the last reply, are read as its text and named in ``# CHECK``;
- conversations: one a prompt where the second prompt begins with the whole first one (each prompt sent whole: a
  retry, an agent's next step), else one a section not read right before every prompt (``Test: casual`` above each
  ``Input:``), else one a repeated heading of another form above the user's marker, any number
  in it (``## Example 3``), else, in a log's entries, one a prompt where the first two open alike (a template
  filled for each call), else one a file.

A logging library's entries (``LOG_PREFIX``: ``2024-02-29 22:58:19 [INFO] Code generated:``) are markers by the
label behind the prefix; every entry no learned label names (each prefix a ``skip`` marker) is not read.

An example inside a JSON string of a log is refused. Each reading is checked by reading the file with it: no error,
the example in one of the assistant's messages. docs/traces.md, "A mapping learned from one reply". Torch-free,
standard library only.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice, pairwise

from drafters.traces import io as tio
from drafters.traces.formats.text_transcript import INDENTED_CODE, METADATA_LABEL, ROLE_LABELS, fenced_lines
from drafters.traces.mapping_text import RULE, TextMapping, opens_conversation
from drafters.traces.report import TraceError, ValidationReport

#: A marker line's most characters, and how many candidate assistant markers are tried above the example.
MAX_MARKER_LINE = 80
MAX_HEADING_LINE = 200
CANDIDATES = 30
MAX_PLACES = 20  # lines holding the example that are tried
#: Labels naming no user's message (an output, a model's thinking, a score): never read as the user's marker.
NOT_USER_LABEL = re.compile(r"reason|think|thought|analys|respon|answer|reply|output|observ|tool|result|score|token"
                            r"|usage|cost|summar|metric|feedback|correct|extract", re.IGNORECASE)
#: Words of a label naming the model's side, and the prompt's (besides the common role labels).
_BOTH = {"message", "chat", "le", "4", "4o"}  # words of both sides' labels, or of none
_WORDS = {role: {w for label, r in ROLE_LABELS.items() if r == role for w in label.split()} - _BOTH
          for role in ("user", "system", "assistant")}
REPLY_WORDS = _WORDS["assistant"] | {"response", "reply", "answer", "output", "completion", "generation", "generated",
                                     "llm", "prediction"}
PROMPT_WORDS = _WORDS["user"] | _WORDS["system"] | {"prompt", "query", "question", "task", "input", "request",
                                                    "instruction", "problem"}
#: Words of a section that may be another output of the model (``Post-processing Result``), never skipped unseen.
OUTPUT_WORDS = {"result", "response", "output", "completion", "generation"}
#: The shortest first prompt that a second beginning with it restates (characters).
RESTATED = 200
#: Conversations read to check a reading.
CHECK_CONVERSATIONS = 200

_STANDALONE = re.compile(r"^(?:#{1,6}\s+\S.*|(\*\*|__).+\1:?|<[^<>]+>|\[[^\[\]]+\]:?|[=*~-]{3,}.*\S.*|"
                         r"[A-Za-z][\w .()/-]{0,40}:)$")
#: A label wrapped in tags (``<details><summary>Response</summary>``: a report's collapsible sections).
_TAGGED = re.compile(r"^(?:<[A-Za-z][^<>]*>\s*){1,3}(?P<label>[^<>]*[A-Za-z][^<>]*?)\s*(?:</[A-Za-z]+>\s*){1,3}$")
_INLINE = re.compile(r"^((?:\*\*|__)?[A-Za-z][\w .()/-]{0,30}:(?:\*\*|__)?)\s+\S")
_LABEL = re.compile(r"[A-Za-z0-9][^\n]*[A-Za-z0-9)]")
_JSON_MESSAGES = re.compile(r'"messages"\s*:\s*\[\s*\{\s*"(?:role|content)"')  # a request body's message list
_IN_JSON_STRING = re.compile(r'^\s*"[^"]{1,60}"\s*:\s*"')  # a log's JSON member whose value holds the example
_ID_LABEL = re.compile(r"\b(?:conversation|session|thread|chat)(?:[ _-]?id)?\s*[:=]", re.IGNORECASE)
#: A heading up to its first number (a date and time, ISO's ``2025-03-14T09:12:03Z`` too: one).
_NUMBERED = re.compile(r"^\D*\d(?:(?:[\d\s:./_-]|(?<=\d)T(?=\d))*\d)?Z?")
_TIME = r"\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
_LEVEL = r"\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|TRACE|NOTICE)\]?"
#: A logging library's entry prefix: a time, the logger's fields and a level (``2025-04-16 21:58:17,510 - agent -
#: INFO - ``, ``2024-02-29 22:58:19 [INFO] ``, loguru's ``... | INFO | mod:fn:42 - ``), or ``INFO:root:``.
LOG_PREFIX = re.compile(
    rf"^(?:(?:{_TIME}(?:\s*(?:[-|]\s*)?(?:[\w.<>]+\s*[-|:]?\s*){{0,2}}?{_LEVEL}"
    rf"(?:\s*[-|]\s*[\w.<>]+(?::[\w.<>]+)+)?)?|{_LEVEL}(?:\s*{_TIME})?)\s*[-|:]?\s+"
    rf"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:\s*)")
#: A log's entry prefixes beyond which the entries not otherwise named are not told apart (not learned).
MAX_PREFIXES = 12
#: The opening (characters) two prompts share when each is sent whole (a template filled for each call).
SHARED_OPENING = 40


@dataclass(frozen=True)
class TextLearned:
    """A text mapping learned from an example: the mapping file's content, the example's place, comment lines."""

    mapping: dict
    found_at: str
    notes: list[str]


@dataclass(frozen=True)
class _Marker:
    """A marker-shaped line: 0-based line index, its key (the line, or an inline label with its colon), its form
    (the decoration around the label) and its label."""

    line: int
    key: str
    form: str
    label: str


def learn_text_mapping(path: str | os.PathLike[str], want: str, name: str) -> TextLearned:
    """The text mapping reading ``want`` (an example reply, whitespace collapsed) as one of the assistant's
    messages.

    Raises:
        TraceError("example_not_found") when no line holds the example; TraceError("example_not_read") when no
        marker line above it reads the file with it as the assistant's (the message names the first problem);
        OSError, UnicodeError when the file cannot be read as text.
    """
    with tio.open_text(path) as stream:
        lines = stream.read().splitlines()
    holding = [i for i, line in enumerate(lines) if want in " ".join(line.split())][:MAX_PLACES]
    if not holding:
        raise TraceError("example_not_found", "the file is text, not JSON, and no line of it holds the example "
                         "reply: copy a piece of one line as written", str(path))
    places = [i for i in holding if not _in_json_string(lines[i], want)]
    if not places:
        raise TraceError("example_not_read", f"the example (line {holding[0] + 1}) is inside a JSON string of a log: "
                         "text markers cannot read it; give the JSON part its own file, or declare the format",
                         str(path))
    markers = _markers(lines)
    counts = Counter(m.key for m in markers)
    first_problem = ""
    for at, reply in _candidates(markers, lines, places):
        user = _prompt_marker(markers, reply)
        if user is None:
            first_problem = first_problem or (f"no line above {reply.key!r} (line {reply.line + 1}) of its form opens "
                                              "the prompts (a label naming the user's side, or a speaker it answers)")
            continue
        roles = {user.key: "user", reply.key: "assistant", **_others(markers, counts, reply, user)}
        output = next((k for k, r in roles.items() if r == "skip" and _words(_label(markers, k)) & OUTPUT_WORDS), None)
        if output is not None:  # another output beside each reply: a second call of the model, or a figure?
            first_problem = first_problem or (f"{output!r} repeats beside each reply and names an output: whether it "
                                              "is another call of the model is not guessed")
            continue
        if LOG_PREFIX.match(reply.key):  # a log's entries: events, but for the prompt, the reply and a system prompt
            entries = _entry_prefixes(lines)
            if entries is None:
                first_problem = first_problem or f"more than {MAX_PREFIXES} kinds of log entry prefix"
                continue
            roles = {**entries, **{k: r for k, r in roles.items() if k in (user.key, reply.key) or r == "system"}}
        mapping = TextMapping(name, roles)
        conversation, why, named = _conversation(mapping, lines, markers, counts, user, path)
        mapping = TextMapping(name, roles, conversation, conversation_id=named)
        problem = _check(mapping, path, want)
        if problem is None:
            opened = (f"# the reply is opened by {reply.key!r} (line {reply.line + 1}), the prompt by {user.key!r} "
                      f"(line {user.line + 1})")
            notes = [opened, why, *_headings_in_replies(markers, counts, reply, mapping),
                     *_footer(lines, markers, mapping)]
            return TextLearned(mapping.to_dict(), f"line {at + 1}", [n for n in notes if n])
        first_problem = first_problem or f"{reply.key!r} (line {reply.line + 1}): {problem}"
    raise TraceError("example_not_read", f"the file is text, not JSON; the example is at line {places[0] + 1}, but no "
                     "marker line above it (a heading, a bold or ruled label) reads the file as the model's reply: "
                     f"{first_problem or 'there is none'}", str(path))


def learn_text_from_named_reply(path: str | os.PathLike[str], name: str, shortest: int) -> TextLearned | None:
    """Without an example: the text mapping learned from the first line of text (``shortest`` characters or more,
    whitespace collapsed) below a marker whose label names the model's side and not the prompt's (``## Response``,
    ``**Model output:**``) where a marker of its form above it names the prompt's (``_names_sides``: ``## Task``),
    taken as the example reply; the reading kept only where that marker opens the assistant's messages. Only the
    first such marker of the file is tried (a later one naming an output, ``Implementer generated implementation:``
    after ``Implementation planner generated implementation plan:``, may be one step of several calls); None when it
    does not read. Raises OSError, UnicodeError when the file cannot be read as text."""
    with tio.open_text(path) as stream:
        lines = stream.read().splitlines()
    markers = _markers(lines)
    at_marker = {m.line for m in markers}
    for k, reply in enumerate(markers):
        if not any(u.form == reply.form and _names_sides(reply, u) for u in markers[:k]):
            continue
        below = (" ".join(line.split()) for i, line in enumerate(lines[reply.line + 1:], reply.line + 1)
                 if i not in at_marker and not line.lstrip().startswith(("```", "~~~")))
        example = next((text for text in below if len(text) >= shortest), None)
        try:
            learned = learn_text_mapping(path, example, name) if example else None
        except TraceError:
            return None
        if learned is None or learned.mapping["text"]["markers"].get(reply.key) != "assistant":
            return None
        note = (f"# REPLY: no example given; the model's reply guessed as the text below {reply.key!r} (line "
                f"{reply.line + 1}, a label naming the model's side): check it is what the model wrote")
        return TextLearned(learned.mapping, learned.found_at, [note, *learned.notes])
    return None


def _markers(lines: list[str]) -> list[_Marker]:
    """The marker-shaped lines outside code blocks (fenced or indented), in file order; behind a logging library's
    entry prefix (``LOG_PREFIX``), the label opening the entry, keyed with the prefix (its numbers any number: the
    first entry's prefix keys every entry of that logger and level)."""
    out, fenced = [], fenced_lines(lines)
    canonical: dict[str, str] = {}  # a logged key with its numbers as 0 -> the first such key
    for i, line in enumerate(lines):
        logged = None if fenced[i] or INDENTED_CODE.match(line) else LOG_PREFIX.match(line.strip())
        prefix = logged.group() if logged else ""
        text = line.strip()[len(prefix):]
        if fenced[i] or not text or INDENTED_CODE.match(line) or len(text) > MAX_MARKER_LINE and not (
                _INLINE.match(text) or len(text) <= MAX_HEADING_LINE and text.startswith("#")):
            continue  # a long line is text, unless a label opens it or it is a heading (a log entry's, with its ids)
        inline, tagged = _INLINE.match(text), _TAGGED.match(text)
        key = text if _STANDALONE.match(text) or tagged else inline.group(1) if inline else None
        label = (tagged.group("label") if tagged else _LABEL.search(key).group() if _LABEL.search(key) else None
                 ) if key else None
        if key and label and re.search("[A-Za-z]", label):
            form = re.sub(r"(\S)\1{3,}", r"\1\1\1", key.replace(label, "L"))  # rules of any length alike
            if prefix:
                key = canonical.setdefault(re.sub(r"\d+", "0", prefix + key), prefix + key)
                form = re.sub(r"\d+", "0", prefix) + form
            out.append(_Marker(i, key, form, " ".join(label.lower().split())))
    return out


def _entry_prefixes(lines: list[str]) -> dict[str, str] | None:
    """Each logging entry prefix of the file (the first of each with its numbers as any number, stripped) as a
    ``skip`` marker: the entries no label names (``Executing step 2``) are no message's text. None past
    ``MAX_PREFIXES``."""
    found: dict[str, str] = {}
    for line in lines:
        logged = LOG_PREFIX.match(line.strip())
        if logged and logged.group().strip():
            found.setdefault(re.sub(r"\d+", "0", logged.group().strip()), logged.group().strip())
    return {p: "skip" for p in found.values()} if len(found) <= MAX_PREFIXES else None


def _candidates(markers: list[_Marker], lines: list[str], places: list[int]) -> Iterator[tuple[int, _Marker]]:
    """The assistant-marker candidates for the example at lines ``places`` (its first line in a prompt's history
    may come before its reply's): decorated lines (a heading, a bold, bracketed or ruled label) nearest first, then
    plain ``Label:`` lines (an inline label opening the example's line first), which replies also write
    (``Thought:``, ``Summary:``)."""
    for decorated in (True, False):
        tried: set[int] = set()
        for at in places:
            above = [m for m in reversed(markers) if (m.form != "L:") == decorated and m.line not in tried and (
                m.line < at or m.line == at and len(m.key) < len(lines[at].strip()))]
            for m in above[:CANDIDATES]:
                tried.add(m.line)
                yield at, m


def _prompt_marker(markers: list[_Marker], reply: _Marker) -> _Marker | None:
    """The line opening the prompts, for ``reply`` opening the replies: of the lines above it of its form whose label
    names no output nor another role (``## System``), the nearest if the pair is plausible; else a farther one
    whose label names the user's side and that comes before every reply (a prompt's own ``Label:`` lines passed
    over, never a file's one ``Prompt file:`` header above several replies); where none of its form is above it, the
    nearest line labelled as the user's (``user:`` above ``===response===``), on the same terms."""
    above = [m for m in reversed(markers) if m.line < reply.line and m.label != reply.label
             and not NOT_USER_LABEL.search(m.label) and label_role(m.label) in (None, "user")]
    same = [m for m in above if m.form == reply.form]
    if same and _plausible(reply, same[0], markers):
        return same[0]
    farther = same[1:] if same else [m for m in above if label_role(m.label) == "user"][:1]
    return next((m for m in farther if _names_sides(reply, m) and _before_each_reply(markers, reply, m)), None)


def _before_each_reply(markers: list[_Marker], reply: _Marker, user: _Marker) -> bool:
    """Whether a ``user`` line comes before the first reply and between every two replies."""
    turns = [m.key for m in markers if m.key in (reply.key, user.key)]
    return turns[:1] == [user.key] and all(not (a == b == reply.key) for a, b in pairwise(turns))


def _in_json_string(line: str, want: str) -> bool:
    """Whether the example sits in a JSON member's string value on ``line`` (a log's ``"llm_output": "..."``)."""
    start = " ".join(line.split()).find(want)
    return bool(_IN_JSON_STRING.match(" ".join(line.split())[:start]))


def _plausible(reply: _Marker, user: _Marker, markers: list[_Marker]) -> bool:
    """Whether two marker lines can open the prompts and the replies: their labels name the two sides (``User
    Query`` / ``Crystalyse Response``, ``prompt`` / ``gemini-pro response``), or they open turns of a dialogue (each
    at least twice, alternating, the user's first: named speakers). Bold labels inside a prompt (``**IMPORTANT**:``)
    or a reply (``Thought:``) do neither; plain ``Label:`` lines must name the sides."""
    if _names_sides(reply, user):
        return True
    if reply.form == "L:":
        return False  # plain labels alternate in an agent's own text too (Action: / Action Input:)
    turns = [m.key for m in markers if m.key in (reply.key, user.key)]
    return turns.count(reply.key) >= 2 and turns[0] == user.key and all(a != b for a, b in pairwise(turns))


#: Words of a key holding a dataset's answer, not a call's (``targets``, ``gold_answer``, ``expected_output``).
REFERENCE_WORDS = frozenset({"expected", "reference", "gold", "golden", "correct", "target", "truth", "ground",
                             "ideal", "label", "canonical"})
#: Words of a key or a label naming a reference or something about an output, not the model's text
#: (``expected_output``, ``## Response Format``).
NOT_REPLY_WORDS = REFERENCE_WORDS | {"error", "format", "schema", "parser", "tool", "function", "observation"}


def _names_sides(reply: _Marker, user: _Marker) -> bool:
    """Whether the labels name the two sides: a reply word in the reply's (and no prompt word: ``llm request``
    opens no reply; nor a word naming something about a reply: ``## Response Format``), a prompt word in the
    prompt's."""
    return bool(_words(reply.label) & REPLY_WORDS and not _words(reply.label) & (PROMPT_WORDS | NOT_REPLY_WORDS)
                and _words(user.label) & PROMPT_WORDS)


def _words(label: str) -> set[str]:
    return set(re.findall(r"[a-z]+", label))


def _others(markers: list[_Marker], counts: Counter, reply: _Marker, user: _Marker) -> dict[str, str]:
    """The other markers of the reply's form: a label the common role labels name (of the prompt's form too), its
    role (``system:``, even once); a label repeating as often as the reply's, or naming no model text (``Tokens
    Used``), never inside a prompt (a template's section after each reply, a header before each prompt), ``skip``.
    A label inside prompts (an eval's ``Hint:``) is the prompt's text, not a marker."""
    keys = dict.fromkeys(m.key for m in markers if m.form in (reply.form, user.form)
                         and m.key not in (reply.key, user.key))
    out = {}
    for key in keys:
        label = _label(markers, key)
        if label_role(label):
            out[key] = label_role(label)  # type: ignore[assignment]
        elif next(m.form for m in markers if m.key == key) != reply.form:
            continue  # the prompt's form, where it differs: its role labels only (a reply's own "Step 1:" is text)
        elif (counts[key] >= max(2, counts[reply.key]) or METADATA_LABEL.search(label)) and \
                _outside_prompts(markers, key, reply, user):
            out[key] = "skip"
    return out


#: A role given as an attribute of a marker (``<!--msg role=tool name=functions.shell -->``, ``[role: user]``).
_ROLE_ATTRIBUTE = re.compile(r"\brole\s*[=:]\s*[\"']?([a-z_ ]+?)[\"']?(?:\s|$)")


def label_role(label: str) -> str | None:
    """The role a marker's label names: a common role label (``## System``, ``user:``), or a ``role=`` attribute
    whose value is one (``msg role=developer``: system); None otherwise."""
    attribute = _ROLE_ATTRIBUTE.search(label)
    return ROLE_LABELS.get(label) or (ROLE_LABELS.get(attribute.group(1).strip()) if attribute else None)


def _outside_prompts(markers: list[_Marker], key: str, reply: _Marker, user: _Marker) -> bool:
    """Whether no line ``key`` opens sits inside a prompt (after a prompt's marker, before its reply's)."""
    last = None
    for m in markers:
        if m.key in (reply.key, user.key):
            last = m.key
        elif m.key == key and last == user.key:
            return False
    return True


def _label(markers: list[_Marker], key: str) -> str:
    return next(m.label for m in markers if m.key == key)


def _conversation(mapping: TextMapping, lines: list[str], markers: list[_Marker], counts: Counter, user: _Marker,
                  path) -> tuple[str | None, str, str | None]:
    """The line beginning that opens each conversation, a comment saying why (see the module docstring) and the
    label on those lines whose next word names the conversation (``conversation: 01j...``: a log's entries)."""
    prompts = [m.text for c in _read(mapping, path)[0] for m in c.messages if m.role == "user"]
    if len(prompts) >= 2 and len(prompts[0]) >= RESTATED and prompts[1].startswith(prompts[0]):
        return user.key, (f"# the second prompt begins with the whole first one (each prompt sent whole): each "
                          f"{user.key!r} opens a new conversation"), None
    header = _header(markers, user, mapping)
    if header is not None:
        return header, (f"# a {header!r} line comes right before each prompt ({counts[header]} of them): each opens "
                        "a new conversation"), None
    near = [m for m in reversed(markers) if m.line < user.line and m.form != user.form][:3]
    heading = next((m for m in near if _ID_LABEL.search(m.key)), near[0] if near else None)  # "conversation: 01j"
    if heading is not None:
        stem = _NUMBERED.match(heading.key)
        stem = stem.group() if stem else heading.key  # "## Example 3", "**2025-06-20 23:51:16": any number
        opening = [line for line in lines if opens_conversation(line, stem)]
        if 2 <= len(opening) <= counts[user.key] and stem not in mapping.markers:
            why = f"# each line beginning {stem!r} (any number in it) opens a new conversation ({len(opening)} of them)"
            label = _ID_LABEL.search(heading.key)
            if label and all(label.group() in line for line in opening):
                named = len({TextMapping("", {}, stem, conversation_id=label.group()).names(x) for x in opening})
                return stem, f"{why}; those naming the same {label.group()!r} continue one ({named})", label.group()
            return stem, why, None
    if len(prompts) >= 2 and LOG_PREFIX.match(user.key) and len(os.path.commonprefix(prompts[:2])) >= SHARED_OPENING:
        return user.key, (f"# the first two prompts a log's entries record open alike ({len(os.path.commonprefix(prompts[:2]))} "
                          f"characters: a template filled for each call, each prompt sent whole): each {user.key!r} "
                          "opens a new conversation"), None
    return None, ("# one conversation: every reply's context is everything before it; if the calls are independent, "
                  f"declare the line opening each under text:, as in   conversation: {json.dumps(user.key)}"), None


def _header(markers: list[_Marker], user: _Marker, mapping: TextMapping) -> str | None:
    """A section not read that comes right before every prompt marker, never elsewhere (``Test: casual`` above each
    ``Input:`` of an eval's results): the header of each call, so the line opening each conversation."""
    named = [m.key for m in markers if m.key in mapping.markers]
    before = [a for a, b in pairwise(named) if b == user.key]
    if not named or named[0] == user.key or len(set(before)) != 1:
        return None  # a prompt opens the file, or different lines come before the prompts
    header = before[0]
    each = len(before) == named.count(user.key) == named.count(header)
    return header if each and mapping.markers[header] == "skip" else None


def _headings_in_replies(markers: list[_Marker], counts: Counter, reply: _Marker, mapping: TextMapping) -> list[str]:
    """A ``# CHECK`` comment naming lines of the reply's form seen once after it that open no section of the
    mapping: read as the reply's text."""
    once = [m for m in markers if m.form == reply.form and m.line > reply.line and counts[m.key] == 1
            and mapping.opens(m.key) is None]
    if not once:
        return []
    named = ", ".join(f"{m.key!r} (line {m.line + 1})" for m in once[:4])
    return [(f"# CHECK: read as the reply's text: {named}; if one opens a section the model did not write, add it "
             "to markers as skip")]


def _footer(lines: list[str], markers: list[_Marker], mapping: TextMapping) -> list[str]:
    """A ``# CHECK`` comment where the file's last reply runs to its end past a rule (``---``): a footer after
    the rule (``*End of conversation log*``) is read as the reply's text."""
    last = max((m.line for m in markers if mapping.opens(m.key)), default=None)
    if last is None or mapping.markers[mapping.opens(lines[last])[0]] != "assistant":  # type: ignore[index]
        return []
    rule = next((i for i in range(len(lines) - 1, last, -1) if RULE.match(lines[i])), None)
    if rule is None or not any(line.strip() for line in lines[rule + 1:]):
        return []
    return [(f"# CHECK: the last reply (line {last + 1}) runs to the end of the file, past the rule at line "
             f"{rule + 1}: the lines after it are read as its text; if they are no model text, add the line opening "
             "them to markers as skip")]


def _read(mapping: TextMapping, path) -> tuple[list, ValidationReport]:
    problems = ValidationReport()
    with tio.open_text(path) as stream:
        convs = list(islice(mapping.format().parse(stream, str(path), problems), CHECK_CONVERSATIONS))
    return convs, problems


def _check(mapping: TextMapping, path, want: str) -> str | None:
    """None when ``mapping`` reads the file without an error, with the example in an assistant message and no
    prompt holding the request as JSON (its messages, system prompt included, would be read as one user text)."""
    convs, problems = _read(mapping, path)
    if problems.errors:
        return f"{problems.errors[0].code}: {problems.errors[0].message}"
    if not any(want in " ".join(m.text.split()) for c in convs for m in c.messages if m.role == "assistant"):
        return "the example is not in one of the assistant's messages it reads"
    if any(_JSON_MESSAGES.search(m.text) for c in convs for m in c.messages if m.role == "user"):
        return ("a prompt it reads holds the request's messages as JSON (\"messages\": [{\"role\": ...): they would "
                "be one user text; give that JSON its own file, or declare the format")
    return None
