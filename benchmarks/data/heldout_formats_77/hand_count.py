"""Hand counts of the seventy-seventh held-out set (benchmarks/data/heldout_formats_77/files), computed from the raw
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
- one result record (OntoGPT reasoner: a ``results`` entry or a table row) or one enrichment payload (TALISMAN: a
  ``payloads`` entry) that stores the prompt sent (``prompt``) and the reply received (``completion`` /
  ``response_text``) is one recorded call and its own single-shot conversation: every record holds its own prompt,
  none continues another record's prompt and reply;
- few-shot examples written inside a prompt (OntoGPT's ``EXAMPLE ONTOLOGY`` / ``QUERY`` / ``ANSWERS`` blocks) are part
  of that one user prompt, not earlier turns;
- fields parsed out of a reply (``answers`` and their ``explanations``, ``summary``, ``term_strings``, ``term_ids``,
  ``false_positives``, scores, ``response_token_length``) are derived from the recorded call: neither further calls
  nor context;
- an enrichment payload with no prompt and no reply (TALISMAN's ``standard``, ``standard_no_ontology``, ``random``,
  ``rank_based`` and ``closure`` methods: statistical or random term lists) records no LLM call;
- a reply that declines the task or asks for more information is a call all the same; a ``summary: COULD NOT PARSE``
  (the tool failed to parse the reply) does not change the count;
- the same benchmark run written twice by the tool (the reasoner's YAML and its TSV table) is counted in each file on
  its own; each file is measured alone;
- the completion text is the reply as saved: YAML block scalars with their chomping (``|-`` strips the final line
  breaks, ``|+`` keeps them), folded YAML flow scalars unfolded, leading spaces kept; in the reasoner's TSV table the
  line breaks inside a cell are written as the two characters backslash and ``n`` (rows end in CR LF), and the
  completion is the cell with those decoded to line breaks;
- ids, names, task types, models, methods, prompt variants, token counts, truncation factors, gene lists and scores
  are metadata, not context.
Context roles: as recorded (``user`` for a bare prompt string; no system prompt is recorded in this set).

Run: ``python benchmarks/data/heldout_formats_77/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- a reader for the small subset of YAML these files use: block mappings and sequences, literal block scalars
# (``|``, ``|2-``, ``|-``, ``|+``) and plain / single-quoted / double-quoted flow scalars folded over several lines ---

def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block_scalar(header: str, lines: list, start: int, key_indent: int) -> tuple:
    """A literal block scalar whose header (``|``, ``|2-``, ``|+`` ...) ends the key's line; its lines start at
    ``start``. Returns (text, index of the first line after it)."""
    m = re.fullmatch(r"\|([1-9]?)([+-]?)", header.strip())
    if not m:
        raise ValueError(f"unsupported block scalar header {header!r}")
    indicator, chomping = m.group(1), m.group(2)
    content_indent = key_indent + int(indicator) if indicator else None
    body, j = [], start
    while j < len(lines):
        line = lines[j]
        if line.strip() == "":
            body.append(line)
            j += 1
            continue
        if content_indent is None:
            content_indent = _indent(line)
        if _indent(line) < content_indent:
            break
        body.append(line)
        j += 1
    content_indent = content_indent or 0
    out = [(line[content_indent:] if len(line) > content_indent else "") for line in body]
    text = "\n".join(out) + "\n" if out else ""
    if chomping == "-":
        text = text.rstrip("\n")
    elif chomping == "":
        text = text.rstrip("\n") + ("\n" if text.strip("\n") else "")
    return text, j


def _fold(lines: list, double_quoted: bool = False) -> str:
    """YAML flow-scalar line folding: a break between two non-empty lines is one space, each empty line a newline;
    in a double-quoted scalar a line ending in an escaping backslash joins the next line with no space."""

    def escaped_break(text: str) -> bool:
        return double_quoted and (len(text) - len(text.rstrip("\\"))) % 2 == 1

    parts = [lines[0].rstrip()] + [line.strip() for line in lines[1:]]
    out, empties = parts[0], 0
    joined = escaped_break(out)
    if joined:
        out = out[:-1]
    for part in parts[1:]:
        if part == "":
            empties += 1
            continue
        out += "\n" * empties if (empties or joined) else " "
        out += part
        empties = 0
        joined = escaped_break(out)
        if joined:
            out = out[:-1]
    return out


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", " ": " ", "0": "\0", "r": "\r"}


def _flow_scalar(lines: list) -> str:
    """The value of a (possibly multi-line) plain, single-quoted or double-quoted YAML scalar."""
    head = lines[0].lstrip()
    if head.startswith("'"):
        text = _fold([head] + lines[1:])
        return text[1:-1].replace("''", "'")
    if head.startswith('"'):
        text = _fold([head] + lines[1:], double_quoted=True)[1:-1]
        out, i = [], 0
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
                i += 2
            else:
                out.append(c)
                i += 1
        return "".join(out)
    return _fold([head] + lines[1:])


def _value(lines: list, i: int, key_indent: int, rest: str) -> tuple:
    """The value of the key on line ``i`` (indented ``key_indent``; ``rest`` is what follows ``key: ``): a block
    scalar or a flow scalar continued on the more-indented lines below. Returns (text, next line index)."""
    if rest.startswith("|"):
        return _block_scalar(rest, lines, i + 1, key_indent)
    cont, j = [], i + 1
    while j < len(lines) and (lines[j].strip() == "" or _indent(lines[j]) > key_indent):
        cont.append(lines[j])
        j += 1
    while cont and cont[-1].strip() == "":
        cont.pop()
        j -= 1
    return _flow_scalar([rest] + cont), j


def ontogpt_reasoner_yaml(path: Path) -> dict:
    """OntoGPT reasoner benchmark results YAML (written by OntoGPT's ``reason`` runner to ``tests/output/reasoner-
    <method>-<model>.yaml``: ``{name, results: [{name, completed, task_name, task_type, method, model, answers: [{text,
    explanations?}], prompt, completion, jaccard_score?, false_positives?, false_negatives?, num_*?, precision?, recall?,
    f1_score?}]}``, the prompt a ``|2-`` literal block, the completion a literal block or a quoted scalar). Each
    ``results`` entry is one single-shot call (its own conversation): context the ``prompt`` (one user prompt with its
    few-shot examples inline, written ``user``), completion the ``completion`` as saved. ``answers`` (and their
    ``explanations`` axioms) are parsed from the completion and the scores compare them with the reasoner: not calls,
    not context. No tool calls, no system prompt recorded."""
    lines = path.read_text(encoding="utf-8").split("\n")
    records, i = [], 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^  - name: ", line):
            records.append({})
            i += 1
            continue
        m = re.match(r"^    (prompt|completion): ?(.*)$", line)
        if m and records:
            text, i = _value(lines, i, 4, m.group(2))
            records[-1][m.group(1)] = text
            continue
        i += 1
    completions, contexts = [], []
    for rec in records:
        if "completion" not in rec:
            continue
        completions.append(rec["completion"])
        contexts.append(["user"] if rec.get("prompt") else [])
    return _result("OntoGPT reasoner results YAML", len(completions), completions, contexts, 0)


def ontogpt_reasoner_tsv(path: Path) -> dict:
    """OntoGPT reasoner benchmark results TSV (the same runner's table of the same results, ``tests/output/reasoner-
    <method>-<model>.tsv``: a header row ``name completed task_name task_type task_obfuscated method model description
    answers prompt completion jaccard_score false_positives ...`` then one row per task, CR LF row ends, cells with line
    breaks written as backslash-n, the ``prompt`` cell double-quoted with doubled inner quotes, ``answers`` a Python
    repr of the parsed answers). Each row is one single-shot call (its own conversation): context the ``prompt`` cell
    (``user``), completion the ``completion`` cell with backslash-n decoded to line breaks. No tool calls."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    header, body = rows[0], [r for r in rows[1:] if r]
    p_col, c_col = header.index("prompt"), header.index("completion")
    completions, contexts = [], []
    for row in body:
        completions.append(row[c_col].replace("\\n", "\n"))
        contexts.append(["user"] if row[p_col] else [])
    return _result("OntoGPT reasoner results TSV", len(completions), completions, contexts, 0)


