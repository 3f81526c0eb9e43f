"""Hand counts of the eighty-third held-out set (benchmarks/data/heldout_formats_83/files), computed from the raw
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
- in a simulation-based evaluation the LLM may play the USER: in UserSimCRS's single-prompt LLM user simulator
  (``LLMSinglePromptUserSimulator``, mistral-nemo through Ollama) every ``USER`` utterance of a synthetic dialogue is
  the reply of one LLM call (``generate_utterance``: one Ollama ``generate`` request per user turn, the reply kept
  with a leading ``USER: `` removed); its context is the simulator's task prompt (task definition, information need,
  persona: not recorded in the file) and the dialogue so far (recorded: the ``AGENT`` and ``USER`` utterances before
  it);
- the ``AGENT`` utterances are the replies of the conversational recommender under test, KBRD (a 2019 knowledge-based
  recommender with a small Transformer decoder trained on ReDial, served by iEvaLM-CRS), not an LLM: they are input
  to the simulator's calls, not calls, and they are not counted; the welcome ``Hello! How can I help you?`` and the
  closing ``Goodbye!`` are fixed strings of the agent wrapper (``crs_agent_wrapper/ievalm_agent.py``), not calls either;
- the simulator's stop tokens (``\\giveup``, ``\\end``, alone, quoted or at the end of a sentence) are written by the
  model as its reply (the task prompt asks for them): each such USER utterance is a call; a USER utterance in which
  the model went on to write the assistant's side itself (``ASSISTANT: ...`` lines inside the one utterance) is still
  one reply, one call;
- each element of the file's top-level list is one dialogue (one simulation: the agent greets, the simulated user
  answers, ...), and so one conversation, even where two dialogues carry the same ``conversation ID`` (the ID is
  ``AGENT-SIMULATOR-<unix second>``: dialogues started within the same second share it, and their ``utterance ID``s
  too); the list is not merged by ID;
- ``dialogue_acts`` (empty on every USER utterance here; ``END`` on the agent's closing), ``utterance ID``s and the
  ``agent`` / ``user`` id records are metadata, not context;
- no tool calls: the simulator emits plain text.
Context roles: as recorded (``AGENT`` / ``USER`` participant labels of the utterances before the call).

Run: ``python benchmarks/data/heldout_formats_83/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def usersimcrs_synthetic_dialogues(path: Path) -> dict:
    """UserSimCRS synthetic dialogues (DialogueKit dialogue export JSON, written by ``usersimcrs.run_simulation`` for
    the ECIR 2026 movie-recommendation case study): a top-level list of dialogues ``{"conversation ID",
    "conversation": [{"participant": "AGENT" | "USER", "utterance", "utterance ID", "dialogue_acts"}], "agent": {id,
    type}, "user": {id, type}}``. Here the agent is KBRD (``KBRD_ReDial``) and the user the single-prompt LLM user
    simulator (``Single_LLM_nemo_<dataset>``). Each list element holding at least one USER utterance is one
    conversation (duplicate conversation IDs are not merged); each USER utterance is one call, its completion the
    utterance text as saved, its context the participant labels of the utterances before it in that dialogue. AGENT
    utterances are not calls. No tool calls."""
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, convs = [], [], 0
    for dialogue in dialogues:
        turns = dialogue["conversation"]
        found = False
        for i, turn in enumerate(turns):
            if turn["participant"] == "USER":
                completions.append(turn["utterance"])
                contexts.append([t["participant"] for t in turns[:i]])
                found = True
        convs += found
    return _result("UserSimCRS synthetic dialogues (DialogueKit export JSON, LLM user simulator)", convs,
                   completions, contexts, 0)


def count(path: Path) -> dict:
    return {"file": path.name, **usersimcrs_synthetic_dialogues(path)}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
