"""Multi-agent transcripts whose speakers are named (issue 30; docs/traces.md, "Named speakers"): Virtual Lab's
meeting discussions keep ``[{agent, message}]``, the harness speaking as ``User`` and every other speaker an agent
prompted as a persona. Hand-made lists in that layout.
"""

from __future__ import annotations

from drafters.traces.formats._named_speakers import speaker_key

from .conftest import ingest_json, totals

MEETING = [{"agent": "User", "message": "This is the beginning of a team meeting. Agenda: pick the tools."},
           {"agent": "Principal Investigator", "message": "Let us start with AlphaFold."},
           {"agent": "Immunologist", "message": "I agree; nanobodies first."},
           {"agent": "Scientific Critic", "message": "Check the confidence scores."},
           {"agent": "User", "message": "Principal Investigator, please summarize."},
           {"agent": "Principal Investigator", "message": "We use AlphaFold-Multimer."}]


def test_each_named_agent_turn_is_a_call_of_the_model(tmp_path):
    result = ingest_json(tmp_path, MEETING, "discussion.json")
    assert result.report.ok, [(e.code, e.message) for e in result.report.errors]
    assert totals(result.conversations) == (1, 4, 0)  # three agents in a row: three calls, not one joined answer
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == [m["message"] for m in MEETING if m["agent"] != "User"]
    assert [m.role for m in calls[2].context] == ["user", "assistant", "assistant"]
    (warning,) = [w for w in result.report.warnings if w.code == "named_speakers_as_assistant"]
    assert "Principal Investigator, Immunologist, Scientific Critic" in warning.message


def test_named_speakers_one_key_down(tmp_path):
    result = ingest_json(tmp_path, {"meeting": "tools_selection", "discussion": MEETING}, "discussion.json")
    assert result.report.ok and totals(result.conversations) == (1, 4, 0)


def test_speakers_are_not_guessed_without_a_user_or_with_roles():
    debate = [{"name": "Moderator", "text": "Welcome."}, {"name": "Proponent", "text": "Yes."},
              {"name": "Opponent", "text": "No."}]
    assert speaker_key(debate) is None  # no user: who is the model is not guessed
    with_roles = [{**m, "role": "user"} for m in MEETING]
    assert speaker_key(with_roles) is None
    lowercase = [{"agent": "User", "message": "hi"}, {"agent": "some_process", "message": "log line"}]
    assert speaker_key(lowercase) is None  # not a name
