"""Hand counts of the eighty-seventh held-out set (benchmarks/data/heldout_formats_87/files), computed from the raw
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
- a fact-checker's exported run that shows the response it checked together with the query that produced it
  (``input`` / ``output``) records that call: one single-shot call whose context is the query (``user``) and whose
  completion is the response; it is its own conversation;
- the fact-checker's own verification calls are recorded where the file keeps their raw reply text verbatim
  (``results.raw_outputs`` of FactReasoner's FactVerify and FactScore assessors, one entry per atom): each is one
  single-shot call, its own conversation; its recorded context is the claim it verified (the atom's ``text``) with the
  evidence listed for that atom (``contexts``: Google search results for FactVerify, Wikipedia passages for FactScore),
  written as one ``user`` message (the tool's instruction and few-shot prompt are not in the file); its completion is
  the raw reply as saved (FactVerify: ``###Supported###`` / ``###Contradicted###`` / ``###Inconclusive###`` with the
  model's reasons; FactScore: ``True`` / ``False``), whitespace included; an atom with no evidence listed is still one
  call (its context is the claim alone);
- fields the tool parsed out of LLM replies are mentioned, not recorded: the atoms (the atomizer's and reviser's
  output), ``predictions`` (the S / C / U or S / NS labels parsed from the raw replies), scores, entropies,
  probabilities and counts; search results (titles, snippets, links) are retrieval output, not calls;
- a verdict written as the text of the reply is reply text, not a tool call: such files hold no tool calls;
- ids, timestamps, durations, token counts, model names, costs and scores are metadata, not context.
Context roles: as recorded (``user`` for a bare query or a claim with its evidence).

Run: ``python benchmarks/data/heldout_formats_87/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def factreasoner_assessor(path: Path) -> dict:
    """FactReasoner (IBM) assessor output JSON (``docs/examples/assessors/<assessor>_output.json``, written by the
    ``ex_<assessor>_file.py`` example scripts with ``json.dump``): ``{input, output, topic, atoms: [{id, text, contexts:
    [ids]}], contexts: [{id, title, text, link, snippet, synthetic_summary, probability}], results: {factuality_score,
    ..., query, response, predictions: {atom id: label}, raw_outputs: {atom id: raw reply}}}``. FactVerify's contexts
    are Google search results (``text`` empty), FactScore's Wikipedia passages; ``synthetic_summary`` is empty in both.
    Calls: the checked response (``input`` -> ``output``, context ``user``), then one call per ``raw_outputs`` entry in
    file order (context: the atom's claim with its evidence, one ``user`` message; completion the raw reply). Each call
    is its own conversation. ``results.query`` / ``results.response`` repeat ``input`` / ``output`` (the same call, not
    a second one). No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assessor = "FactVerify" if "factverify" in path.name else "FactScore"
    completions, contexts = [], []
    if data.get("input") and data.get("output"):
        completions.append(data["output"])
        contexts.append(["user"])
    atom_ids = {atom["id"] for atom in data.get("atoms", [])}
    for atom_id, reply in (data.get("results", {}).get("raw_outputs") or {}).items():
        completions.append(reply)
        contexts.append(["user"] if atom_id in atom_ids else [])
    return _result(f"FactReasoner assessor output JSON ({assessor})", len(completions), completions, contexts, 0)


def count(path: Path) -> dict:
    return {"file": path.name, **factreasoner_assessor(path)}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
