"""Format detection on the samples of the core formats, and the unknown-format error."""

from __future__ import annotations

import json

import pytest

from drafters.traces import io as tio
from drafters.traces.detect import detect_format
from drafters.traces.formats import all_formats
from drafters.traces.report import TraceError

from .conftest import sample

EXPECTED = {
    "claude_code_jsonl/VibeCodingTracker__test_conversation.jsonl": "claude_code",
    "claude_code_jsonl/agentcmd__full-session-two.jsonl": "claude_code",
    "claude_code_jsonl/claude-code-log__edge_cases.jsonl": "claude_code",
    "claude_code_jsonl/fasthooks__sample_agent_sidechain.jsonl": "claude_code",
    "claude_code_jsonl/fasthooks__sample_hook_logs.jsonl": "claude_code",  # claimed to report it clearly
    "claude_code_jsonl/fasthooks__sample_main_transcript.jsonl": "claude_code",
    "claude_code_jsonl/fasthooks__studio_sample-transcript.jsonl": "claude_code",
    "claude_code_jsonl/simonw__sample_session.json": "claude_code",
    "claude_code_jsonl/simonw__sample_session.jsonl": "claude_code",
    "mcp_in_transcripts/agentcmd__claude_tool-mcp__happy__change_title.jsonl": "claude_code",
    "mcp_in_transcripts/pydantic-ai__test_anthropic_mcp_servers.yaml": "anthropic_messages",
    "anthropic_messages_api/pydantic-ai__test_anthropic_multiple_parallel_tool_calls.yaml": "anthropic_messages",
    "anthropic_messages_api/pydantic-ai__test_anthropic_tool_with_thinking.yaml": "anthropic_messages",
    "bedrock_converse/pydantic-ai__test_bedrock_anthropic_tool_with_thinking.yaml": "bedrock_converse",
    "bedrock_converse/pydantic-ai__test_bedrock_moonshotai_tool_call.yaml": "bedrock_converse",
    # A Gemini conversation that starts on OpenAI Responses: the provider of its last call decides.
    "gemini_api_function_call/pydantic-ai__test_google_thinking_with_tool_calls_from_other_model.yaml": "gemini_api",
    "gemini_api_function_call/pydantic-ai__test_google_tool_output.yaml": "gemini_api",
    # An agent that calls Gemini and then OpenAI.
    "openai_chat_tool_calls/pydantic-ai__test_openai_multiple_agent_tool_calls.yaml": "openai_chat",
    "openai_chat_tool_calls/pydantic-ai__test_openai_tool_output.yaml": "openai_chat",
    "openai_responses_api/pydantic-ai__test_openai_responses_simple_response_with_tool_call.yaml": "openai_responses",
    "codex_cli_rollout/agentcmd__rollout-2025-09-25T08-02-05-0199812e.jsonl": "codex_cli",
    "codex_cli_rollout/agentcmd__rollout-2025-09-25T15-12-14-019982b8.jsonl": "codex_cli",
    "codex_cli_rollout/agentcmd__codex-exec-json__stream-output-2.jsonl": "codex_cli",
    "codex_cli_rollout/agentcmd__codex-exec-json__stream-output-5.jsonl": "codex_cli",
}


@pytest.mark.parametrize("rel,name", sorted(EXPECTED.items()))
def test_sample_detected(rel, name):
    path = sample(rel)
    if name not in {f.name for f in all_formats()}:
        pytest.skip(f"{name} not registered")
    assert detect_format(tio.read_head(path), path.name).name == name


def test_unknown_format_names_every_format_tried():
    with pytest.raises(TraceError) as exc:
        detect_format("just some prose, not a trace\n", "notes.txt")
    assert exc.value.code == "unknown_format"
    assert exc.value.where == "notes.txt"
    for fmt in all_formats():
        assert fmt.name in exc.value.message


def test_registry_order_puts_openai_chat_then_the_general_path_last():
    names = [f.name for f in all_formats()]
    assert names[-6:] == ["openai_chat", "csv_rows", "generic", "yaml_documents", "toml_documents", "text_transcript"]
    assert names.index("claude_code") < names.index("anthropic_messages")


def test_first_line_longer_than_the_head_still_detected():
    from drafters.traces.formats import claude_code, codex_cli

    cc = json.dumps({"parentUuid": None, "isSidechain": False, "sessionId": "s", "type": "user",
                     "message": {"role": "user", "content": "x" * 70_000}})
    assert claude_code.FORMAT.sniff(cc[: 64 * 1024], "s.jsonl")
    cx = json.dumps({"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "x" * 70_000}]}}, separators=(",", ":"))
    assert codex_cli.FORMAT.sniff(cx[: 64 * 1024], "r.jsonl")
