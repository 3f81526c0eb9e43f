"""``tracedraft datasets infer-mapping FILE``: write the declared mapping the general path infers for a file of a
format with no module (drafters/traces/infer.py), or the one learned from an example reply
(drafters/traces/infer_example.py), for the user to check and then use with ``--mapping``. Offline."""

# ruff: noqa: B008  (typer declares arguments in defaults)
from __future__ import annotations

from pathlib import Path

import typer

from service.cli._common import CliError, JsonOpt, err_console, fail, handled, print_json
from service.cli.data import datasets_app


@datasets_app.command("infer-mapping")
def datasets_infer_mapping(
    file: Path = typer.Argument(..., help="A trace file of a format tracedraft has no module for."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the mapping here (default: print it)."),
    name: str | None = typer.Option(None, "--name", help="The mapping's name (default: the file's stem)."),
    reply: str | None = typer.Option(None, "--reply", help="One of the model's replies as the file holds it "
                                     "(a piece on one line is enough): learn the mapping from where it sits."),
    as_json: bool = JsonOpt,
) -> None:
    """Write the declared mapping the general path infers for FILE (offline), to check and fix, then use
    with --mapping. Where several message lists fit (the general path refuses the file), writes the reading ranked
    first and names the others, one line to change. Exits 1 with a coded error when no shape fits, or several
    that are not message lists; where none fits but a text sits under a key naming the model's output
    (``model_output``, ``response.content``) beside a prompt under a key naming an input, or below a heading naming
    it, writes the mapping learned from it as from a --reply example (a comment names the guess); else, where a list
    of objects looks like messages with unknown role names, it still writes a skeleton to complete. With --reply,
    learns the mapping from where that reply sits instead (exits 1 with roles_unnamed where a role is left for you
    to name). --json prints {"file", "shape", "mapping",
    "keys_not_read", "calls_not_read", "other_messages", "not_read"} (and still writes --out). Where the general
    path refuses content beyond the file's shape (text beside the message list, ...), the mapping is written with a
    "# NOT READ" line and the command exits 1 with that code.

    Example: tracedraft datasets infer-mapping export.jsonl -o export.mapping.yaml
    Example: tracedraft datasets infer-mapping chat.json --reply "Sure, the invoice was sent on" -o chat.mapping.yaml
    """
    from drafters.traces.infer import (
        general_path_losses,
        infer_mapping,
        mapping_yaml,
        skeleton_yaml,
        with_content_key,
    )
    from drafters.traces.report import TraceError

    with handled(as_json):
        if not file.exists():
            raise CliError("not_found", f"no such file: {file}", where=str(file))
        reader = _whole_reader(file)
        if reader not in (None, "generic", "text_transcript"):  # on stderr: --json's document stays alone on stdout
            err_console.print(f"note: the {reader} reader reads this file already (tracedraft datasets validate "
                              f"{file}); a mapping is only needed to read it another way")
        if reply is not None:
            _learn_from_reply(file, reply, name, out, as_json, reader == "text_transcript")
            return
        try:
            inferred = infer_mapping(file, name)
        except TraceError as exc:
            if exc.code == "no_messages_found" and _learn_from_named_reply(file, name, out, as_json):
                return
            skeleton = skeleton_yaml(file, name) if exc.code == "no_messages_found" else None
            if skeleton is None and exc.code == "no_messages_found" and reader == "text_transcript":
                raise CliError(exc.code, "the file is text, which the general path reads as a text transcript "
                               f"(tracedraft datasets validate {file}): no mapping is needed, and a declared text "
                               "mapping cannot say where its tool calls sit (TOOL USE sections, <tool_call> blocks)",
                               where=str(file)) from exc
            if skeleton is None and exc.code == "no_messages_found":
                raise CliError(exc.code, f"{exc.message}; no key or heading names the model's reply beside a prompt "
                               "either (a reference, such as expected_output or a bare answer, is none)",
                               where=str(file)) from exc
            if skeleton is None:
                raise
            _emit(skeleton, out)
            raise CliError(exc.code, f"{exc.message}; wrote a skeleton mapping to complete "
                           f"({out or 'printed above'}): fill the roles marked \"?\"", where=str(file)) from exc
        inferred, hint = with_content_key(file, inferred)
        losses = general_path_losses(file, inferred)
        text = mapping_yaml(inferred, hint, losses)
    if as_json:
        import yaml

        print_json({"file": str(file), "shape": inferred.shape, "mapping": yaml.safe_load(text),
                    "keys_not_read": inferred.keys_not_read, "calls_not_read": inferred.calls_not_read,
                    "other_messages": inferred.others, "not_read": losses})
    _emit(text, out, printed=not as_json)
    if out is not None and not as_json and not losses:
        check = "the messages line (several message lists fit: the general path refuses this file) and the roles" \
            if inferred.others else "the roles"
        err_console.print(f"wrote {out}: check {check}, then: tracedraft datasets validate --mapping {out} {file}")
    if losses:  # the mapping is written to complete, but unchanged it would lose what the general path refuses
        # fail, not raise: with --json the report (its not_read) is printed already, one JSON document only
        fail(CliError(losses[0].split(":", 1)[0], f"wrote a mapping ({out or 'printed above'}) that, unchanged, "
                           f"would not read what the general path refuses: {losses[0]}", where=str(file)))


def _learn_from_reply(file: Path, reply: str, name: str | None, out: Path | None, as_json: bool,
                      read_as_text: bool) -> None:
    """``infer-mapping --reply``: write the mapping learned from the example (drafters/traces/infer_example.py);
    CliError ``roles_unnamed`` (exit 1) after writing one whose roles the user must still name."""
    from drafters.traces.infer_example import learn_mapping, learned_yaml
    from drafters.traces.report import TraceError

    try:
        learned = learn_mapping(file, reply, name)
    except TraceError as exc:
        if exc.code == "example_not_read" and read_as_text:
            raise CliError(exc.code, f"{exc.message}; the general path reads this text file as it is, its tool calls "
                           f"too (tracedraft datasets validate {file}): no mapping is needed", where=str(file)) from exc
        raise
    text = learned_yaml(learned)
    if as_json:
        print_json({"file": str(file), "shape": "learned_from_reply", "mapping": learned.mapping,
                    "found_at": learned.found_at, "unnamed_roles": learned.unnamed})
    _emit(text, out, printed=not as_json)
    if learned.unnamed:  # fail, not raise: with --json the document (its unnamed_roles) is printed already
        fail(CliError("roles_unnamed", f"wrote a mapping ({out or 'printed above'}) whose role values "
                      f"{', '.join(learned.unnamed)} are marked \"?\": name each system, user, assistant or "
                      "tool, or skip (a record of another kind, not read)", where=str(file)))
    if out is not None and not as_json:
        err_console.print(f"wrote {out}: check it (its comments say what), then: tracedraft datasets validate "
                          f"--mapping {out} {file}")


def _learn_from_named_reply(file: Path, name: str | None, out: Path | None, as_json: bool) -> bool:
    """Where no shape fits: write the mapping learned from a text under a key naming the model's output, or in a text
    file below a heading naming it (drafters/traces/infer_named_reply.py), and return True; False when none is
    learned."""
    from drafters.traces.infer_example import learned_yaml
    from drafters.traces.infer_named_reply import learn_from_named_reply

    learned = learn_from_named_reply(file, name)
    if learned is None:
        return False
    text = learned_yaml(learned, "a text below a heading naming the model's output" if "text" in learned.mapping else
                        "a text under a key naming the model's output")
    if as_json:
        print_json({"file": str(file), "shape": "learned_from_named_reply", "mapping": learned.mapping,
                    "found_at": learned.found_at, "unnamed_roles": []})
    _emit(text, out, printed=not as_json)
    if out is not None and not as_json:
        err_console.print(f"wrote {out}: no message shape fits, so the reply was guessed from a key's or a heading's "
                          "name; check it "
                          f"(its comments say what), then: tracedraft datasets validate --mapping {out} {file}")
    return True


def _whole_reader(file: Path) -> str | None:
    """The one format that reads ``file`` with every content understood (``generic``: the general path;
    ``text_transcript``: as a text transcript, its tool calls too), or None."""
    from drafters.traces.ingest import ingest

    result = ingest([file], scrub=False, dedup=False)
    formats = set(result.report.formats)
    return formats.pop() if result.report.ok and result.conversations and len(formats) == 1 else None


def _emit(text: str, out: Path | None, printed: bool = True) -> None:
    """Write the mapping to ``out``, or print it (unless ``printed`` is False: ``--json`` printed it already)."""
    if out is not None:
        out.write_text(text, encoding="utf-8")
    elif printed:
        print(text, end="")
