"""Secrets found without a label: detect-secrets' provider rules, high-entropy tokens near secret words, and
values that must stay (hashes, git SHAs, UUIDs, base64 images).

The positive samples are the public test strings of detect-secrets (its ``test_data/`` files and
``tests/plugins/*_test.py``) and gitleaks (``cmd/generate/config/rules/*.go`` true positives); none is a
live credential (most are those projects' documented examples).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from drafters.traces.ingest import iter_conversations, write_canonical
from drafters.traces.model import conversation_to_dict
from drafters.traces.report import ValidationReport
from drafters.traces.scrub import Scrubber
from drafters.traces.secret_detectors import entropy_floor, looks_random, shannon_entropy

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example secret access key
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"


@pytest.mark.parametrize(
    "text",
    [
        f"I used the AWS secret {AWS_SECRET} for the upload",
        f"creds: AKIAIOSFODNN7EXAMPLE {AWS_SECRET}",
        f"AKIAIOSFODNN7EXAMPLE / {AWS_SECRET} are the keys",
        f"the secret access key is {AWS_SECRET}.",
        f"aws_secret_access_key: {AWS_SECRET}",
        f"KEY={AWS_SECRET}",
        f'"AWS_SECRET": "{AWS_SECRET}"',
    ],
)
def test_aws_secret_access_key_is_scrubbed_with_or_without_a_name(text):
    s = Scrubber()
    out = s.scrub_text(text)
    assert AWS_SECRET not in out and "EXAMPLEKEY" not in out, out
    assert "<SECRET_" in out
    assert "AKIAIOSFODNN7EXAMPLE" not in out


# (text, the secret, placeholder type) from detect-secrets' and gitleaks' public test corpora.
CORPUS = [
    # detect-secrets test_data/each_secret.py and config.env (quoted / assigned values)
    (
        "base64_secret = 'c2VjcmV0IG1lc3NhZ2Ugc28geW91J2xsIG5ldmVyIGd1ZXNzIG15IHBhc3N3b3Jk'",
        "c2VjcmV0IG1lc3NhZ2Ugc28geW91J2xsIG5ldmVyIGd1ZXNzIG15IHBhc3N3b3Jk",
        None,
    ),
    (
        "hex_secret = '8b1118b376c313ed420e5133ba91307817ed52c2'",
        "8b1118b376c313ed420e5133ba91307817ed52c2",
        None,
    ),
    (
        "basic_auth = 'http://username:whywouldyouusehttpforpasswords@example.com'",
        "whywouldyouusehttpforpasswords",
        None,
    ),
    ("aws_access_key = 'AKIAIOSFODNN7EXAMPLE'", "AKIAIOSFODNN7EXAMPLE", None),
    # detect-secrets tests/plugins
    (
        "bot110201543:AAHdqTcvCH1vGWJxfSe1ofSAs0K5PALDsaw",
        "AAHdqTcvCH1vGWJxfSe1ofSAs0K5PALDsaw",
        "SECRET_TELEGRAM_TOKEN",
    ),
    (
        "7213808860:AAH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM",
        "AAH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM",
        "SECRET_TELEGRAM_TOKEN",
    ),
    (
        "token MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
        "ZnCjm1XVW7vRze4b7Cq4se7kKWs",
        "SECRET_DISCORD_TOKEN",
    ),
    (
        "Nzk5MjgxNDk0NDc2NDU1OTg3.YABS5g.2lmzECVlZv3vv6miVnUaKPQi2wI",
        "2lmzECVlZv3vv6miVnUaKPQi2wI",
        "SECRET_DISCORD_TOKEN",
    ),
    ("glpat-hellOworld380_testin", "glpat-hellOworld380_testin", "SECRET_GITLAB_TOKEN"),
    ("gldt-HwllOuhfw-wu0rlD_yep", "gldt-HwllOuhfw-wu0rlD_yep", "SECRET_GITLAB_TOKEN"),
    (
        "//registry.npmjs.org/:_authToken=743b294a-cd03-11ec-9d64-0242ac120002",
        "743b294a-cd03-11ec-9d64-0242ac120002",
        None,
    ),
    ("343ea45721923ed956e2b38c31db76aa-us30", "343ea45721923ed956e2b38c31db76aa", "SECRET_MAILCHIMP_KEY"),
    ("SKxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "SKxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "SECRET_TWILIO_KEY"),
    (
        "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",
        "TwL2iGABf9DHoTf",
        "SECRET_SENDGRID_KEY",
    ),
    ("sq0csp-0p9h7g6f4s3s3s3-4a3ardgwa6ADRDJDDKUFYDYDYDY", "sq0csp-0p9h7g6f4s3s3s3", "SECRET_SQUARE_OAUTH"),
    (
        "https://hooks.slack.com/services/Txxxxxxxx/Bxxxxxxxx/xxxxxxxxxxxxxxxxxxxxxxxx",
        "Bxxxxxxxx/xxxxxxxx",
        "SECRET_SLACK_WEBHOOK",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey="
        + "lJzRc1YdHaAA2KCNJJ1tkYwF/+mKK6Ygw0NGe170Xu592euJv2wYUtBlV8z+qnlcNQSnIYVTkLWntUO1F8j8rQ==",
        "lJzRc1YdHaAA2KCNJJ1tkYwF",
        "SECRET_AZURE_STORAGE_KEY",
    ),
    # gitleaks rules: aws-secret-access-key (a sub-rule found next to its key id) and generic keyword rules
    (
        "aws AKIALALEMEL33243OLIB lbqlNh3FW5/3AwnBoWsYIJam9w2Us4ZOH5Un8RyR",
        "lbqlNh3FW5/3AwnBoWsYIJam9w2Us4ZOH5Un8RyR",
        "SECRET_HIGH_ENTROPY",
    ),
    (
        'awsToken := "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"',
        "lbqlNh3FW5/3AwnBoWsYIJam9w2Us4ZOH5Un8RyR",
        None,
    ),
    (
        "the secret is gX69YO4CvBsVjzAwYxdGyDd30t5+9ez31gKATtj4 ok",
        "gX69YO4CvBsVjzAwYxdGyDd30t5+9ez31gKATtj4",
        "SECRET_HIGH_ENTROPY",
    ),
    (
        "api token for staging: ToCynx5Se4e2PtoZxEhW7lUJcOX15c54",
        "ToCynx5Se4e2PtoZxEhW7lUJcOX15c54",
        "SECRET_HIGH_ENTROPY",
    ),
    (
        "Authorization token 5f4dcc3b5aa765d61d8327deb882cf99aa12",
        "5f4dcc3b5aa765d61d8327deb882cf99aa12",
        "SECRET_HIGH_ENTROPY",
    ),
]


@pytest.mark.parametrize("text,secret,kind", CORPUS)
def test_public_secret_corpus_is_scrubbed(text, secret, kind):
    s = Scrubber()
    out = s.scrub_text(text)
    assert secret not in out, out
    if kind is not None:
        assert f"<{kind}_1>" in out, out


# Values that carry meaning next to secret words: they must come through unchanged.
NEGATIVES = [
    "commit 8b1118b376c313ed420e5133ba91307817ed52c2 rotated the api key",
    "the key's sha256 is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "idempotency key 203db13e-70c7-462b-9a3d-bf32640cb0be",
    "token id 203db13e-70c7-462b-9a3d-bf32640cb0be expired",
    '"icon_key": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="',
    '"integrity": "sha512-Vu5JBPCl6X3ECfJM3Yc4e0jL+Tn1pYy2Xs0pH1D0jWbG3kDtDpJeUmB8Yv0OTTVnm2wo0dRzLlJGbZ8c5vCJ8Q==" token',
    "the tokenizer uses context7CompatibleLibraryID and getUserById2FromCache",
    "see src/auth/TokenProvider2Factory/handlers for the token flow",
    "git rev-parse HEAD -> 3f2a9c1d7e8b6a5f4c3d2e1f0a9b8c7d6e5f4a3b (auth fix)",
    "secret santa list: AliceBobCarolDaveEveFrank",
    "max_tokens=4096 and the key is /etc/ssl/private/server.key",
    "<SECRET_AWS_KEY_1> <SECRET_HIGH_ENTROPY_1>",
    # names of keys that are not credentials, and code: the assignment rule's false positives on the
    # example traces before it checked the name and the value's shape
    "const STORAGE_KEY = 'vue-todo-list'",
    "createHandler({ auth: getSession, })",
    "SELECT value FROM session_state WHERE key = 'current_phase';",
    "LLMConfig(base_url=BASE_URL, api_key=API_KEY)",
    'fmt.Println("Error opening registry key: ", err)',
    '{"token": {"type": "number"}}',
    "exclude_if=lambda v: v == 0, password: SecretStr",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_meaningful_values_near_secret_words_are_kept(text):
    s = Scrubber()
    assert s.scrub_text(text) == text
    assert not {k for k in s.counts if k.startswith("SECRET_")}


def test_entropy_measure_and_randomness_check():
    assert shannon_entropy("") == 0.0 and shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert shannon_entropy(AWS_SECRET) == pytest.approx(4.66, abs=0.01)
    assert entropy_floor(40) == 4.5 and entropy_floor(20) == pytest.approx(math.log2(20) - 0.7)
    assert looks_random(AWS_SECRET)
    assert not looks_random("context7CompatibleLibraryID")  # an identifier: mostly lower-case runs
    assert not looks_random("ABCDEFGHIJKLMNOPQRST12")  # one case only


def test_free_text_secret_never_reaches_the_canonical_files(tmp_path):
    """The reported leak: an ingested trace whose user message holds the key in free text."""
    src = tmp_path / "chat.jsonl"
    rec = {
        "messages": [
            {"role": "user", "content": f"I used the AWS secret {AWS_SECRET} for the upload"},
            {
                "role": "assistant",
                "content": f"Noted. Key id AKIAIOSFODNN7EXAMPLE goes with {AWS_SECRET[:-3]}XYZ.",
            },
        ]
    }
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    report = ValidationReport()
    convs = list(iter_conversations([src], report=report))
    out = tmp_path / "train.jsonl"
    write_canonical(convs, out)
    stored = out.read_text(encoding="utf-8")
    assert AWS_SECRET[:20] not in stored and "AKIAIOSFODNN7EXAMPLE" not in stored
    assert "<SECRET_HIGH_ENTROPY_1>" in stored and "<SECRET_HIGH_ENTROPY_2>" in stored


# The credentials the example traces really hold (a password generator's outputs, sample logins).
EXAMPLE_SECRETS = {
    "yourpassword",
    "password123",
    "a9B7$#fG3&Z1",
    "aB3#fG7!kL9@",
    "A1b2C3d4E5f6",
    "aBcD1234EfGh",
}


def test_false_positive_rate_on_the_example_traces_is_zero():
    """Every secret replacement on the repository's example traces (real agent sessions): each one is a
    credential they really hold, and the label-free rules add none (they hold no provider key)."""
    s = Scrubber()
    n = 0
    for conv in iter_conversations([EXAMPLES], report=ValidationReport(), scrub=s):
        n += 1
        json.dumps(conversation_to_dict(conv))
    assert n > 200
    replaced = {original for (kind, original) in s._map if kind.startswith("SECRET_")}
    assert replaced == EXAMPLE_SECRETS  # false positives 0 of 6 values (14 occurrences)
    label_free = {
        k: v
        for k, v in s.counts.items()
        if k == "SECRET_HIGH_ENTROPY" or k in {r.type for r in _detector_rules()}
    }
    assert label_free == {}


def _detector_rules():
    from drafters.traces.scrub import _rules

    return [r for r in _rules() if r.detector]


def test_a_password_in_a_sentence_keeps_the_full_stop():
    s = Scrubber()
    out = s.scrub_text("Here is your new password: a9B7$#fG3&Z1. Please change it.")
    assert out == "Here is your new password: <SECRET_ASSIGNMENT_1>. Please change it."
    assert s.scrub_text('{"password": "a9B7$#fG3&Z1"}') == '{"password": "<SECRET_ASSIGNMENT_1>"}'
