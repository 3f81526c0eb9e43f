"""The five stages of a job, as thin glue: read the job's inputs, call one ``drafters`` function, write back.

Each function takes a ``StageContext`` (workers/context.py) and returns a JSON-able dict that the stage
task stores as ``job.result[<stage>]``. Large outputs live in the job's work directory (local, persistent
across re-deliveries) and, where other machines need them, in the artifact store. No ML logic lives here:
it is all in ``drafters``; no SQL either: it is all in ``service``.

The job spec (``job.spec``) this reads, with the defaults that "auto" resolves to:

    target:      {"model": "smollm2-135m-instruct", "chat_template": null | "<jinja text>",
                  "template_kwargs": {}, "max_seq_len": "auto"}
    data:        {"format": null, "on_error": "skip", "scrub": true, "heldout_fraction": 0.1}
    base_drafter: null | "name@alias" | "name@v3" | a checkpoint directory
    drafter_name: "<target>-agent" by default
    recipe:      {"num_draft_layers": "auto", "block_size": 7, "max_steps": "auto", "time_budget_s": null,
                  "lr": "auto", "num_anchors": "auto", "seed": 0, "segment_weights": {"tool_args": 2.0},
                  "parallel": "auto" (fsdp when the replicated state would not fit; shards only under torchrun), ...}
    evaluation:  {"engine": "hf", "max_calls": "auto", "max_new_tokens": "auto", "temperature": 0.0, "seed": 0}
    promotion:   {"min_gain": 0.02, "max_segment_loss": 0.03, "min_support": 20, "auto_promote": false}
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from workers.context import StageContext


def _auto(value: Any, key: str) -> Any:
    """Resolve an "auto" (or missing) setting for this machine (``drafters.train.resolve.MachineDefaults``:
    CPU demo vs GPU worker)."""
    if value not in (None, "auto"):
        return value
    from drafters.train.resolve import Machine

    return getattr(Machine.detect().defaults, key)


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _target_spec(ctx: StageContext) -> dict[str, Any]:
    return dict(ctx.spec.get("target") or {})


def _load_target(ctx: StageContext, *, for_training: bool = False):
    """The frozen target. For training on a CPU with native bf16 (AVX512-BF16/AMX) the target runs in bf16,
    several times faster, and hands fp32 features to the fp32 drafter; evaluation keeps fp32 on CPU so the
    greedy lossless check compares exact arithmetic (the recipe's ``target_dtype`` overrides)."""
    import torch

    from drafters.recipe import StageRecipe
    from drafters.target import cpu_bf16_fast, load_target

    dtype = StageRecipe.from_spec(ctx.spec.get("recipe")).target_dtype if for_training else "auto"
    if for_training and dtype == "auto" and _device() == "cpu" and cpu_bf16_fast():
        dtype = "bfloat16"
    target = load_target(_target_spec(ctx)["model"], device=_device(), cache_dir=ctx.settings.cache_dir,
                         dtype=None if dtype == "auto" else dtype)
    if _device() == "cpu":
        target.feature_dtype = torch.float32
    return target


def _drafter_weights(target):
    """The target's embedding and LM head for the drafter's frozen copies: fp32 on CPU (the drafter trains
    in fp32 there), the target's own tensors on GPU."""
    if target.device.type == "cpu":
        return target.embed_weight.float(), target.lm_head_weight.float()
    return target.embed_weight, target.lm_head_weight


def _torch_distributed() -> bool:
    """Whether this process belongs to a torch.distributed process group (never, for a Celery worker)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def _distributed(ctx: StageContext) -> bool:
    """Whether the next stage may run on another machine (Celery workers); inline runs share one disk."""
    return ctx.settings.pipeline == "celery"


def _publish(ctx: StageContext, local: Path, name: str) -> dict[str, Any]:
    """Upload a stage output directory to ``jobs/<job>/<name>/`` when the next stage may run on another
    machine; inline, the work directory is the hand-over and nothing is copied."""
    if not _distributed(ctx):
        return {"uri": None, "files": {}, "local": str(local)}
    uri, files = ctx.store.put_dir(f"jobs/{ctx.job_id}/{name}", local)
    return {"uri": uri, "files": files}


def _fetch(ctx: StageContext, ref: dict[str, Any], local: Path) -> Path:
    """Make ``local`` hold a published directory, every file hash-verified (intact local files are kept)."""
    if ref.get("uri") is None:
        return Path(ref["local"])
    return ctx.store.get_dir(ref["uri"], local, ref["files"])


class _CheckpointSync:
    """Mirror the training run's checkpoints to the artifact store, so a training task re-delivered to
    another machine resumes from the last checkpoint instead of step 0.

    After each progress report it uploads a new ``latest`` step directory (and a new ``best/``) and writes
    a ``checkpoint`` event naming them; ``restore`` pulls the newest one back into an empty run directory.
    """

    def __init__(self, ctx: StageContext, run_dir: Path):
        self.ctx, self.run_dir = ctx, run_dir
        self.pushed: dict[str, str] = {}

    def _changed(self, name: str) -> str | None:
        path = self.run_dir / name
        text = path.read_text() if path.is_file() else None
        return text if text and text != self.pushed.get(name) else None

    def push(self) -> None:
        if not _distributed(self.ctx):
            return
        latest, best = self._changed("latest.json"), self._changed("best.json")
        if not latest and not best:
            return
        data: dict[str, Any] = {}
        if latest:
            step_dir = json.loads(latest)["dir"]
            data["latest"] = {"marker": latest, **_publish(self.ctx, self.run_dir / step_dir, f"checkpoints/{step_dir}"),
                              "dir": step_dir}
        if best and (self.run_dir / "best").is_dir():
            # A new prefix per best step: files are never overwritten under a recorded checksum.
            name = f"checkpoints/best-{json.loads(best).get('step', 0):06d}"
            data["best"] = {"marker": best, **_publish(self.ctx, self.run_dir / "best", name)}
        self.ctx.event("info", "metrics", "checkpoint saved", {"checkpoint": data})
        self.pushed.update({k: v for k, v in (("latest.json", latest), ("best.json", best)) if v})

    def restore(self) -> None:
        if not _distributed(self.ctx) or (self.run_dir / "latest.json").is_file():
            return  # this machine has the run: resume from it
        from service import jobs

        found: dict[str, Any] = {}
        with self.ctx.sessions() as session:
            after = 0
            while events := jobs.list_events(session, self.ctx.job_id, after_seq=after, limit=500):
                after = events[-1].seq
                for ev in events:
                    found.update(((ev.data or {}).get("checkpoint")) or {})
        if "latest" not in found:
            return
        latest = found["latest"]
        _fetch(self.ctx, latest, self.run_dir / latest["dir"])
        if "best" in found:
            _fetch(self.ctx, found["best"], self.run_dir / "best")
            (self.run_dir / "best.json").write_text(found["best"]["marker"])
        (self.run_dir / "latest.json").write_text(latest["marker"])  # last: the resume point
        self.pushed = {"latest.json": latest["marker"], **({"best.json": found["best"]["marker"]} if "best" in found else {})}
        self.ctx.event("info", "message", f"resuming from checkpoint {latest['dir']} fetched from the artifact store")


# ------------------------------------------------------------------------------------------------ validate


def validate(ctx: StageContext) -> dict[str, Any]:
    """Detect, parse, scrub, deduplicate and split the dataset; store the canonical JSONL and the report."""
    from drafters.errors import TracedraftError
    from service import datasets

    data = dict(ctx.spec.get("data") or {})
    ctx.progress(0.0, message="parsing the dataset")
    with ctx.sessions() as session:
        dataset = datasets.validate_dataset(
            session, ctx.store, ctx.dataset_id, ctx.workdir,
            heldout_fraction=float(data.get("heldout_fraction") or ctx.settings.default_heldout_fraction),
            format=data.get("format"), on_error=data.get("on_error", "skip"), scrub=data.get("scrub", True),
            target_model=_target_spec(ctx).get("model"),
        )
        report, counts, error, formats = dataset.report or {}, dict(dataset.counts), dataset.error, dataset.format
    seen: set[str] = set()
    for w in report.get("warnings", []):  # one event per warning code, with how often it occurred
        if w["code"] not in seen:
            seen.add(w["code"])
            n = report.get("problem_counts", {}).get(w["code"], 1)
            ctx.event("warning", "message", f"[{w['code']}] {w['message']}" + (f" (and {n - 1} more)" if n > 1 else ""),
                      {"code": w["code"], "count": n})
    if error:
        raise TracedraftError(error["code"], error["message"], where=error.get("param"))
    ctx.progress(1.0, message=f"{counts['conversations']} conversations ({counts['train_conversations']} train / "
                              f"{counts['heldout_conversations']} held out)")
    return {"counts": counts, "formats": (formats or "").split(","), "report": report,
            "canonical": _publish(ctx, ctx.workdir / "canonical", "canonical")}


# ------------------------------------------------------------------------------------------------- prepare


def prepare(ctx: StageContext) -> dict[str, Any]:
    """Render every training conversation and every held-out call through the target's chat template."""
    from drafters.errors import TracedraftError
    from drafters.render import Renderer
    from drafters.shards import save_prompts, save_sequences
    from drafters.target import load_tokenizer
    from drafters.traces.ingest import read_canonical

    tspec = _target_spec(ctx)
    tokenizer = load_tokenizer(tspec["model"], cache_dir=ctx.settings.cache_dir)
    renderer = Renderer(tokenizer, chat_template=tspec.get("chat_template"),
                        template_kwargs=tspec.get("template_kwargs") or {},
                        max_seq_len=_auto(tspec.get("max_seq_len"), "max_seq_len"))
    canonical = _fetch(ctx, ctx.results["validating"]["canonical"], ctx.workdir / "canonical")
    train_convs = list(read_canonical(canonical / "train.jsonl"))
    held_convs = list(read_canonical(canonical / "heldout.jsonl"))
    seqs = []
    for i, conv in enumerate(train_convs):
        seqs.extend(renderer.render_conversation(conv))
        if ctx.cancelled():
            return {"cancelled": True}
        ctx.progress(0.8 * (i + 1) / max(1, len(train_convs)))
    # Held-out conversations give the replayed prompts and, rendered as rows, the validation set for
    # the expected accepted length during training.
    val_seqs = [s for conv in held_convs for s in renderer.render_conversation(conv)]
    prompts = _render_prompts(renderer, held_convs)
    # Every training call's context as the engine serves it: what the regeneration stage answers.
    train_prompts = _render_prompts(renderer, train_convs)
    if not seqs:
        raise TracedraftError("no_training_data", "no training sequence survived rendering", where="dataset")
    out = ctx.workdir / "prepared"
    save_sequences(seqs, out / "train.safetensors")
    save_sequences(val_seqs, out / "val.safetensors")
    save_prompts(prompts, out / "heldout_prompts.jsonl")
    save_prompts(train_prompts, out / "train_prompts.jsonl")
    report = renderer.report.to_dict()
    (out / "render_report.json").write_text(json.dumps(report, indent=1))
    ctx.progress(1.0, message=f"{len(seqs)} training rows, {len(prompts)} held-out prompts")
    return {"train_rows": len(seqs), "val_rows": len(val_seqs), "heldout_prompts": len(prompts),
            "template_sha256": renderer.template_sha256, "render_report": report,
            "prepared": _publish(ctx, out, "prepared")}


def _render_prompts(renderer, convs) -> list:
    """Every call of ``convs`` rendered for replay or regeneration; a call the template cannot render is
    reported in the render report, not fatal."""
    from drafters.errors import TracedraftError

    prompts = []
    for conv in convs:
        for call in conv.calls():
            try:
                prompts.append(renderer.render_prompt(call))
            except TracedraftError as exc:
                renderer.report.drop(call.id, getattr(exc, "code", "render_failed"), str(exc))
    return prompts


# ---------------------------------------------------------------------------------------------- regenerate


def regenerate(ctx: StageContext) -> dict[str, Any]:
    """On-policy regeneration (docs/dspark.md section 3.3): the target writes the answer of every training
    call, and of the held-out calls for the validation rows, from the exact recorded context.

    ``data.regenerate``: "auto" (on when the traces were written by another model than the target: the
    validation report's ``model_mismatch``), "always", "never". Answers are stored per call under the
    cache directory (content-addressed), so a killed stage resumes and later jobs reuse them.
    """
    from drafters.regeneration import RegenerationStore, regenerate as run, regenerated_rows
    from drafters.render import tools_to_openai
    from drafters.shards import save_sequences
    from drafters.traces.ingest import read_canonical

    options = _regeneration_options(ctx)
    mode = options["mode"]
    mismatch = any(w.get("code") == "model_mismatch"
                   for w in (ctx.results["validating"].get("report") or {}).get("warnings", []))
    if mode == "never" or (mode == "auto" and not mismatch):
        reason = "data.regenerate is 'never'" if mode == "never" else "the traces were written by the target"
        ctx.progress(1.0, message=f"regeneration skipped: {reason}")
        return {"regenerated": False, "reason": reason}
    prepared = _fetch(ctx, ctx.results["preparing"]["prepared"], ctx.workdir / "prepared")
    canonical = _fetch(ctx, ctx.results["validating"]["canonical"], ctx.workdir / "canonical")
    tools_of = {call.id: tools_to_openai(call.tools) for name in ("train.jsonl", "heldout.jsonl")
                for conv in read_canonical(canonical / name) for call in conv.calls()}
    renderer = _renderer(ctx)
    _require_tool_template(renderer, tools_of)
    max_len = int(_auto(_target_spec(ctx).get("max_seq_len"), "max_seq_len"))
    train_prompts, val_prompts, skipped = _prompts_to_regenerate(ctx, prepared, max_len, options["sampling"])
    longest = max((len(p.prompt_ids) for p in train_prompts + val_prompts), default=0)
    backend, target_id, close = _regeneration_backend(ctx, renderer, options, longest)
    store = RegenerationStore(Path(ctx.settings.cache_dir) / "regenerations" / str(ctx.org_id))
    try:
        answers, report = run(train_prompts + val_prompts, backend, store, target_id=target_id,
                              sampling=options["sampling"], stop_ids=_stop_ids(renderer),
                              progress=lambda f, m: ctx.progress(f, message=m), cancelled=ctx.cancelled)
    finally:
        close()
    if report.cancelled:
        return {"cancelled": True}
    rows, stats = regenerated_rows(train_prompts, answers, renderer, tools_of)
    val_rows, _ = regenerated_rows(val_prompts, answers, renderer, tools_of)
    report.tool_calls = stats.to_dict()
    too_long = [r.call_ids[0] for r in rows if len(r.input_ids) > max_len]
    if too_long:  # counted and reported: the recorded rows of these calls are also over the limit
        ctx.event("warning", "message", f"[regenerated_exceeds_max_seq_len] {len(too_long)} regenerated rows "
                  f"are longer than max_seq_len {max_len} and are not trained on (first: {too_long[0]})",
                  {"code": "regenerated_exceeds_max_seq_len", "count": len(too_long)})
    rows = [r for r in rows if len(r.input_ids) <= max_len]
    out = ctx.workdir / "regenerated"
    save_sequences(rows, out / "train.safetensors")
    save_sequences([r for r in val_rows if len(r.input_ids) <= max_len], out / "val.safetensors")
    summary = report.to_dict() | {"rows": len(rows), "exceeds_max_seq_len": len(too_long), **skipped}
    (out / "regeneration_report.json").write_text(json.dumps(summary, indent=1))
    tc = report.tool_calls
    ctx.progress(1.0, message=f"{report.calls} calls regenerated ({report.reused} reused), {report.tokens} new "
                              f"tokens in {report.seconds:.0f} s; {tc['answers_with_tool_calls']} answers call "
                              f"tools, {tc['tool_calls'] - tc['tool_calls_valid']} of {tc['tool_calls']} tool "
                              f"calls fail to parse or validate")
    return {"regenerated": True, "report": summary, "regenerated_dir": _publish(ctx, out, "regenerated")}


def _prompts_to_regenerate(ctx: StageContext, prepared: Path, max_len: int, sampling) -> tuple[list, list, dict]:
    """The training and validation calls worth an answer: those whose context leaves room for an answer in
    a row of ``max_seq_len`` tokens, then as many training calls as the training stage will use
    (``max_train_tokens``, the same seeded sample of the whole dataset) and ``val_max_seqs`` held-out ones.
    Returns (train prompts, validation prompts, counts of what was left out and why)."""
    from types import SimpleNamespace

    from drafters.shards import load_prompts, take_tokens

    from drafters.recipe import StageRecipe

    recipe = StageRecipe.from_spec(ctx.spec.get("recipe"))
    room = min(sampling.max_tokens, 64)  # an answer shorter than this would rarely be worth a row
    train, val = (load_prompts(prepared / name) for name in ("train_prompts.jsonl", "heldout_prompts.jsonl"))
    fits = [p for p in train if len(p.prompt_ids) + room <= max_len]
    # Sized like the rows they become: context + an answer as long as the recorded one (at most max_tokens).
    sized = [SimpleNamespace(prompt=p, input_ids=range(len(p.prompt_ids) + min(len(p.completion_ids),
                                                                             sampling.max_tokens)))
             for p in fits]
    seed = 0 if recipe.seed == "auto" else recipe.seed
    chosen = [s.prompt for s in take_tokens(sized, _auto(recipe.max_train_tokens, "max_train_tokens"), seed)]
    val_fits = [p for p in val if len(p.prompt_ids) + room <= max_len]
    n_val = _auto(recipe.val_max_seqs, "val_max_seqs")
    return chosen, val_fits[:n_val] if n_val else val_fits, {
        "skipped_context_too_long": len(train) - len(fits), "skipped_over_token_budget": len(fits) - len(chosen)}


def _require_tool_template(renderer, tools_of: dict[str, Any]) -> None:
    """Refuse to regenerate tool-calling traces through a template that does not write tool calls: the target
    would be asked for answers without seeing its tools, and its calls could not be found in its answers."""
    from drafters.errors import TracedraftError

    d = renderer.dialect
    if any(tools_of.values()) and (d.tool_error or not d.call_prefix or d.call_mid is None):
        raise TracedraftError(
            "regeneration_needs_tool_template",
            "the traces call tools but the chat template does not render tool definitions and calls "
            f"({d.tool_error or 'no tool-call markup found by the probe'}); give a tool-aware template "
            "(target.chat_template) or set data.regenerate to 'never'", "target.chat_template")


def _regeneration_options(ctx: StageContext) -> dict[str, Any]:
    """``data.regenerate`` and ``data.regeneration`` with their defaults resolved (``Sampling``)."""
    from drafters.regeneration import Sampling

    data = dict(ctx.spec.get("data") or {})
    opts = dict(data.get("regeneration") or {})
    sampling = Sampling(temperature=float(opts.get("temperature") or 0.0), top_p=float(opts.get("top_p") or 1.0),
                        top_k=int(opts.get("top_k") or 0),
                        max_tokens=int(_auto(opts.get("max_tokens"), "regenerate_max_tokens")),
                        seed=int(opts.get("seed") or 0))
    endpoint = opts.get("endpoint") or ((_target_spec(ctx).get("sglang") or {}).get("endpoint"))
    return {"mode": data.get("regenerate") or "auto", "engine": opts.get("engine") or "auto",
            "endpoint": endpoint, "model": opts.get("model"), "slots": opts.get("slots"), "sampling": sampling}


def _regeneration_backend(ctx: StageContext, renderer, options: dict[str, Any], longest_prompt: int):
    """(backend, target identity, close) for the job's regeneration engine. "auto": the OpenAI-compatible
    endpoint when the job names one (a GPU cluster's SGLang), else llama.cpp's llama-server when it is
    installed, else the target in this process."""
    engine = options["engine"]
    if engine == "auto":
        from drafters.engines.llamacpp.build import is_installed

        engine = "openai" if options["endpoint"] else "llamacpp" if is_installed() else "hf"
    stop = _stop_ids(renderer)
    slots = int(_auto(options["slots"], "regenerate_slots"))
    if engine == "openai":
        from drafters.regeneration import OpenAIBackend

        if not options["endpoint"]:
            from drafters.errors import TracedraftError

            raise TracedraftError("regeneration_endpoint_missing", "engine 'openai' needs data.regeneration."
                                  "endpoint (or target.sglang.endpoint)", "data.regeneration.endpoint")
        model = options["model"] or _target_spec(ctx)["model"]
        backend = OpenAIBackend(str(options["endpoint"]), model,
                                lambda s: renderer.tokenizer.encode(s, add_special_tokens=False), stop[0],
                                batch_size=slots)
        return backend, f"openai:{model}", backend.close
    if engine == "llamacpp":
        return _llamacpp_backend(ctx, stop, slots, longest_prompt + options["sampling"].max_tokens)
    from drafters.regeneration import HFBackend

    target = _load_target(ctx)
    return (HFBackend(target, stop, batch_size=slots),
            f"hf:{target.source_sha256 or target.revision or target.name}", lambda: None)


def _llamacpp_backend(ctx: StageContext, stop: list[int], slots: int, per_slot: int):
    """llama-server on the target's fp32 GGUF (the weights the hf engine evaluates), ``slots`` parallel
    slots, each with ``per_slot`` tokens of context (the longest prompt and answer)."""
    from drafters.engines.llamacpp import LlamaServer, export_target_gguf, resolve_target_files
    from drafters.engines.llamacpp.build import find_llama_server
    from drafters.checksums import sha256_file
    from drafters.regeneration import LlamaServerBackend

    target_dir, _ = resolve_target_files(_target_spec(ctx)["model"], ctx.settings.cache_dir)
    gguf = export_target_gguf(target_dir, ctx.workdir / "llamacpp" / "target-f32.gguf")
    server = LlamaServer(find_llama_server(), gguf, ctx_size=(per_slot + 16) * slots,
                         log_dir=ctx.workdir / "llamacpp", extra_args=["-np", str(slots)]).start()
    backend = LlamaServerBackend(server.base_url, stop[0], batch_size=slots)

    def close() -> None:
        backend.close()
        server.stop()

    return backend, f"gguf:{sha256_file(gguf)}", close


def _stop_ids(renderer) -> list[int]:
    """Token ids that end an assistant turn: the template's end-of-turn tokens, then the tokenizer's eos."""
    tok = renderer.tokenizer
    ids = [tok.convert_tokens_to_ids(t) for t in renderer.dialect.eot_tokens]
    if tok.eos_token_id is not None:
        ids.append(tok.eos_token_id)
    return list(dict.fromkeys(i for i in ids if i is not None and i >= 0))


def _renderer(ctx: StageContext):
    """The renderer of the job's target and chat template (as the prepare stage built it)."""
    from drafters.render import Renderer
    from drafters.target import load_tokenizer

    tspec = _target_spec(ctx)
    tokenizer = load_tokenizer(tspec["model"], cache_dir=ctx.settings.cache_dir)
    return Renderer(tokenizer, chat_template=tspec.get("chat_template"),
                    template_kwargs=tspec.get("template_kwargs") or {},
                    max_seq_len=_auto(tspec.get("max_seq_len"), "max_seq_len"))


def _training_rows(ctx: StageContext, prepared: Path) -> Path:
    """The directory holding ``train.safetensors`` and ``val.safetensors``: the regenerated rows when the
    regeneration stage ran, else the rendered recorded answers."""
    regen = ctx.results.get("regenerating") or {}
    if regen.get("regenerated"):
        return _fetch(ctx, regen["regenerated_dir"], ctx.workdir / "regenerated")
    return prepared


# --------------------------------------------------------------------------------------------------- train


def _base_drafter_dir(ctx: StageContext) -> Path | None:
    """Resolve the job's base drafter to a local directory: a registry reference, or a local directory where
    the job policy is off (the embedded run; workers refuse paths: ``service.policy``)."""
    ref = ctx.spec.get("base_drafter")
    if not ref:
        return None
    if Path(str(ref)).expanduser().is_dir():
        return Path(str(ref)).expanduser()
    from service import registry

    with ctx.sessions() as session:
        version = registry.resolve_ref(session, ctx.org_id, str(ref))
        uri, files = version.checkpoint_uri, dict(version.files)
    dest = ctx.workdir / "base_drafter"
    if not dest.exists():
        ctx.store.get_dir(uri, dest, files)
    return dest


def train(ctx: StageContext) -> dict[str, Any]:
    """Fine-tune a DSpark drafter against the frozen target (resumes from the work directory's checkpoints):
    in this process, or under torchrun when the worker has several GPUs (``Settings.train_processes``)."""
    from drafters.recipe import StageRecipe
    from drafters.shards import load_sequences, take_tokens
    from drafters.train.resolve import Machine, resolve_recipe
    from workers.torchrun import train_processes

    recipe = StageRecipe.from_spec(ctx.spec.get("recipe"))
    base = _base_drafter_dir(ctx)
    resolved = resolve_recipe(recipe, Machine.detect(), init_from=str(base) if base else None)
    cfg = resolved.train
    prepared = _fetch(ctx, ctx.results["preparing"]["prepared"], ctx.workdir / "prepared")
    rows = _training_rows(ctx, prepared)
    train_seqs = take_tokens(load_sequences(rows / "train.safetensors"), resolved.max_train_tokens, cfg.seed)
    nproc = train_processes(int(getattr(ctx.settings, "train_processes", 0) or 0))
    if cfg.parallel == "fsdp" and nproc == 1 and not _torch_distributed():
        # The stage trains inside this worker process; FSDP needs a process group (torchrun) to shard over.
        ctx.event("warning", "message", "recipe.parallel 'fsdp' shards the drafter only across the processes "
                  "of a torchrun launch (python -m drafters.train --parallel fsdp, or a worker with "
                  "TRACEDRAFT_TRAIN_PROCESSES > 1); this worker trains in one process, so the drafter is not "
                  "sharded", {"code": "parallel_single_process"})

    run_dir = ctx.workdir / "checkpoints"
    sync = _CheckpointSync(ctx, run_dir)
    sync.restore()

    def progress(p: dict[str, Any]) -> None:
        # "schedule": the horizon a time budget set (total_steps is 0 before it is known)
        ctx.progress(p["step"] / max(1, p["total_steps"]), p.get("eta_s"),
                     message=p.get("message") if p.get("phase") in ("cache", "validate", "schedule") else None)
        if p.get("phase") in ("validate", "schedule") or p["step"] % 10 == 0:
            ctx.metrics(p, p["message"] if p.get("phase") == "schedule"
                        else f"{p.get('phase')} step {p['step']}/{p['total_steps']}")
        sync.push()

    if nproc > 1:
        result = _train_torchrun(ctx, nproc, cfg, resolved.drafter, recipe.target_dtype, train_seqs,
                                 rows / "val.safetensors", base, run_dir, progress)
        drafter_config = None
    else:
        result, drafter_config = _train_here(ctx, cfg, resolved.drafter, train_seqs,
                                             load_sequences(rows / "val.safetensors"), base, run_dir, progress)
    sync.push()
    if result.get("cancelled"):
        return {"cancelled": True, "steps": result.get("steps"), "last_dir": result.get("last_dir")}
    best = Path(result["best_dir"])
    if drafter_config is None:
        drafter_config = json.loads((best / "config.json").read_text())
    return {"steps": result["steps"], "best_dir": str(best), "last_dir": result["last_dir"],
            "best": _publish(ctx, best, "best"),
            "stop_reason": result["stop_reason"], "best_expected_tau": result["best_expected_tau"],
            "initial_expected_tau": result["initial_expected_tau"], "feature_cache": result["feature_cache"],
            "parallel": result["parallel"], "processes": nproc, "schedule": result.get("schedule"),
            "drafter_config": drafter_config, "train_config": cfg.to_dict(),
            "base_drafter": str(ctx.spec.get("base_drafter") or "") or None,
            "history": result["history"][-40:]}


def _train_here(ctx: StageContext, cfg, drafter_shape: dict[str, Any], train_seqs, val_seqs, base: Path | None,
                run_dir: Path, progress):
    """Train in this process (a new drafter of ``drafter_shape``, DSparkConfig.from_target overrides, unless
    warm starting from ``base``). Returns (TrainResult.to_dict(), the drafter's DeepSpec config)."""
    import torch

    from drafters.dspark.checkpoint import validate_checkpoint
    from drafters.dspark.config import DSparkConfig
    from drafters.dspark.model import DSparkDrafter
    from drafters.train import train as run_training

    target = _load_target(ctx, for_training=True)
    # A warm start keeps the base drafter's shape (its config) and takes its weights, with a fresh optimizer.
    if base:
        config = validate_checkpoint(base, target.model.config).config
    else:
        config = DSparkConfig.from_target(target.model.config, tokenizer=target.tokenizer, **drafter_shape)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)  # the initial weights follow the recipe's seed: a job is reproducible
        drafter = DSparkDrafter(config, *_drafter_weights(target)).to(target.device)
    result = run_training(target, drafter, train_seqs, val_seqs, cfg, run_dir,
                          progress=lambda p: progress(p.to_dict()), should_stop=ctx.cancelled, resume=True)
    return result.to_dict(), drafter.config.to_deepspec_dict()


