"""Hand counts of the eighty-sixth held-out set (benchmarks/data/heldout_formats_86/files), computed from the raw
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
- a documentation generator's record that keeps, per code object (class, function, method), the object's source code
  beside the documentation the model wrote for it records one single-shot call per object that has documentation:
  its recorded context is the object's source code, written ``user`` (the tool's prompt template, the referenced
  objects' code and the project tree that went into the prompt are not stored), its completion the documentation
  text; each call is its own conversation (the objects' prompts are unrelated and none continues another); an object
  with no documentation (empty ``md_content``) holds no call;
- where ``md_content`` is a list (RepoAgent's newer layout, one entry per generation, older entries kept when the code
  changes), each entry is one generation; only the latest entry's source code is stored, so an earlier entry would be
  a reply whose context is not recorded (none in this set: every list here has exactly one entry, which the counter
  checks);
- names, types, line numbers, ``parent``, ``params``, ``have_return``, ``name_column``, the reference lists
  (``reference_who``, ``who_reference_me``, ``special_reference_type``), ``item_status`` and file paths are metadata,
  not context; the documentation text is reply text, so these files hold no tool calls.
Context roles: ``user`` for the stored source code of the documented object.

Run: ``python benchmarks/data/heldout_formats_86/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def repoagent_hierarchy_v0(path: Path) -> dict:
    """RepoAgent project hierarchy, first layout (December 2023, written as ``.project_hierachy.json`` and kept as the
    chat-with-repo database ``repo_agent/chat_with_repo/project_hierachy.json``): ``{"files": [{"file_path", "objects":
    [{type, name, md_content, code_start_line, code_end_line, parent, have_return, code_content, name_column}]}]}``.
    ``md_content`` is one string, the documentation the model wrote for the object. Each object with a non-empty
    ``md_content`` is one single-shot call (its own conversation): context the object's ``code_content`` (``user``),
    completion ``md_content``. Files with an empty ``objects`` list hold no call. No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for entry in data["files"]:
        for obj in entry["objects"]:
            if obj.get("md_content"):
                completions.append(obj["md_content"])
                contexts.append(["user"] if obj.get("code_content") else [])
    return _result("RepoAgent project hierarchy JSON (files/objects, md_content string)", len(completions),
                   completions, contexts, 0)


def repoagent_hierarchy_v1(path: Path) -> dict:
    """RepoAgent project hierarchy, newer layout (``.project_doc_record/project_hierarchy.json``, RepoAgent run as a
    pre-commit hook): ``{RELATIVE_FILE_PATH: [{type, name, md_content: [...], code_start_line, code_end_line, params,
    have_return, code_content, name_column, item_status, who_reference_me, reference_who, special_reference_type}]}``.
    ``md_content`` is a list with one entry per generation; each entry here is the only one (asserted), so each
    object with documentation is one single-shot call (its own conversation): context ``code_content`` (``user``),
    completion the entry. No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for objects in data.values():
        for obj in objects:
            docs = obj.get("md_content") or []
            assert len(docs) <= 1, f"{obj['name']}: {len(docs)} generations (earlier contexts not stored)"
            for doc in docs:
                completions.append(doc)
                contexts.append(["user"] if obj.get("code_content") else [])
    return _result("RepoAgent project hierarchy JSON (file -> objects, md_content list)", len(completions),
                   completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("repoagent__chat_with_repo__"):
        out = repoagent_hierarchy_v0(path)
    else:
        out = repoagent_hierarchy_v1(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
