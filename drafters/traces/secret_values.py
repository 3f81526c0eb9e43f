"""Which strings are secrets, and which only look like one: the value tests the scrubber's rules call
(drafters/traces/scrub.py). A rule's regex finds a candidate; these decide whether its value is a secret
(random-looking, not a version, path, placeholder, code name or e-mail) and whether a name or key is a
secret's name. Pure functions over strings."""

from __future__ import annotations

import functools
import ipaddress
import itertools
import re


def valid_ipv4(value: str) -> bool:
    try:
        ip = ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified or str(ip) == "255.255.255.255")


def valid_ipv6(value: str) -> bool:
    try:
        ip = ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified)


_BENIGN_VALUES = {"true", "false", "null", "none", "undefined", "required", "optional", "string", "str",
                  "your_api_key", "xxx", "xxxx", "****", "redacted", "changeme",
                  # type names and keywords: schemas and code, not credentials
                  "number", "integer", "boolean", "object", "array", "error", "lambda", "function", "password",
                  "secretstr", "bytes", "float"}


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def secret_name(text: str, start: int) -> bool:
    """Whether the name whose secret word starts at ``start`` (``STORAGE_KEY``, ``DB_PASSWORD``, ``KEY``) names
    a credential: ``is_secret_key``, or made of secret words only (a bare ``KEY=`` or ``TOKEN:``)."""
    i, j = start, start
    while i > 0 and text[i - 1] in _NAME_CHARS and start - i < 64:
        i -= 1
    while j < len(text) and text[j] in _NAME_CHARS and j - start < 64:
        j += 1
    name = text[i:j].strip("-.")
    if is_secret_key(name):
        return True
    words = _WORDS.findall(_CAMEL.sub(r"\1_\2", name).lower())
    return bool(words) and all(w in _SECRET_WORDS or w == "key" for w in words)


def secret_value(value: str) -> bool:
    """A value after a secret-like name that is worth scrubbing: not a number, bool, placeholder or
    variable reference (``max_tokens=4096``, ``token: ${TOKEN}``, ``password: <SECRET_1>`` stay)."""
    v = value.strip()
    if len(v) < 4 or v.lower() in _BENIGN_VALUES:
        return False
    if v[0] in "<${%(,;)]}" or v.startswith(("os.environ", "process.env", "data:")):  # data: a data URI
        return False
    if v.replace(".", "").replace("_", "").isdigit() or _placeholder(v):
        return False
    # code, not a value: token = get_token(), password = self.password
    return not ("(" in v or _DOTTED_IDENT.match(v) or _TYPE_NAME.match(v) or _CODE_NAME.match(v))


_NOT_IN_PROSE_PASSWORD = frozenset("(){}[]<>\\`")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+[a-z0-9-]*$", re.IGNORECASE)
_HYPHENATED = re.compile(r"^[a-z][a-z0-9]*(?:[-_.][a-z][a-z0-9]*)+$")  # sha256-hashed, utf-8, read_only
_EMAILISH = re.compile(r"^[^@\s]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$")


def _classes(v: str) -> tuple[int, int]:
    """(how many of lower case, upper case, digits and symbols ``v`` holds, how often the class changes
    from one character to the next): ``Zq8#pM48`` (4, 7) against ``Manager2`` (3, 2)."""
    def cls(c: str) -> int:
        return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3

    kinds = [cls(c) for c in v]
    return len(set(kinds)), sum(a != b for a, b in itertools.pairwise(kinds))


def prose_password(value: str) -> bool:
    """A value after "password is", "password for the db was", "password:" in prose that is a password: 6
    to 64 characters with a letter and a digit or symbol, never a word, version, path, URL,
    email address, code (brackets, braces, backticks) or what ``secret_value`` leaves (placeholders,
    variables, type names). Keeps "password is required", "password is sha256-hashed", "password v2.1.0"."""
    v = value
    if not (6 <= len(v) <= 64) or not secret_value(v) or _NOT_IN_PROSE_PASSWORD & set(v):
        return False
    if "://" in v or v[0] in "/~." or _EMAILISH.match(v) or _VERSION.match(v) or _HYPHENATED.match(v):
        return False
    return any(c.isalpha() for c in v) and any(not c.isalpha() for c in v)


def bare_password(value: str) -> bool:
    """A value straight after the word ("password Zq8#pM48p6Ax4V!v", no "is" or ":" between): a
    ``prose_password`` that also mixes three character classes, changing class at least three times, in
    8 or more characters (``password Manager2`` or ``password reset2`` stay)."""
    kinds, changes = _classes(value)
    return len(value) >= 8 and kinds >= 3 and changes >= 3 and prose_password(value)


_PLACEHOLDER_ENDS = ("password", "passwd", "passphrase", "pass", "pwd", "secret", "token", "key", "apikey",
                     "credential", "credentials")
_PLACEHOLDER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def _placeholder(value: str) -> bool:
    """A template's stand-in for a credential, not a value: ``yourpassword``, ``your_api_key``,
    ``YOUR-TOKEN-HERE`` ("your", then name characters, ending in a secret word, optionally "here").
    The one false positive ``benchmarks/bench_scrub.py`` found on the example traces (sample code's
    ``password="yourpassword"``)."""
    v = value.lower()
    if not v.startswith("your") or len(v) > 48 or not set(v) <= _PLACEHOLDER_CHARS:
        return False
    v = v.removesuffix("here").rstrip("_-")
    return v.endswith(_PLACEHOLDER_ENDS)


_TYPE_NAME = re.compile(r"^(?:[A-Z][a-z]+){2,}$")  # a type annotation: password: SecretStr
# Names in code, not values: getSession, current_phase / your_bot_token, API_KEY (a variable or column).
_CODE_NAME = re.compile(r"^(?:[a-z]+(?:[A-Z][a-z]+)+|[a-z]+(?:_[a-z]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)$")
_DOTTED_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


_KEYWORD = (r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
            r"client[_-]?secret|auth|credentials?|session[_-]?key)")
_SECRET_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "pass", "secret", "token", "apikey",
                           "credential", "credentials", "auth"})
_KEY_OWNERS = frozenset({"api", "access", "private", "session", "secret", "client"})
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_WORDS = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Is a JSON object key a secret's name? Split into words (snake, kebab, dotted, camelCase):
    DB_PASSWORD, apiKey, x-auth-token, client_secret yes; max_tokens, monkey, key no."""
    if len(key) > 64:
        return False
    words = _WORDS.findall(_CAMEL.sub(r"\1_\2", key).lower())
    for i, w in enumerate(words):
        if w in _SECRET_WORDS:
            return True
        if w == "key" and i > 0 and words[i - 1] in _KEY_OWNERS:
            return True
    return False
