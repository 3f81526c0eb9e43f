"""``tracedraft datasets show-calls FILE``: print the LLM calls a file is read as, each call's context and
completion, to check a reading (detected, declared or learned with ``infer-mapping``) against the file by eye.
Offline; reads as ``datasets validate`` does, without dropping duplicates."""

# ruff: noqa: B008  (typer declares arguments in defaults)
from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from service.cli._common import EXIT_ERROR, JsonOpt, console, handled, print_json
from service.cli.data import check_files_exist, datasets_app


@datasets_app.command("show-calls")
def datasets_show_calls(
    files: list[Path] = typer.Argument(..., help="Trace files or directories to read."),
    trace_format: str | None = typer.Option(None, "--format", help="Force a format (default: detect)."),
    mapping: Path | None = typer.Option(None, "--mapping", help="Read the files with a declared mapping file."),
    calls: list[int] = typer.Option([], "--call", help="Show this call (0-based, in reading order); repeatable."),
    limit: int = typer.Option(20, "--limit", min=1, help="Show at most this many calls."),
    width: int = typer.Option(400, "--width", min=0, help="Characters shown of each text (0: all of it)."),
    scrub: bool = typer.Option(True, "--scrub/--no-scrub", help="Scrub secrets and personal data first."),
    as_json: bool = JsonOpt,
) -> None:
    """Print each LLM call the files are read as: its conversation and where that conversation starts, every
    context message (role, text, tool calls and results) and the completion, then the reading's result and its
    errors. --json prints {"ok", "counts", "errors", "calls": [{"index", "conversation", "source" (the
    conversation's), "context", "completion"}]},
    texts whole, the errors as ``datasets validate --json`` gives them. Exits 1 when no call is read.

    Example: tracedraft datasets show-calls log.md --mapping log.mapping.yaml --call 0 --call 3
    """
    from drafters.traces.ingest import ingest

    with handled(as_json):
        check_files_exist(files, mapping, Path.exists)
        result = ingest(files, format=trace_format, scrub=scrub, mapping=mapping, dedup=False)  # type: ignore[arg-type]
    every = [(conv, call) for conv in result.conversations for call in conv.calls()]
    chosen = [i for i in (calls or range(len(every))) if 0 <= i < len(every)][:limit]
    shown = [_call(i, *every[i]) for i in chosen]
    report = result.report.to_dict()
    if as_json:
        print_json({"ok": report["ok"], "counts": report["counts"], "errors": report["errors"], "calls": shown})
    else:
        for call in shown:
            _print(call, width)
        missing = [i for i in calls if not 0 <= i < len(every)]
        tail = f"; no call {', '.join(map(str, missing))}" if missing else ""
        console.print(f"{len(shown)} of {len(every)} calls shown{tail}; result: {'ok' if report['ok'] else 'not ok'}")
        for e in report["errors"][:5]:  # as `datasets validate` prints them: the code, the message, where
            line = f":{e['line']}" if e.get("line") else ""
            where = f" ({e['file']}{line})" if e.get("file") else ""
            console.print("  [red]error[/red] " + escape(f"[{e['code']}] {e['message']}{where}"), soft_wrap=True)
    if not every:
        raise typer.Exit(EXIT_ERROR)


def _call(index: int, conv: Any, call: Any) -> dict[str, Any]:
    return {"index": index, "conversation": conv.id, "source": conv.source.where(),
            "context": [_message(m) for m in call.context], "completion": _message(call.completion)}


def _message(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "text": m.text}
    if m.reasoning:
        out["reasoning"] = m.reasoning
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.raw_arguments} for c in m.tool_calls]
    if m.tool_results:
        out["tool_results"] = [{"id": r.call_id, "content": r.content, **({"is_error": True} if r.is_error else {})}
                               for r in m.tool_results]
    return out


def _print(call: dict[str, Any], width: int) -> None:
    # the source is the conversation's (where it starts): a message keeps no place of its own
    console.print(f"[bold]call {call['index']}[/bold] · {escape(call['conversation'])} · conversation from "
                  f"{escape(call['source'])} · {len(call['context'])} context messages")
    for m in call["context"]:
        _print_message(m, m["role"], width)
    _print_message(call["completion"], "completion", width)
    console.print()


def _print_message(m: dict[str, Any], label: str, width: int) -> None:
    results = [("tool error" if r.get("is_error") else "tool result", r["content"]) for r in m.get("tool_results", [])]
    # in the order the prompt is rendered (drafters/render/messages.py): a turn's tool results before its text
    parts = [("reasoning", m.get("reasoning")), *results, ("", m["text"])]
    parts += [("tool call", f"{c['name']} {c['arguments']}") for c in m.get("tool_calls", [])]
    for kind, text in parts:
        if text:
            # a tool message's result is "[tool result]" (or "[tool error]"), not "[tool tool result]"
            head = f"[{kind}]" if label == "tool" and kind.startswith("tool ") else f"[{label}{' ' + kind if kind else ''}]"
            console.print(f"  [cyan]{escape(head)}[/cyan] {escape(_cut(text, width))}", soft_wrap=True)


def _cut(text: str, width: int) -> str:
    """``text`` with at most ``width`` characters (0: all), newlines shown as ``⏎`` so one message stays one line."""
    flat = text.replace("\n", " ⏎ ")
    if not width or len(flat) <= width:
        return flat
    return f"{flat[:width]}… ({len(flat) - width} more characters)"
