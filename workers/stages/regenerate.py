"""The regenerate stage: on-policy regeneration of the training answers (drafters.regeneration)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workers.context import StageContext
from workers.stages.common import (
    auto,
    fetch,
    job_renderer,
    load_job_target,
    publish,
    target_spec,
)


def regenerate(ctx: StageContext) -> dict[str, Any]:
    """On-policy regeneration (docs/dspark.md section 3.3): the target writes the answer of every training
    call, and of the held-out calls for the validation rows, from the exact recorded context.

    ``data.regenerate``: "auto" (on when the traces were written by another model than the target: the
    validation report's ``model_mismatch``), "always", "never". Answers are stored per call under the
    cache directory (content-addressed), so a killed stage resumes and later jobs reuse them.
    """
    from drafters.regeneration import RegenerationStore, regenerated_rows
    from drafters.regeneration import regenerate as run
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
    prepared = fetch(ctx, ctx.results["preparing"]["prepared"], ctx.workdir / "prepared")
    canonical = fetch(ctx, ctx.results["validating"]["canonical"], ctx.workdir / "canonical")
    tools_of = {call.id: tools_to_openai(call.tools) for name in ("train.jsonl", "heldout.jsonl")
                for conv in read_canonical(canonical / name) for call in conv.calls()}
    renderer = job_renderer(ctx)
    _require_tool_template(renderer, tools_of)
    max_len = int(auto(target_spec(ctx).get("max_seq_len"), "max_seq_len"))
    train_prompts, val_prompts, skipped = _prompts_to_regenerate(ctx, prepared, max_len, options["sampling"])
    longest = max((len(p.prompt_ids) for p in train_prompts + val_prompts), default=0)
    backend, target_id, close = _regeneration_backend(ctx, renderer, options, longest)
    store = RegenerationStore(Path(ctx.settings.cache_dir) / "regenerations" / str(ctx.org_id))
    try:
        answers, report = run(train_prompts + val_prompts, backend, store, target_id=target_id,
                              sampling=options["sampling"], stop_ids=renderer.end_of_turn_ids(),
                              progress=lambda f, eta, m: ctx.progress(f, eta, message=m), cancelled=ctx.cancelled)
    finally:
        close()
    if report.cancelled:
        return {"cancelled": True}
    # the tool-call counts cover every answer written (training and validation), as ``report.calls`` does
    rows, stats = regenerated_rows(train_prompts + val_prompts, answers, renderer, tools_of)
    val_ids = {p.call_id for p in val_prompts}
    val_rows = [r for r in rows if r.call_ids[0] in val_ids]
    rows = [r for r in rows if r.call_ids[0] not in val_ids]
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
    return {"regenerated": True, "report": summary, "regenerated_dir": publish(ctx, out, "regenerated")}


def _prompts_to_regenerate(ctx: StageContext, prepared: Path, max_len: int, sampling) -> tuple[list, list, dict]:
    """The training and validation calls worth an answer: those whose context leaves room for an answer in
    a row of ``max_seq_len`` tokens, then as many training calls as the training stage will use
    (``max_train_tokens``, the same seeded sample of the whole dataset) and ``val_max_seqs`` held-out ones.
    Returns (train prompts, validation prompts, counts of what was left out and why)."""
    from types import SimpleNamespace

    from drafters.recipe import StageRecipe
    from drafters.shards import load_prompts, take_tokens
    from drafters.train.resolve import resolved_seed

    recipe = StageRecipe.from_spec(ctx.spec.get("recipe"))
    room = min(sampling.max_tokens, 64)  # an answer shorter than this would rarely be worth a row
    train, val = (load_prompts(prepared / name) for name in ("train_prompts.jsonl", "heldout_prompts.jsonl"))
    fits = [p for p in train if len(p.prompt_ids) + room <= max_len]
    # Sized like the rows they become: context + an answer as long as the recorded one (at most max_tokens).
    sized = [SimpleNamespace(prompt=p, input_ids=range(len(p.prompt_ids) + min(len(p.completion_ids),
                                                                             sampling.max_tokens)))
             for p in fits]
    budget = auto(recipe.max_train_tokens, "max_train_tokens")
    chosen = [s.prompt for s in take_tokens(sized, budget, resolved_seed(recipe))]
    val_fits = [p for p in val if len(p.prompt_ids) + room <= max_len]
    n_val = auto(recipe.val_max_seqs, "val_max_seqs")
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
                        max_tokens=int(auto(opts.get("max_tokens"), "regenerate_max_tokens")),
                        seed=int(opts.get("seed") or 0))
    endpoint = opts.get("endpoint") or ((target_spec(ctx).get("sglang") or {}).get("endpoint"))
    return {"mode": data.get("regenerate") or "auto", "engine": opts.get("engine") or "auto",
            "endpoint": endpoint, "model": opts.get("model"), "slots": opts.get("slots"), "sampling": sampling}


def _regeneration_backend(ctx: StageContext, renderer, options: dict[str, Any], longest_prompt: int):
    """(backend, target identity, close) for the job's regeneration engine. "auto": the OpenAI-compatible
    endpoint when the job names one (a GPU cluster's SGLang), else the target in this process."""
    engine = options["engine"]
    if engine == "auto":
        # In-process generation writes exactly the tokens the hf evaluation's target writes (same weights,
        # same arithmetic), batched; llama-server on the fp32 GGUF is the explicit choice ("llamacpp").
        engine = "openai" if options["endpoint"] else "hf"
    stop = renderer.end_of_turn_ids()
    slots = int(auto(options["slots"], "regenerate_slots"))
    if engine == "openai":
        from drafters.regeneration import OpenAIBackend

        if not options["endpoint"]:
            from drafters.errors import TracedraftError

            raise TracedraftError("regeneration_endpoint_missing", "engine 'openai' needs data.regeneration."
                                  "endpoint (or target.sglang.endpoint)", "data.regeneration.endpoint")
        model = options["model"] or target_spec(ctx)["model"]
        backend = OpenAIBackend(str(options["endpoint"]), model,
                                lambda s: renderer.tokenizer.encode(s, add_special_tokens=False), stop,
                                batch_size=slots)
        return backend, f"openai:{model}", backend.close
    if engine == "llamacpp":
        return _llamacpp_backend(ctx, stop, slots, longest_prompt + options["sampling"].max_tokens)
    from drafters.regeneration import HFBackend

    target = load_job_target(ctx)
    return (HFBackend(target, stop, batch_size=slots),
            f"hf:{target.source_sha256 or target.revision or target.name}", lambda: None)


def _llamacpp_backend(ctx: StageContext, stop: list[int], slots: int, per_slot: int):
    """llama-server on the target's fp32 GGUF (the weights the hf engine evaluates), ``slots`` parallel
    slots, each with ``per_slot`` tokens of context (the longest prompt and answer)."""
    from drafters.checksums import sha256_file
    from drafters.engines.llamacpp import LlamaServer, export_target_gguf, resolve_target_files
    from drafters.engines.llamacpp.build import find_llama_server
    from drafters.regeneration import LlamaServerBackend

    target_dir, _ = resolve_target_files(target_spec(ctx)["model"], ctx.settings.cache_dir)
    gguf = export_target_gguf(target_dir, ctx.workdir / "llamacpp" / "target-f32.gguf")
    server = LlamaServer(find_llama_server(), gguf, ctx_size=(per_slot + 16) * slots,
                         log_dir=ctx.workdir / "llamacpp", extra_args=["-np", str(slots)]).start()
    backend = LlamaServerBackend(server.base_url, stop, batch_size=slots)

    def close() -> None:
        backend.close()
        server.stop()

    return backend, f"gguf:{sha256_file(gguf)}", close
