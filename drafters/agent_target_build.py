"""Build the LoRA adapter of the demo agent target ``smollm2-135m-agent`` (drafters/agent_target.py), seeded.

    PYTHONPATH=. python -m drafters.agent_target_build                 # train, save, measure
    PYTHONPATH=. python -m drafters.agent_target_build --measure-only  # the figures of the committed adapter

The demo needs a small target that writes tool calls the way an organization's fine-tuned agent model does.
SmolLM2-135M-Instruct mostly answers tool-calling prompts in prose; a LoRA adapter trained on the example
traces' agent turns teaches it the tool-call format of the tool-aware template. Steps:

1. Ingest the example traces (examples/traces/, in the order scripts/demo passes them) and split them by the
   stable hash of the conversation id (``drafters.traces.ingest.split_conversations``). Some formats put the
   file name into the id, and ``tracedraft run`` stores uploads under names of its own (upload index,
   sha256 prefix, extension: ``service/datasets.py``), so the split is taken under both names and a
   conversation held out under either is held out: the adapter never trains on a conversation the demo
   job or this script evaluates on.
2. Render the training conversations through examples/chat_templates/chatml_tools.jinja with
   ``drafters.render`` (the loss mask covers the assistant's own tokens and its end-of-turn token).
3. Train LoRA adapters (peft) on the attention and MLP projections of every layer, fp32 weights under bf16
   autocast where the CPU has native bf16; loss = mean cross-entropy over the supervised tokens of a step
   (the LM head runs on those positions only); AdamW, linear warm-up then linear decay; the rows with a
   tool call plus a seeded share of the text-only rows, shuffled by the seed (``BuildConfig``). The
   committed adapter took 1000 s of CPU time (one thread; 43 min wall on a 2-core Xeon shared with other
   work); its ``build_record.json`` holds the figures.
4. Save ``adapter_model.safetensors`` (bf16), peft's ``adapter_config.json``, the template and
   ``build_record.json`` (configuration, data digests, the adapter's sha256, training time, machine).
5. Measure (``drafters.tool_call_eval``, greedy, in-process transformers) the merged agent, loaded as any
   target from the saved files, and the base model (unless ``--skip-base``) on the held-out calls; the
   figures go to stdout and into the record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from drafters.agent_target import ADAPTER_DIR, ADAPTER_FILE, RECORD_FILE, TEMPLATE_FILE
from drafters.checksums import sha256_file
from drafters.target_cache import AGENT_SPEC, SMOLLM2_SPEC
from drafters.traces.io import upload_names
from drafters.traces.model import Conversation, LLMCall

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_TRACES = REPO / "examples" / "traces"
EXAMPLE_TEMPLATE = REPO / "examples" / "chat_templates" / "chatml_tools.jinja"
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass
class BuildConfig:
    """The adapter's recipe. ``tool_epochs``: passes over the rendered rows that hold a tool call;
    ``text_share``: the seeded share of the other rows (text answers only) added to the first pass (they
    keep the model answering in text where no tool fits; all of them would double the CPU time);
    ``rows_per_step``: rows per optimizer step (the loss is the mean over their supervised tokens);
    ``max_seq_len``: rows longer than this lose context from the left (``Renderer``); ``threads``: torch CPU
    threads (the adapter is reproduced bit for bit only with the same count; on a shared 2-core machine one
    thread ran faster than two); ``max_new_tokens`` / ``batch_size``: the measurement's answer limit and
    batch (``drafters.tool_call_eval.greedy_answers``)."""

    seed: int = 0
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    tool_epochs: int = 1
    text_share: float = 0.25
    lr: float = 1e-3
    warmup_frac: float = 0.05
    rows_per_step: int = 2
    max_seq_len: int = 1024
    heldout_fraction: float = 0.1
    threads: int = 1
    max_new_tokens: int = 96
    batch_size: int = 16


# ------------------------------------------------------------------------------------------------ data


def example_trace_files(root: Path = EXAMPLE_TRACES) -> list[Path]:
    """The example trace files in the order scripts/demo passes them (``*.json*`` then ``*.yaml``, each
    sorted): the upload order decides the names ``tracedraft run`` gives them."""
    return sorted(root.glob("*.json*")) + sorted(root.glob("*.yaml"))


@dataclass
class ExampleSplit:
    """The example conversations split for the adapter: ``train`` never includes a conversation held out
    under the files' own names or under the job's upload names; ``heldout`` is the union of both held-out
    sets; ``demo_heldout`` the content hashes of the set the demo job itself holds out."""

    train: list[Conversation]
    heldout: list[Conversation]
    demo_heldout: set[str]

    def heldout_calls(self) -> list[LLMCall]:
        return [call for conv in self.heldout for call in conv.calls()]


def split_examples(paths: Sequence[Path], heldout_fraction: float = 0.1) -> ExampleSplit:
    """Ingest ``paths`` twice (their own names, and as uploaded: ``ingest_as_uploaded``) and split both ways.

    Raises RuntimeError when the two ingests do not hold the same conversations (they read the same bytes
    in the same order, so this means ingestion depends on more than the file name)."""
    from drafters.traces.ingest import ingest, ingest_as_uploaded, split_conversations

    convs = ingest(paths, heldout_fraction=heldout_fraction).conversations
    demo = ingest_as_uploaded(paths, heldout_fraction=heldout_fraction).conversations
    hashes = [c.content_hash() for c in convs]
    if sorted(hashes) != sorted(c.content_hash() for c in demo):
        raise RuntimeError("the example traces ingest differently under the job's upload names")
    held = {c.content_hash() for c in split_conversations(convs, heldout_fraction, min_heldout=1)[1]}
    demo_held = {c.content_hash() for c in split_conversations(demo, heldout_fraction, min_heldout=1)[1]}
    held |= demo_held
    return ExampleSplit(
        train=[c for c, h in zip(convs, hashes) if h not in held],
        heldout=[c for c, h in zip(convs, hashes) if h in held],
        demo_heldout=demo_held,
    )


def training_rows(
    convs: Sequence[Conversation], tokenizer: Any, template: str, max_seq_len: int
) -> tuple[list, dict]:
    """Rendered rows (``RenderedSequence``) of ``convs`` that supervise at least one token, and the render
    report (``RenderReport.to_dict()``)."""
    from drafters.render import Renderer

    renderer = Renderer(tokenizer, chat_template=template, max_seq_len=max_seq_len)
    rows = [s for c in convs for s in renderer.render_conversation(c) if any(s.loss_mask)]
    return rows, renderer.report.to_dict()


# ---------------------------------------------------------------------------------------------- training


def lora_config(cfg: BuildConfig) -> Any:
    """peft ``LoraConfig`` of the recipe (attention and MLP projections of every layer)."""
    from peft import LoraConfig

    return LoraConfig(
        r=cfg.r,
        lora_alpha=cfg.alpha,
        lora_dropout=cfg.dropout,
        target_modules=LORA_TARGETS,
        bias="none",
        task_type="CAUSAL_LM",
    )


def row_loss(causal_lm: Any, row: Any, autocast: bool) -> Any:
    """Summed cross-entropy of a causal LM over one row's supervised tokens (position t predicts token
    t + 1 where ``loss_mask[t + 1]`` is 1); the LM head runs on those positions only. Returns a 0-d tensor."""
    import torch
    import torch.nn.functional as F

    ids = torch.tensor([row.input_ids], dtype=torch.long)
    mask = torch.tensor(row.loss_mask[1:], dtype=torch.bool)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        hidden = causal_lm.model(input_ids=ids).last_hidden_state[0, :-1][mask]
        logits = causal_lm.lm_head(hidden)
    return F.cross_entropy(logits.float(), ids[0, 1:][mask], reduction="sum")


def step_schedule(rows: Sequence[Any], cfg: BuildConfig) -> list[list[int]]:
    """Row indices of each optimizer step: every pass shuffles (seeded) the rows with a tool call, plus in
    the first pass a seeded ``text_share`` of the others, and cuts them into groups of ``rows_per_step``."""
    from drafters.render import Segment

    rng = random.Random(cfg.seed)
    tool = [i for i, r in enumerate(rows) if Segment.TOOL_NAME in r.segments]
    text = [i for i, r in enumerate(rows) if Segment.TOOL_NAME not in r.segments]
    text = sorted(rng.sample(text, round(cfg.text_share * len(text))))
    steps: list[list[int]] = []
    for epoch in range(cfg.tool_epochs):
        order = tool + (text if epoch == 0 else [])
        rng.shuffle(order)
        steps += [order[i : i + cfg.rows_per_step] for i in range(0, len(order), cfg.rows_per_step)]
    return steps


def train_adapter(
    model: Any, rows: Sequence[Any], cfg: BuildConfig, log: Callable[[str], None] = print
) -> tuple[Any, dict[str, Any]]:
    """Wrap ``model`` (a transformers causal LM, fp32, CPU) in LoRA adapters and train them on ``rows``.

    Returns (the peft model, stats: steps, wall and CPU seconds, supervised tokens seen, the mean loss of
    the first and last tenth of the steps in nats per token)."""
    import torch
    from peft import get_peft_model

    from drafters.cpu_memory import reuse_freed_memory
    from drafters.target import cpu_bf16_fast

    torch.manual_seed(cfg.seed)  # the LoRA A matrices are initialised from torch's global generator
    peft_model = get_peft_model(model, lora_config(cfg))
    peft_model.train()
    causal_lm = peft_model.base_model.model
    params = [p for p in peft_model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    steps = step_schedule(rows, cfg)
    warm = max(1, round(cfg.warmup_frac * len(steps)))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (len(steps) - s) / max(1, len(steps) - warm)))
    )
    autocast = cpu_bf16_fast()
    losses: list[float] = []
    seen = 0
    t0, c0 = time.perf_counter(), time.process_time()
    with reuse_freed_memory():
        for k, group in enumerate(steps):
            n_sup = sum(sum(rows[i].loss_mask[1:]) for i in group)
            total = 0.0
            for i in group:
                loss = row_loss(causal_lm, rows[i], autocast) / n_sup
                loss.backward()
                total += loss.item()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            losses.append(total)
            seen += n_sup
            if (k + 1) % 10 == 0 or k + 1 == len(steps):
                el = time.perf_counter() - t0
                log(
                    f"step {k + 1}/{len(steps)} loss {sum(losses[-10:]) / len(losses[-10:]):.3f} "
                    f"{el:.0f} s (eta {el / (k + 1) * (len(steps) - k - 1):.0f} s)"
                )
    tenth = max(1, len(losses) // 10)
    stats = {
        "steps": len(steps),
        "seconds": round(time.perf_counter() - t0, 1),
        "cpu_seconds": round(time.process_time() - c0, 1),
        "supervised_tokens": seen,
        "bf16_autocast": autocast,
        "loss_first_tenth": sum(losses[:tenth]) / tenth,
        "loss_last_tenth": sum(losses[-tenth:]) / tenth,
    }
    return peft_model, stats


def save_adapter(peft_model: Any, out_dir: Path, template: str) -> Path:
    """Write the adapter weights (bf16 safetensors), peft's config (base named by its spec, not a local
    path) and the template into ``out_dir``; returns the weights' path."""
    import torch
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    state = {
        k: v.detach().to(torch.bfloat16).contiguous()
        for k, v in get_peft_model_state_dict(peft_model).items()
    }
    save_file(state, str(out_dir / ADAPTER_FILE), metadata={"format": "pt"})
    config = peft_model.peft_config["default"]
    config.base_model_name_or_path = SMOLLM2_SPEC
    config.inference_mode = True
    config.save_pretrained(str(out_dir))
    (out_dir / TEMPLATE_FILE).write_text(template, encoding="utf-8")
    return out_dir / ADAPTER_FILE


