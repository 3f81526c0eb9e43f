"""Passwords written in prose ("my password is ...", "password Zq8#...") are scrubbed; sentences about
passwords, code, versions, paths and placeholders next to the word are kept. ``benchmarks/bench_scrub.py``
counts these samples with the others (its last line)."""

from __future__ import annotations

import json

import pytest

from drafters.traces.ingest import iter_conversations, write_canonical
from drafters.traces.report import ValidationReport
from drafters.traces.scrub import Scrubber

SECRET = "Zq8#pM48p6Ax4V!v"

#: (text, the password it holds): the operator trial's two phrasings first.
PROSE_PASSWORDS = [
    (f"my password is {SECRET}", SECRET),
    (f"password {SECRET}", SECRET),
    (f"My Password Is: {SECRET}.", SECRET),
    (f"the password for the staging db is '{SECRET}'.", SECRET),
    (f"I set the wifi password to {SECRET} and it was fine", SECRET),
    ("the root password was hunter22.", "hunter22"),
    ("use passphrase `c0rrect-Horse-9` to unlock it", "c0rrect-Horse-9"),
    ("pwd = tR0ub4dor&3 on the test box", "tR0ub4dor&3"),
    ("the password to staging-db is Abc123!x9 today", "Abc123!x9"),
    ("Login failed with PASSWORD A1b2C3d4E5f6, retrying", "A1b2C3d4E5f6"),
]

#: Sentences about passwords and code near the word: kept exactly.
PROSE_NEGATIVES = [
    "Your password is required.",
    "The password is incorrect, try again",
    "password must be at least 12 characters",
    "Use bcrypt for password hashing.",
    "the password is sha256-hashed before storage",
    "password v2.1.0 release notes",
    "password is ${DB_PASSWORD} in the compose file",
    "password is <redacted>",
    "login with password flag{d316759c281bf925d600be698a4973d5} which failed",
    "password manager 1Password",
    "password Manager2 opened",
    "the password is sent to bob@example.com",
    "password_hash is 5f4dcc3b5aa765d61d8327deb882cf99",
    "if password is not None:",
    "password is at least 8 chars",
    "src/app/auth/reset-password/page.tsx: import { Label }",
    "the pwd is /srv/app/current",
    "password reset link: https://x.io/r?t=1",
    "password (optional)",
    "password: SecretStr = Field(title='Password')",
    'password="yourpassword" in the sample',
    "the password is stored in the vault as utf-8",
]


@pytest.mark.parametrize(("text", "secret"), PROSE_PASSWORDS)
def test_a_password_in_prose_is_scrubbed(text, secret):
    s = Scrubber()
    out = s.scrub_text(text)
    assert secret not in out, out
    assert "<SECRET_" in out
    # the sentence around it stays: only the value is replaced
    assert out.split("<SECRET_")[0] == text.split(secret)[0]


@pytest.mark.parametrize("text", PROSE_NEGATIVES)
def test_sentences_about_passwords_are_kept(text):
    s = Scrubber()
    assert s.scrub_text(text) == text
    assert not {k for k in s.counts if k.startswith("SECRET_")}


def test_a_prose_password_never_reaches_the_canonical_files(tmp_path):
    """The operator trial's leak: a user message naming its password in prose reached the canonical data."""
    src = tmp_path / "chat.jsonl"
    rec = {"messages": [
        {"role": "user", "content": f"my password is {SECRET}, and the backup one: password {SECRET[::-1]}"},
        {"role": "assistant", "content": "Thanks. Please rotate them: never paste a password into a chat."},
    ]}
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    out = tmp_path / "train.jsonl"
    write_canonical(list(iter_conversations([src], report=ValidationReport())), out)
    stored = out.read_text(encoding="utf-8")
    assert SECRET not in stored and SECRET[::-1] not in stored
    assert "<SECRET_PASSWORD_1>" in stored and "<SECRET_PASSWORD_2>" in stored
    assert "never paste a password into a chat" in stored
