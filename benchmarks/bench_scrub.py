"""Secrets-scrubber accuracy: what was replaced (per type), what random-looking values were kept, and the
false-positive rate, on the README demo's example traces and on the trace test corpus.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_scrub.py [--json]

For each input set (``examples/traces/*.json* *.yaml``, the files the README demo ingests, and
``tests/traces/fixtures/corpus``) every conversation is read unscrubbed (``iter_conversations(...,
scrub=False)``) and scrubbed with one ``Scrubber`` per set, as an ingestion run does. Printed:

1. **Replaced by type**: occurrences (``Scrubber.counts``) and distinct values per placeholder type.
2. **Kept candidates by kind** (the denominator): distinct values in the scrubbed fields (texts,
   reasoning, tool arguments and results, tool definitions) that look like what a secret detector could
   mistake for a secret, and whether each came through unchanged. Kinds, first match wins:
   ``uuid``; ``git_sha`` (40 hex digits), ``sha256_hex`` (64), ``other_hex`` (20+ hex digits, letters and
   digits: md5, sha512, ids); ``base64`` (a data-URI payload, a subresource-integrity hash, or a 24+
   character base64 run padded with ``=``); ``random_near_secret_word`` (a 20+ character token that
   ``looks_random`` within ``WINDOW`` characters of a secret word: what the entropy rule judges) and
   ``random_elsewhere`` (the other random-looking tokens: URL paths, tool-call ids, mixed-case paths).
   Kept or replaced is judged with the secret rules only (``ScrubConfig(categories={"secrets"})``), so a
   path that loses its user name to the ``USER`` rule still counts as kept.
3. **False positives**: distinct replaced values of the ``SECRET_*`` types that are not in
   ``TRUE_SECRETS`` below, the credentials the inputs really hold (decided by reading each replacement
   in context); the rate is false positives / distinct secret values replaced. Personal-data types
   (``EMAIL``, ``USER``, ``IP``, ``PHONE``) are counted in (1) but not judged here.
4. **Test samples** (``tests/traces/test_scrub_secrets.py``): recall on the labelled positives (its
   ``CORPUS`` of public detect-secrets/gitleaks samples and its ``FAMILIES`` of generated tokens, one per
   provider family) and false positives on its ``NEGATIVES`` (hashes, SHAs, UUIDs, base64 images,
   integrity hashes, paths and code identifiers next to secret words): a sample counts as a false
   positive when the scrubber changes it at all.
5. **Prose passwords** (``tests/traces/test_scrub_prose_passwords.py``): passwords written in sentences
   ("my password is ...") replaced, and sentences about passwords (``PROSE_NEGATIVES``) left unchanged.

Goal: no false positive on these inputs, every hash, SHA, UUID and base64 blob kept.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The credentials the inputs really hold, by inspection (all in the glaive tool-call demo, which is also
#: in the corpus): four outputs of a password-generator tool ("Here is your new password: ...") and the
#: password a user gives for a new account. Not in the list: ``yourpassword``, a template placeholder in
#: sample code (``password="yourpassword"``, ``server.login(..., 'yourpassword')``).
TRUE_SECRETS = frozenset({"a9B7$#fG3&Z1", "aB3#fG7!kL9@", "A1b2C3d4E5f6", "aBcD1234EfGh", "password123"})

INPUTS = {
    "examples": lambda: sorted((ROOT / "examples/traces").glob("*.json*"))
    + sorted((ROOT / "examples/traces").glob("*.yaml")),
    "corpus": lambda: [ROOT / "tests/traces/fixtures/corpus"],
}

_B64 = r"[A-Za-z0-9+/]"
_BLOB = re.compile(rf"base64,({_B64}{{20,}}={{0,2}})|sha(?:1|256|384|512)-{_B64}{{20,}}={{0,2}}")
_UUID = re.compile(r"(?<![0-9A-Za-z-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                   r"(?![0-9A-Za-z-])")
_HEXRUN = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{20,}(?![0-9A-Za-z])")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}")
KINDS = ("uuid", "git_sha", "sha256_hex", "other_hex", "base64", "random_near_secret_word", "random_elsewhere")


def field_strings(conv: Any) -> list[str]:
    """The strings of ``conv`` that the scrubber rewrites, in a fixed order (the same walk on the raw and
    the scrubbed conversation gives lists that pair up)."""
    from drafters.traces.model import ReasoningPart, TextPart, ToolCallPart, ToolResultPart

    out: list[str] = []
    seen: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    def msgs(ms: list[Any]) -> None:
        for m in ms:
            if id(m) in seen:
                continue
            seen.add(id(m))
            for p in m.parts:
                if isinstance(p, (TextPart, ReasoningPart)):
                    out.append(p.text)
                elif isinstance(p, ToolResultPart):
                    out.append(p.content)
                elif isinstance(p, ToolCallPart):
                    walk(p.arguments) if p.arguments is not None else out.append(p.raw_arguments)

    msgs(conv.messages)
    for c in conv.explicit_calls or ():
        msgs(c.context)
        msgs([c.completion])
    for t in conv.tools:
        out.append(t.description)
        walk(t.parameters)
    return out


def candidates(text: str) -> list[tuple[str, str]]:
    """(kind, value) of every candidate in ``text`` (see the module docstring); spans do not overlap."""
    from drafters.traces.secret_detectors import SECRET_WORDS, WINDOW, looks_random

    found: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in taken)

    for m in _BLOB.finditer(text):
        g = 1 if m.group(1) else 0
        taken.append(m.span())
        found.append(("base64", m.group(g)))
    for m in _UUID.finditer(text):
        if free(*m.span()):
            taken.append(m.span())
            found.append(("uuid", m.group()))
    for m in _HEXRUN.finditer(text):
        v = m.group()
        if free(*m.span()) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
            taken.append(m.span())
            found.append(({40: "git_sha", 64: "sha256_hex"}.get(len(v), "other_hex"), v))
    lower = text.lower()
    for m in _TOKEN.finditer(text):
        if not free(*m.span()):
            continue
        v = m.group()
        body = v.rstrip("=")
        if len(v) >= 24 and v.endswith("=") and re.fullmatch(rf"{_B64}+", body):
            found.append(("base64", v))
        elif looks_random(v):
            near = lower[max(0, m.start() - WINDOW) : m.end() + WINDOW]
            found.append(("random_near_secret_word" if SECRET_WORDS.search(near) else "random_elsewhere", v))
    return found


def measure(paths: list[Path]) -> dict[str, Any]:
    from drafters.traces.ingest import iter_conversations
    from drafters.traces.report import ValidationReport
    from drafters.traces.scrub import Scrubber, ScrubConfig

    scrubber = Scrubber()  # the default run: what is replaced, per type
    secrets_only = Scrubber(ScrubConfig(categories=frozenset({"secrets"})))  # what the secret rules change
    kept: dict[str, set[str]] = defaultdict(set)
    changed: dict[str, set[str]] = defaultdict(set)
    present: set[str] = set()
    n = 0
    for conv in iter_conversations(paths, scrub=False, report=ValidationReport()):
        n += 1
        raw = field_strings(conv)
        scrubber.scrub_conversation(conv)
        done = field_strings(secrets_only.scrub_conversation(conv))
        if len(raw) != len(done):
            raise RuntimeError(f"conversation {conv.id}: the scrubbed fields do not pair up")
        for before, after in zip(raw, done):
            present.update(v for v in TRUE_SECRETS if v in before)
            for kind, value in candidates(before):
                (kept if value in after else changed)[kind].add(value)
    for kind in KINDS:
        kept[kind] -= changed[kind]  # a value replaced anywhere counts as replaced
    secret_values = {v for (t, v) in scrubber.replaced() if t.startswith("SECRET_")}
    values_by_type = Counter(t for (t, _) in scrubber.replaced())
    false_pos = sorted(secret_values - TRUE_SECRETS)
    return {
        "conversations": n,
        "replaced": {t: {"occurrences": c, "values": values_by_type[t]} for t, c in sorted(scrubber.counts.items())},
        "candidates": {k: {"kept": len(kept[k]), "replaced": len(changed[k])} for k in KINDS},
        "secret_values_replaced": len(secret_values),
        "true_secrets_replaced": len(secret_values & TRUE_SECRETS),
        "false_positives": len(false_pos),
        "false_positive_values": false_pos,  # printed: inputs are public test data, never live credentials
        "false_positive_rate": len(false_pos) / len(secret_values) if secret_values else 0.0,
        "true_secrets_missed": len(present - secret_values),  # held by the inputs, left in place
    }


def _test_module(name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / f"tests/traces/{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measure_samples() -> dict[str, Any]:
    from drafters.traces.scrub import Scrubber

    mod, prose = _test_module("test_scrub_secrets"), _test_module("test_scrub_prose_passwords")
    positives = [(text, secret) for text, secret, _ in mod.CORPUS]
    positives += [(f"then run it with {token} today", token) for _, token, _ in mod.FAMILIES]
    found = sum(1 for text, secret in positives if secret not in Scrubber().scrub_text(text))
    changed = [t for t in mod.NEGATIVES if Scrubber().scrub_text(t) != t]
    prose_found = sum(1 for text, secret in prose.PROSE_PASSWORDS if secret not in Scrubber().scrub_text(text))
    prose_changed = [t for t in prose.PROSE_NEGATIVES if Scrubber().scrub_text(t) != t]
    return {"positives": len(positives), "positives_replaced": found,
            "negatives": len(mod.NEGATIVES), "negatives_changed": len(changed),
            "prose_passwords": len(prose.PROSE_PASSWORDS), "prose_passwords_replaced": prose_found,
            "prose_negatives": len(prose.PROSE_NEGATIVES), "prose_negatives_changed": len(prose_changed)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    results: dict[str, Any] = {name: measure(paths()) for name, paths in INPUTS.items()}
    samples = measure_samples()
    if args.json:
        print(json.dumps({**results, "test_samples": samples}, indent=2))
        return
    for name, r in results.items():
        print(f"== {name}: {r['conversations']} conversations")
        print("  replaced (occurrences / distinct values):")
        for t, c in r["replaced"].items():
            print(f"    {t:<28} {c['occurrences']:>5} / {c['values']}")
        print("  candidates (distinct values kept / replaced):")
        for k, c in r["candidates"].items():
            print(f"    {k:<28} {c['kept']:>5} / {c['replaced']}")
        print(f"  secret values replaced: {r['secret_values_replaced']} "
              f"(true secrets {r['true_secrets_replaced']}, missed {r['true_secrets_missed']}, "
              f"false positives {r['false_positives']}"
              f"{': ' + ', '.join(map(repr, r['false_positive_values'])) if r['false_positives'] else ''})")
        print(f"  false-positive rate: {r['false_positive_rate']:.1%}")
    print(f"== test samples: {samples['positives_replaced']} of {samples['positives']} labelled secrets replaced; "
          f"{samples['negatives_changed']} of {samples['negatives']} negatives changed")
    print(f"== prose passwords: {samples['prose_passwords_replaced']} of {samples['prose_passwords']} replaced; "
          f"{samples['prose_negatives_changed']} of {samples['prose_negatives']} sentences about passwords changed")


if __name__ == "__main__":
    main()