def _train_torchrun(ctx: StageContext, nproc: int, cfg, drafter_shape: dict[str, Any], target_dtype: str,
                    train_seqs, val_path: Path, base: Path | None, run_dir: Path, progress) -> dict[str, Any]:
    """Train under ``torchrun --nproc-per-node nproc`` (workers/torchrun.py): ``cfg`` and ``drafter_shape``
    travel as JSON files, ``target_dtype`` (the recipe's) as a flag unless "auto". Returns
    TrainResult.to_dict()."""
    from drafters.shards import save_sequences
    from workers.torchrun import run_torchrun

    launch = ctx.workdir / "torchrun"
    launch.mkdir(parents=True, exist_ok=True)
    save_sequences(train_seqs, launch / "train.safetensors")  # the recipe's token budget, as in-process
    (launch / "train_config.json").write_text(json.dumps(cfg.to_dict()))
    (launch / "drafter.json").write_text(json.dumps(drafter_shape))
    args = ["--target", _target_spec(ctx)["model"], "--cache-dir", str(ctx.settings.cache_dir),
            "--train", str(launch / "train.safetensors"), "--val", str(val_path), "--out", str(run_dir),
            "--config-json", str(launch / "train_config.json"), "--drafter-json", str(launch / "drafter.json")]
    if target_dtype != "auto":
        args += ["--target-dtype", target_dtype]
    if base:
        args += ["--init-from", str(base)]
    ctx.event("info", "message", f"training under torchrun with {nproc} processes", {"processes": nproc})
    result = run_torchrun(nproc, args, log_path=launch / "torchrun.log", progress=progress,
                          should_stop=ctx.cancelled)
    return result or {"cancelled": True, "steps": None, "last_dir": None}


