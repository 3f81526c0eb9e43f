"""Render canonical LLM calls into token ids, loss masks and per-token segment labels, exactly as served.

A drafter learns what the target generates in the context the target saw. This module renders every call
with the target's own chat template (or one the user gives), through transformers' sandboxed Jinja
environment (the text of `tokenizer.apply_chat_template(..., tokenize=False)`, byte for byte; its compiled
template is called directly, see `_FastTemplate`), passing `tools=` and the template
options the serving engine (SGLang / vLLM OpenAI endpoint) would pass, then tokenizes the text the way the
engine does (`add_special_tokens=False`). See docs/dspark.md 3.2 for what DeepSpec does and why agent traces
need more, and docs/traces.md "Rendering and loss-mask traps" for the public failures guarded against here.

How the supervised span is found (never a regex on one template):

- ``prompt = render(context, add_generation_prompt=True)`` and ``full = render(context + [assistant])``;
  ``full`` must start with ``prompt`` byte for byte, and the completion is ``full[len(prompt):]``.
- Inside the completion the assistant's own strings (reasoning, text, tool-call names and arguments in the
  form the template wrote them) are located in order; the gaps are structure. The end-of-turn token is the
  first end-of-turn marker after the last piece (found by a probe render: the first added token after an
  assistant turn's content). Text after it (e.g. ChatML's trailing newline) is template markup: the engine
  stops at the end-of-turn token, the model never generates it. A template that writes no end token of its
  own (GLM) hands over with the next message's role token (``<|observation|>`` before tool results,
  ``<|user|>`` after an answer): the model generates it, so it ends the answer and is supervised
  (PrimeIntellect-ai/prime-rl#2644).
- A generation prompt that opens reasoning (MiniMax-M2, DeepSeek-V3.2 thinking) makes the answer start
  inside it; one that writes an empty block (thinking off) makes it start after; a template that rewrites
  history once an answer follows (gpt-oss drops earlier analysis) still gives the text after the served
  prompt (``calls``). Turn ends are told from message ends (gpt-oss ``<|return|>``/``<|call|>`` vs
  ``<|end|>``); templates whose behaviour rows cannot represent (gpt-oss renders one call per turn) refuse
  the calls concerned with a code.
- Tool-call arguments are located as one JSON value, or key by key and value by value when the template
  writes them as pairs (GLM's ``<arg_key>``/``<arg_value>``); inline ``<think>...</think>`` in the content
  is reasoning. Generated text is labelled by the same rule (``generated``), its calls found by the markup
  probing learned (``markup``: indexed markers such as Kimi-K2's ``functions.NAME:IDX`` included).
- Tool-call ids are given in the form that pairs each call with its result in the render (Mistral's nine
  alphanumerics, Kimi-K2's ``functions.NAME:IDX``); a template whose results name ids its calls do not
  show is counted under ``tool_call_ids_unpaired``.
- Text the template injects (an empty ``<think>\\n\\n</think>\\n\\n`` that Qwen3 writes into the last turn
  when the message has no reasoning) is detected by probing the template's reasoning wrapper and is
  masked out (NVIDIA-NeMo/Automodel#3739).

Packing: when a conversation is append-only and the prompt of every call is a byte-exact prefix of the
final render, and every completion appears unchanged at that place, the conversation is one sequence with
every assistant turn supervised. Otherwise (the template rewrites history: stripped reasoning, rewritten
ids) each call is its own row (verl-project/verl#6854). `Renderer.report` says how many of each and why.

Modules: ``renderer`` (`Renderer`, the entry point), ``template`` (which template, applied byte-exact),
``probe`` (what the template supports: `Dialect`), ``messages`` (canonical messages as template dicts),
``calls`` (one call's prompt and labelled completion), ``labels`` (training labels and loss masks),
``packing`` (packed and per-call rows), ``generated`` (labels of generated tokens, for evaluation),
``markup`` (the tool-call markup learned by probing, and calls found in generated text by it),
``codec`` (tokenization with offsets), ``records`` (the types). Callers import from ``drafters.render``.
"""

from drafters.render.messages import tools_to_openai
from drafters.render.records import RenderedPrompt, RenderedSequence, RenderError, RenderReport
from drafters.render.renderer import Renderer
from drafters.segments import SUPERVISED, Segment

__all__ = [
    "SUPERVISED",
    "RenderError",
    "RenderReport",
    "RenderedPrompt",
    "RenderedSequence",
    "Renderer",
    "Segment",
    "tools_to_openai",
]
