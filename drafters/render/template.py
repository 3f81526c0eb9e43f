"""The chat template: which one (the tokenizer's or the user's, read bytes-exact) and its compiled fast
path, byte-identical to ``tokenizer.apply_chat_template(..., tokenize=False)``."""

from __future__ import annotations

import os
from typing import Any

from drafters.render.records import RenderError


class _FastTemplate:
    """The chat template compiled once and called directly, on the inputs `apply_chat_template` would build.

    transformers' ``apply_chat_template(tokenize=False)`` (5.x: ``render_jinja_template`` in
    ``transformers.utils.chat_template_utils``) drops None-valued message keys, rebuilds every input from
    plain JSON types (``_plain_template_data``), aliases the reasoning fields and renders its cached template
    (its own sandboxed Jinja environment and filters) with the special-tokens map plus the template kwargs.
    Doing that on every render deep-copies the whole context twice per call; here the messages are converted
    once per conversation (`Renderer._to_dicts`) and the same compiled template renders them, so the text is
    byte-identical. `Renderer` checks that on its probe renders and falls back to ``apply_chat_template``
    on any difference.
    """

    def __init__(self, compiled, plain, alias, kwargs: dict[str, Any]):
        self.compiled = compiled
        self.plain = plain
        self.alias = alias
        self.kwargs = kwargs

    @classmethod
    def create(cls, tokenizer, template: str, template_kwargs: dict[str, Any]) -> _FastTemplate | None:
        """The fast path for this tokenizer and template, or ``None`` when transformers lacks the pieces."""
        try:
            from transformers.utils import chat_template_utils as ctu

            plain = ctu._plain_template_data
            alias = ctu._alias_reasoning_fields
            # Same name resolution (a template name in a dict of templates) and compile cache as
            # apply_chat_template; ``tools`` only matters when no template is given, never the case here.
            compiled = ctu._compile_jinja_template(tokenizer.get_chat_template(template))
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


def _resolve_template(tokenizer, chat_template: str | None) -> str:
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