# ------------------------------------------------------------------------------------------------ evaluate


def _engine(ctx: StageContext, name: str, target):
    """The acceptance-measuring engine a job asked for (``evaluation.engine``); hf is in-process."""
    tspec = _target_spec(ctx)
    if name == "sglang":
        from drafters.engines.sglang import SGLangEngine

        sg = dict(tspec.get("sglang") or {})
        # One server launch per drafter (SGLang has no hot swap of the draft; docs/serving.md 1).
        return SGLangEngine(target_path=sg.get("model_path") or tspec["model"], port=int(sg.get("port") or 30000),
                            extra_args=sg.get("extra_args") or (), log_dir=ctx.workdir / "engine-logs")
    if name == "llamacpp":
        from drafters.engines.llamacpp import LlamaCppEngine, export_target_gguf
        from drafters.target import convert_gguf

        src = Path(target.source_path or "")
        target_dir = convert_gguf(src, ctx.settings.cache_dir) if src.suffix == ".gguf" else src
        # Serve the exact fp32 weights the hf engine uses, so tau compares like with like across engines.
        gguf = export_target_gguf(target_dir, ctx.workdir / "llamacpp" / "target-f32.gguf")
        return LlamaCppEngine(gguf, target_dir=target_dir, work_dir=ctx.workdir / "llamacpp")
    from drafters.errors import TracedraftError

    raise TracedraftError("unknown_engine", f"unknown evaluation engine {name!r}: use hf, sglang or llamacpp",
                          where="evaluation.engine")


