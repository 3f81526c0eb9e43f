"""Scrub secrets and personal data from conversations before anything is stored in canonical form.

Every match is replaced by a stable typed placeholder: within one ``Scrubber`` (one ingestion run) the
same original always maps to the same placeholder (``<EMAIL_1>`` everywhere for one address), so the
drafter still sees that two mentions are the same thing, and re-ingesting gives the same text.
Originals are kept only in the in-memory map of the run; they are never logged or reported (the report
gets counts per type).

Categories (``ScrubConfig``): ``secrets`` (provider API keys, bearer tokens, PEM private keys, JWTs,
passwords in URLs, ``KEY=value`` / ``"password": "..."`` assignments with secret-like names, passwords
written in prose ("my password is ..."), the
provider patterns of detect-secrets and the prefixed token families it misses, and random-looking tokens
near secret words whatever their syntax: ``drafters.traces.secret_detectors``) and
``personal`` (emails, home-directory user names incl. Claude Code's ``-Users-NAME-`` encoding, phone
numbers, IPv4/IPv6 addresses). Every text field of a conversation is scrubbed: text, reasoning (not
signatures: they are opaque and must stay byte-exact), tool-call raw arguments and parsed argument
values (kept consistent: the raw string, re-parsed, equals the scrubbed object), tool results and tool
definitions' descriptions.

Speed: patterns are precompiled and each is guarded by a cheap substring test, so text without, say,
an ``@`` never runs the email regex (goal: parse+normalize+scrub >= 10 MB/s per core).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    compact_json,
)
from drafters.traces.secret_detectors import PROVIDER_TOKENS, detector_patterns, high_entropy_spans
from drafters.traces.secret_values import (
    bare_password,
    is_secret_key,
    prose_password,
    secret_name,
    secret_value,
    valid_ipv4,
    valid_ipv6,
)


@dataclass
class ScrubConfig:
    """What to scrub. ``categories`` ⊆ {"secrets", "personal"}; ``disabled`` names single types to skip
    (e.g. {"IP"}); ``keep_emails_at`` lists domains left as they are (reserved example domains)."""

    categories: frozenset[str] = frozenset({"secrets", "personal"})
    disabled: frozenset[str] = frozenset()
    keep_emails_at: frozenset[str] = frozenset({"example.com", "example.org", "example.net"})


@dataclass
class _Rule:
    type: str  # placeholder type, e.g. "SECRET_OPENAI_KEY"
    category: str
    regex: re.Pattern[str]
    guards: tuple[str, ...]  # run the regex only if one of these substrings is present ("" = always)
    group: tuple[int, ...] = (0,)  # groups holding the sensitive value (first that matched; rest kept)
    accept: Callable[[str], bool] | None = None  # extra check on the value (False = leave it)
    guard_lower: bool = False
    left: str | None = None  # left-boundary check (see _LEFT_REJECT); "bearer" = preceded by B/b
    detector: bool = False  # a detect-secrets pattern: run only on the lines holding a guard (_line_matches)


# Patterns start with a literal where possible (Python's re then scans for it at C speed) and check
# the left boundary in Python (``left``) instead of a leading \b or look-behind, which would make the
# engine try the pattern at every position of the text.
_W = "word"  # no letter/digit/_ before the match
_RULES: list[_Rule] = [
    # --- secrets: specific provider keys first (an Anthropic key also starts with "sk-")
    # PEM private keys (PKCS#1/#8, EC, DSA, OpenSSH) and PGP private key blocks; a block cut before its
    # END line (``head id_rsa``) loses its base64 lines, the armor headers between them included.
    _Rule("SECRET_PRIVATE_KEY", "secrets",
          re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:"
                     r".*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|"
                     r"(?:(?:\r?\n|\\r?\\n)+(?:[A-Za-z0-9+/=]{16,}|(?:Version|Comment|Proc-Type|DEK-Info|Hash): "
                     r"[^\r\n\\]*))+)", re.DOTALL),
          ("PRIVATE KEY-----", "PRIVATE KEY BLOCK-----")),
    _Rule("SECRET_ANTHROPIC_KEY", "secrets", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}"), ("sk-ant-",), left=_W),
    _Rule("SECRET_STRIPE_KEY", "secrets", re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
          ("k_live_", "k_test_"), left=_W),
    _Rule("SECRET_OPENAI_KEY", "secrets", re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
          ("sk-",), left=_W),
    _Rule("SECRET_AWS_KEY", "secrets", re.compile(r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
          ("AKIA", "ASIA", "ABIA", "ACCA"), left=_W),
    _Rule("SECRET_GITHUB_TOKEN", "secrets", re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), left=_W),
    # Slack bot/user/app/config tokens (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-), refresh tokens (xoxe-)
    # and app-level tokens (xapp-).
    _Rule("SECRET_SLACK_TOKEN", "secrets", re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}"),
          ("xox", "xapp-"), left=_W),
    _Rule("SECRET_GOOGLE_KEY", "secrets", re.compile(r"AIza[0-9A-Za-z_-]{35}"), ("AIza",), left=_W),
    # Hugging Face user access tokens (hf_) and organization API tokens (api_org_).
    _Rule("SECRET_HF_TOKEN", "secrets", re.compile(r"(?:hf_|api_org_)[A-Za-z0-9]{30,}"), ("hf_", "api_org_"), left=_W),
    _Rule("SECRET_JWT", "secrets", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
          ("eyJ",), left=_W),
    _Rule("SECRET_BEARER_TOKEN", "secrets", re.compile(r"earer\s+([A-Za-z0-9._~+/-]{16,}=*)"), ("earer",),
          group=(1,), accept=lambda v: not v.startswith("<"), left="bearer"),
    _Rule("SECRET_URL_PASSWORD", "secrets", re.compile(r"://[^\s:/@\"'\\<>]+:([^\s@/\"'\\<>]+)@"), ("://",),
          group=(1,)),
    # KEY=value, export KEY=value, key: value, "password": "...", 'api_key': '...' (also with the quotes
    # escaped, as in JSON inside JSON): matched on the lower-cased text (no IGNORECASE: 10x faster), the
    # value taken from the original at the same offsets. See Scrubber._assignments.
    _Rule("SECRET_ASSIGNMENT", "secrets",
          re.compile(r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|key|auth|credentials?)"
                     r"(?:[_.-][a-z0-9]+)*(?![a-z0-9])(?:\\?[\"'])?[ \t]*(?:=|:(?!//))"
                     r"[ \t]*(?:(\\?[\"'])([^\"'\\\n]{4,})|([^\s\"'\\,;`)}\]]{4,}))"),
          ("pass", "pwd", "secret", "token", "key", "auth", "credential"), group=(2, 3), accept=secret_value,
          guard_lower=True, left="assign"),
    # A password in prose (after the assignments, which take "password: x" first): the word, then "is"/"was"/
    # "to"/":"/"=" (or "for/of/to <a few words> is"), then the value; or the value right after the word,
    # judged more strictly (bare_password). Matched on the lower-cased text, the value read from the original.
    _Rule("SECRET_PASSWORD", "secrets",
          re.compile(r"(?:password|passwd|passphrase|pwd)(?![a-z0-9_])(?:\s+(?:for|of|to)(?:\s+[\w.@-]+){1,4}?"
                     r"\s+(?:is|was)|\s+(?:is|was|to|will be|would be|should be)|\s*[:=])(?:\s*:)?[ \t]*[\"'`]?"
                     r"([^\s\"'`]{5,63}[^\s\"'`.,;:!?])"),
          ("passw", "passphrase", "pwd"), group=(1,), accept=prose_password, guard_lower=True, left=_W),
    _Rule("SECRET_PASSWORD", "secrets",
          re.compile(r"(?:password|passwd|passphrase|pwd)[ \t]+[\"'`]?([^\s\"'`]{7,63}[^\s\"'`.,;:!?])"),
          ("passw", "passphrase", "pwd"), group=(1,), accept=bare_password, guard_lower=True, left=_W),
    # (detect-secrets' provider patterns come next: _rules(); personal data after them)
]
_PERSONAL_RULES: list[_Rule] = [
    # --- personal data
    # Anchored at "@" (a literal: fast); the local part is found by scanning left (Scrubber._emails).
    _Rule("EMAIL", "personal", re.compile(r"@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b"), ("@",)),
    _Rule("USER", "personal", re.compile(r"/(?:Users|home)/([A-Za-z0-9._-]+)"), ("/Users/", "/home/"), group=(1,),
          accept=lambda v: v not in ("Shared", "Public", "Default", "runner")),
    _Rule("USER", "personal", re.compile(r"[A-Za-z]:\\\\?Users\\\\?([A-Za-z0-9._-]+)"), ("Users\\",), group=(1,),
          accept=lambda v: v not in ("Shared", "Public", "Default")),
    _Rule("USER", "personal", re.compile(r"-(?:Users|home)-([A-Za-z0-9._]+)(?=-)"), ("-Users-", "-home-"),
          group=(1,)),
    _Rule("PHONE", "personal",
          re.compile(r"(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)[ .-]?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w.-])"),
          ("",), left="phone"),
    # Anchored at the first "." (a literal); the first octet is found by scanning left (Scrubber._ipv4s).
    _Rule("IP", "personal", re.compile(r"\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w.])"), (".",), accept=valid_ipv4),
    _Rule("IP", "personal",
          re.compile(r"[0-9A-Fa-f]{1,4}:(?:[0-9A-Fa-f]{0,4}:){1,6}[0-9A-Fa-f]{0,4}(?![\w:])"), ("::",),
          accept=valid_ipv6, left="colon"),
]



@functools.cache
def _rules() -> tuple[_Rule, ...]:
    """Every rule in order: ours for secrets, detect-secrets' provider patterns and the token families they
    miss (``secret_detectors``; built on first use: importing detect-secrets' plugins takes most of a
    second), then personal data. Free-text tokens near secret words are handled after all rules
    (``Scrubber._high_entropy``)."""
    # No left-boundary check on detect-secrets' patterns: it matches "bot110201543:AAH..." inside a word too.
    detectors = [_Rule(p.type, "secrets", p.regex, p.guards, group=(p.group,), detector=True,
                       left=_W if p.left else None)
                 for p in (*detector_patterns(), *PROVIDER_TOKENS)]
    return (*_RULES, *detectors, *_PERSONAL_RULES)


_EMAIL_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
# Words that may run straight into a secret word in camelCase/lower names: apiKey, accesstoken, clientSecret.
_KEY_PREFIXES = ("api", "access", "private", "session", "client", "secret", "auth", "db", "bearer")
# A phone number has four digits after a separator; these literal-first searches are cheap prefilters.
_PHONE_PRE = (re.compile(r"-\d{4}(?![\w.-])"), re.compile(r"\.\d{4}(?![\w.-])"), re.compile(r" \d{4}(?![\w.-])"))
_CI_CACHE: dict[str, re.Pattern[str]] = {}


def _ci(regex: re.Pattern[str]) -> re.Pattern[str]:
    """The case-insensitive twin of ``regex`` (for texts whose lower-casing changes their length)."""
    out = _CI_CACHE.get(regex.pattern)
    if out is None:
        out = _CI_CACHE[regex.pattern] = re.compile(regex.pattern, re.IGNORECASE)
    return out


def _line_matches(regex: re.Pattern[str], text: str, guards: tuple[str, ...]) -> Iterator[re.Match[str]]:
    """Matches of ``regex`` on the lines of ``text`` that hold a guard, in order: detect-secrets' patterns
    are written for one line at a time (its scanner's unit), and several start with a character class
    that makes a scan of the whole text slow; lines keep the cost proportional to the guard hits."""
    lines: set[int] = set()
    for g in guards:
        i = text.find(g)
        while i >= 0:
            start = text.rfind("\n", 0, i) + 1
            lines.add(start)
            end = text.find("\n", i)
            i = text.find(g, end) if end >= 0 else -1
    for start in sorted(lines):
        end = text.find("\n", start)
        yield from regex.finditer(text, start, end if end >= 0 else len(text))


_LEFT_REJECT = {  # characters that must not precede a match of a rule with that ``left``
    "word": lambda c: c.isalnum() or c == "_",
    "alnum": lambda c: c.isalnum(),
    "phone": lambda c: c.isalnum() or c in "_+.-",
    "dot": lambda c: c.isalnum() or c in "_.",
    "colon": lambda c: c.isalnum() or c in "_:",
}


class Scrubber:
    """Replaces secrets and personal data with stable typed placeholders; counts replacements per type.

    One instance per ingestion run: the original -> placeholder map lives only in memory.
    """

    def __init__(self, config: ScrubConfig | None = None):
        self.config = config or ScrubConfig()
        self.rules = [r for r in _rules()
                      if r.category in self.config.categories and r.type not in self.config.disabled]
        self._checks = [(r, None if r.guards == ("",) else r.guards) for r in self.rules]
        self._entropy = "secrets" in self.config.categories and "SECRET_HIGH_ENTROPY" not in self.config.disabled
        self._cache: dict[str, str] | None = None  # original -> scrubbed, prefilled per conversation
        self.counts: Counter[str] = Counter()
        self._map: dict[tuple[str, str], str] = {}
        self._next: Counter[str] = Counter()

    def placeholder(self, type_: str, original: str) -> str:
        key = (type_, original)
        ph = self._map.get(key)
        if ph is None:
            self._next[type_] += 1
            ph = self._map[key] = f"<{type_}_{self._next[type_]}>"
        return ph

    def replaced(self) -> list[tuple[str, str]]:
        """Every (placeholder type, original value) replaced so far, in first-seen order."""
        return list(self._map)

    def scrub_text(self, text: str) -> str:
        """``text`` with every match replaced (counts updated)."""
        if not text or len(text) < 6:
            return text
        if self._cache is not None:
            cached = self._cache.get(text)
            if cached is not None:
                return cached
        lower: str | None = None
        for rule, guards in self._checks:
            hay = text
            if guards is not None:
                if rule.guard_lower:
                    if lower is None:
                        lower = text.lower()
                    hay = lower
                if len(guards) == 1:
                    if guards[0] not in hay:
                        continue
                elif not any(g in hay for g in guards):
                    continue
            elif rule.type == "PHONE" and not any(p.search(text) for p in _PHONE_PRE):
                continue
            regex = rule.regex
            if rule.guard_lower and len(hay) != len(text):  # lower() changed lengths (rare scripts)
                regex, hay = _ci(rule.regex), text
            pieces: list[str] = []
            pos = 0
            matches = _line_matches(regex, hay, guards) if rule.detector and guards else regex.finditer(hay)
            for m in matches:
                hit = self._match(rule, m, text)
                if hit is None or hit[0] < pos:
                    continue
                pieces.append(text[pos : hit[0]])
                pieces.append(hit[2])
                pos = hit[1]
            if pieces:
                pieces.append(text[pos:])
                text = "".join(pieces)
                lower = None
        if self._entropy:
            text = self._high_entropy(text)
        return text

    def _high_entropy(self, text: str) -> str:
        """``text`` with random-looking tokens near secret words replaced by ``<SECRET_HIGH_ENTROPY_n>``
        (``drafters.traces.secret_detectors.high_entropy_spans``)."""
        spans = high_entropy_spans(text)
        if not spans:
            return text
        pieces: list[str] = []
        pos = 0
        for start, end in spans:
            pieces.append(text[pos:start])
            pieces.append(self._count("SECRET_HIGH_ENTROPY", text[start:end]))
            pos = end
        pieces.append(text[pos:])
        return "".join(pieces)

    def _match(self, rule: _Rule, m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        """(start, end, replacement) in ``text`` for a regex match (found in ``text`` or its lower-cased
        copy, same offsets), or None when the match is rejected."""
        start, end = m.span()
        kind = rule.type
        if kind == "EMAIL":  # the regex matched "@domain": extend left over the local part
            i = start
            while i > 0 and text[i - 1] in _EMAIL_LOCAL:
                i -= 1
            if i == start or m.group(1).lower() in self.config.keep_emails_at:
                return None
            return i, end, self._count(kind, text[i:end])
        if kind == "IP" and rule.accept is valid_ipv4:  # matched ".b.c.d": extend left over the first octet
            i = start
            while i > 0 and start - i < 3 and text[i - 1].isdigit():
                i -= 1
            if i == start or (i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_.")):
                return None
            value = text[i:end]
            return (i, end, self._count(kind, value)) if valid_ipv4(value) else None
        if rule.left is not None and start > 0:
            before = text[start - 1]
            if rule.left == "bearer":
                if before not in "Bb" or (start > 1 and text[start - 2].isalnum()):
                    return None
            elif rule.left == "assign":
                if before.isalnum() and not m.string[max(0, start - 8) : start].endswith(_KEY_PREFIXES):
                    return None
            elif _LEFT_REJECT[rule.left](before):
                return None
        elif rule.left == "bearer":
            return None
        if rule.left == "assign" and not secret_name(text, start):
            return None  # STORAGE_KEY = 'vue-todo-list', sort_key: ...: a key that is not a credential
        group = next((g for g in rule.group if m.group(g) is not None), None)
        if group is None:
            return None
        g_start, g_end = m.span(group)
        if rule.left == "assign" and group == 3:
            while g_end - g_start > 4 and text[g_end - 1] in ".," and (g_end == len(text) or text[g_end].isspace()):
                g_end -= 1  # "your password: hunter22." -- the sentence's full stop is not part of it
        value = text[g_start:g_end]
        if value.startswith("<") and value.endswith(">"):
            return None  # already a placeholder
        if rule.accept is not None and not rule.accept(value):
            return None
        return g_start, g_end, self._count(kind, value)

    def _count(self, kind: str, value: str) -> str:
        self.counts[kind] += 1
        return self.placeholder(kind, value)

    def scrub_value(self, value: Any) -> Any:
        """A JSON value with every string (values and keys) scrubbed; a string value under a secret-like
        key (``{"password": "..."}``) is replaced whole (the text rules cannot see key and value together)."""
        if isinstance(value, str):
            return self.scrub_text(value)
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if isinstance(k, str):
                    if isinstance(v, str) and "secrets" in self.config.categories and \
                            "SECRET_ASSIGNMENT" not in self.config.disabled and is_secret_key(k) and \
                            secret_value(v) and not (v.startswith("<") and v.endswith(">")):
                        self.counts["SECRET_ASSIGNMENT"] += 1
                        out[self.scrub_text(k)] = self.placeholder("SECRET_ASSIGNMENT", v)
                        continue
                    k = self.scrub_text(k)
                out[k] = self.scrub_value(v)
            return out
        if isinstance(value, list):
            return [self.scrub_value(v) for v in value]
        return value

    def scrub_tool_call(self, part: ToolCallPart) -> ToolCallPart:
        """Scrub parsed and raw arguments consistently: afterwards ``json.loads(raw) == arguments``
        whenever the arguments parsed before.

        The parsed object is the reference (JSON escapes such as ``\\n`` or ``\\u0040`` can hide a
        match in the raw text). When it changed, the raw text is scrubbed too and kept if it re-parses
        to the scrubbed object (the logged formatting survives); otherwise the raw string is
        re-serialized from the scrubbed object. Invalid-JSON arguments are scrubbed as text.
        """
        args = part.arguments
        if args is None:
            return ToolCallPart(part.id, part.name, None, self.scrub_text(part.raw_arguments))
        scrubbed = self.scrub_value(args)
        if scrubbed == args:
            return part if type(part) is ToolCallPart else ToolCallPart(part.id, part.name, args, part.raw_arguments)
        total = self.counts
        self.counts = Counter()  # the raw pass finds the same occurrences: count them once
        raw = self.scrub_text(part.raw_arguments)
        self.counts = total
        try:
            consistent = json.loads(raw) == scrubbed
        except ValueError:
            consistent = False
        if not consistent:
            raw = compact_json(scrubbed)
        return ToolCallPart(id=part.id, name=part.name, arguments=scrubbed, raw_arguments=raw)

    def scrub_message(self, message: Message) -> Message:
        parts = []
        for p in message.parts:
            if isinstance(p, TextPart):
                p = TextPart(self.scrub_text(p.text))
            elif isinstance(p, ReasoningPart):
                p = ReasoningPart(self.scrub_text(p.text), signature=p.signature, redacted=p.redacted)
            elif isinstance(p, ToolCallPart):
                p = self.scrub_tool_call(p)
            elif isinstance(p, ToolResultPart):
                p = ToolResultPart(p.call_id, self.scrub_text(p.content), p.is_error, p.name)
            parts.append(p)
        return Message(message.role, parts, model=message.model, meta=message.meta,
                       supervised=message.supervised, failed=message.failed)

    def scrub_tools(self, tools: list[ToolDef]) -> list[ToolDef]:
        return [ToolDef(t.name, self.scrub_text(t.description), self.scrub_value(t.parameters)) for t in tools]

    def scrub_conversation(self, conv: Conversation) -> Conversation:
        """A scrubbed copy of ``conv`` (messages, explicit calls' contexts and completions, tools).

        Messages shared between explicit calls are scrubbed once (memoized by identity), which keeps
        cassette conversations linear in size and counts each occurrence once.
        """
        self._prefill(conv)
        try:
            return self._scrub_conversation(conv)
        finally:
            self._cache = None

    def _prefill(self, conv: Conversation) -> None:
        """Scrub every string of the conversation in one pass over their concatenation (joined by a
        separator no rule matches across), so the per-string cost of ~20 rules is paid once per
        conversation instead of once per field; results go to ``_cache`` for the per-field pass."""
        strings: list[str] = []
        add = strings.append
        seen_msgs: set[int] = set()

        def walk(value: Any) -> None:
            if isinstance(value, str):
                add(value)
            elif isinstance(value, dict):
                for k, v in value.items():
                    if isinstance(k, str):
                        add(k)
                        if isinstance(v, str) and is_secret_key(k):
                            continue  # replaced whole by scrub_value
                    walk(v)
            elif isinstance(value, list):
                for v in value:
                    walk(v)

        def msgs(ms: list[Message]) -> None:
            for m in ms:
                if id(m) in seen_msgs:
                    continue
                seen_msgs.add(id(m))
                for p in m.parts:
                    if isinstance(p, (TextPart, ReasoningPart)):
                        add(p.text)
                    elif isinstance(p, ToolResultPart):
                        add(p.content)
                    elif isinstance(p, ToolCallPart):
                        if p.arguments is None:
                            add(p.raw_arguments)
                        else:
                            walk(p.arguments)

        msgs(conv.messages)
        for c in conv.explicit_calls or ():
            msgs(c.context)
            msgs([c.completion])
        for t in conv.tools:
            add(t.description)
            walk(t.parameters)
        strings = [x for x in strings if len(x) >= 6]
        if not strings:
            self._cache = {}
            return
        before = self.counts.copy()
        joined = self.scrub_text(_SEP.join(strings))
        out = joined.split(_SEP)
        if len(out) != len(strings):  # a match crossed a separator: scrub field by field instead
            self.counts = before
            self._cache = None
            return
        self._cache = dict(zip(strings, out))

    def _scrub_conversation(self, conv: Conversation) -> Conversation:
        memo: dict[int, Message] = {}

        def sm(m: Message) -> Message:
            out = memo.get(id(m))
            if out is None:
                out = memo[id(m)] = self.scrub_message(m)
            return out

        tool_memo: dict[int, list[ToolDef]] = {}

        def st(tools: list[ToolDef]) -> list[ToolDef]:
            out = tool_memo.get(id(tools))
            if out is None:
                out = tool_memo[id(tools)] = self.scrub_tools(tools)
            return out

        calls = None
        if conv.explicit_calls is not None:
            calls = [LLMCall(c.conversation_id, c.index, st(c.tools), [sm(m) for m in c.context], sm(c.completion))
                     for c in conv.explicit_calls]
        return Conversation(id=conv.id, source=conv.source, tools=st(conv.tools),
                            messages=[sm(m) for m in conv.messages], explicit_calls=calls)


_SEP = "\n\x00\n"  # joins a conversation's strings for one scrub pass; no rule matches across it


def scrub_conversation(conv: Conversation, scrubber: Scrubber | None = None) -> Conversation:
    """Convenience: scrub one conversation with a fresh (or the given) Scrubber."""
    return (scrubber or Scrubber()).scrub_conversation(conv)


__all__ = ["ScrubConfig", "Scrubber", "scrub_conversation"]
