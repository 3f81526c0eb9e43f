"""Detection of the part-B formats: every sniffer against every sample file of the shared corpus."""

from __future__ import annotations

import subprocess
import sys

from drafters.traces import io as tio
from drafters.traces.detect import detect_format
from drafters.traces.formats import get_format

from .conftest import DATA

FOLDER_FORMAT = {
    "agentbench_runs": "agentbench",
    "aider_chat_history": "aider",
    "copilot_cli_session": "copilot_cli",
    "gemini_cli_chat": "gemini_cli",
    "langfuse_trace_export": "langfuse",
    "mini_swe_agent_traj": "mini_swe_agent",
    "openhands_trajectory": "openhands",
    "otel_genai_spans": "otel_genai",
    "sharegpt_function_call": "sharegpt",
    "swe_agent_traj": "swe_agent",
    "tau_bench_results": "tau_bench",
    "toolbench_dfs_legacy_function_call": "toolbench",
}
MODULES = sorted(set(FOLDER_FORMAT.values()))


def _samples():
    return sorted(p for p in DATA.glob("*/*") if p.is_file())


def test_each_sniffer_matches_exactly_its_own_samples():
    """No false positives: a part-B sniffer accepts the files of its folder and no other sample file
    (Claude Code, Codex, provider cassettes, MCP transcripts and each other's)."""
    heads = {p: tio.read_head(p) for p in _samples()}
    for name in MODULES:
        fmt = get_format(name)
        matched = {p.parent.name + "/" + p.name for p, head in heads.items() if fmt.sniff(head, str(p))}
        own = {p.parent.name + "/" + p.name for p in heads if FOLDER_FORMAT.get(p.parent.name) == name}
        assert matched == own, name


def test_detect_format_picks_the_specific_format_first():
    """Some of these files also look like generic OpenAI chat (mini-swe-agent's bare message list,
    OpenHands' embedded responses): the registry order puts the specific sniffer first."""
    for p in _samples():
        want = FOLDER_FORMAT.get(p.parent.name)
        if want is not None:
            assert detect_format(tio.read_head(p), str(p)).name == want, p.name


def test_part_b_formats_import_without_torch():
    code = ("import sys\n" + "".join(f"import drafters.traces.formats.{m}\n" for m in MODULES)
            + "assert 'torch' not in sys.modules, 'torch imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)
