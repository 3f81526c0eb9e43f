"""Hand counts of the thirty-fifth held-out set (benchmarks/data/heldout_formats_35/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the eighth set's):
- a thinking / reasoning part belongs to the reply it precedes; a reply streamed or split over several records with
  no new input between them (no user, tool-result or system record) is one call;
- text the model writes after it has seen a tool result is a new call;
- a branch the tool marks as discarded (not on the active path) is not counted;
- tool calls are the client-executed calls the model emitted (function / tool_use / toolCall parts and the like);
  calls the provider ran server-side during generation are not counted;
- LLM calls a file only mentions (a usage-ledger entry, a count printed in a tool result) without recording their
  context and reply are not counted;
- a conversation is a thread of calls in which each later call's context continues an earlier call's context and
  reply; single-shot calls recorded side by side with unrelated contexts are separate conversations;
- an LLM call recorded only through fields parsed out of its reply (a judge's extracted score) counts as mentioned,
  not recorded, and is not counted;
- an assistant record with no content at all whose stop reason is an error (the request failed before the model
  produced anything) is a failed request, not a call, and is left out of later contexts as well.
The rule set 8 made explicit, kept:
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span.
Rules made explicit for this set:
- a cache entry of an LLM call (a cached request with its reply) is a recorded call: its recorded prompt is its
  context, its stored reply its completion. Only what the entry records is the context: a system prompt or retrieved
  passages the tool added without storing them are not invented here.
- two calls made for the same user question (a keyword-extraction call and the answering call) are separate
  conversations when neither call's recorded context holds the other's reply (the shared conversation rule).
- a continuation ("gleaning") call whose recorded context is an earlier call's prompt and reply followed by a new
  user turn belongs to that earlier call's conversation when that earlier call is itself recorded in the same file.
Context roles: as the file records them; a prompt recorded as one bare string (no role) is written ``user``.

Run: ``python benchmarks/data/heldout_formats_35/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _split_history(prompt: str) -> tuple[list, str] | None:
    """A LightRAG continuation prompt: a JSON list of ``{role, content}`` messages (the history sent with the call)
    followed by the new user text. None when the prompt is a plain string."""
    if not prompt.startswith("[{"):
        return None
    try:
        history, end = json.JSONDecoder().raw_decode(prompt)
    except json.JSONDecodeError:
        return None
    if not isinstance(history, list) or not all(isinstance(m, dict) and "role" in m for m in history):
        return None
    return history, prompt[end:]


def lightrag_llm_response_cache(path: Path) -> dict:
    """LightRAG (HKUDS) ``kv_store_llm_response_cache.json``, the JSON key-value store of its LLM response cache,
    written by ``JsonKVStorage`` in the working directory. Two layouts, both read here: the older one nests entries
    under a mode key (``{"default": {<hash>: entry}, "naive": {...}, "local": {...}, "global": {...},
    "hybrid": {...}}``), the newer one is flat with keys ``<mode>:<cache_type>:<hash>``. Each entry is
    ``{return, cache_type, original_prompt, ...}``: ``return`` is the model's reply, ``original_prompt`` the prompt
    the cache recorded, ``cache_type`` one of ``extract`` (entity extraction over a document chunk), ``keywords``
    (keyword extraction from a user question) and ``query`` (the answer to a user question).

    Every entry is one call whose completion is ``return`` (a leading ``<think>...</think>`` span is the reply's
    reasoning and is left out of the completion text). Context: a plain ``original_prompt`` is one user message
    (for ``keywords`` / ``query`` entries the question alone: the system prompt with the retrieved knowledge that
    the answering call was sent is not stored, and is not invented). An extraction continuation ("gleaning") entry
    stores its prompt as a JSON list of the history messages (the first pass's user prompt and reply) followed by
    the new user text: its context is those roles plus ``user``; when the history's user prompt and reply are the
    ``original_prompt`` and ``return`` of another entry in the file, the continuation joins that entry's
    conversation (here every continuation does). Every other entry is its own single-call conversation (a
    ``keywords`` call and the ``query`` call for the same question do not hold each other's reply). No tool
    calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if all(isinstance(v, dict) and "return" not in v for v in data.values()):
        entries = [e for group in data.values() for e in group.values()]
    else:
        entries = list(data.values())
    plain = {}
    for i, e in enumerate(entries):
        if _split_history(e.get("original_prompt") or "") is None:
            plain[(e["original_prompt"], e["return"])] = i
    conv_of = {}
    contexts, completions = [], []
    for i, e in enumerate(entries):
        prompt = e.get("original_prompt") or ""
        split = _split_history(prompt)
        if split is None:
            contexts.append(["user"])
            conv_of[i] = i
        else:
            history, _rest = split
            contexts.append([m["role"] for m in history] + ["user"])
            users = [m["content"] for m in history if m["role"] == "user"]
            replies = [m["content"] for m in history if m["role"] == "assistant"]
            key = (users[0], replies[0]) if users and replies else None
            conv_of[i] = conv_of.get(plain[key], plain[key]) if key in plain else i
        completions.append(_THINK.sub("", e.get("return") or "", count=1))
    return _result("LightRAG kv_store_llm_response_cache.json", len(set(conv_of.values())), completions, contexts, 0)


def graphrag_cache_entry(path: Path) -> dict:
    """Microsoft GraphRAG pipeline cache entry (one file per LLM call under ``<root>/cache/<workflow>/``, written
    by its JSON pipeline cache; the original files have no extension, renamed ``.json`` here). Two layouts:
    GraphRAG 0.x ``{result: <reply text>, input: <prompt text>, parameters: {model, ...}}`` and GraphRAG 1.x / 2.x
    ``{result: <OpenAI ChatCompletion>, input: {messages: [{role, content}], parameters}, key}``.

    One file is one call and one conversation. Context: the 0.x ``input`` string is one user message; the 2.x
    ``input.messages`` roles as recorded (here a single user message in each file; no history). Completion: the 0.x
    ``result`` string, or the 2.x ``result.choices[0].message.content`` (one choice each). Tool calls: the 2.x
    message's ``tool_calls`` (null here); none in 0.x."""
    d = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(d["result"], str):
        return _result("GraphRAG cache entry (0.x, text)", 1, [d["result"]], [["user"]], 0)
    msg = d["result"]["choices"][0]["message"]
    return _result("GraphRAG cache entry (1.x/2.x, ChatCompletion)", 1, [msg.get("content") or ""],
                   [[m["role"] for m in d["input"]["messages"]]], len(msg.get("tool_calls") or []))


COUNTERS = {
    "lightrag": lightrag_llm_response_cache,
    "graphrag": graphrag_cache_entry,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
