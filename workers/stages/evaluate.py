"""The evaluate stage: replay the held-out calls with every proposer and apply the promotion gate
(drafters.evaluate)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from drafters.periodic import every
from workers.context import StageContext
from workers.stages.common import (
    StagePace,
    auto,
    base_drafter_dir,
    fetch,
    job_verdict,
    load_job_target,
    publish,
    target_spec,
    training_rows,
)

#: Seconds between two progress reports while one replay runs.
REPORT_EVERY_S = 5.0


def _engine(ctx: StageContext, name: str, target):
    """The acceptance-measuring engine a job asked for (``evaluation.engine``); hf is in-process."""
    tspec = target_spec(ctx)
    if name == "sglang":
        from drafters.engines.sglang import SGLangEngine

        sg = dict(tspec.get("sglang") or {})
        # One server launch per drafter (SGLang has no hot swap of the draft; docs/serving.md 1).
        return SGLangEngine(target_path=sg.get("model_path") or tspec["model"], port=int(sg.get("port") or 30000),
                            extra_args=sg.get("extra_args") or (), log_dir=ctx.workdir / "engine-logs")
    if name == "llamacpp":
        from drafters.engines.llamacpp import LlamaCppEngine, export_target_gguf
        from drafters.target_cache import convert_gguf

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

    from drafters.dspark.checkpoint import load_checkpoint, save_checkpoint
    from drafters.evaluate import gate, spread_calls, write_report
    from drafters.recipe import StageRecipe
    from drafters.shards import load_prompts
    from drafters.train.resolve import resolved_seed
    from drafters.train.start import new_drafter

    espec = dict(ctx.spec.get("evaluation") or {})
    engine = espec.get("engine") or "auto"
    engine = "hf" if engine == "auto" else engine
    target = load_job_target(ctx)
    trained = ctx.results["training"]
    best = fetch(ctx, trained["best"], ctx.workdir / "best")
    candidate = load_checkpoint(best, target.embed_weight, target.lm_head_weight,
                                target_config=target.model.config).to(target.device).eval()
    incumbent_dir = base_drafter_dir(ctx)
    if incumbent_dir is not None:
        incumbent_name = "base"
        incumbent = load_checkpoint(incumbent_dir, target.embed_weight, target.lm_head_weight,
                                    target_config=target.model.config).to(target.device).eval()
    else:
        # No incumbent: compare with the drafter training started from (what training bought): same shape,
        # seed and initialisation (the target's layers under the default recipe, docs/dspark.md 1.1).
        incumbent_name = "untrained"
        recipe = StageRecipe.from_spec(ctx.spec.get("recipe"))
        incumbent = new_drafter(candidate.config, resolved_seed(recipe), target, target.device,
                                recipe.drafter_init).eval()
        incumbent_dir = ctx.workdir / "untrained"
        if engine != "hf":
            save_checkpoint(incumbent, incumbent_dir)
    prepared = fetch(ctx, ctx.results["preparing"]["prepared"], ctx.workdir / "prepared")
    prompts = spread_calls(load_prompts(prepared / "heldout_prompts.jsonl"),
                           int(auto(espec.get("max_calls"), "max_calls")))
    settings = {"max_new_tokens": int(auto(espec.get("max_new_tokens"), "max_new_tokens")),
                "temperature": float(espec.get("temperature") or 0.0), "seed": int(espec.get("seed") or 0)}
    compare = [("candidate", incumbent_name)]
    pace = StagePace(ctx, "held-out replays")

    class Cancelled(Exception):
        pass

    def progress(done: int, total: int) -> None:
        pace.done(done, total)
        if ctx.cancelled():  # the replays are independent: stopping between two of them loses nothing
            raise Cancelled

    try:
        with every(REPORT_EVERY_S, pace.report):  # one replay of a long call takes minutes on a CPU
            report = _replay(ctx, engine, target, prompts, settings, compare, progress, candidate=candidate,
                             incumbent=incumbent, incumbent_name=incumbent_name, best=best,
                             incumbent_dir=incumbent_dir)
    except Cancelled:
        return {"cancelled": True}
    policy = {k: v for k, v in (ctx.spec.get("promotion") or {}).items()
              if k in ("min_gain", "max_segment_loss", "min_support", "min_calls")}
    decision = gate(report, None, policy, candidate_name="candidate", incumbent_name=incumbent_name)
    out_dir = ctx.workdir / "report"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    from workers.stages.register import drafter_name

    write_report(report, out_dir, job_verdict(ctx, drafter_name(ctx), decision.to_dict()))
    return {"report": dict(report), "gate": decision.to_dict(), "report_dir": str(out_dir), "engine": engine,
            "report_files": publish(ctx, out_dir, "report"), "incumbent": incumbent_name}


def _replay(ctx, engine, target, prompts, settings, compare, progress, *, candidate, incumbent, incumbent_name,
            best, incumbent_dir):
    """Replay the held-out prompts for the candidate and the incumbent (and, in-process, the n-gram
    baseline) on ``engine``; returns the evaluation report."""
    from drafters.baselines.suffix_decoding import MAX_INDEX_TOKENS, training_outputs
    from drafters.dspark.draft_vocab import DEFAULT_SIZE
    from drafters.evaluate import engine_report
    from drafters.evaluate.lineup import SUFFIX_CAP, Lineup
    from drafters.evaluate.select import CASCADE_THRESHOLDS, choose_on_dev, split_dev_test, with_selection
    from drafters.evaluate import evaluate as run_evaluation
    from drafters.render import Renderer
    from drafters.shards import load_sequences

    tspec = target_spec(ctx)
    if engine == "hf":
        renderer = Renderer(target.tokenizer, chat_template=tspec.get("chat_template"),
                            template_kwargs=tspec.get("template_kwargs") or {})
        espec = dict(ctx.spec.get("evaluation") or {})
        rows = training_rows(ctx, ctx.workdir / "prepared")
        # Suffix decoding indexes the organization's training outputs (the target's own answers when they
        # were regenerated); the drafters draft from their most frequent tokens (docs/dspark.md 5.5).
        lineup = Lineup(candidate, incumbent, incumbent_name,
                        training_outputs(load_sequences(rows / "train.safetensors")), renderer.end_of_turn_ids(),
                        suffix_cap=int(espec.get("suffix_cap") or SUFFIX_CAP),
                        draft_vocab_size=int(espec.get("draft_vocab_size") or DEFAULT_SIZE),
                        suffix_max_sequences=int(espec.get("suffix_max_sequences") or 10000),
                        suffix_max_tokens=int(espec.get("suffix_max_tokens") or MAX_INDEX_TOKENS),
                        renderer=renderer)

        def run(proposers, calls, compare=None, progress=None):
            return run_evaluation(target, proposers, calls, **settings, segmenter=renderer.segment_completion,
                                  compare=compare, engine="hf", progress=progress)

        split = split_dev_test(prompts)
        fixed = espec.get("cascade_threshold")
        fixed = None if fixed in (None, "auto") else float(fixed)
        # Development: the cascade's threshold and the proposer to deploy (the test split is read once, below).
        choice = choose_on_dev(run, lineup.shippable(), lineup.cascade, split.dev,
                               thresholds=(fixed,) if fixed is not None else CASCADE_THRESHOLDS)
        threshold = fixed if fixed is not None else choice.threshold if choice.threshold is not None else 1.0
        proposers = lineup.baselines() | {"cascade": lineup.cascade(threshold)}
        pairs = [("candidate", "ngram"), ("candidate", "suffix"), ("candidate", "hybrid"), ("cascade", "suffix"),
                 ("cascade", "candidate"), ("suffix+schema", "suffix")]
        report = run(proposers, split.test, compare + pairs, progress)
        return with_selection(report, choice, threshold, fixed is not None, len(split.test))
    eng = _engine(ctx, engine, target)
    runs = {}
    for i, (name, path) in enumerate((("candidate", best), (incumbent_name, incumbent_dir))):
        runs[name] = eng.measure(prompts, path, **settings)
        progress(i + 1, 2)
    return engine_report(runs, target=tspec["model"], **settings, compare=compare)
