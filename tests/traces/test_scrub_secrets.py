"""Secrets found without a label: detect-secrets' provider rules, high-entropy tokens near secret words, and
values that must stay (hashes, git SHAs, UUIDs, base64 images).

The positive samples are the public test strings of detect-secrets (its ``test_data/`` files and
``tests/plugins/*_test.py``) and gitleaks (``cmd/generate/config/rules/*.go`` true positives); none is a
live credential (most are those projects' documented examples). The token families (``FAMILIES``) are
built at import from a seeded generator in each provider's documented format (gitleaks' rule regexes),
so they are well-formed but fake, and no token sits in this file as one literal (secret scanners of
code hosts would flag it). detect-secrets' wheel ships its plugins' regexes but not its test data.
"""

from __future__ import annotations

import json
import math
import random
import string
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


_RNG = random.Random(20240601)
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"


def _fake(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _pem(label: str, lines: int = 5, end: bool = True) -> str:
    body = "\n".join(_fake(64, _ALNUM + "+/") for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n" + (f"-----END {label}-----" if end else "")


# (family, token, placeholder type): the common families of gitleaks and detect-secrets, well-formed and fake.
FAMILIES = [
    ("npm access token", "npm" + "_" + _fake(36, string.ascii_lowercase + string.digits), "SECRET_NPM_TOKEN"),
    ("PyPI upload token", "pypi" + "-AgEIcHlwaS5vcmc" + _fake(80, _ALNUM + "-_"), "SECRET_PYPI_TOKEN"),
    ("GitHub fine-grained PAT", "github" + "_pat_" + _fake(22) + "_" + _fake(59), "SECRET_GITHUB_TOKEN"),
    ("GitHub classic PAT", "ghp" + "_" + _fake(36), "SECRET_GITHUB_TOKEN"),
    ("Slack bot token", "xoxb" + f"-{_fake(12, string.digits)}-{_fake(13, string.digits)}-{_fake(24)}",
     "SECRET_SLACK_TOKEN"),
    ("Slack app-level token", "xapp" + f"-1-A{_fake(10, string.digits)}-{_fake(13, string.digits)}-{_fake(64, _HEX)}",
     "SECRET_SLACK_TOKEN"),
    ("Stripe live secret key", "sk" + "_live_" + _fake(24), "SECRET_STRIPE_KEY"),
    ("Stripe restricted key", "rk" + "_live_" + _fake(99), "SECRET_STRIPE_KEY"),
    ("Stripe webhook secret", "whsec" + "_" + _fake(32), "SECRET_STRIPE_KEY"),
    ("Google API key", "AIza" + _fake(35, _ALNUM + "-_"), "SECRET_GOOGLE_KEY"),
    ("OpenAI project key", "sk" + "-proj-" + _fake(74, _ALNUM + "-_") + "T3BlbkFJ" + _fake(74, _ALNUM + "-_"),
     "SECRET_OPENAI_KEY"),
    ("OpenAI legacy key", "sk" + "-" + _fake(20) + "T3BlbkFJ" + _fake(20), "SECRET_OPENAI_KEY"),
    ("Anthropic API key", "sk" + "-ant-api03-" + _fake(93, _ALNUM + "-_") + "AA", "SECRET_ANTHROPIC_KEY"),
    ("Hugging Face token", "hf" + "_" + _fake(34, string.ascii_letters), "SECRET_HF_TOKEN"),
    ("Hugging Face org token", "api" + "_org_" + _fake(34, string.ascii_letters), "SECRET_HF_TOKEN"),
    ("JWT", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkZha2UifQ."
     + _fake(43, _ALNUM + "-_"), "SECRET_JWT"),
    ("RSA private key (PEM)", _pem("RSA PRIVATE KEY"), "SECRET_PRIVATE_KEY"),
    ("PKCS#8 private key (PEM)", _pem("PRIVATE KEY"), "SECRET_PRIVATE_KEY"),
    ("OpenSSH private key cut before its END line", _pem("OPENSSH PRIVATE KEY", 3, end=False).rstrip(),
     "SECRET_PRIVATE_KEY"),
    ("PGP private key block", _pem("PGP PRIVATE KEY BLOCK").replace("BLOCK-----\n", "BLOCK-----\n\n", 1),
     "SECRET_PRIVATE_KEY"),
    ("Azure AD client secret", _fake(3) + "8Q~" + _fake(34, _ALNUM + "_~.-"), "SECRET_AZURE_CLIENT_SECRET"),
    ("Shopify admin token", "shpat" + "_" + _fake(32, _HEX), "SECRET_SHOPIFY_TOKEN"),
    ("DigitalOcean token", "dop" + "_v1_" + _fake(64, _HEX), "SECRET_DIGITALOCEAN_TOKEN"),
    ("Databricks token", "dapi" + _fake(32, _HEX), "SECRET_DATABRICKS_TOKEN"),
    ("Linear API key", "lin" + "_api_" + _fake(40), "SECRET_LINEAR_KEY"),
    ("Postman API key", "PMAK" + f"-{_fake(24, _HEX)}-{_fake(34, _HEX)}", "SECRET_POSTMAN_KEY"),
    ("Grafana service account token", "glsa" + f"_{_fake(32)}_{_fake(8, _HEX)}", "SECRET_GRAFANA_TOKEN"),
    ("Vault service token", "hvs" + "." + _fake(95, _ALNUM + "_-"), "SECRET_VAULT_TOKEN"),
    ("Pulumi token", "pul" + "-" + _fake(40, _HEX), "SECRET_PULUMI_TOKEN"),
    ("Doppler personal token", "dp" + ".pt." + _fake(43, string.ascii_lowercase + string.digits),
     "SECRET_DOPPLER_TOKEN"),
    ("New Relic user key", "NRAK" + "-" + _fake(27, string.ascii_uppercase + string.digits), "SECRET_NEWRELIC_KEY"),
    ("Groq API key", "gsk" + "_" + _fake(52), "SECRET_GROQ_KEY"),
    ("Replicate token", "r8" + "_" + _fake(37), "SECRET_REPLICATE_TOKEN"),
    ("xAI API key", "xai" + "-" + _fake(80), "SECRET_XAI_KEY"),
    ("Perplexity API key", "pplx" + "-" + _fake(48), "SECRET_PERPLEXITY_KEY"),
    ("age secret key", "AGE-SECRET" + "-KEY-1" + _fake(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"), "SECRET_AGE_KEY"),
    ("Docker Hub token", "dckr" + "_pat_" + _fake(27, _ALNUM + "_-"), "SECRET_DOCKERHUB_TOKEN"),
    ("Tailscale auth key", "tskey" + f"-auth-{_fake(12)}-{_fake(30)}", "SECRET_TAILSCALE_KEY"),
    ("Supabase token", "sbp" + "_" + _fake(40, _HEX), "SECRET_SUPABASE_TOKEN"),
    ("Atlassian API token", "ATATT3" + _fake(186, _ALNUM + "_-="), "SECRET_ATLASSIAN_TOKEN"),
    ("Square access token", "sq0atp" + "-" + _fake(22, _ALNUM + "_-"), "SECRET_SQUARE_TOKEN"),
    ("Sentry user token", "sntryu" + "_" + _fake(64, _HEX), "SECRET_SENTRY_TOKEN"),
    ("Notion token", "ntn" + "_" + _fake(11, string.digits) + _fake(35), "SECRET_NOTION_TOKEN"),
]


@pytest.mark.parametrize("family,token,kind", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_token_families_are_scrubbed_without_a_label(family, token, kind):
    """In free text (no secret word, no KEY=) and as a JSON value under a neutral key: the family rule
    itself has to find it."""
    s = Scrubber()
    out = s.scrub_text(f"then run it with {token} today")
    assert out == f"then run it with <{kind}_1> today", (family, out)
    value = s.scrub_value({"value": token, "note": f"copied {token}"})
    assert value == {"value": f"<{kind}_1>", "note": f"copied <{kind}_1>"}, (family, value)


def test_discord_webhook_token_is_scrubbed_and_its_id_kept():
    hook_id, token = _fake(18, string.digits), _fake(68, _ALNUM + "_-")
    out = Scrubber().scrub_text(f"POST https://discord.com/api/webhooks/{hook_id}/{token}")
    assert out == f"POST https://discord.com/api/webhooks/{hook_id}/<SECRET_DISCORD_WEBHOOK_1>"


def test_service_account_json_loses_its_private_key_as_text_and_as_arguments():
    """A GCP service-account key file, read by a tool (text, newlines JSON-escaped) or passed as a tool
    call's arguments (an object)."""
    key = _pem("PRIVATE KEY", 8)
    account = {"type": "service_account", "project_id": "demo-project", "private_key_id": _fake(40, _HEX),
               "private_key": key + "\n", "client_email": "svc@demo-project.iam.gserviceaccount.com",
               "client_id": _fake(21, string.digits)}
    body = key.split("\n")[1]
    s = Scrubber()
    text = s.scrub_text(json.dumps(account, indent=2))
    assert body not in text and account["private_key_id"] not in text, text
    assert "<SECRET_PRIVATE_KEY_1>" in text and '"type": "service_account"' in text
    obj = s.scrub_value(account)
    assert body not in json.dumps(obj) and obj["private_key"].startswith("<SECRET_")
    assert obj["project_id"] == "demo-project"


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
    # hashes, digests and ids next to secret words
    "token cache key sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae (docker digest)",
    "Merge 3f2a9c1d7e8b6a5f4c3d2e1f0a9b8c7d6e5f4a3b: rotate the secret loader",
    "auth request 6ba7b810-9dad-11d1-80b4-00c04fd430c8 failed; the api key's trace 6ba7b811-9dad-11d1-80b4-00c04fd430c8",
    ('"resolved": "https://registry.npmjs.org/js-tokens/-/js-tokens-4.0.0.tgz", '
    '"integrity": "sha1-GSA/tZmR35jjoocFDUZHzerzJJk="'),
    "auth avatar ![qr](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)",
    # long paths and identifiers in code, some holding a token family's prefix
    ("tokenizer at /opt/hf/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct/snapshots/"
    "12fd25f77366fa6b3b4b768ec3050bf629380bac/tokenizer.json"),
    "node_modules/@typescript-eslint/eslint-plugin/dist/rules/naming-convention-utils/parse-options.js has the token rule",
    "def test_github_pat_prefix_is_detected(npm_config_cache, hf_hub_download_kwargs): ...",
    "api_org_settings_v2 = load_secret_store(gsk_client_factory, r8_cache_dirname_for_models)",
    "models: pplx-7b-online, xai-grok-2-vision-1212; the api key is read from the env",
    "AuthTokenProviderFactory2ForTestsWithRetries and SecretManagerServiceClientV1Beta1",
    'password="yourpassword" in the sample; YOUR_API_KEY and your-token-here are placeholders',
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


# The credentials the example traces really hold (a password generator's outputs, a new account's
# password); ``benchmarks/bench_scrub.py`` prints the measured figures (its TRUE_SECRETS is this set).
EXAMPLE_SECRETS = {
    "password123",
    "a9B7$#fG3&Z1",
    "aB3#fG7!kL9@",
    "A1b2C3d4E5f6",
    "aBcD1234EfGh",
}


def test_false_positive_rate_on_the_example_traces_is_zero():
    """Every secret replacement on the repository's example traces (real agent sessions): each one is a
    credential they really hold, and the label-free rules add none (they hold no provider key). Sample
    code's ``password="yourpassword"`` (a template placeholder) stays."""
    s = Scrubber()
    n = 0
    for conv in iter_conversations([EXAMPLES], report=ValidationReport(), scrub=s):
        n += 1
        json.dumps(conversation_to_dict(conv))
    assert n > 200
    replaced = {original for (kind, original) in s._map if kind.startswith("SECRET_")}
    assert replaced == EXAMPLE_SECRETS  # false positives 0 of 5 values (13 occurrences)
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
