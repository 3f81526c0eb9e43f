"""Hand counts of the third held-out set (benchmarks/data/heldout_formats_3/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's documented layout.

Per file: the conversations (one per distinct agent thread / session that holds at least one LLM call), the LLM
calls (turns the model produced, each with its own context; a thinking part belongs to its reply), the tool calls
the model emitted in those turns, the text of each completion and the roles of each call's context. ``readable``
is false where no LLM call with a readable context is recorded (none in this set).

Run: ``python benchmarks/data/heldout_formats_3/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def pi_session(path: Path) -> dict:
    """pi coding agent session JSONL (badlogic/pi-mono): a ``session`` header, then ``message`` entries whose
    ``message.role`` is user / assistant / toolResult (plus thinking_level_change, model_change entries). One file
    is one session. Rule: each assistant message with at least one content part (text, thinking or toolCall) is one
    call, whatever its stopReason (an aborted reply holding only a thinking part is still a model turn; a reply cut
    off by an error still emitted its text and tool calls); an assistant message with empty content (a request
    aborted before any output) is no call. Tool calls: every ``toolCall`` part. Context: the messages before it."""
    completions, contexts, tools, ctx = [], [], 0, []
    for d in _lines(path):
        if d.get("type") != "message":
            continue
        m = d["message"]
        if m["role"] == "assistant":
            parts = m.get("content") or []
            if parts:
                completions.append("".join(p.get("text", "") for p in parts if p["type"] == "text"))
                contexts.append(list(ctx))
                tools += sum(p["type"] == "toolCall" for p in parts)
                ctx.append("assistant")
        else:
            ctx.append("tool" if m["role"] == "toolResult" else m["role"])
    return _result("pi coding agent session JSONL", 1 if completions else 0, completions, contexts, tools)


def autogen_recorder(path: Path) -> dict:
    """AutoGen ChatCompletionClientRecorder session (autogen-ext task_centric_memory): a list of records
    ``{mode, messages, response, stream}``, one per model call; ``messages`` are autogen-core LLMMessages
    (SystemMessage / UserMessage / AssistantMessage), ``response.content`` the completion (all strings here, no
    function calls, no stream chunks). Rule: one call per record. Conversations: a record whose messages start with
    an earlier record's messages followed by that record's completion continues that record's conversation (the
    agent re-sending its history); otherwise it starts a new one."""
    recs = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, tools = [], [], 0
    convs = 0
    seen = []  # (messages + [completion]) as comparable tuples

    def key(msg: dict) -> str:
        return json.dumps([msg.get("type"), msg.get("content")], sort_keys=True)

    for r in recs:
        msgs = [key(m) for m in r["messages"]]
        continues = any(len(prev) <= len(msgs) and msgs[:len(prev)] == prev for prev in seen)
        convs += 0 if continues else 1
        content = r["response"]["content"]
        completions.append(content if isinstance(content, str) else "")
        if not isinstance(content, str):
            tools += len(content)
        contexts.append([m["type"] for m in r["messages"]])
        seen.append(msgs + [json.dumps(["AssistantMessage", content], sort_keys=True)])
    return _result("AutoGen ChatCompletionClient recorder session", convs, completions, contexts, tools)


def autogen_llm_messages(path: Path) -> dict:
    """AutoGen core chat history (``{"messages": [LLMMessage...]}``, the core_streaming_handoffs_fastapi sample):
    UserMessage / AssistantMessage (content a string, or a list of FunctionCall) / FunctionExecutionResultMessage.
    One file is one thread (the agents hand off within one shared history). Rule: each AssistantMessage is one call;
    each FunctionCall in a list content is a tool call."""
    msgs = json.loads(path.read_text(encoding="utf-8"))["messages"]
    completions, contexts, tools, ctx = [], [], 0, []
    for m in msgs:
        if m["type"] == "AssistantMessage":
            c = m["content"]
            completions.append(c if isinstance(c, str) else "")
            contexts.append(list(ctx))
            tools += 0 if isinstance(c, str) else len(c)
            ctx.append("assistant")
        else:
            ctx.append("tool" if m["type"] == "FunctionExecutionResultMessage" else "user")
    return _result("AutoGen core LLMMessage history", 1, completions, contexts, tools)


def autogen_agenteval(path: Path) -> dict:
    """AutoGen 0.2 AgentEval MathChat result (test/test_files/agenteval-in-out/agentchat_results): one problem's
    run, ``messages`` a list of OpenAI-style {role, content} between the user proxy and the assistant
    (``response_with_ans`` repeats one assistant message, it is no extra call). Rule: one conversation; each
    assistant message is one call; no tool calls (code is written in text)."""
    msgs = json.loads(path.read_text(encoding="utf-8"))["messages"]
    completions, contexts, ctx = [], [], []
    for m in msgs:
        if m["role"] == "assistant":
            completions.append(m["content"])
            contexts.append(list(ctx))
        ctx.append(m["role"])
    return _result("AutoGen AgentEval MathChat result", 1, completions, contexts, 0)


def lm_eval_samples(path: Path) -> dict:
    """lm-evaluation-harness ``--log_samples`` output (samples_<task>_<time>.jsonl): one line per document,
    ``arguments.gen_args_0.arg_0`` the prompt, ``resps[0][0]`` the generated text (``filtered_resps`` is a
    post-processed copy, no extra call). Rule: each line is its own single-call conversation (independent
    prompts), no tool calls."""
    completions, contexts = [], []
    for d in _lines(path):
        for resp in d["resps"]:
            completions.append(resp[0])
            contexts.append(["user"])
    return _result("lm-evaluation-harness log_samples JSONL", len(completions), completions, contexts, 0)


def kiro_cli(path: Path) -> dict:
    """Kiro CLI session JSONL (as read by mlflow's kiro_cli integration): lines of ``kind`` Prompt /
    AssistantMessage / ToolResults, contents as ``{kind, data}`` parts; ``toolUse`` parts are tool calls. One file
    is one session. Rule: each AssistantMessage line is one call."""
    completions, contexts, tools, ctx = [], [], 0, []
    for d in _lines(path):
        if d["kind"] == "AssistantMessage":
            completions.append("".join(p["data"] for p in d["content"] if p["kind"] == "text"))
            contexts.append(list(ctx))
            tools += sum(p["kind"] == "toolUse" for p in d["content"])
            ctx.append("assistant")
        else:
            ctx.append("tool" if d["kind"] == "ToolResults" else "user")
    return _result("Kiro CLI session JSONL", 1 if completions else 0, completions, contexts, tools)


def claude_ai_export(path: Path) -> dict:
    """Claude.ai data export (``conversations.json``: a list of conversations, or one conversation object), each
    with ``chat_messages`` whose ``sender`` is human / assistant; content either ``text`` or a ``content`` list of
    blocks (text, tool_use, tool_result, file, image). Rule: one conversation per conversation object; each
    assistant message is one call, except that a ``tool_result`` block inside an assistant message followed by
    further blocks ends one model generation and starts the next (the later blocks were generated with the tool
    result in context), as in the second set's Open WebUI rule. Tool calls: ``tool_use`` blocks."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    convs_list = doc if isinstance(doc, list) else [doc]
    completions, contexts, tools, convs = [], [], 0, 0
    for conv in convs_list:
        ctx, here = [], 0
        for m in conv["chat_messages"]:
            if m["sender"] != "assistant":
                ctx.append("user")
                continue
            blocks = m.get("content") or [{"type": "text", "text": m.get("text", "")}]
            cur_text, cur_tools, pending = "", 0, False
            for b in blocks:
                if b["type"] == "tool_result":
                    completions.append(cur_text); contexts.append(list(ctx)); tools += cur_tools; here += 1
                    ctx += ["assistant", "tool"]
                    cur_text, cur_tools, pending = "", 0, False
                    continue
                pending = True
                if b["type"] == "tool_use":
                    cur_tools += 1
                elif b["type"] == "text":
                    cur_text += b["text"]
            if pending:
                completions.append(cur_text); contexts.append(list(ctx)); tools += cur_tools; here += 1
                ctx.append("assistant")
        convs += 1 if here else 0
    return _result("Claude.ai conversations export", convs, completions, contexts, tools)


def antigravity_markdown(path: Path) -> dict:
    """Antigravity language-server conversation summary (``markdown`` field with ``### User Input`` /
    ``### Planner Response`` sections). Rule: one conversation; each Planner Response section is one call."""
    md = json.loads(path.read_text(encoding="utf-8"))["markdown"]
    sections = re.split(r"^### ", md, flags=re.MULTILINE)
    completions, contexts, ctx = [], [], []
    for s in sections:
        if s.startswith("Planner Response"):
            completions.append(s.split("\n", 1)[1].strip())
            contexts.append(list(ctx))
            ctx.append("assistant")
        elif s.startswith("User Input"):
            ctx.append("user")
    return _result("Antigravity conversation markdown (JSON)", 1 if completions else 0, completions, contexts, 0)


COUNTERS = {
    "pi-session": pi_session,
    "autogen-chat-recorder": autogen_recorder,
    "autogen-llm-messages": autogen_llm_messages,
    "autogen-agenteval-result": autogen_agenteval,
    "lm-eval-samples": lm_eval_samples,
    "kiro-cli-session": kiro_cli,
    "claude-ai-export": claude_ai_export,
    "antigravity-markdown": antigravity_markdown,
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
