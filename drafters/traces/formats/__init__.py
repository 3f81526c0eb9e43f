"""One module per trace format; each defines ``FORMAT`` (see base.py).

``FORMAT_MODULES`` is the registry, in detection order: more specific sniffers first, so that a
format whose files also look like a more general one (tau-bench results are OpenAI messages) wins.
"""

from __future__ import annotations

import importlib
from functools import cache

from drafters.traces.formats.base import TraceFormat

FORMAT_MODULES: list[str] = [
    # Order matters: specific sniffers first, the generic OpenAI chat records last (its files are also
    # what tau-bench, SWE-agent and others embed). Other engineers' formats go in the middle block.
    "drafters.traces.formats.claude_code",
    "drafters.traces.formats.claude_agent_sdk",
    "drafters.traces.formats.codex_cli",
    # -- formats of the other engineer (appended here) --
    "drafters.traces.formats.gemini_cli",
    "drafters.traces.formats.copilot_cli",
    "drafters.traces.formats.mini_swe_agent",
    "drafters.traces.formats.swe_agent",
    "drafters.traces.formats.swe_smith",
    "drafters.traces.formats.trae_agent",
    "drafters.traces.formats.letta",
    "drafters.traces.formats.vercel_ai",
    "drafters.traces.formats.inspect_ai",
    "drafters.traces.formats.openhands_sdk",
    "drafters.traces.formats.openhands",
    "drafters.traces.formats.tau_bench",
    "drafters.traces.formats.toolbench",
    "drafters.traces.formats.agentbench",
    "drafters.traces.formats.otel_genai",
    "drafters.traces.formats.langfuse",
    "drafters.traces.formats.aider",
    "drafters.traces.formats.sharegpt",
    "drafters.traces.formats.llamafactory",
    # -- provider API formats (records and cassettes) --
    "drafters.traces.formats.anthropic_messages",
    "drafters.traces.formats.openai_responses",
    "drafters.traces.formats.bedrock_converse",
    "drafters.traces.formats.gemini_api",
    "drafters.traces.formats.cohere_chat",
    "drafters.traces.formats.openai_chat",
    # -- the general path, for files no module recognizes (message lists found by their shape; tables' rows and
    # YAML and TOML documents read as records; text transcripts by their role-marker lines) --
    "drafters.traces.formats.csv_rows",
    "drafters.traces.formats.generic",
    "drafters.traces.formats.yaml_documents",
    "drafters.traces.formats.toml_documents",
    "drafters.traces.formats.text_transcript",
]


@cache
def all_formats() -> tuple[TraceFormat, ...]:
    """Every registered format, in detection order."""
    return tuple(importlib.import_module(name).FORMAT for name in FORMAT_MODULES)


def get_format(name: str) -> TraceFormat:
    """The format called ``name``; KeyError lists the known names."""
    for fmt in all_formats():
        if fmt.name == name:
            return fmt
    raise KeyError(f"unknown trace format {name!r}; known: {', '.join(f.name for f in all_formats())}")