# ------------------------------------------------------------------------------------------- measurement


def measure_split(
    target: Any,
    split: ExampleSplit,
    template: str,
    cfg: BuildConfig,
    *,
    max_calls: int | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Greedy tool-call figures of ``target`` (a ``drafters.target.Target``; prompts rendered with
    ``template``) on the held-out calls, and on the demo job's held-out subset of them."""
    from drafters.render import Renderer
    from drafters.tool_call_eval import figures_of, measure_tool_calls

    renderer = Renderer(target.tokenizer, chat_template=template)
    calls = split.heldout_calls()[:max_calls]
    figs = measure_tool_calls(
        target.model,
        target.tokenizer,
        renderer,
        calls,
        max_new_tokens=cfg.max_new_tokens,
        batch_size=cfg.batch_size,
    )
    demo_convs = {c.id for c in split.heldout if c.content_hash() in split.demo_heldout}
    demo = figures_of(
        [o for o, c in zip(figs.outcomes, calls) if c.conversation_id in demo_convs],
        figs.max_new_tokens,
        figs.seconds,
    )
    log(
        f"{target.name} on all held-out calls:\n{figs.summary()}\n{target.name} on the demo job's held-out "
        f"calls:\n{demo.summary()}"
    )
    return {
        "heldout": figs.to_dict(),
        "demo_heldout": demo.to_dict(),
        "outcomes": [
            {
                "call_id": o.call_id,
                "recorded_tool_call": o.recorded_tool_call,
                "text": o.text,
                "problems": o.problems,
            }
            for o in figs.outcomes
        ],
    }


# ------------------------------------------------------------------------------------------------ driver


def data_record(
    paths: Sequence[Path],
    split: ExampleSplit,
    rows: Sequence[Any],
    report: dict,
    template: str,
    cfg: BuildConfig,
) -> dict[str, Any]:
    """What the adapter was trained on, as digests and counts (no trace content)."""

    def digest(ids: list[str]) -> str:
        return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()

    return {
        "files": [{"name": p.name, "sha256": sha256_file(p)} for p in paths],
        "upload_names": upload_names(paths),
        "heldout_fraction": cfg.heldout_fraction,
        "train_conversations": len(split.train),
        "train_ids_sha256": digest([c.id for c in split.train]),
        "heldout_conversations": len(split.heldout),
        "heldout_ids_sha256": digest([c.id for c in split.heldout]),
        "heldout_calls": len(split.heldout_calls()),
        "demo_heldout_conversations": len(split.demo_heldout),
        "template_sha256": hashlib.sha256(template.encode()).hexdigest(),
        "rows": len(rows),
        "tokens": sum(len(r.input_ids) for r in rows),
        "supervised_tokens": sum(sum(r.loss_mask) for r in rows),
        "render_report": {
            k: report[k] for k in ("calls", "calls_packed", "calls_per_call", "truncated", "dropped_by_code")
        },
    }


def machine_record(cfg: BuildConfig) -> dict[str, Any]:
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    import peft

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "threads": cfg.threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "python": platform.python_version(),
    }


