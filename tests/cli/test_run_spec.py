"""`tracedraft run`'s job spec is judged as a job submitted through the API is."""

from __future__ import annotations

from service import embedded
from service.api.schemas import JobSpec, spec_to_stored


def _run_spec() -> dict:
    return embedded.build_spec(target="smollm2-135m-agent", chat_template=None, base_drafter=None, max_steps=None,
                               time_budget_min=None, engine="auto", max_calls=None, max_new_tokens=None,
                               num_draft_layers=None, drafter_name=None, trace_format=None)


def test_a_local_run_uses_the_apis_promotion_policy():
    # A spec POSTed with no promotion block is stored with the schema's defaults; a local run must carry the
    # same numbers, min_support included (it once fell back to the gate's library default of 50 rounds).
    api = spec_to_stored(JobSpec.model_validate({"target": {"model": "smollm2-135m-agent"}}))
    run = _run_spec()
    assert run["promotion"] == api["promotion"]
    assert run["promotion"]["min_support"] == 20


def test_a_plain_progress_line_shortens_the_message_at_a_word():
    """A log's progress line keeps the stage's latest message whole, or shortened at a word with " ..." (a new
    user's trial saw it cut mid-word)."""
    message = "regenerated 12 of 269 calls with the target; " + "tool-call arguments checked against the schema " * 4
    line = embedded.plain_line(0.42, "running / regenerating", "ETA 3:05", message)
    assert " job  42%  running / regenerating  ETA 3:05  regenerated 12 of 269 calls" in line
    assert line.endswith(" ...") and len(line.split("ETA 3:05  ", 1)[1]) <= embedded.LATEST_CHARS
    kept = line.split("ETA 3:05  ", 1)[1].removesuffix(" ...")
    assert message.startswith(kept) and message[len(kept)] == " "  # whole words only
    assert embedded.plain_line(1.0, "succeeded / registering", "", "").endswith("succeeded / registering  ")