def talisman_results_yaml(path: Path) -> dict:
    """TALISMAN gene-set enrichment comparison results YAML (OntoGPT's enrichment engine as run for the TALISMAN paper,
    ``results/<organism>/<geneset>-results-2.yaml``: a list of ``{name, gene_symbols, gene_ids, payloads: {<model>.
    <method>.<variant>: {prompt, response_text, truncation_factor, summary, term_strings, term_ids, annotations?,
    response_token_length, model, method, prompt_variant}, standard: {...}, standard_no_ontology: {...}, random: {...},
    rank_based: {...}, closure: {...}}, number_of_genes_swapped_out?}``, long strings as folded double-quoted,
    single-quoted or plain scalars). Each payload holding a ``prompt`` and a ``response_text`` is one single-shot call
    (its own conversation): context the prompt (``user``), completion the ``response_text`` as saved (leading
    spaces and line breaks kept). ``summary`` / ``term_strings`` / ``term_ids`` are parsed from the reply; the
    ``standard``, ``standard_no_ontology``, ``random``, ``rank_based`` and ``closure`` payloads are statistical or
    random term lists with no prompt and no reply: no call. No tool calls, no system prompt recorded."""
    lines = path.read_text(encoding="utf-8").split("\n")
    payloads, i = [], 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^    [^\s:][^:]*:\s*$", line):
            payloads.append({"name": line.strip()[:-1]})
            i += 1
            continue
        m = re.match(r"^      (prompt|response_text): ?(.*)$", line)
        if m and payloads:
            text, i = _value(lines, i, 6, m.group(2))
            payloads[-1][m.group(1)] = text
            continue
        i += 1
    completions, contexts = [], []
    for p in payloads:
        if "response_text" not in p:
            continue
        completions.append(p["response_text"])
        contexts.append(["user"] if p.get("prompt") else [])
    return _result("TALISMAN enrichment results YAML", len(completions), completions, contexts, 0)


COUNTERS = {
    "ontogpt-reasoner": ontogpt_reasoner_yaml,
    "ontogpt-reasoner-tsv": ontogpt_reasoner_tsv,
    "talisman": talisman_results_yaml,
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
