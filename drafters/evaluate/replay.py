"""Held-out replay: every held-out call decoded by the target with each proposer and with plain decoding
(`evaluate`, in process, per-round data), or summarised from counter-only engine runs (`engine_report`),
into one EvalReport."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from drafters.errors import TracedraftError
from drafters.evaluate.metrics import (
    CALIBRATION_RULE,
    CONDITIONAL_RULE,
    CONVENTION,
    END_EFFECTS,
    PAIRED_RULE,
    SEGMENT_RULE,
    calibration_metrics,
    calibration_samples,
    calibration_split,
    conditional_acceptance,
    engine_summary,
    fit_sequential_temperatures,
    paired_comparisons,
    tau_by_group,
    tau_from_sums,
    threshold_sweep,
)
from drafters.evaluate.report import SCHEMA, EvalReport, _clean, _versions, hardware
from drafters.evaluate.speed import cost_model, plain_step_s, speed_section
from drafters.segments import Segment

DEFAULT_BUCKETS = (0, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


def segment_name(value: int) -> str:
    """Segment label for reports: the `Segment` name in lower case, the number itself for an unknown value."""
    try:
        return Segment(int(value)).name.lower()
    except ValueError:
        return str(int(value))


def turn_index(prompt: Any) -> int | None:
    """Turn index of a held-out call: ``prompt.turn_index`` if present, else the integer after the last
    '/' of call_id (LLMCall.id = "<conversation>/<index>"), else None."""
    t = getattr(prompt, "turn_index", None)
    if t is not None:
        return int(t)
    tail = str(getattr(prompt, "call_id", "")).rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else None


def context_bucket(n: int, edges: Sequence[int] = DEFAULT_BUCKETS) -> str:
    """Label of the context-length bucket [lo, hi) holding n tokens."""
    for lo, hi in zip(edges, list(edges[1:]) + [None]):
        if hi is None or n < hi:
            return f"{lo}+" if hi is None else f"{lo}-{hi - 1}"
    return str(n)


def spread_calls(prompts: Sequence[Any], n: int) -> list[Any]:
    """At most ``n`` of ``prompts`` (RenderedPrompt-like, with ``conversation_id``), taken round-robin over
    their conversations in order (the first call of each conversation, then the second, ...): a small
    evaluation sample then covers many conversations instead of the first calls of the first one."""
    by_conv: dict[Any, list[Any]] = {}
    for p in prompts:
        by_conv.setdefault(getattr(p, "conversation_id", None), []).append(p)
    queues, out, depth = list(by_conv.values()), [], 0
    while len(out) < n and any(depth < len(q) for q in queues):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out[:n]


def _segment_sums(gen, segs: list[int]) -> dict[str, list[float]]:
    """{segment: [committed tokens, rounds]} of one generation by SEGMENT_RULE: each committed token belongs
    to its own segment and carries 1 / (its round's committed tokens) of that round, so every proposer's
    per-segment tau covers the same tokens (greedy output is identical) and a round's share is exact."""
    per_round: dict[int, list[int]] = {}
    for i, ri in enumerate(gen.round_index):
        if ri >= 0 and i < len(segs):
            per_round.setdefault(ri, []).append(int(segs[i]))
    out: dict[str, list[float]] = {}
    for ri, seg_ids in per_round.items():
        share = 1.0 / gen.rounds[ri].committed if gen.rounds[ri].committed else 0.0
        for v in seg_ids:
            acc = out.setdefault(segment_name(v), [0.0, 0.0])
            acc[0] += 1
            acc[1] += share
    return out


def _stop_ids(target: Any) -> list[int]:
    """The target's EOS ids, from its generation config and its tokenizer."""
    ids: list[int] = []
    for src in (getattr(getattr(target, "model", None), "generation_config", None), getattr(target, "tokenizer", None)):
        e = getattr(src, "eos_token_id", None)
        if e is None:
            continue
        ids.extend(e if isinstance(e, (list, tuple)) else [e])
    return sorted({int(i) for i in ids})


def evaluate(target: Any, proposers: Mapping[str, Any], prompts: Sequence[Any], max_new_tokens: int = 256,
             temperature: float = 0.0, seed: int = 0,
             segmenter: Callable[[list[int]], list[int]] | None = None, *,
             stop_token_ids: Sequence[int] | None = None, stop_strings: Sequence[str] = (),
             compare: Sequence[tuple[str, str]] | None = None, bucket_edges: Sequence[int] = DEFAULT_BUCKETS,
             tie_tolerance: float = 1e-3, engine: str = "hf",
             progress: Callable[[int, int], None] | None = None) -> EvalReport:
    """Replay every held-out call for every proposer (and once with plain decoding) and report.

    target: drafters.target.Target. proposers: {name: Proposer} (a None value means plain decoding).
    prompts: RenderedPrompt-like objects (call_id, prompt_ids, optional conversation_id). Every proposer
    sees the same prompts with the same seed per call (seed + call index). segmenter maps generated token
    ids to Segment values (e.g. Renderer.segment_completion); without one every round is "all".
    stop_token_ids default to the target's EOS ids. compare: (candidate, incumbent) name pairs for paired
    comparisons (default: every ordered pair). At temperature 0 every proposer's tokens must equal plain
    decoding's: a divergence raises TracedraftError(code="lossless_violation", where=call/proposer/token)
    unless the target's top-1/top-2 logit margin there is below ``tie_tolerance`` (an fp32 near-tie that
    reduction order can flip; counted in report["lossless"]["near_ties"]).
    Raises TracedraftError(code="bad_input") for no prompts or no proposers.
    """
    from drafters.speculate import GREEDY_TEMPERATURE

    if not prompts:
        raise TracedraftError("bad_input", "no held-out prompts to evaluate", "prompts")
    if not proposers:
        raise TracedraftError("bad_input", "no proposers to evaluate", "proposers")
    stops = list(stop_token_ids) if stop_token_ids is not None else _stop_ids(target)
    greedy = temperature < GREEDY_TEMPERATURE
    plain, gens = _replay(target, proposers, prompts, max_new_tokens, seed, progress,
                          temperature=temperature, stop_token_ids=stops, stop_strings=stop_strings)
    near_ties: list[dict] = []
    entries: dict[str, dict] = {}
    for name, prop in proposers.items():
        entries[name], ties = _proposer_entry(name, prop, prompts, gens[name], plain if greedy else None,
                                              segmenter, bucket_edges, tie_tolerance)
        near_ties.extend(ties)
    p_tokens = sum(len(g.tokens) for g in plain)
    p_secs = sum(g.total_s for g in plain)
    p_tps = p_tokens / p_secs if p_secs > 0 else None
    for name, e in entries.items():
        tps = e["timing"]["tokens_per_s"]
        # A what-if proposer (the hybrid) is served by no engine: its tau holds, its speed does not.
        e["what_if"] = bool(getattr(proposers[name], "what_if", False))
        e["speedup_vs_plain"] = tps / p_tps if tps and p_tps and not e["what_if"] else None
    step_s = plain_step_s(plain)
    costs = {name: cost_model(gens[name], step_s) for name in proposers}
    info = target.info() if hasattr(target, "info") else {}
    report = EvalReport({
        "schema": SCHEMA, "convention": CONVENTION, "end_effects": END_EFFECTS,
        "rules": {"segment": SEGMENT_RULE, "conditional_acceptance": CONDITIONAL_RULE,
                  "calibration": CALIBRATION_RULE, "paired": PAIRED_RULE},
        "settings": {"engine": engine, "target": getattr(target, "name", None), "target_info": info,
                     "temperature": temperature, "seed": seed, "max_new_tokens": max_new_tokens,
                     "stop_token_ids": stops, "stop_strings": list(stop_strings), "bucket_edges": list(bucket_edges),
                     "segmented": segmenter is not None, "created_unix": time.time(),
                     "versions": _versions()},
        "heldout": {"calls": len(prompts), "generated_tokens": {n: e["tokens"] for n, e in entries.items()},
                    "plain_generated_tokens": p_tokens},
        "lossless": {"checked": greedy, "calls_checked": len(prompts) * len(proposers) if greedy else 0,
                     "near_ties": near_ties, "tie_tolerance": tie_tolerance},
        "plain": {"tokens": p_tokens, "seconds": p_secs, "tokens_per_s": p_tps,
                  "target_s": sum(g.target_s for g in plain), "overhead_s": sum(g.overhead_s for g in plain),
                  "per_call": [{"call_id": p.call_id, "tokens": len(g.tokens), "seconds": g.total_s}
                               for p, g in zip(prompts, plain)]},
        "proposers": entries,
        "speed": speed_section(entries, costs, engine, hardware()),
        "comparisons": paired_comparisons(entries, compare, seed),
    })
    return EvalReport(_clean(report))


def _replay(target: Any, proposers: Mapping[str, Any], prompts: Sequence[Any], max_new_tokens: int, seed: int,
            progress: Callable[[int, int], None] | None, **generate_kw: Any) -> tuple[list, dict[str, list]]:
    """(plain generations [calls], {proposer: generations [calls]}), call by call: one prefill, shared by
    plain decoding and every proposer (its time is charged to each), then dropped, so memory holds one
    prompt's cache at a time. Call i is decoded with seed + i by everyone."""
    from drafters.speculate import prefill, prepare_request, speculative_generate

    total_steps = len(prompts) * (1 + len(proposers))
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total_steps)

    feature_layers = sorted({i for prop in proposers.values() if prop is not None for i in (prop.layer_ids or ())})
    plain = []
    gens: dict[str, list] = {name: [] for name in proposers}
    for i, p in enumerate(prompts):
        pre = prefill(target, p.prompt_ids, feature_layers or None)
        plain.append(speculative_generate(target, None, p.prompt_ids, max_new_tokens, seed=seed + i,
                                          shared_prefill=pre, **generate_kw))
        tick()
        for name, prop in proposers.items():
            prepare_request(prop, p)
            gens[name].append(speculative_generate(target, prop, p.prompt_ids, max_new_tokens, seed=seed + i,
                                                   shared_prefill=pre, **generate_kw))
            tick()
        del pre
    return plain, gens


