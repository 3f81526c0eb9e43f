"""``tracedraft datasets infer-mapping FILE``: the declared mapping the general path infers for a file.

The general path (``formats/generic.py``) reads a file of an unknown format by the shape of its first records
(``formats/_shapes.py``). This writes that reading down as a mapping file (``drafters/traces/mapping.py``), so
a user whose file the general path misreads or refuses fixes one line instead of writing a mapping from
scratch. Torch-free, standard library plus PyYAML.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from itertools import islice

from drafters.traces import io as tio
from drafters.traces.formats import _exchanges, _shapes, _streams
from drafters.traces.formats._documents import is_toml, is_yaml
from drafters.traces.formats._model_messages import expanded_records
from drafters.traces.formats._rendered_chats import rendered_messages
from drafters.traces.formats._spellings import role_of
from drafters.traces.formats._table_rows import is_table
from drafters.traces.formats._wrapped_messages import serialized_messages
from drafters.traces.mapping import Mapping
from drafters.traces.mapping_records import file_records
from drafters.traces.report import Problem, TraceError, ValidationReport


def mapping_name(path: str | os.PathLike[str], name: str | None, fallback: str) -> str:
    """A written mapping's name: ``name``, else the file's stem (its first 40 characters), else ``fallback``."""
    return name or os.path.basename(str(path)).split(".")[0][:40] or fallback


def infer_mapping(path: str | os.PathLike[str], name: str | None = None) -> _shapes.Inferred:
    """The shape and mapping the general path infers from the file's first records. Where several message lists
    fit (the general path refuses the file, ``ambiguous_shape``), the reading ranked first
    (``_shapes._ranked_lists``), the others' message paths in ``others``: the user changes one line to take one.

    Raises:
        TraceError("ambiguous_shape") naming the candidate readings when two fit and no ranked reading exists;
        TraceError("no_messages_found") when no shape fits (with the first problem reading the file, if any);
        OSError when the file cannot be read.
    """
    problems = ValidationReport()
    label = mapping_name(path, name, "inferred")
    with tio.open_text(path) as stream:
        records = ((s, _exchanges.decoded_bodies(v)) for s, v in file_records(stream, str(path), problems, "generic",
                                                                              "each"))
        sample = list(islice(expanded_records(_streams.joined_records(records, problems, "generic")), _shapes.SAMPLE))
    # as a mapping reads them (a text rendered by a chat template too: mapping.py reads it as its turns)
    sample = [(source, rendered_messages(serialized_messages(value))) for source, value in sample]
    got = _shapes.infer(sample, label)
    if isinstance(got, _shapes.Ambiguous) and got.readings:
        best, *rest = got.readings
        return replace(best, others=[r.mapping.messages for r in rest])
    if isinstance(got, _shapes.Ambiguous):
        raise TraceError("ambiguous_shape", "the records fit more than one reading: " + "; ".join(got.candidates)
                         + " (write a mapping naming the one that holds the conversation)", str(path))
    if got is None and not sample and problems.errors and problems.errors[0].code == "invalid_json":
        raise TraceError("no_messages_found", "the file is text, not JSON records: for a chat or log kept as text, "
                         "give one of the model's replies with --reply (a text mapping is learned from the marker "
                         "line above it), or declare a text mapping (docs/traces.md, \"A text mapping\")", str(path))
    if got is None:
        why = f" (first problem: {problems.errors[0].code}: {problems.errors[0].message})" if problems.errors else ""
        raise TraceError("no_messages_found", "no message list, message records, request/response records or agent "
                         f"steps were found in the file's first records{why}: give one of the model's replies with "
                         "--reply (a mapping is learned from where it sits)", str(path))
    return got


#: The general path's refusals that a written mapping resolves (the shape itself), not content it would lose.
SHAPE_CODES = ("ambiguous_shape", "unknown_format", "no_messages_found", "not_an_object")


def general_path_errors(path: str | os.PathLike[str]) -> list[Problem]:
    """The errors the general path reports reading the whole file, beyond its shape (``SHAPE_CODES``): content it
    refuses (``content_not_mapped``: text beside the message list no message holds, ...)."""
    from drafters.traces.formats import csv_rows, generic, toml_documents, yaml_documents

    general = next((m.FORMAT for m, named in ((csv_rows, is_table), (yaml_documents, is_yaml), (toml_documents, is_toml))
                    if named(str(path))), generic.FORMAT)
    problems = ValidationReport()
    with tio.open_text(path) as stream:
        for _ in general.parse(stream, str(path), problems):
            pass
    return [e for e in problems.errors if e.code not in SHAPE_CODES]


def losses(errors: list[Problem], mapping: Mapping, mapped: set[str]) -> list[str]:
    """Of the general path's ``errors``, those a mapping does not answer, as ``code: message`` lines: not of a code
    its own reading reports (``mapped``) and not at a path it reads (a tool definition the mapping reads as
    ``tools``): reading with it, that content would be lost quietly."""
    read = [p.split("[*]")[0] for p in (mapping.messages, mapping.tools, mapping.id, mapping.response,
                                         *mapping.prompt.values()) if p]
    return list(dict.fromkeys(f"{e.code}: {e.message}" for e in errors
                              if e.code not in mapped and not _under(e.field or "", read)))[:3]


def general_path_losses(path: str | os.PathLike[str], inferred: _shapes.Inferred) -> list[str]:
    """What the general path refuses in the file beyond its shape and the written mapping, read unchanged, does
    not (``losses``). Reads the whole file twice."""
    problems = ValidationReport()
    with tio.open_text(path) as stream:
        for _ in inferred.mapping.format().parse(stream, str(path), problems):
            pass
    return losses(general_path_errors(path), inferred.mapping, {e.code for e in problems.errors})


def _under(field: str, paths: list[str]) -> bool:
    """Whether a problem's field (a JSONPath, or a record's key) lies under one of the paths a mapping reads."""
    where = field if field.startswith("$") else f"$.{field}"
    return any(where == p or where.startswith((p + ".", p + "[")) for p in paths)


def with_content_key(path: str | os.PathLike[str], inferred: _shapes.Inferred) -> tuple[_shapes.Inferred, str | None]:
    """The inferred mapping and a comment line for its ``content`` key where no sampled message holds it (the
    general path's default spelling, written where none of its spellings was found): where exactly one message key
    holds text that reads as words (``said``, beside a ``sid`` of ids), the mapping takes it, saying so; else the
    comment names the keys holding text. ``(inferred, None)`` when some message holds the key, or the messages are
    not found by path (items, trees)."""
    from drafters.traces.json_paths import jsonpath

    m = inferred.mapping
    if not m.content or m.items != "messages" or m.tree:
        return inferred, None
    problems = ValidationReport()
    with tio.open_text(path) as stream:
        sample = [v for _, v in islice(file_records(stream, str(path), problems, "generic", "each"),
                                       _shapes.SAMPLE)]
    msgs = [x for v in sample if isinstance(v, (dict, list)) for _, found in jsonpath(v, m.messages)
            for x in (found if isinstance(found, list) else [found]) if isinstance(x, dict)]
    if not msgs or any(jsonpath(x, f"$.{m.content}") for x in msgs):
        return inferred, None
    role = m.role.split(".")[0]
    lengths: dict[str, int] = {}
    words: set[str] = set()
    for x in msgs:
        for k, v in x.items():
            if isinstance(v, str) and k != role:
                lengths[k] = lengths.get(k, 0) + len(v)
                words |= {k} if " " in v.strip() else set()
    texts = sorted(lengths, key=lambda k: -lengths[k])  # the longest texts first
    if len(words) == 1:
        (key,) = words
        said = (f"# CONTENT: no sampled message holds {m.content!r}; {key!r}, the one key holding words, is read as "
                f"the text (keys holding text: {', '.join(texts)}): check it")
        return replace(inferred, mapping=replace(m, content=key),
                       keys_not_read=[k for k in inferred.keys_not_read if k != key]), said
    return inferred, (f"# CONTENT: no sampled message holds {m.content!r}; keys holding text: "
                      f"{', '.join(texts) or 'none'} (set content: to the one that holds the message's text)")


def mapping_yaml(inferred: _shapes.Inferred, hint: str | None = None, not_read: list[str] | None = None) -> str:
    """The inferred mapping as a commented YAML mapping file (``hint``: one more comment line, ``with_content_key``;
    ``not_read``: what the general path refuses beyond the shape, ``general_path_losses``)."""
    import yaml

    head = [f"# inferred by the general path: shape {inferred.shape}",
            "# check the roles (a value not listed is an error), then ingest with --mapping THIS_FILE"]
    if hint:
        head.append(hint)
    head += [f"# NOT READ: the general path refuses this file's content ({loss[:300]}); this mapping, unchanged, "
             "would lose it: declare where it belongs" for loss in not_read or []]
    if inferred.others:
        head += [(f"# AMBIGUOUS: {len(inferred.others) + 1} message lists fit, so the general path refuses the file "
                  "(ambiguous_shape); this reads"),
                 ("# the one ranked first (the fewest [*], the shallowest path, the most messages). To read another, "
                  "change the messages line to:"),
                 *(f"#   messages: {p}" for p in inferred.others)]
    if inferred.calls_not_read:
        head.append(f"# TOOL CALLS under {', '.join(inferred.calls_not_read)} are not read: declare tool_calls (and "
                    "tool_call) for them")
    if inferred.keys_not_read:
        head.append(f"# message keys holding data this mapping does not read: {', '.join(inferred.keys_not_read)}")
    body = yaml.safe_dump(inferred.mapping.to_dict(), sort_keys=False, allow_unicode=True, default_flow_style=False)
    return "\n".join(head) + "\n" + body


#: A skeleton's role values: how many distinct values a role key may hold, and the shortest mean text of a content key.
MAX_ROLE_VALUES = 8
MIN_TEXT = 8


def skeleton_yaml(path: str | os.PathLike[str], name: str | None = None) -> str | None:
    """A mapping to complete for a file no shape fits (``infer_mapping`` raised ``no_messages_found``), or None:
    the first list of objects (at most 4 levels down, ``[*]`` across lists of records) whose items share a key
    with 2 to ``MAX_ROLE_VALUES`` string values (the role) and a key holding longer text (the content); where no
    record holds one, the records themselves as such a list (one message a record: ``records: messages``; one of
    the role values a spelling the general path knows, or no skeleton). Role
    values the common spellings know are filled in; the others are written ``"?"``, which ``--mapping`` refuses
    (``bad_mapping``, naming the value) until the user writes system, user, assistant or tool."""
    import yaml

    problems = ValidationReport()
    with tio.open_text(path) as stream:
        sample = [v for _, v in islice(file_records(stream, str(path), problems, "generic", "each"),
                                       _shapes.SAMPLE)]
    found = next((hit for value in sample if (hit := _role_list(value, "$", 0)) is not None), None)
    lines = _message_records(sample) if found is None else None
    if found is None and lines is None:
        return None
    where, role, content, values = found or ("$", *lines)
    mapping = {"name": mapping_name(path, name, "skeleton"),
               **({"records": "messages"} if lines else {}), "messages": where,
               "role": role, "roles": {v: role_of(v) or "?" for v in values}, "content": content}
    head = ["# a SKELETON to complete: no shape the general path reads fits this file, so this is a guess from",
            (f"# its first records: {'one message a record' if lines else f'messages at {where}'}, the role under "
             f"{role!r}, the text under {content!r}."),
            "# Replace every role marked \"?\" with system, user, assistant or tool (--mapping refuses it until",
            "# then), declare tool_calls / tool_result if the messages hold them (docs/traces.md), then ingest",
            "# with --mapping THIS_FILE"]
    return "\n".join(head) + "\n" + yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True,
                                                  default_flow_style=False)


def _message_records(sample: list) -> tuple[str, str, list[str]] | None:
    """(role key, content key, role values) where no record holds a message list but the records themselves are
    one (a JSONL log, one message a record), one role value a spelling the general path knows; else None (rows
    of a table: a category, a difficulty)."""
    hit = _roles_and_text(sample) if len(sample) >= 2 and all(isinstance(v, dict) for v in sample) else None
    return hit if hit is not None and any(role_of(v) for v in hit[2]) else None


def _role_list(value: object, path: str, depth: int) -> tuple[str, str, str, list[str]] | None:
    """(path, role key, content key, role values) of the first list of objects under ``value`` that looks like
    messages with roles nobody spells (see ``skeleton_yaml``)."""
    if depth > 4:
        return None
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        hit = _roles_and_text(value)  # type: ignore[arg-type]
        if hit is not None:
            return (path, *hit)
        inner = [_role_list(v, f"{path}[*]", depth + 1) for v in value[:20]]
        return next((h for h in inner if h is not None), None)
    if isinstance(value, dict):
        for key, v in value.items():
            hit = _role_list(v, f"{path}.{key}", depth + 1) if isinstance(v, (list, dict)) else None
            if hit is not None:
                return hit
    return None


#: A value that is no role and no text: a timestamp, a date, a number, a hex id or uuid.
_STAMP = re.compile(r"[\d\s:.,/+\-TZ]+|[0-9a-fA-F-]{8,}")


def _roles_and_text(items: list[dict]) -> tuple[str, str, list[str]] | None:
    if len(items) < 2:
        return None
    shared = set.intersection(*({k for k, v in i.items() if isinstance(v, str)} for i in items))
    shared = {k for k in shared if not all(_STAMP.fullmatch(i[k].strip()) for i in items)}  # a createdAt, an id
    roles = [k for k in shared if 2 <= len({i[k] for i in items}) <= min(MAX_ROLE_VALUES, len(items) - 1)
             and all(len(i[k]) <= 40 for i in items)]  # a value repeats: a role, not an id
    if not roles:
        return None
    # the key whose values the common spellings know most (speaker / author beside a type), then the fewest values
    role = min(roles, key=lambda k: (-sum(role_of(v) is not None for v in {i[k] for i in items}),
                                     len({i[k] for i in items}), sum(len(i[k]) for i in items)))
    texts = {k: sum(len(i[k]) for i in items) / len(items) for k in shared if k != role}
    if not texts or max(texts.values()) < MIN_TEXT:
        return None
    values = list(dict.fromkeys(i[role] for i in items))
    return role, max(texts, key=lambda k: texts[k]), values
