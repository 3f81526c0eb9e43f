"""The main job end to end: `tracedraft run` on real traces, as a user runs it.

The fast tests drive the real CLI in a subprocess with a tiny random target that uses SmolLM2's real
tokenizer; the slow test runs the README's quick start with the real SmolLM2-135M-Instruct target and
checks that training buys accepted length.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CHATML_TOOLS, EXAMPLES, REPO

TRACES = EXAMPLES / "traces"
CLAUDE_CODE = TRACES / "fasthooks__sample_main_transcript.jsonl"
OPENAI = sorted(TRACES.glob("pydantic-ai__test_openai_*.yaml"))
TRACEDRAFT = [sys.executable, "-m", "service.cli"]


def clean_env(home: Path) -> dict[str, str]:
    """The user's environment: no TRACEDRAFT_* settings leaked from other tests, a private home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACEDRAFT_")}
    return {**env, "TRACEDRAFT_HOME": str(home), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1"}


def tracedraft(home: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = clean_env(home)
    return subprocess.run([*TRACEDRAFT, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


def versions(home: Path) -> list[tuple]:
    db = home / "tracedraft.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        return con.execute("select version, checkpoint_uri from drafter_versions").fetchall()


def test_run_end_to_end_on_tiny_target(tmp_path: Path, tiny_target_dir: Path) -> None:
    """Ingest (Claude Code + OpenAI chat), render, train, evaluate, register: one version, a complete report."""
    home = tmp_path / "home"
    proc = tracedraft(home, "run", str(CLAUDE_CODE), *map(str, OPENAI), "--target", str(tiny_target_dir),
                      "--chat-template", str(CHATML_TOOLS), "--max-steps", "12", "--max-calls", "3",
                      "--max-new-tokens", "12", "--json")
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout)
    assert summary["status"] == "succeeded"
    assert summary["training"]["steps"] == 12
    assert set(summary["proposers"]) == {"candidate", "untrained", "ngram", "suffix", "suffix@block", "schema",
                                         "suffix+schema", "hybrid", "cascade"}
    assert [n for n, p in summary["proposers"].items() if p["what_if"]] == ["hybrid"]
    # speed leads: what to deploy, chosen on the development calls, with its speed on the test calls
    deploy = summary["deploy"]
    assert deploy["proposer"] in (None, *summary["proposers"])
    dev_calls = summary["selection"]["dev_calls"]
    assert deploy["chosen_on"] == "development" if dev_calls else deploy["chosen_on"].startswith("test:")
    # The traces were written by other models: the target regenerated the answers it trains on.
    regen = summary["regeneration"]
    assert regen["engine"] == "hf" and regen["calls"] > 0 and regen["generated"] + regen["reused"] == regen["calls"]
    assert 1 <= summary["heldout_calls"] <= 3
    assert summary["generated_tokens"] > 0
    for p in summary["proposers"].values():
        assert 1.0 <= p["tau"] <= 8.0  # block size 7: at most 7 drafts + the bonus token
    # Registered exactly once, with a DeepSpec-native checkpoint and no pickle anywhere.
    rows = versions(home)
    assert len(rows) == 1 and rows[0][0] == 1
    ckpt = Path(rows[0][1].removeprefix("file://"))
    names = {p.name for p in ckpt.iterdir()}
    assert {"config.json", "model.safetensors"} <= names
    assert not [n for n in names if n.endswith((".pt", ".pth", ".bin", ".pkl"))]
    config = json.loads((ckpt / "config.json").read_text())
    assert config["architectures"] == ["Qwen3DSparkModel"] and config["block_size"] == 7
    assert "speculators_model_type" not in config
    report = Path(summary["report_dir"]) / "report.json"
    assert json.loads(report.read_text())["proposers"]["candidate"]["tau"] == summary["proposers"]["candidate"]["tau"]
    # the registered page leads with the verdict: the drafter and the version registration gave it, the job,
    # the gate, what to deploy and the job's warnings
    verdict = (report.parent / "report.html").read_text().split("<section class=\"verdict\">")[1].split("</section>")[0]
    reg = summary["registry"]
    for needle in (reg["drafter"], f"version {reg['version']}", summary["job_id"], "Promotion gate:", "Deploy:",
                   "[model_mismatch]"):
        assert needle in verdict, needle
    # --json keeps stdout to the summary; the user still sees progress and warnings, on stderr, and the
    # summary lists the warnings (traces written by other models than the tiny target)
    assert "model_mismatch" in {w["code"] for w in summary["warnings"]}
    assert "warning: [model_mismatch]" in proc.stderr and "running / training" in proc.stderr
    assert proc.stderr.splitlines()[-1].split()[1:4] == ["job", "100%", "succeeded"], proc.stderr[-500:]


def test_unknown_format_names_the_formats_tried_and_registers_nothing(tmp_path: Path, tiny_target_dir: Path) -> None:
    home = tmp_path / "home"
    bad = tmp_path / "notes.txt"
    bad.write_text("this is not an agent trace\njust some notes\n")
    proc = tracedraft(home, "run", str(bad), "--target", str(tiny_target_dir), "--chat-template", str(CHATML_TOOLS))
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert "unknown_format" in out and "claude_code" in out and "openai_chat" in out
    assert versions(home) == []
    # Nothing the user sent is lost: the raw file is kept, content-addressed.
    raw = list((home / "artifacts" / "raw").iterdir())
    assert [p.read_bytes() for p in raw] == [bad.read_bytes()]


def test_target_that_cannot_be_loaded_says_where_it_looked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = tracedraft(home, "run", str(CLAUDE_CODE), *map(str, OPENAI), "--target", str(tmp_path / "no-such-model"))
    assert proc.returncode == 1
    err = proc.stdout + proc.stderr
    assert "target_not_found" in err and str(tmp_path / "no-such-model") in err
    assert versions(home) == []


def test_missing_trace_file_is_a_clear_error(tmp_path: Path) -> None:
    proc = tracedraft(tmp_path / "home", "run", str(tmp_path / "missing.jsonl"), "--target", "x")
    assert proc.returncode == 1
    assert "file_not_found" in proc.stderr and "missing.jsonl" in proc.stderr


def test_unknown_engine_is_refused_before_anything_runs(tmp_path: Path) -> None:
    proc = tracedraft(tmp_path / "home", "run", str(CLAUDE_CODE), "--target", "x", "--engine", "vllm")
    assert proc.returncode == 1
    assert "unknown_engine" in proc.stderr and "--engine" in proc.stderr
    assert versions(tmp_path / "home") == []


@pytest.mark.slow
@pytest.mark.timeout(2400)  # the whole demo: regeneration, training, five proposers replayed
def test_quickstart_on_the_agent_target_training_beats_untrained(tmp_path: Path) -> None:
    """The README's quick start exactly (scripts/demo: the agent target, the CPU auto recipe): the target's
    answers are regenerated and some call tools; the trained drafter's tau is above the untrained drafter's of
    the same shape with a positive paired per-call difference (deterministic: fixed seeds, greedy evaluation);
    the report has a tool_args column for every proposer."""
    home = tmp_path / "home"
    files = [str(p) for p in sorted(TRACES.iterdir()) if p.suffix != ".md"]
    proc = tracedraft(home, "run", *files, "--target", "smollm2-135m-agent", "--chat-template", str(CHATML_TOOLS),
                      "--json", timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout)
    regen = summary["regeneration"]
    assert regen["calls"] > 0 and regen["tool_calls"]["answers_with_tool_calls"] > 0
    trained, untrained = summary["proposers"]["candidate"]["tau"], summary["proposers"]["untrained"]["tau"]
    assert trained > untrained, (trained, untrained)
    assert summary["gate"]["details"]["comparison"]["mean_diff"] > 0
    assert all("tool_args" in p["tau_by_segment"] for p in summary["proposers"].values())
    assert summary["lossless"]["checked"] and summary["lossless"]["calls_checked"] > 0
    assert len(versions(home)) == 1


def test_ctrl_c_checkpoints_says_how_to_resume_and_resume_finishes(tmp_path: Path, tiny_target_dir: Path) -> None:
    """Ctrl-C during training: a clean stop with a checkpoint and the resume command; --resume completes the
    same job from that checkpoint and registers exactly one version."""
    import signal
    import time

    home = tmp_path / "home"
    env = clean_env(home)
    proc = subprocess.Popen(
        [*TRACEDRAFT, "run", str(CLAUDE_CODE), *map(str, OPENAI), "--target", str(tiny_target_dir),
         "--chat-template", str(CHATML_TOOLS), "--max-steps", "150", "--max-calls", "2", "--max-new-tokens", "8"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    db = home / "tracedraft.db"

    def training_step() -> int:
        if not db.exists():
            return -1
        try:
            with sqlite3.connect(db) as con:
                rows = con.execute("select data from job_events where type = 'metrics'").fetchall()
        except sqlite3.OperationalError:  # the file exists before its migrations have created the tables
            return -1
        steps = [json.loads(r[0]).get("step", 0) for r in rows if r[0] and '"phase": "train"' in r[0]]
        return max(steps, default=-1)

    deadline = time.monotonic() + 600
    while training_step() < 10 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
    assert proc.poll() is None, proc.stdout.read()[-3000:]
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, out[-3000:]
    job_id = out.split("--resume ")[1].split()[0]
    assert job_id.startswith("job_")
    assert versions(home) == []
    with sqlite3.connect(db) as con:
        (status,) = con.execute("select status from jobs where id = ?", (job_id,)).fetchone()
    assert status == "cancelled"
    ckpts = list((home / "work" / job_id / "checkpoints").glob("step_*/model.safetensors"))
    assert ckpts, "cancel must leave a checkpoint"

    done = tracedraft(home, "run", "--resume", job_id, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["job_id"] == job_id and summary["status"] == "succeeded"
    assert summary["training"]["steps"] == 150
    assert len(versions(home)) == 1