def evaluate(ctx: StageContext) -> dict[str, Any]:
    """Replay held-out calls with the candidate, the incumbent and (in-process) the n-gram baseline, on the
    job's engine; write the report and apply the promotion gate."""
    import torch

    from drafters.dspark.checkpoint import load_checkpoint, save_checkpoint
    from drafters.dspark.model import DSparkDrafter
    from drafters.evaluate import gate, write_report
    from drafters.shards import load_prompts

    espec = dict(ctx.spec.get("evaluation") or {})
    engine = espec.get("engine") or "auto"
    engine = "hf" if engine == "auto" else engine
    target = _load_target(ctx)
    trained = ctx.results["training"]
    best = _fetch(ctx, trained["best"], ctx.workdir / "best")
    candidate = load_checkpoint(best, target.embed_weight, target.lm_head_weight,
                                target_config=target.model.config).to(target.device).eval()
    incumbent_dir = _base_drafter_dir(ctx)
    if incumbent_dir is not None:
        incumbent_name = "base"
        incumbent = load_checkpoint(incumbent_dir, target.embed_weight, target.lm_head_weight,
                                    target_config=target.model.config).to(target.device).eval()
    else:
        # No incumbent: compare with an untrained drafter of the same shape (what training bought).
        incumbent_name = "untrained"
        torch.manual_seed(int((ctx.spec.get("recipe") or {}).get("seed") or 0))
        incumbent = DSparkDrafter(candidate.config, target.embed_weight, target.lm_head_weight).to(target.device).eval()
        incumbent_dir = ctx.workdir / "untrained"
        if engine != "hf":
            save_checkpoint(incumbent, incumbent_dir)
    prepared = _fetch(ctx, ctx.results["preparing"]["prepared"], ctx.workdir / "prepared")
    prompts = load_prompts(prepared / "heldout_prompts.jsonl")[: int(_auto(espec.get("max_calls"), "max_calls"))]
    settings = {"max_new_tokens": int(_auto(espec.get("max_new_tokens"), "max_new_tokens")),
                "temperature": float(espec.get("temperature") or 0.0), "seed": int(espec.get("seed") or 0)}
    compare = [("candidate", incumbent_name)]
    started = time.monotonic()

    class Cancelled(Exception):
        pass

    def progress(done: int, total: int) -> None:
        elapsed = time.monotonic() - started
        ctx.progress(done / max(1, total), elapsed / done * (total - done) if done else None)
        if ctx.cancelled():  # the replays are independent: stopping between two of them loses nothing
            raise Cancelled

    try:
        report = _replay(ctx, engine, target, prompts, settings, compare, progress, candidate=candidate,
                         incumbent=incumbent, incumbent_name=incumbent_name, best=best, incumbent_dir=incumbent_dir)
    except Cancelled:
        return {"cancelled": True}
    policy = {k: v for k, v in (ctx.spec.get("promotion") or {}).items()
              if k in ("min_gain", "max_segment_loss", "min_support", "min_calls")}
    decision = gate(report, None, policy, candidate_name="candidate", incumbent_name=incumbent_name)
    out_dir = ctx.workdir / "report"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    write_report(report, out_dir)
    return {"report": dict(report), "gate": decision.to_dict(), "report_dir": str(out_dir), "engine": engine,
            "report_files": _publish(ctx, out_dir, "report"), "incumbent": incumbent_name}