def build(
    out_dir: Path,
    cfg: BuildConfig,
    *,
    traces: Sequence[Path],
    template_path: Path,
    cache_dir: str | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train and save the adapter into ``out_dir`` and write its build record (without figures); returns
    the record."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from drafters.target_cache import convert_gguf, smollm2_gguf_path

    torch.set_num_threads(cfg.threads)
    template = template_path.read_text(encoding="utf-8")
    base_dir = convert_gguf(smollm2_gguf_path(), cache_dir)
    split = split_examples(traces, cfg.heldout_fraction)
    tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
    rows, report = training_rows(split.train, tokenizer, template, cfg.max_seq_len)
    data = data_record(traces, split, rows, report, template, cfg)
    log(
        f"{data['train_conversations']} training conversations -> {data['rows']} rows, {data['tokens']} tokens "
        f"({data['supervised_tokens']} supervised); {data['heldout_conversations']} held out"
    )
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    peft_model, stats = train_adapter(model, rows, cfg, log)
    weights = save_adapter(peft_model, out_dir, template)
    record = {
        "spec": AGENT_SPEC,
        "base": SMOLLM2_SPEC,
        "base_sha256": sha256_file(smollm2_gguf_path()),
        "command": "python -m drafters.agent_target_build " + " ".join(sys.argv[1:]),
        "config": asdict(cfg),
        "lora_targets": LORA_TARGETS,
        "data": data,
        "training": stats,
        "adapter_sha256": sha256_file(weights),
        "adapter_bytes": weights.stat().st_size,
        "machine": machine_record(cfg),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out_dir / RECORD_FILE).write_text(json.dumps(record, indent=1) + "\n")
    log(f"adapter {weights} ({weights.stat().st_size / 1e6:.1f} MB) trained in {stats['seconds']:.0f} s")
    return record


def measure_into_record(
    out_dir: Path,
    traces: Sequence[Path],
    template_path: Path,
    cfg: BuildConfig,
    *,
    with_base: bool = True,
    max_calls: int | None = None,
    cache_dir: str | None = None,
    outcomes: Path | None = None,
) -> dict[str, Any]:
    """Measure the adapter in ``out_dir`` (merged into the base through the real loading path, cached) and,
    when ``with_base``, the base model on the held-out calls; store the figures in the build record (and
    every answer in ``outcomes`` when given). Returns the figures."""
    from drafters.agent_target import agent_target_dir
    from drafters.target import load_target

    record_path = out_dir / RECORD_FILE
    record = json.loads(record_path.read_text())
    split = split_examples(traces, record["config"]["heldout_fraction"])
    template = template_path.read_text(encoding="utf-8")
    if out_dir.resolve() == ADAPTER_DIR:
        agent = load_target(AGENT_SPEC, cache_dir=cache_dir)
    else:
        agent = load_target(str(agent_target_dir(cache_dir, adapter_dir=out_dir)), cache_dir=cache_dir)
    figures = {AGENT_SPEC: measure_split(agent, split, template, cfg, max_calls=max_calls)}
    del agent
    if with_base:
        base = load_target(SMOLLM2_SPEC, cache_dir=cache_dir)
        figures[SMOLLM2_SPEC] = measure_split(base, split, template, cfg, max_calls=max_calls)
    record["figures"] = {spec: {k: v for k, v in f.items() if k != "outcomes"} for spec, f in figures.items()}
    record["figures"].update(
        max_calls=max_calls, max_new_tokens=cfg.max_new_tokens, batch_size=cfg.batch_size
    )
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    if outcomes is not None:
        outcomes.write_text(json.dumps({spec: f["outcomes"] for spec, f in figures.items()}, indent=1))
    return record["figures"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m drafters.agent_target_build", description=__doc__.split("\n")[0]
    )
    ap.add_argument(
        "--out", type=Path, default=ADAPTER_DIR, help="adapter directory (default: the committed one)"
    )
    ap.add_argument("--measure-only", action="store_true", help="measure the adapter already in --out")
    ap.add_argument("--skip-base", action="store_true", help="do not measure the base model")
    ap.add_argument("--max-calls", type=int, default=None, help="measure on the first N held-out calls only")
    ap.add_argument(
        "--cache-dir", default=None, help="target cache dir (default: TRACEDRAFT_CACHE_DIR or home)"
    )
    ap.add_argument("--traces", type=Path, default=EXAMPLE_TRACES)
    ap.add_argument("--template", type=Path, default=EXAMPLE_TEMPLATE)
    ap.add_argument(
        "--outcomes", type=Path, default=None, help="write every held-out answer to this JSON file"
    )
    for f, default in asdict(BuildConfig()).items():
        ap.add_argument(f"--{f.replace('_', '-')}", type=type(default), default=default)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: build (unless ``--measure-only``), then measure the agent (and the base) and print the
    figures."""
    import torch

    a = _parser().parse_args(argv)
    cfg = BuildConfig(**{f: getattr(a, f) for f in asdict(BuildConfig())})
    torch.set_num_threads(cfg.threads)
    traces = example_trace_files(a.traces)
    if not a.measure_only:
        build(a.out, cfg, traces=traces, template_path=a.template, cache_dir=a.cache_dir)
    measure_into_record(
        a.out,
        traces,
        a.template,
        cfg,
        with_base=not a.skip_base,
        max_calls=a.max_calls,
        cache_dir=a.cache_dir,
        outcomes=a.outcomes,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