def _lossless_check(name: str, prompt: Any, gen: Any, ref: Any, tie_tolerance: float) -> dict | None:
    """None when greedy speculative output ``gen`` equals plain greedy ``ref``; a near-tie record when they
    first differ where the target's top-1/top-2 logit margin is below ``tie_tolerance``.
    Raises TracedraftError(code="lossless_violation") otherwise."""
    if gen.tokens == ref.tokens:
        return None
    j = next((k for k, (x, y) in enumerate(zip(gen.tokens, ref.tokens)) if x != y),
             min(len(gen.tokens), len(ref.tokens)))
    m = min(gen.margins[j] if j < len(gen.margins) else 0.0, ref.margins[j] if j < len(ref.margins) else 0.0)
    if m >= tie_tolerance:
        raise TracedraftError(
            "lossless_violation",
            f"greedy speculative output of {name!r} differs from plain greedy decoding at "
            f"generated token {j} (target logit margin {m:.3g} >= {tie_tolerance})",
            f"call {prompt.call_id}, proposer {name}, token {j}")
    return {"call_id": prompt.call_id, "proposer": name, "token": j, "margin": m}


def _proposer_entry(name: str, prop: Any, prompts: Sequence[Any], gens: list, plain: list | None,
                    segmenter: Callable[[list[int]], list[int]] | None, bucket_edges: Sequence[int],
                    tie_tolerance: float) -> tuple[dict, list[dict]]:
    """One proposer's report entry from its generations [calls], and the near ties of the lossless check
    against ``plain`` (None: not greedy, no check)."""
    near_ties: list[dict] = []
    records, all_rounds, per_call = [], [], []
    seg_groups: dict[str, list[float]] = {}
    fit_rounds, eval_rounds = [], []
    for i, p in enumerate(prompts):
        g = gens[i]
        if plain is not None:
            tie = _lossless_check(name, p, g, plain[i], tie_tolerance)
            if tie is not None:
                near_ties.append(tie)
        lengths = [r.committed for r in g.rounds]
        all_rounds.extend(g.rounds)
        (fit_rounds if calibration_split(p.call_id) == "fit" else eval_rounds).extend(g.rounds)
        segs = segmenter(list(g.tokens)) if segmenter else None
        call_segs = _segment_sums(g, list(segs)) if segs is not None else {"all": [sum(lengths), len(lengths)]}
        for k, (t, r) in call_segs.items():
            acc = seg_groups.setdefault(k, [0.0, 0.0])
            acc[0] += t
            acc[1] += r
        ctx = len(p.prompt_ids)
        records.append({"lengths": lengths, "turn": turn_index(p), "ctx": context_bucket(ctx, bucket_edges)})
        per_call.append({"call_id": p.call_id, "conversation_id": getattr(p, "conversation_id", None),
                         "turn": turn_index(p), "context_len": ctx, "rounds": len(lengths),
                         "sum_len": sum(lengths), "tau": tau_from_sums(sum(lengths), len(lengths)),
                         "tokens": len(g.tokens), "seconds": g.total_s, "finish_reason": g.finish_reason,
                         "segments": {k: v for k, v in sorted(call_segs.items())}})
    block = int(getattr(prop, "block_size", 0) or 0) if prop is not None else 0
    sum_len = sum(r.committed for r in all_rounds)
    n_rounds = len(all_rounds)
    entry = {
        "tau": tau_from_sums(sum_len, n_rounds), "rounds": n_rounds,
        "tokens": sum(len(g.tokens) for g in gens),
        "block_size": block, "max_tau": block + 1,
        "mean_proposed": (sum(r.proposed for r in all_rounds) / n_rounds) if n_rounds else None,
        "verify_rate": (sum_len / sum(r.proposed + 1 for r in all_rounds)) if n_rounds else None,
        "by_segment": {k: {"tau": tau_from_sums(t, r), "rounds": r, "tokens": int(t)}
                       for k, (t, r) in sorted(seg_groups.items())},
        "by_turn": _group(records, "turn"), "by_context": _group(records, "ctx"),
        "conditional_acceptance": conditional_acceptance(all_rounds, block or None),
        "calibration": _calibration(prompts, all_rounds, fit_rounds, eval_rounds),
        "timing": _timing(gens),
        "per_call": per_call,
    }
    entry.update(_choices(prop))
    return entry, near_ties


