"""The register stage's default drafter name."""

from __future__ import annotations

import pytest

from workers.stages.register import default_drafter_name


@pytest.mark.parametrize(("target", "name"), [
    ("smollm2-135m-agent", "smollm2-135m-agent"),  # the demo target: not smollm2-135m-agent-agent
    ("HuggingFaceTB/SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct-agent"),
    ("/models/qwen3-4b-q8_0.gguf", "qwen3-4b-q8_0-agent"),
    ("/models/my-agent.gguf", "my-agent"),
    ("Qwen/Qwen3-4B", "Qwen3-4B-agent"),
])
def test_default_drafter_name_does_not_double_its_suffix(target: str, name: str) -> None:
    assert default_drafter_name(target) == name
