"""Secret detection that does not depend on a label: detect-secrets' provider rules and an entropy check.

Three sources complement the hand-written rules of ``drafters.traces.scrub``:

1. ``detector_patterns()``: the provider patterns of Yelp's detect-secrets (its ``denylist`` regexes,
   read from the installed plugins, so they follow that project's updates). Patterns the scrubber
   already covers with its own typed rule (AWS access key ids, GitHub, Slack bot tokens, Stripe, JWT,
   PEM private keys, URL passwords) are skipped; the keyword-style ones (``cloudant_password = ...``)
   are left to the scrubber's assignment rule and to (3).
2. ``PROVIDER_TOKENS``: prefixed token families that neither detect-secrets 1.5 nor the typed rules
   cover (npm, Azure AD client secrets, Shopify, DigitalOcean, Databricks, Groq, xAI, Vault, ...), in the
   formats of gitleaks' rules and the providers' documentation.
3. ``high_entropy_spans(text)``: a token that looks random (Shannon entropy per character, letters mixed
   with digits or ``+/``, not made of dictionary-like runs) within a few characters of a secret word
   ("secret", "password", "token", "api key", "aws", ...), whatever the syntax around it: "I used the AWS
   secret wJalr...KEY for the upload" or an access key id next to its secret. The same idea as
   detect-secrets' high-entropy plugins (which only look inside quoted strings) and gitleaks' generic
   rule (keyword plus entropy).

Values that carry meaning stay: hexadecimal strings (hashes, git SHAs, UUIDs) are left unless a strong
secret word stands right before them (``api token 5f4d...``) and no hash word does; base64 data URIs,
subresource-integrity hashes, file paths (``looks_like_path``) and blobs over ``MAX_TOKEN`` characters are
never touched.

Pure Python (no torch/numpy): ``drafters.traces`` must stay light.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class DetectorPattern:
    """One provider pattern: placeholder ``type``, compiled ``regex``, the group holding the value (0 =
    whole match) and ``guards`` (substrings one of which must be present for the regex to run)."""

    type: str
    regex: re.Pattern[str]
    group: int
    guards: tuple[str, ...]
    left: bool = False  # the match must not follow a letter, digit or "_" (checked by the scrubber)


# detect-secrets plugin class -> {pattern index: (placeholder type, value group, guards)}.
# Indices follow the plugin's ``denylist`` order (detect-secrets 1.5); a plugin or index missing from the
# installed version is skipped, so an upgrade can only add coverage through the ones still listed.
_FROM_DETECT_SECRETS: dict[str, dict[int, tuple[str, int, tuple[str, ...]]]] = {
    "AWSKeyDetector": {1: ("SECRET_AWS_SECRET_KEY", 1, ("aws", "AWS", "Aws"))},
    "AzureStorageKeyDetector": {0: ("SECRET_AZURE_STORAGE_KEY", 0, ("AccountKey=",))},
    "ArtifactoryDetector": {0: ("SECRET_ARTIFACTORY_TOKEN", 0, ("AKC",))},
    "CloudantDetector": {
        2: ("SECRET_CLOUDANT_PASSWORD", 1, ("cloudant.com",)),
        3: ("SECRET_CLOUDANT_PASSWORD", 1, ("cloudant.com",)),
    },
    "DiscordBotTokenDetector": {0: ("SECRET_DISCORD_TOKEN", 0, ("",))},
    "GitLabTokenDetector": {
        0: ("SECRET_GITLAB_TOKEN", 0, ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-")),
        1: ("SECRET_GITLAB_TOKEN", 0, ("GR1348941",)),
        2: ("SECRET_GITLAB_TOKEN", 0, ("glcbt-",)),
        3: ("SECRET_GITLAB_TOKEN", 0, ("glimt-",)),
        4: ("SECRET_GITLAB_TOKEN", 0, ("glptt-",)),
        5: ("SECRET_GITLAB_TOKEN", 0, ("glagent-",)),
        6: ("SECRET_GITLAB_TOKEN", 0, ("gloas-",)),
    },
    "MailchimpDetector": {0: ("SECRET_MAILCHIMP_KEY", 0, ("-us",))},
    "NpmDetector": {0: ("SECRET_NPM_TOKEN", 1, ("_authToken",))},
    "PypiTokenDetector": {0: ("SECRET_PYPI_TOKEN", 0, ("pypi-",)), 1: ("SECRET_PYPI_TOKEN", 0, ("pypi-",))},
    "SendGridDetector": {0: ("SECRET_SENDGRID_KEY", 0, ("SG.",))},
    "SlackDetector": {1: ("SECRET_SLACK_WEBHOOK", 0, ("hooks.slack.com",))},
    "SoftlayerDetector": {1: ("SECRET_SOFTLAYER_KEY", 1, ("softlayer.com",))},
    "SquareOAuthDetector": {0: ("SECRET_SQUARE_OAUTH", 0, ("sq0csp-",))},
    # A bot token's secret half starts with "AA" (Telegram Bot API tokens as issued).
    "TelegramBotTokenDetector": {0: ("SECRET_TELEGRAM_TOKEN", 0, (":AA",))},
    "TwilioKeyDetector": {0: ("SECRET_TWILIO_KEY", 0, ("AC",)), 1: ("SECRET_TWILIO_KEY", 0, ("SK",))},
}


@functools.cache
def detector_patterns() -> tuple[DetectorPattern, ...]:
    """The detect-secrets provider patterns used by the scrubber (see ``_FROM_DETECT_SECRETS``).

    Raises ImportError when detect-secrets is not installed (it is a dependency of tracedraft).
    """
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins = {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}
    out: list[DetectorPattern] = []
    for name, wanted in _FROM_DETECT_SECRETS.items():
        cls = plugins.get(name)
        if cls is None:
            continue
        denylist = list(getattr(cls(), "denylist", ()) or ())
        for index, (type_, group, guards) in sorted(wanted.items()):
            if index < len(denylist):
                regex = denylist[index]
                out.append(DetectorPattern(type_, regex, group if group <= regex.groups else 0, guards))
    return tuple(out)


def _family(type_: str, pattern: str, *guards: str, group: int = 0) -> DetectorPattern:
    return DetectorPattern(type_, re.compile(pattern), group, guards, left=True)


#: Prefixed token families missing from detect-secrets 1.5 and from the scrubber's typed rules. Each
#: starts with its fixed prefix and is matched on the lines holding its guard (a part of the prefix: one
#: ``in`` scan per guard and text is most of the scrubber's cost, so families share one where they can),
#: not after a letter, digit or "_" (``test_github_pat_prefix`` and ``npm_config_cache`` are names, not
#: tokens). Bodies take at least the documented length, so a longer copy is replaced whole.
PROVIDER_TOKENS: tuple[DetectorPattern, ...] = (
    # npm access tokens (granular and classic, ``npm token create``): npm_ + 36 alphanumerics. detect-
    # secrets only finds them after ``//registry/:_authToken=`` in an .npmrc.
    _family("SECRET_NPM_TOKEN", r"npm_[A-Za-z0-9]{36,}", "npm_"),
    # Azure AD (Entra ID) application client secrets: 3 characters, a digit, "Q~", 31-34 more.
    _family("SECRET_AZURE_CLIENT_SECRET", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", "Q~"),
    # Shopify access tokens: admin API (shpat_), custom app (shpca_), private app (shppa_), shared
    # secret (shpss_) + 32 hex digits.
    _family("SECRET_SHOPIFY_TOKEN", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32,}", "shp"),
    # DigitalOcean personal access (dop_v1_), OAuth (doo_v1_) and refresh (dor_v1_) tokens + 64 hex.
    _family("SECRET_DIGITALOCEAN_TOKEN", r"do[opr]_v1_[a-f0-9]{64,}", "_v1_"),
    # Databricks personal access tokens: dapi + 32 hex digits (and an optional -<n> suffix).
    _family("SECRET_DATABRICKS_TOKEN", r"dapi[a-f0-9]{32,}(?:-\d)?", "dapi"),
    # Linear API keys: lin_api_ + 40 alphanumerics.
    _family("SECRET_LINEAR_KEY", r"lin_api_[A-Za-z0-9]{40,}", "lin_api_"),
    # Postman API keys: PMAK- + 24 hex + "-" + 34 hex.
    _family("SECRET_POSTMAN_KEY", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34,}", "PMAK-"),
    # Grafana Cloud API tokens (glc_ + base64) and service account tokens (glsa_ + 32 + _ + 8 hex).
    _family("SECRET_GRAFANA_TOKEN", r"glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
            "glc_", "glsa_"),
    # HashiCorp Vault service (hvs.) and batch (hvb.) tokens.
    _family("SECRET_VAULT_TOKEN", r"hv[sb]\.[A-Za-z0-9_-]{90,}", "hvs.", "hvb."),
    # Pulumi access tokens: pul- + 40 hex digits.
    _family("SECRET_PULUMI_TOKEN", r"pul-[a-f0-9]{40,}", "pul-"),
    # Doppler tokens: personal (dp.pt.), service (dp.st.), service account (dp.sa.), CLI (dp.ct.), SCIM and
    # audit tokens, + 40-44 alphanumerics.
    _family("SECRET_DOPPLER_TOKEN", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", "dp."),
    # New Relic user API keys: NRAK- + 27 upper-case alphanumerics.
    _family("SECRET_NEWRELIC_KEY", r"NRAK-[A-Z0-9]{27,}", "NRAK-"),
    # Groq API keys: gsk_ + 52 alphanumerics.
    _family("SECRET_GROQ_KEY", r"gsk_[A-Za-z0-9]{52,}", "gsk_"),
    # Replicate API tokens: r8_ + 37 alphanumerics.
    _family("SECRET_REPLICATE_TOKEN", r"r8_[A-Za-z0-9]{37,}", "r8_"),
    # xAI (Grok) API keys: xai- + 80 alphanumerics.
    _family("SECRET_XAI_KEY", r"xai-[A-Za-z0-9]{80,}", "xai-"),
    # Perplexity API keys: pplx- + 48 alphanumerics.
    _family("SECRET_PERPLEXITY_KEY", r"pplx-[A-Za-z0-9]{48,}", "pplx-"),
    # age encryption secret keys: AGE-SECRET-KEY-1 + 58 bech32 characters.
    _family("SECRET_AGE_KEY", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", "AGE-SECRET-KEY-1"),
    # Docker Hub personal access tokens: dckr_pat_ + 27 characters.
    _family("SECRET_DOCKERHUB_TOKEN", r"dckr_pat_[A-Za-z0-9_-]{27,}", "dckr_pat_"),
    # Tailscale API, auth, OAuth client, SCIM and webhook keys: tskey-<kind>-<id>-<secret>.
    _family("SECRET_TAILSCALE_KEY", r"tskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}",
            "tskey-"),
    # Supabase management API tokens: sbp_ + 40 hex digits.
    _family("SECRET_SUPABASE_TOKEN", r"sbp_[a-f0-9]{40,}", "sbp_"),
    # Atlassian (Jira, Confluence, Bitbucket) API tokens: ATATT3 + 186 characters.
    _family("SECRET_ATLASSIAN_TOKEN", r"ATATT3[A-Za-z0-9_=-]{186,}", "ATATT3"),
    # Stripe webhook signing secrets: whsec_ + 32 or more characters (keys: SECRET_STRIPE_KEY in scrub).
    _family("SECRET_STRIPE_KEY", r"whsec_[A-Za-z0-9+/]{32,}", "whsec_"),
    # Square access tokens (sq0atp-; detect-secrets has the OAuth secret sq0csp- only).
    _family("SECRET_SQUARE_TOKEN", r"sq0atp-[A-Za-z0-9_-]{22,}", "sq0atp-"),
    # Sentry organization (sntrys_ + base64) and user (sntryu_ + 64 hex) auth tokens.
    _family("SECRET_SENTRY_TOKEN", r"sntrys_[A-Za-z0-9+/=_-]{40,}|sntryu_[a-f0-9]{64}", "sntry"),
    # Notion integration tokens: ntn_ + 11 digits + 35 alphanumerics.
    _family("SECRET_NOTION_TOKEN", r"ntn_[0-9]{11}[A-Za-z0-9]{35,}", "ntn_"),
    # Discord webhook URLs: the token after /api/webhooks/<id>/ (the id is kept).
    DetectorPattern("SECRET_DISCORD_WEBHOOK",
                    re.compile(r"discord(?:app)?\.com/api/webhooks/\d+/([A-Za-z0-9_-]{60,})"), 1, ("/api/webhooks/",)),
)


# --- high-entropy tokens near secret words ----------------------------------------------------------------

MIN_TOKEN = 20  # shorter random strings are too often ids, short hashes or words
MAX_TOKEN = 512  # longer runs are blobs (images, encoded files), not credentials
WINDOW = 40  # characters between the secret word and the token (either side)

#: Secret words, matched on the lower-cased text ("api key", "access_key", "x-auth-token" all contain one).
#: Literals only (Python's re scans them fast); "key" inside a longer word is dropped by ``_is_word_key``.
SECRET_WORDS = re.compile(r"secret|passw|passphrase|pwd|token|key|credential|auth|aws|bearer")
_GUARDS = ("secret", "passw", "passphrase", "pwd", "token", "key", "credential", "auth", "aws", "bearer")
#: Words that make a hexadecimal value a secret (checked right before it) ...
_STRONG_WORDS = re.compile(
    r"(?:secret|passw\w*|token|api[ _-]?key|credential|private[ _-]?key|"
    r"access[ _-]?key)[\s\"':=,]*(?:is|was|:|=)?[\s\"'=:]*$"
)
#: ... unless one of these says what it is.
_HASH_WORDS = re.compile(r"sha|md5|hash|digest|checksum|commit|rev|uuid|(?<![a-z])id(?![a-z])|etag|nonce")
_TOKEN = re.compile(rf"[A-Za-z0-9+/_-]{{{MIN_TOKEN},}}={{0,2}}")
_HEX = re.compile(r"[0-9a-fA-F-]+")
_LOWER_RUN = re.compile(r"[a-z]{4,}")
_BLOB_PREFIXES = ("base64,", "sha256-", "sha384-", "sha512-", "sha1-")


def shannon_entropy(value: str) -> float:
    """Shannon entropy of the characters of ``value`` in bits per character (0 for an empty string)."""
    n = len(value)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def entropy_floor(length: int) -> float:
    """The entropy (bits per character) a token of ``length`` characters must reach to count as random:
    ``log2(length) - 0.7`` capped at 4.5 (a random 40-character base64 string scores about 4.8, a 20-
    character one about 4.1; camelCase identifiers and English score lower once the word check runs)."""
    return min(4.5, math.log2(max(length, 2)) - 0.7)


def looks_random(token: str) -> bool:
    """Whether a non-hexadecimal ``token`` looks like a random credential: both cases of letters, a digit
    or ``+``/``/``, entropy over ``entropy_floor`` and at most 40% of it in lower-case runs of four or
    more letters (identifiers and paths are mostly such runs: ``context7CompatibleLibraryID``)."""
    body = token.rstrip("=")
    if not (any(c.isupper() for c in body) and any(c.islower() for c in body)):
        return False
    if not any(c.isdigit() or c in "+/" for c in body):
        return False
    if sum(len(r) for r in _LOWER_RUN.findall(body)) > 0.4 * len(body):
        return False
    return shannon_entropy(body) >= entropy_floor(len(body))


def looks_like_path(token: str) -> bool:
    """Whether a token holding ``/`` is a file path or URL path rather than base64: three or more
    segments, two of them lower-case words (``/opt/hf/hub/models--X/snapshots/<sha>/tokenizer``). A
    base64 secret has a ``/`` every 64 characters on average and random segments."""
    segments = token.split("/")
    return len(segments) >= 3 and sum(1 for s in segments if len(s) >= 3 and s.isalpha() and s.islower()) >= 2


def has_secret_word(lower: str) -> bool:
    """Cheap prefilter: whether the lower-cased text contains any secret word at all."""
    return any(g in lower for g in _GUARDS)


_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_TOKEN_CHARS = _RUN_CHARS | {"="}


def _counts(m: re.Match[str]) -> bool:
    """Whether a secret-word match counts: "key" only as a word of its own or after api/access/private
    (``api_key``, ``accessKey``), never inside "monkey" or "keyboard"."""
    if m.group() != "key":
        return True
    text, start, end = m.string, m.start(), m.end()
    if end < len(text) and text[end].isalpha():
        return False
    return (
        start == 0
        or not text[start - 1].isalpha()
        or text[max(0, start - 7) : start].endswith(("api", "access", "private", "secret"))
    )


def _word_hits(lower: str) -> list[tuple[int, int]]:
    """Sorted (start, end) of the secret words in ``lower`` that count (``_counts``). One ``str.find``
    loop per word: several times faster than the alternation regex on long texts."""
    hits: list[tuple[int, int]] = []
    for word in _GUARDS:
        i = lower.find(word)
        while i >= 0:
            m = SECRET_WORDS.match(lower, i)
            if m is not None and _counts(m):
                hits.append((i, i + len(word)))
            i = lower.find(word, i + len(word))
    hits.sort()
    return hits


def _regions(text: str, lower: str) -> list[tuple[int, int]]:
    """Merged ranges of ``text`` that may hold a token within ``WINDOW`` of a secret word, widened to
    whole runs of token characters (so a token is never cut), in order. Scanning only these keeps the
    cost proportional to the secret words, not to the text."""
    out: list[tuple[int, int]] = []
    n = len(text)
    for m_start, m_end in _word_hits(lower):
        lo, hi = max(0, m_start - WINDOW), min(n, m_end + WINDOW)
        while lo > 0 and text[lo - 1] in _TOKEN_CHARS and m_start - lo < WINDOW + MAX_TOKEN:
            lo -= 1
        while hi < n and text[hi] in _TOKEN_CHARS and hi - m_end < WINDOW + MAX_TOKEN:
            hi += 1
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _is_secret_token(text: str, lower: str, start: int, end: int) -> bool:
    """Whether the token ``text[start:end]`` is a secret (see ``high_entropy_spans``)."""
    token = text[start:end]
    if len(token) > MAX_TOKEN or (start > 0 and (text[start - 1] == "<" or text[start - 1] in _RUN_CHARS)):
        return False  # a placeholder, or the tail of a run cut by the region
    before = lower[max(0, start - WINDOW) : start]
    before = before[before.rfind("\x00") + 1 :]  # a conversation's fields are joined by NULs: stay in one
    if before.endswith(_BLOB_PREFIXES) or token.startswith(_BLOB_PREFIXES[1:]):
        return False
    if _HEX.fullmatch(token):
        # hashes, git SHAs, UUIDs: only a strong secret word right before makes them secret
        return bool(_STRONG_WORDS.search(before)) and not _HASH_WORDS.search(before[-24:])
    if not looks_random(token) or ("/" in token and looks_like_path(token)):
        return False
    after = lower[end : end + WINDOW].split("\x00", 1)[0]
    return any(_counts(w) for w in SECRET_WORDS.finditer(before)) or any(
        _counts(w) for w in SECRET_WORDS.finditer(after)
    )


def high_entropy_spans(text: str, lower: str | None = None) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` of ``text`` holding a random-looking token within ``WINDOW`` characters of a
    secret word (before or after it). ``lower`` is ``text.lower()`` when the caller has it (same length).

    Placeholders (``<SECRET_AWS_KEY_1>``) are never matched; an access key id already replaced by one
    counts as a secret word for its neighbour ("AKIA... wJalr..." -> both replaced).
    """
    if lower is None:
        lower = text.lower()
    if len(lower) != len(text):  # lower-casing changed lengths (rare scripts): no shared offsets
        lower = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    spans: list[tuple[int, int]] = []
    for lo, hi in _regions(text, lower):
        for m in _TOKEN.finditer(text, lo, hi):
            if _is_secret_token(text, lower, m.start(), m.end()):
                spans.append(m.span())
    return spans


__all__ = [
    "PROVIDER_TOKENS",
    "SECRET_WORDS",
    "DetectorPattern",
    "detector_patterns",
    "entropy_floor",
    "has_secret_word",
    "high_entropy_spans",
    "looks_like_path",
    "looks_random",
    "shannon_entropy",
]