def _replay(ctx, engine, target, prompts, settings, compare, progress, *, candidate, incumbent, incumbent_name,
            best, incumbent_dir):
    """Replay the held-out prompts for the candidate and the incumbent (and, in-process, the n-gram
    baseline) on ``engine``; returns the evaluation report."""
    from drafters.baselines import NGramProposer
    from drafters.baselines.suffix_decoding import suffix_baselines, training_outputs
    from drafters.dspark.proposer import DSparkProposer
    from drafters.evaluate import engine_report
    from drafters.evaluate import evaluate as run_evaluation
    from drafters.render import Renderer
    from drafters.shards import load_sequences

    tspec = _target_spec(ctx)
    if engine == "hf":
        renderer = Renderer(target.tokenizer, chat_template=tspec.get("chat_template"),
                            template_kwargs=tspec.get("template_kwargs") or {})
        block = candidate.config.block_size
        proposers = {"candidate": DSparkProposer(candidate), incumbent_name: DSparkProposer(incumbent),
                     "ngram": NGramProposer(block_size=block)}
        # Suffix decoding over the organization's training outputs (the target's own answers when they
        # were regenerated), and the what-if hybrid of the candidate with it.
        rows = _training_rows(ctx, ctx.workdir / "prepared")
        outputs = training_outputs(load_sequences(rows / "train.safetensors"))
        proposers |= suffix_baselines(outputs, block, drafter=DSparkProposer(candidate))
        pairs = [("candidate", "ngram"), ("candidate", "suffix"), ("candidate", "hybrid")]
        return run_evaluation(target, proposers, prompts, **settings, segmenter=renderer.segment_completion,
                              compare=compare + pairs, engine="hf", progress=progress)
    eng = _engine(ctx, engine, target)
    runs = {}
    for i, (name, path) in enumerate((("candidate", best), (incumbent_name, incumbent_dir))):
        runs[name] = eng.measure(prompts, path, **settings)
        progress(i + 1, 2)
    return engine_report(runs, target=tspec["model"], **settings, compare=compare)