def _choices(prop: Any) -> dict:
    """What a proposer says of its own choices: ``picks`` (a cascade's rounds by side) and ``stood_aside``
    (requests the tool-schema proposer, alone or inside a cascade, could not serve, by reason)."""
    out: dict[str, Any] = {}
    if isinstance(getattr(prop, "picks", None), dict):
        out["picks"] = dict(prop.picks)
    parts = [prop, *getattr(prop, "cheap", [])]
    counts = [p.stood_aside for p in parts if isinstance(getattr(p, "stood_aside", None), Counter)]
    if counts:
        out["stood_aside"] = dict(sum(counts, Counter()))
    return out


def _group(records: list[dict], key: str) -> dict:
    """tau per value of ``records[i][key]`` (turn index, context bucket) over the records' round lengths."""
    groups: dict[str, list[int]] = {}
    for rec in records:
        groups.setdefault(str(rec[key]), []).extend(rec["lengths"])
    return tau_by_group(groups)


def _calibration(prompts: Sequence[Any], all_rounds: list, fit_rounds: list,
                 eval_rounds: list) -> dict | None:
    """The calibration section (CALIBRATION_RULE) and the threshold what-if, or None without confidences."""
    if not any(r.confidences for r in all_rounds):
        return None
    temps = fit_sequential_temperatures(fit_rounds)
    fit_calls = sum(1 for p in prompts if calibration_split(p.call_id) == "fit")
    return {"rule": CALIBRATION_RULE, "fit_calls": fit_calls,
            "temperatures": temps,
            "before": calibration_metrics(calibration_samples(eval_rounds)),
            "after": calibration_metrics(calibration_samples(eval_rounds, temps)),
            "threshold_sweep": threshold_sweep(all_rounds)}


