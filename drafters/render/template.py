"""The chat template: which one (the tokenizer's or the user's, read bytes-exact) and how it is applied,
byte-identical to ``tokenizer.apply_chat_template(..., tokenize=False)`` with the options a serving engine
passes, through a compiled fast path when transformers provides the pieces."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from typing import Any

from drafters.errors import TracedraftError
from drafters.render.messages import tools_to_openai
from drafters.render.records import RenderError
from drafters.traces.model import ToolDef


class FastTemplate:
    """The chat template compiled once and called directly, on the inputs `apply_chat_template` would build.

    transformers' ``apply_chat_template(tokenize=False)`` (5.x: ``render_jinja_template`` in
    ``transformers.utils.chat_template_utils``) drops None-valued message keys, rebuilds every input from
    plain JSON types (``_plain_template_data``), aliases the reasoning fields and renders its cached template
    (its own sandboxed Jinja environment and filters) with the special-tokens map plus the template kwargs.
    Doing that on every render deep-copies the whole context twice per call; here the messages are converted
    once per conversation (`drafters.render.messages.to_dicts`) and the same compiled template renders them,
    so the text is byte-identical. `ChatTemplate` checks that on the probe renders and falls back to
    ``apply_chat_template`` on any difference.
    """

    def __init__(self, compiled, plain, alias, kwargs: dict[str, Any]):
        self.compiled = compiled
        self.plain = plain
        self.alias = alias
        self.kwargs = kwargs

    @classmethod
    def create(cls, tokenizer, template: str, template_kwargs: dict[str, Any]) -> FastTemplate | None:
        """The fast path for this tokenizer and template, or ``None`` when transformers lacks the pieces."""
        try:
            from transformers.utils import chat_template_utils as ctu

            plain = ctu._plain_template_data
            alias = ctu._alias_reasoning_fields
            # Same name resolution (a template name in a dict of templates) and environment as
            # apply_chat_template, compiled once here in an overlay of it (``_dict_first``); ``tools`` only
            # matters when no template is given, never the case here.
            text = tokenizer.get_chat_template(template)
            compiled = _dict_first(ctu._compile_jinja_template(text).environment).from_string(text)
            kwargs = plain({**tokenizer.special_tokens_map, **template_kwargs})
        except Exception:  # noqa: BLE001 - any missing or changed internal: use apply_chat_template
            return None
        return cls(compiled, plain, alias, kwargs)

    def prepare(self, message: dict[str, Any]) -> dict[str, Any]:
        """One message as the template sees it: no None values, plain JSON types only, reasoning aliased
        (``thinking`` and ``reasoning_content``). Idempotent: aliasing an aliased message changes nothing
        (same keys, order and values), so ``apply_chat_template`` renders prepared messages identically."""
        return self.alias([self.plain({k: v for k, v in message.items() if v is not None})])[0]

    def render(self, messages: list[dict], tools: list[dict] | None, generation: bool, prepared: bool) -> str:
        if not prepared:
            messages = [self.prepare(m) for m in messages]
            tools = self.plain(tools)
        return self.compiled.render(
            messages=messages, tools=tools, documents=None, add_generation_prompt=generation, **self.kwargs,
        )


_DICT_ATTRS = frozenset(dir(dict))


def _dict_first(env):
    """An overlay of transformers' sandboxed environment (same filters, globals, extensions and sandbox
    rules) whose attribute lookup reads a plain dict's key directly. Jinja's ``message.role`` first tries
    ``getattr(dict, "role")``, which raises, then ``message["role"]``: the raised and caught AttributeError
    was about a third of the render time. A key is read this way only when ``dict`` has no attribute of
    that name, exactly when the sandbox would have fallen back to the key, so renders are identical (and
    `ChatTemplate` checks that on the probe renders)."""
    overlay = env.overlay()
    sandbox_getattr = overlay.getattr

    def getattr_(obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRS:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return sandbox_getattr(obj, attribute)

    overlay.getattr = getattr_
    return overlay


def resolve_template(tokenizer, chat_template: str | None) -> str:
    """The template text: ``chat_template`` itself, the file it names (read bytes-exact), or the tokenizer's
    own (its ``tool_use`` variant when it has several). Raises RenderError(code="no_chat_template")."""
    if chat_template is None:
        t = getattr(tokenizer, "chat_template", None)
        if isinstance(t, dict):
            t = t.get("tool_use") or t.get("default") or next(iter(t.values()), None)
        if not t:
            raise RenderError("no_chat_template", "the tokenizer has no chat template and none was given",
                              where="chat_template")
        return t
    if "{" not in chat_template and os.path.isfile(chat_template):
        with open(chat_template, encoding="utf-8", newline="") as f:
            return f.read()
    return chat_template


class ChatTemplate:
    """One chat template applied as the serving engine applies it.

    Args:
        tokenizer: a transformers tokenizer (its ``apply_chat_template`` is the reference rendering).
        chat_template: template text, a path to a template file, or ``None`` for the tokenizer's own.
        template_kwargs: template options passed as a serving engine would (``chat_template_kwargs``).
        warnings: the render report's warning counter; ``fast_render_differs`` is counted there.

    ``verify_fast`` (set while probing) compares every fast render with ``apply_chat_template``; any
    difference turns the fast path off for good (a transformers version that renders differently).

    Raises:
        RenderError(code="no_chat_template"): neither the tokenizer nor the caller provides a template.
    """

    def __init__(self, tokenizer, chat_template: str | None, template_kwargs: dict | None, warnings: Counter):
        self.tokenizer = tokenizer
        self.text: str = resolve_template(tokenizer, chat_template)
        self.sha256: str = hashlib.sha256(self.text.encode("utf-8")).hexdigest()
        self.kwargs: dict[str, Any] = dict(template_kwargs or {})
        self.warnings = warnings
        self.fast = FastTemplate.create(tokenizer, self.text, self.kwargs)
        self.verify_fast = False
        self._tools_cache: dict[int, tuple[Any, list[dict] | None]] = {}

    def apply(self, messages: list[dict[str, Any]], tools: list[dict] | None, generation: bool,
              prepared: bool = False) -> str:
        """Render ``messages`` to text, byte-identical to ``tokenizer.apply_chat_template(..., tokenize=False)``.

        ``prepared`` says the messages come from `to_dicts` and ``tools`` from `tools_for` (already the
        plain, None-free data transformers would build), so the fast path renders them without copying.
        Raises RenderError(code="template_error") when the template raises.
        """
        fast = self.fast
        if fast is not None:
            try:
                text = fast.render(messages, tools, generation, prepared)
            except TracedraftError:
                raise
            except Exception as e:  # jinja2 TemplateError, TypeError, ... from template code
                raise RenderError("template_error", f"chat template raised {type(e).__name__}: {e}") from e
            if not self.verify_fast:
                return text
            if text == self.apply_slow(messages, tools, generation):
                return text
            self.fast = None
            self.warnings["fast_render_differs"] += 1
        return self.apply_slow(messages, tools, generation)

    def apply_slow(self, messages: list[dict[str, Any]], tools: list[dict] | None, generation: bool) -> str:
        """The reference rendering: ``tokenizer.apply_chat_template``. Raises RenderError(template_error)."""
        try:
            return self.tokenizer.apply_chat_template(
                messages,
                tools=tools,
                chat_template=self.text,
                tokenize=False,
                add_generation_prompt=generation,
                **self.kwargs,
            )
        except TracedraftError:
            raise
        except Exception as e:  # jinja2 TemplateError, TypeError, ... from template code
            raise RenderError("template_error", f"chat template raised {type(e).__name__}: {e}") from e

    def try_apply(self, messages: list[dict], tools: list[dict] | None, generation: bool) -> str | None:
        """`apply`, or ``None`` when the template raises (probe renders)."""
        try:
            return self.apply(messages, tools, generation)
        except RenderError:
            return None

    def prepare(self, message: dict[str, Any]) -> dict[str, Any]:
        """One message in the plain form the template sees (`FastTemplate.prepare`); as is without the fast
        path (``apply_chat_template`` prepares it)."""
        return self.fast.prepare(message) if self.fast is not None else message

    def new_conversation(self) -> None:
        """Forget the converted tools lists (a tools list edited in place between conversations is seen)."""
        self._tools_cache.clear()

    def tools_for(self, tools: list[ToolDef]) -> list[dict] | None:
        """``tools_to_openai(tools)`` in the plain form the template sees, converted once per tools list
        within one conversation (see `new_conversation`)."""
        key = id(tools)
        hit = self._tools_cache.get(key)
        if hit is not None and hit[0] is tools:
            return hit[1]
        out = tools_to_openai(tools)
        if self.fast is not None:
            out = self.fast.plain(out)
        self._tools_cache[key] = (tools, out)  # holds ``tools`` so its id is not reused
        return out
