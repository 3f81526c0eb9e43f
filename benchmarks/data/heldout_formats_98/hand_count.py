"""Hand counts of the ninety-eighth held-out set (benchmarks/data/heldout_formats_98/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh set's):
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
Rules made explicit for this set (written before the product was run):
- a request / response record (the messages sent and the reply received, written once per request) is one call: the
  assistant and function / tool messages inside the messages sent are earlier turns replayed as context (their own
  contexts are not in that record), not calls of that record; the same request written twice in one record (a
  ``base_kwargs.messages`` copy beside ``messages``) is still one call;
- a reply printed twice by the same run (once as the raw API response object, once again by the agent loop) is one
  call: in a Co-Sight log only the agent loop's lines (``index: N, response:ChatCompletionMessage(...)`` and
  ``max_iteration response:ChatCompletionMessage(...)``) are counted, a ``response is ChatCompletion(...)`` line is
  the same reply printed first by the model client;
- a legacy OpenAI ``function_call`` in a reply is one tool call (client-executed: the agent runs the function and
  sends back a ``function`` message), as is each entry of ``tool_calls``;
- an LLM call a tool makes inside a tool (Co-Sight's audio-recognition tool, HuixiangDou's question-scoring and topic
  steps) whose prompt and reply are not printed is not counted; a verdict such as HuixiangDou's ``"reason": "query is
  not a question"`` is an outcome parsed from such a call: mentioned, not recorded;
- where a log prints the replies but not the prompts (Co-Sight), the calls are the printed replies and each call's
  context is the thread it belongs to (the earlier replies and tool outputs of that thread are in the log); the roles
  written below follow the order in which the tool's own code builds its message list at that commit;
- ids, timestamps, durations, token counts, model names, scores, file names of references and error codes are
  metadata, not context.
Context roles: as recorded; a ``function`` message (a function result) is written ``tool``; one ``tool`` per tool
result message; a prompt recorded only as the user's query is written ``user``.

Run: ``python benchmarks/data/heldout_formats_98/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

_REPLY = re.compile(r"^(?:index: \d+, response:|max_iteration response:)(ChatCompletionMessage\(.*\))\s*$")
_STEP_START = re.compile(r"^Starting execution of step (\d+)\s*$")
_STEP_END = re.compile(r"^\[\d\d:\d\d:\d\d\] Function 'act' called with args: (\d+):")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _role(role: str) -> str:
    return "tool" if role in ("function", "tool") else role


def cosight_gaia_log(path: Path) -> dict:
    """Co-Sight (ZTE-AICloud/Co-Sight) GAIA run log: the console output of one GAIA task run
    (``results/GAIA/validation/levelN/<task_id>/<task_id>.log`` on the ``cosight_gaia`` branch). Co-Sight runs one
    planner agent (``TaskPlannerAgent``: one message history kept through ``create_plan``, ``re_plan`` and
    ``finalize_plan``) and, for every plan step, a new actor agent (``TaskActorAgent`` named ``actor_for_step_K``: a
    fresh history ``[system, user]``). ``BaseAgent.execute`` prints every reply as one line
    ``index: I, response:ChatCompletionMessage(content=..., tool_calls=[ChatCompletionMessageToolCall(...), ...])``
    (a Python repr, parsed here with ``ast``); each such line (or ``max_iteration response:...``) is one call, its
    completion the ``content`` string (``None`` written ``""``), its tool calls the entries of ``tool_calls``. The
    older run of the set also prints each reply before that line as ``response is ChatCompletion(...)`` (the model
    client's raw response): the same call, not counted again. Threads: the lines between ``Starting execution of step
    K`` and ``Function 'act' called with args: K`` belong to the actor of step K (one conversation per step); every
    other reply is the planner's (one conversation). Steps in both files run one at a time (each ``Found [K] ready
    steps`` names one step), so no lines of two actors interleave. Context roles (the prompts are not printed): the
    planner's calls before the first ``Found [`` line are ``create_plan`` (the history gains ``system``, ``user``),
    any later planner call (``re_plan`` after each step, ``finalize_plan`` after ``No more ready steps to
    execute``) adds one ``user``; an actor starts with ``[system, user]``; after each reply the history gains ``assistant`` and one
    ``tool`` per tool call. Tool outputs, plan printouts, timings and step notes are the tool's, not the model's."""
    planner_ctx: list = []
    planner_calls: list = []
    actors: dict = {}
    order: list = []
    step = None
    seen_found = False
    tools = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("Found ["):
            seen_found = True
        m = _STEP_START.match(line)
        if m:
            step = int(m.group(1))
            actors[step] = {"ctx": ["system", "user"], "calls": []}
            continue
        m = _STEP_END.match(line)
        if m and step is not None and int(m.group(1)) == step:
            step = None
            continue
        m = _REPLY.match(line)
        if not m:
            continue
        node = ast.parse(m.group(1), mode="eval").body
        kw = {k.arg: k.value for k in node.keywords}
        content = kw["content"].value if isinstance(kw.get("content"), ast.Constant) else None
        n_tools = len(kw["tool_calls"].elts) if isinstance(kw.get("tool_calls"), ast.List) else 0
        tools += n_tools
        if step is not None:
            thread = actors[step]
            ctx = thread["ctx"]
        else:
            thread = None
            ctx = planner_ctx
            if not seen_found:
                ctx += ["system", "user"]
            else:
                ctx.append("user")
        call = (content or "", list(ctx))
        ctx.append("assistant")
        ctx.extend(["tool"] * n_tools)
        if thread is None:
            planner_calls.append(call)
            if "planner" not in order:
                order.append("planner")
        else:
            thread["calls"].append(call)
            if step not in order:
                order.append(step)
    completions, contexts = [], []
    convs = 0
    for key in order:
        calls = planner_calls if key == "planner" else actors[key]["calls"]
        if calls:
            convs += 1
        for text, ctx in calls:
            completions.append(text)
            contexts.append(ctx)
    return _result("Co-Sight GAIA run log (console output with ChatCompletionMessage reprs)", convs, completions,
                   contexts, tools)


def huixiangdou_rag_output(path: Path) -> dict:
    """HuixiangDou RAG output (``resource/rag_example_output.json``, written by ``huixiangdou/rag.py``: for each query
    of ``rag_example_input.json`` one ``json.dumps(indent=2)`` object appended to the file, so the file is a stream of
    pretty-printed JSON objects, not one JSON document): ``{id, query, direct_reply, rag_reply, code, reason, refs}``.
    ``rag_reply`` is the reply of the final generation call of ``Worker.generate`` (one prompt built from the retrieved
    material and the query, no history): one call; ``direct_reply`` is the reply of ``Worker.direct_chat`` (the query
    alone sent as the prompt): a second, separate call. Each non-empty reply is one single-shot call, its own
    conversation, context ``user``; completions in file order (``direct_reply`` then ``rag_reply`` per object). Objects
    whose replies are empty (``code`` 1, ``reason`` "query is not a question") hold no recorded call (the verdict is
    parsed from an unrecorded scoring call). ``refs`` (reference file names), ``code`` and ``reason`` are metadata. No
    tool calls."""
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    i = 0
    completions, contexts = [], []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        obj, i = decoder.raw_decode(text, i)
        for key in ("direct_reply", "rag_reply"):
            if obj.get(key):
                completions.append(obj[key])
                contexts.append(["user"])
    return _result("HuixiangDou RAG output (stream of indented JSON objects)", len(completions), completions,
                   contexts, 0)


def proagent_llm_inout_pair(path: Path) -> dict:
    """ProAgent LLM input/output record (``apa_case/LLM_inout_pair/NNNNN.json``, written by ProAgent's
    ``RunningRecoder.regist_llm_inout`` for every model request of a run): ``{input: {base_kwargs: {model,
    temperature, ..., messages}, messages, functions, function_call, stop, other_args}, output: <OpenAI
    chat.completion object>, llm_interface_id}``. One record is one call: its context the roles of ``input.messages``
    (``base_kwargs.messages`` is the same list recorded twice; ``function`` messages written ``tool``; earlier
    ``assistant`` messages in the list are replayed turns, context only), its completion
    ``output.choices[0].message.content`` (``None`` written ``""``), its tool calls the message's ``function_call``
    (one) plus any ``tool_calls`` entries. The function schemas in ``input.functions`` are the tools offered, not
    calls. One conversation per record."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    message = rec["output"]["choices"][0]["message"]
    tools = (1 if message.get("function_call") else 0) + len(message.get("tool_calls") or [])
    ctx = [_role(m["role"]) for m in rec["input"]["messages"]]
    return _result("ProAgent LLM_inout_pair record JSON", 1, [message.get("content") or ""], [ctx], tools)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("Co-Sight__"):
        out = cosight_gaia_log(path)
    elif name.startswith("HuixiangDou__"):
        out = huixiangdou_rag_output(path)
    else:
        out = proagent_llm_inout_pair(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