def _timing(gens: list) -> dict:
    """Wall-clock seconds of a proposer's generations: total, in the target, the drafter and the loop."""
    t_total = sum(g.total_s for g in gens)
    t_over = sum(g.overhead_s for g in gens)
    n_tokens = sum(len(g.tokens) for g in gens)
    return {"seconds": t_total, "target_s": sum(g.target_s for g in gens),
            "drafter_s": sum(g.drafter_s for g in gens),
            "overhead_s": t_over, "overhead_share": t_over / t_total if t_total else None,
            "tokens_per_s": n_tokens / t_total if t_total > 0 else None}


def engine_report(runs: Mapping[str, Any], *, target: str | None, temperature: float, max_new_tokens: int,
                  seed: int = 0, compare: Sequence[tuple[str, str]] | None = None) -> EvalReport:
    """An EvalReport (same schema, so ``gate`` and ``write_report`` work) from counter-only engine runs,
    e.g. one SGLang pass per drafter: {name: EngineRun}. Per-segment, conditional-acceptance and calibration
    sections are empty (the engine does not expose per-round data); "tau_source" and "flags" say how tau
    was obtained, "settings.engine_info" records the engine version and arguments per drafter.

    When every run compared its output with the same engine's target alone (``info["lossless"]``, the
    llama.cpp engine), "lossless" reports that check (calls compared, identical, near ties, the differing
    calls per drafter) and "plain" the target-alone speed (``info["plain_tokens"]``/``["plain_seconds"]``),
    from which each proposer's "speedup_vs_plain" follows; otherwise lossless is marked not checked."""
    entries, infos = {}, {}
    for name, run in runs.items():
        s = engine_summary(run)
        infos[name] = s.pop("info")
        entries[name] = {**s, "by_segment": {}, "by_turn": {}, "by_context": {}, "conditional_acceptance": [],
                         "calibration": None, "block_size": None, "max_tau": None, "tokens": s["completion_tokens"],
                         "timing": {"seconds": s["seconds"], "tokens_per_s": s["tokens_per_s"]},
                         "speedup_vs_plain": None}
    engines = sorted({getattr(r, "engine", "?") for r in runs.values()})
    first = next(iter(runs.values()), None)
    lossless, plain = _engine_lossless(runs, entries)
    return EvalReport(_clean({
        "schema": SCHEMA, "convention": CONVENTION, "end_effects": "engine counters: " + END_EFFECTS,
        "rules": {"paired": PAIRED_RULE},
        "settings": {"engine": ",".join(engines), "target": target, "temperature": temperature, "seed": seed,
                     "max_new_tokens": max_new_tokens, "engine_info": infos, "versions": _versions()},
        "heldout": {"calls": len(first.calls) if first else 0,
                    "generated_tokens": {n: e["tokens"] for n, e in entries.items()},
                    "plain_generated_tokens": plain["tokens"]},
        "lossless": lossless,
        "plain": plain,
        "proposers": entries,
        "comparisons": paired_comparisons(entries, compare, seed),
    }))