# ------------------------------------------------------------------------------------------------ register


def register(ctx: StageContext) -> dict[str, Any]:
    """Publish the candidate checkpoint and report as an immutable drafter version (exactly once per job)."""
    from service import registry
    from service.db.models import Dataset

    tspec = _target_spec(ctx)
    trained, evaluated, prepared = ctx.results["training"], ctx.results["evaluating"], ctx.results["preparing"]
    with ctx.sessions() as session:
        dataset = session.get(Dataset, ctx.dataset_id)
        dataset_sha = dataset.sha256 if dataset else None
    cfg = trained["drafter_config"]
    target_model = tspec["model"]
    lineage = {
        "job_id": ctx.job_id, "dataset_sha256": [dataset_sha] if dataset_sha else [],
        "base_version": trained.get("base_drafter"), "target_model": target_model,
        "target_revision": tspec.get("revision"), "chat_template_sha256": prepared.get("template_sha256"),
        "tokenizer_sha256": tspec.get("tokenizer_sha256"),
        "target_layer_ids": cfg.get("target_layer_ids"), "block_size": cfg.get("block_size"),
        "code_version": _code_version(),
    }
    best = _fetch(ctx, trained["best"], ctx.workdir / "best")
    report_dir = _fetch(ctx, evaluated["report_files"], ctx.workdir / "report")
    name = ctx.spec.get("drafter_name") or f"{Path(target_model).name.removesuffix('.gguf')}-agent"
    with ctx.sessions() as session:
        version = registry.register_version(
            session, ctx.store, ctx.org_id, name, target_model, ctx.job_id, best,
            config=cfg, lineage=lineage, report=evaluated["report"], gate=evaluated["gate"],
            report_dir=report_dir,
            auto_promote=bool((ctx.spec.get("promotion") or {}).get("auto_promote")),
        )
        out = {"drafter": name, "version": version.version, "version_id": version.id,
               "checkpoint_uri": version.checkpoint_uri, "files": dict(version.files),
               "report_uri": version.report_uri}
    return out


def _code_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tracedraft")
    except PackageNotFoundError:
        return "unknown"
