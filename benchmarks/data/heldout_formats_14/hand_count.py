"""Hand counts of the fourteenth held-out set (benchmarks/data/heldout_formats_14/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

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
- (from set 8) reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that
  reply (it is one call); the completion text recorded here is the reply without that span.
Rules made explicit for this set:
- independent rollouts / episodes recorded side by side (one per line or per key), each with its own task input,
  are separate conversations, even where they share a system prompt; none is dropped as a repeat;
- an action the model writes only as plain text inside its reply (a ReAct ``Action: search[...]`` line) with no
  structured tool-call record anywhere in the file is not counted as a tool call; where the harness records the
  model's action as a structured tool call of its own (a ``tool_calls`` list parsed from the reply), each entry of
  that record counts as one tool call;
- a reply that holds ``</think>`` without a leading ``<think>`` (the opening tag was in the prompt template) is kept
  whole as the completion text (the set-8 rule strips only a leading ``<think>...</think>`` span);
- context roles are written as the file records them (``developer`` stays ``developer``; a tool result that the
  harness feeds back as a plain ``user`` message stays ``user``); a structured tool-output item is written ``tool``.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_14/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)
# the reply text inside a Python repr of an OpenAI ChatCompletion: content='...' or content="..."
_REPR_CONTENT = re.compile(r"message=ChatCompletionMessage\(content=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|None)")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class _Thread:
    """Accumulates one thread: ``out`` adds model output to the open call (opening one if the last record was
    input), ``inp`` adds an input record (closing the open call)."""

    def __init__(self, head: list | None = None) -> None:
        self.ctx: list = list(head or [])
        self.completions: list = []
        self.contexts: list = []
        self.tools = 0
        self._open = False

    def out(self, text: str = "", tools: int = 0) -> None:
        if not self._open:
            self.completions.append("")
            self.contexts.append(list(self.ctx))
            self.ctx.append("assistant")
            self._open = True
        self.completions[-1] += text
        self.tools += tools

    def inp(self, role: str) -> None:
        self.ctx.append(role)
        self._open = False


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def nemo_gym_rollouts(path: Path) -> dict:
    """NeMo Gym rollouts JSONL (``example_rollouts.jsonl`` written by NeMo Gym's rollout collection: one rollout per
    line, ``{responses_create_params: {input: [messages], tools}, response: {id, model, output: [items], ...},
    reward, ...}``; ``response.output`` holds the model's items (``message`` / ``function_call`` / ``reasoning``)
    interleaved with the ``function_call_output`` items the agent fed back). Each line is its own rollout with its
    own task: one conversation per line. The context of the first call is the roles of ``input`` (here
    ``developer`` + ``user`` or ``user`` alone; no ``instructions``). Each run of model items with no
    ``function_call_output`` between them is one call (parallel ``function_call`` items are one call); each
    ``function_call_output`` is a ``tool`` input. The completion text is the ``output_text`` parts of its
    ``message`` items (empty for a call made only of function calls); each ``function_call`` item is one tool
    call."""
    threads = []
    for rec in _lines(path):
        t = _Thread([m.get("role") or m.get("type") for m in rec["responses_create_params"]["input"]])
        for item in rec["response"]["output"]:
            kind = item.get("type")
            if kind == "function_call_output":
                t.inp("tool")
            elif kind == "function_call":
                t.out("", 1)
            elif kind == "message":
                t.out("".join(p.get("text", "") for p in item.get("content") or []
                              if p.get("type") == "output_text"))
            else:  # reasoning and other model items belong to the open call
                t.out("")
        threads.append(t)
    return _merge("NeMo Gym rollouts JSONL", threads)


def _repr_reply(original_response: str) -> str:
    m = _REPR_CONTENT.search(original_response)
    if not m or m.group(1) == "None":
        return ""
    return ast.literal_eval(m.group(1))


def areal_geo_edit_steps(path: Path) -> dict:
    """AReaL geo_edit agent step log (``output.jsonl`` of a qualitative example on AReaL's ``lcy/image_edit``
    branch: one LLM step per line, ``{step, observation: [messages sent], action: {text, tool_calls: [{id, name,
    args}]}, thinking_process, output_text, function_call, extra_info: {original_response, tokens_*, ...}}``).
    Each line is one call: its context is the roles of ``observation`` (as recorded: the task and each tool result
    come back as ``user`` messages, earlier replies as ``assistant``), its reply is the message content inside
    ``extra_info.original_response`` (a Python repr of the ChatCompletion; each reply reappears verbatim as the
    ``assistant`` message of the next step's observation), kept whole (it has ``</think>`` but no leading
    ``<think>``). Each later observation continues the previous one with its reply: one conversation per file.
    Tool calls: the entries of ``action.tool_calls`` (the harness's structured record of the ``<action>`` the
    model wrote; one per tool step, none on the final answer step)."""
    t = _Thread()
    calls = []
    for rec in _lines(path):
        calls.append(([m["role"] for m in rec["observation"]], _repr_reply(rec["extra_info"]["original_response"]),
                      len((rec.get("action") or {}).get("tool_calls") or [])))
    for ctx, reply, tools in calls:
        t.ctx = list(ctx)
        t._open = False
        t.out(reply, tools)
    return _merge("AReaL geo_edit agent step log JSONL", [t])


def fireact_trajs(path: Path) -> dict:
    """FireAct trajectory JSON (``trajs/*.json`` written by FireAct's ``generation.py``: an object keyed by HotpotQA
    question index, each ``{reward, em, f1, gt, pred, prompt, traj: [{role, content}]}``; ``prompt`` is empty for
    this fine-tuned model, so no system / few-shot prompt is recorded). Each key is its own question: one
    conversation per key. Each ``assistant`` message is one call (no two are adjacent) whose context is the roles
    before it in ``traj``; its ``content`` (``Thought: ...\\nAction: ...``) is the completion. The ReAct actions
    (``search[...]``, ``lookup[...]``, ``finish[...]``) are plain text in the reply and the observations come back
    as ``user`` messages; the file has no structured tool-call record, so tool calls are 0 (rule above). Subset:
    every tenth key of the original file, in file order."""
    threads = []
    for entry in json.loads(path.read_text(encoding="utf-8")).values():
        t = _Thread(["system"] if entry.get("prompt") else [])
        for m in entry["traj"]:
            if m["role"] == "assistant":
                t.out(_THINK.sub("", m.get("content") or "", count=1))
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("FireAct trajectory JSON", threads)


COUNTERS = {
    "nemo-gym-rollouts": nemo_gym_rollouts,
    "areal-geo-edit-steps": areal_geo_edit_steps,
    "fireact-trajs": fireact_trajs,
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