def _engine_lossless(runs: Mapping[str, Any], entries: dict[str, dict]) -> tuple[dict, dict]:
    """The (lossless, plain) report sections of engine runs (see `engine_report`); sets each entry's
    "speedup_vs_plain" when the target-alone speed is known."""
    lossless: dict[str, Any] = {"checked": False, "reason": "remote engine: outputs are not compared token by token"}
    plain: dict[str, Any] = {"tokens": None, "seconds": None, "tokens_per_s": None}
    checks = {n: (r.info or {}).get("lossless") for n, r in runs.items()}
    if not (runs and all(checks.values())):
        return lossless, plain
    lossless = {"checked": True, "against": "the same engine's target alone, token ids, same prompts",
                "calls_checked": sum(c["calls"] for c in checks.values()),
                "identical": all(c["identical"] for c in checks.values()),
                "near_ties": [{**m, "proposer": n} for n, c in checks.items() for m in c["mismatched_calls"]
                              if m.get("near_tie")],
                "mismatched_calls": {n: c["mismatched_calls"] for n, c in checks.items() if c["mismatched_calls"]}}
    info0 = next(iter(runs.values())).info or {}
    if info0.get("plain_tokens") and info0.get("plain_seconds"):
        p_tps = info0["plain_tokens"] / info0["plain_seconds"]
        plain = {"tokens": info0["plain_tokens"], "seconds": info0["plain_seconds"], "tokens_per_s": p_tps}
        for e in entries.values():
            tps = e["timing"]["tokens_per_s"]
            e["speedup_vs_plain"] = tps / p_tps if tps else None
    return lossless, plain
