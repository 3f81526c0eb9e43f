"""Random corruption of the part-B sample files never crashes a parser.

Two corruptions, seeded so failures reproduce: text-level (cut, delete, duplicate, swap a span) and
structure-level (valid JSON whose values are replaced by values of the wrong type: null, [], {}, 1, "x").
Every parse must finish; the conversations it yields must serialise; bad input must show up in the
report rather than as an exception.
"""

from __future__ import annotations

import io
import json
import random

import pytest

from drafters.traces.formats import get_format
from drafters.traces.model import conversation_to_dict
from drafters.traces.report import ValidationReport

from .conftest import DATA
from .test_formats_b_sniff import FOLDER_FORMAT

WRONG = [None, [], {}, 1, "x", True, [1], {"a": 1}, ""]


def _run(fmt: str, text: str, name: str) -> ValidationReport:
    report = ValidationReport()
    for conv in get_format(fmt).parse(io.StringIO(text), name, report):
        list(conv.calls())
        json.dumps(conversation_to_dict(conv))
    return report


def _slots(value, out, parent=None, key=None):
    if parent is not None:
        out.append((parent, key))
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        _slots(v, out, value, k)


@pytest.mark.parametrize("folder", sorted(FOLDER_FORMAT))
def test_random_corruption_never_crashes(folder):
    fmt = FOLDER_FORMAT[folder]
    rng = random.Random(folder)
    for path in sorted((DATA / folder).glob("*")):
        text = path.read_text(encoding="utf-8")[:200_000]
        for _ in range(6):  # text-level
            i = rng.randrange(len(text))
            j = min(len(text), i + rng.randrange(1, 300))
            mutated = rng.choice([text[:i], text[:i] + text[j:], text[:j] + text[i:j] + text[j:]])
            _run(fmt, mutated, path.name)
        try:  # structure-level: only for JSON / JSONL files
            docs, jsonl = [json.loads(path.read_text(encoding="utf-8"))], False
        except ValueError:
            try:
                docs = [json.loads(line) for line in text.splitlines() if line.strip()][:40]
                jsonl = True
            except ValueError:
                continue
        for _ in range(12):
            copy = json.loads(json.dumps(docs))
            slots: list = []
            _slots(copy, slots)
            for parent, key in rng.sample(slots, k=min(len(slots), rng.randint(1, 6))):
                parent[key] = rng.choice(WRONG)
            mutated = "\n".join(json.dumps(d) for d in copy) if jsonl else json.dumps(copy[0], indent=1)
            _run(fmt, mutated, path.name)
