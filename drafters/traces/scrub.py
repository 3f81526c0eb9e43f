"""Scrub secrets and personal data from conversations before anything is stored in canonical form.

Every match is replaced by a stable typed placeholder: within one ``Scrubber`` (one ingestion run) the
same original always maps to the same placeholder (``<EMAIL_1>`` everywhere for one address), so the
drafter still sees that two mentions are the same thing, and re-ingesting gives the same text.
Originals are kept only in the in-memory map of the run; they are never logged or reported (the report
gets counts per type).

Categories (``ScrubConfig``): ``secrets`` (provider API keys, bearer tokens, PEM private keys, JWTs,
passwords in URLs, ``KEY=value`` / ``"password": "..."`` assignments with secret-like names) and
``personal`` (emails, home-directory user names incl. Claude Code's ``-Users-NAME-`` encoding, phone
numbers, IPv4/IPv6 addresses). Every text field of a conversation is scrubbed: text, reasoning (not
signatures: they are opaque and must stay byte-exact), tool-call raw arguments and parsed argument
values (kept consistent: the raw string, re-parsed, equals the scrubbed object), tool results and tool
definitions' descriptions.

Speed: patterns are precompiled and each is guarded by a cheap substring test, so text without, say,
an ``@`` never runs the email regex (goal: parse+normalize+scrub >= 10 MB/s per core, issue 3).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

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
    group: int = 0  # which group is the sensitive value (the rest of the match is kept)
    accept: Callable[[str], bool] | None = None  # extra check on the value (False = leave it)
    guard_lower: bool = False


def _valid_ipv4(value: str) -> bool:
    try:
        ip = ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified or str(ip) == "255.255.255.255")


def _valid_ipv6(value: str) -> bool:
    try:
        ip = ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified)


_BENIGN_VALUES = {"true", "false", "null", "none", "undefined", "required", "optional", "string", "str",
                  "your_api_key", "xxx", "xxxx", "****", "redacted", "changeme"}


def _secret_value(value: str) -> bool:
    """A value after a secret-like name that is worth scrubbing: not a number, bool, placeholder or
    variable reference (``max_tokens=4096``, ``token: ${TOKEN}``, ``password: <SECRET_1>`` stay)."""
    v = value.strip()
    if len(v) < 4 or v.lower() in _BENIGN_VALUES:
        return False
    if v[0] in "<${%(" or v.startswith("os.environ") or v.startswith("process.env"):
        return False
    if v.replace(".", "").replace("_", "").isdigit():
        return False
    if "(" in v or _DOTTED_IDENT.match(v) or _TYPE_NAME.match(v):
        return False  # code: token = get_token(), password = self.password
    return True


_TYPE_NAME = re.compile(r"^(?:[A-Z][a-z]+){2,}$")  # a type annotation: password: SecretStr
_DOTTED_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


_SECRET_NAME = (
    r"(?:[A-Za-z0-9]+[_.-])*(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|auth|credentials?|session[_-]?key)(?:[_.-][A-Za-z0-9]+)*"
)

_RULES: list[_Rule] = [
    # --- secrets: specific provider keys first (an Anthropic key also starts with "sk-")
    _Rule("SECRET_PRIVATE_KEY", "secrets",
          re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----", re.S),
          ("PRIVATE KEY-----",)),
    _Rule("SECRET_ANTHROPIC_KEY", "secrets", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), ("sk-ant-",)),
    _Rule("SECRET_STRIPE_KEY", "secrets", re.compile(r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"), ("k_live_", "k_test_")),
    _Rule("SECRET_OPENAI_KEY", "secrets",
          re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), ("sk-",)),
    _Rule("SECRET_AWS_KEY", "secrets", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
          ("AKIA", "ASIA", "ABIA", "ACCA")),
    _Rule("SECRET_GITHUB_TOKEN", "secrets",
          re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _Rule("SECRET_SLACK_TOKEN", "secrets", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), ("xox",)),
    _Rule("SECRET_GOOGLE_KEY", "secrets", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), ("AIza",)),
    _Rule("SECRET_HF_TOKEN", "secrets", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), ("hf_",)),
    _Rule("SECRET_JWT", "secrets",
          re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), ("eyJ",)),
    _Rule("SECRET_BEARER_TOKEN", "secrets",
          re.compile(r"\b[Bb]earer\s+([A-Za-z0-9._~+/-]{16,}=*)"), ("earer",), group=1,
          accept=lambda v: not v.startswith("<")),
    _Rule("SECRET_URL_PASSWORD", "secrets",
          re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@\"'\\<>]+:([^\s@/\"'\\<>]+)@"), ("://",), group=1),
    # "password": "...", 'api_key': '...', with or without JSON-in-JSON escaping of the quotes
    _Rule("SECRET_ASSIGNMENT", "secrets",
          re.compile(r"(?i)(?:\\?[\"'])" + _SECRET_NAME + r"(?:\\?[\"'])\s*:\s*(?:\\?[\"'])([^\"'\\\s]{4,})(?=\\?[\"'])"),
          ("pass", "pwd", "secret", "token", "key", "auth", "credential"), group=1, accept=_secret_value,
          guard_lower=True),
    # KEY=value, export KEY=value, key: value (env files, shell, YAML)
    _Rule("SECRET_ASSIGNMENT", "secrets",
          re.compile(r"(?i)(?<![A-Za-z0-9_])" + _SECRET_NAME + r"(?![A-Za-z0-9])\s*(?:=|:(?!//))[ \t]*(?:\\?[\"'])?([^\s\"'\\,;`)}\]]{4,})"),
          ("pass", "pwd", "secret", "token", "key", "auth", "credential"), group=1, accept=_secret_value,
          guard_lower=True),
    # --- personal data
    _Rule("EMAIL", "personal",
          re.compile(r"\b[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b"), ("@",)),
    _Rule("USER", "personal", re.compile(r"(?:/Users/|/home/|[A-Za-z]:\\\\?Users\\\\?)([A-Za-z0-9._-]+)"),
          ("/Users/", "/home/", "Users\\"), group=1,
          accept=lambda v: v not in ("Shared", "Public", "Default", "runner", "<")),
    _Rule("USER", "personal", re.compile(r"-(?:Users|home)-([A-Za-z0-9._]+)(?=-)"), ("-Users-", "-home-"),
          group=1),
    _Rule("PHONE", "personal",
          re.compile(r"(?<![\w+.-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)[ .-]?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w.-])"),
          ("",)),
    _Rule("IP", "personal", re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]|\.\d)"), (".",),
          accept=_valid_ipv4),
    _Rule("IP", "personal",
          re.compile(r"(?<![\w:])(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}|"
                     r"(?:[0-9A-Fa-f]{1,4}:){1,6}(?::[0-9A-Fa-f]{1,4}){1,6}|"
                     r"(?:[0-9A-Fa-f]{1,4}:){2,7}:)(?![\w:])"), ("::", ":"), accept=_valid_ipv6),
]


class Scrubber:
    """Replaces secrets and personal data with stable typed placeholders; counts replacements per type.

    One instance per ingestion run: the original -> placeholder map lives only in memory.
    """

    def __init__(self, config: ScrubConfig | None = None):
        self.config = config or ScrubConfig()
        self.rules = [r for r in _RULES
                      if r.category in self.config.categories and r.type not in self.config.disabled]
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

    def scrub_text(self, text: str) -> str:
        """``text`` with every match replaced (counts updated)."""
        if not text:
            return text
        lower: str | None = None
        for rule in self.rules:
            if rule.guards != ("",):
                if rule.guard_lower:
                    if lower is None:
                        lower = text.lower()
                    hay = lower
                else:
                    hay = text
                if not any(g in hay for g in rule.guards):
                    continue
            if rule.type == "PHONE" and not _has_digit_run(text):
                continue
            text = rule.regex.sub(lambda m, r=rule: self._replace(m, r), text)
            lower = None
        return text

    def _replace(self, m: re.Match[str], rule: _Rule) -> str:
        value = m.group(rule.group)
        if value is None:
            return m.group(0)
        if value.startswith("<") and value.endswith(">"):
            return m.group(0)  # already a placeholder
        if rule.type == "EMAIL" and m.group(1).lower() in self.config.keep_emails_at:
            return m.group(0)
        if rule.accept is not None and not rule.accept(value):
            return m.group(0)
        self.counts[rule.type] += 1
        ph = self.placeholder(rule.type, value)
        if rule.group == 0:
            return ph
        start, end = m.span(rule.group)
        base = m.start(0)
        whole = m.group(0)
        return whole[: start - base] + ph + whole[end - base:]

    def scrub_value(self, value: Any) -> Any:
        """A JSON value with every string (values and keys) scrubbed."""
        if isinstance(value, str):
            return self.scrub_text(value)
        if isinstance(value, dict):
            return {self.scrub_text(k) if isinstance(k, str) else k: self.scrub_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub_value(v) for v in value]
        return value

    def scrub_tool_call(self, part: ToolCallPart) -> ToolCallPart:
        """Scrub raw and parsed arguments consistently: ``json.loads(raw) == arguments`` afterwards
        whenever the arguments parsed before. If scrubbing the raw text and the parsed values disagree
        (a secret split by JSON escapes), the raw string is re-serialized from the scrubbed object."""
        total = self.counts
        self.counts = Counter()
        raw = self.scrub_text(part.raw_arguments)
        used = self.counts  # each occurrence is counted once: from the raw pass, unless raw is rebuilt
        args = part.arguments
        if args is not None:
            self.counts = Counter()
            scrubbed = self.scrub_value(args)
            if raw != part.raw_arguments or scrubbed != args:
                try:
                    reparsed = json.loads(raw)
                except ValueError:
                    reparsed = None
                if reparsed != scrubbed:
                    raw = compact_json(scrubbed)
                    used = self.counts
                args = scrubbed
        self.counts = total
        total.update(used)
        return ToolCallPart(id=part.id, name=part.name, arguments=args, raw_arguments=raw)

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
        return Message(message.role, parts, model=message.model, meta=message.meta)

    def scrub_tools(self, tools: list[ToolDef]) -> list[ToolDef]:
        return [ToolDef(t.name, self.scrub_text(t.description), self.scrub_value(t.parameters)) for t in tools]

    def scrub_conversation(self, conv: Conversation) -> Conversation:
        """A scrubbed copy of ``conv`` (messages, explicit calls' contexts and completions, tools).

        Messages shared between explicit calls are scrubbed once (memoized by identity), which keeps
        cassette conversations linear in size and counts each occurrence once.
        """
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


_DIGITS = re.compile(r"\d{3}")


def _has_digit_run(text: str) -> bool:
    return _DIGITS.search(text) is not None


def scrub_conversation(conv: Conversation, scrubber: Scrubber | None = None) -> Conversation:
    """Convenience: scrub one conversation with a fresh (or the given) Scrubber."""
    return (scrubber or Scrubber()).scrub_conversation(conv)


__all__ = ["ScrubConfig", "Scrubber", "scrub_conversation"]
