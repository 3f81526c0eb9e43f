"""Held-out replay: every held-out call decoded by the target with each proposer and with plain decoding
(`evaluate`, in process, per-round data), or summarised from counter-only engine runs (`engine_report`),
into one EvalReport."""

from __future__ import annotations

import time
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
    _group,
    calibration_metrics,
    calibration_samples,
    calibration_split,
    compare_entries,
    conditional_acceptance,
    engine_summary,
    fit_sequential_temperatures,
    tau_from_sums,
    threshold_sweep,
)
from drafters.evaluate.report import SCHEMA, EvalReport, _clean, _versions

DEFAULT_BUCKETS = (0, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


def segment_name(value: int) -> str:
    """Segment label for reports: drafters.render.Segment names in lower case when available."""
    try:
        from drafters.render import Segment

        return Segment(int(value)).name.lower()
    except (ImportError, ValueError):  # render.py not present or an unknown value: keep the number
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


def _segment_rounds(gen, segs: list[int]) -> dict[str, list[int]]:
    """Round lengths grouped by the segment of each round's first committed token (SEGMENT_RULE)."""
    out: dict[str, list[int]] = {}
    first = {}
    for i, ri in enumerate(gen.round_index):
        if ri >= 0 and ri not in first:
            first[ri] = i
    for ri, r in enumerate(gen.rounds):
        i = first.get(ri)
        if i is None or i >= len(segs):
            continue  # a round whose tokens were all cut by a stop string
        out.setdefault(segment_name(segs[i]), []).append(r.committed)
    return out


def _stop_ids(target: Any) -> list[int]:
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
    from drafters.speculate import GREEDY_TEMPERATURE, prefill, speculative_generate

    if not prompts:
        raise TracedraftError("bad_input", "no held-out prompts to evaluate", "prompts")
    if not proposers:
        raise TracedraftError("bad_input", "no proposers to evaluate", "proposers")
    stops = list(stop_token_ids) if stop_token_ids is not None else _stop_ids(target)
    greedy = temperature < GREEDY_TEMPERATURE
    total_steps = len(prompts) * (1 + len(proposers))
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total_steps)

    # Call by call: one prefill, shared by plain decoding and every proposer (its time is charged to
    # each), then dropped, so memory holds one prompt's cache at a time.
    feature_layers = sorted({i for prop in proposers.values() if prop is not None for i in (prop.layer_ids or ())})
    plain = []
    gens: dict[str, list] = {name: [] for name in proposers}
    for i, p in enumerate(prompts):
        pre = prefill(target, p.prompt_ids, feature_layers or None)
        plain.append(speculative_generate(target, None, p.prompt_ids, max_new_tokens, temperature=temperature,
                                          seed=seed + i, stop_token_ids=stops, stop_strings=stop_strings,
                                          shared_prefill=pre))
        tick()
        for name, prop in proposers.items():
            gens[name].append(speculative_generate(target, prop, p.prompt_ids, max_new_tokens,
                                                   temperature=temperature, seed=seed + i, stop_token_ids=stops,
                                                   stop_strings=stop_strings, shared_prefill=pre))
            tick()
        del pre
    near_ties: list[dict] = []
    checked = 0
    entries: dict[str, dict] = {}
    for name, prop in proposers.items():
        records, all_rounds, per_call = [], [], []
        seg_groups: dict[str, list[int]] = {}
        fit_rounds, eval_rounds = [], []
        t_total = t_target = t_drafter = t_over = 0.0
        n_tokens = 0
        for i, p in enumerate(prompts):
            g = gens[name][i]
            if greedy:
                checked += 1
                ref = plain[i]
                if g.tokens != ref.tokens:
                    j = next((k for k, (x, y) in enumerate(zip(g.tokens, ref.tokens)) if x != y),
                             min(len(g.tokens), len(ref.tokens)))
                    m = min(g.margins[j] if j < len(g.margins) else 0.0,
                            ref.margins[j] if j < len(ref.margins) else 0.0)
                    if m >= tie_tolerance:
                        raise TracedraftError(
                            "lossless_violation",
                            f"greedy speculative output of {name!r} differs from plain greedy decoding at "
                            f"generated token {j} (target logit margin {m:.3g} >= {tie_tolerance})",
                            f"call {p.call_id}, proposer {name}, token {j}")
                    near_ties.append({"call_id": p.call_id, "proposer": name, "token": j, "margin": m})
            lengths = [r.committed for r in g.rounds]
            all_rounds.extend(g.rounds)
            (fit_rounds if calibration_split(p.call_id) == "fit" else eval_rounds).extend(g.rounds)
            segs = segmenter(list(g.tokens)) if segmenter else None
            if segs is not None:
                for s, v in _segment_rounds(g, list(segs)).items():
                    seg_groups.setdefault(s, []).extend(v)
            else:
                seg_groups.setdefault("all", []).extend(lengths)
            ctx = len(p.prompt_ids)
            records.append({"lengths": lengths, "turn": turn_index(p), "ctx": context_bucket(ctx, bucket_edges)})
            per_call.append({"call_id": p.call_id, "conversation_id": getattr(p, "conversation_id", None),
                             "turn": turn_index(p), "context_len": ctx, "rounds": len(lengths),
                             "sum_len": sum(lengths), "tau": tau_from_sums(sum(lengths), len(lengths)),
                             "tokens": len(g.tokens), "seconds": g.total_s, "finish_reason": g.finish_reason})
            t_total += g.total_s
            t_target += g.target_s
            t_drafter += g.drafter_s
            t_over += g.overhead_s
            n_tokens += len(g.tokens)
        block = int(getattr(prop, "block_size", 0) or 0) if prop is not None else 0
        sum_len = sum(r.committed for r in all_rounds)
        n_rounds = len(all_rounds)
        has_conf = any(r.confidences for r in all_rounds)
        calib = None
        if has_conf:
            temps = fit_sequential_temperatures(fit_rounds)
            calib = {"rule": CALIBRATION_RULE, "fit_calls": sum(1 for p in prompts if calibration_split(p.call_id) == "fit"),
                     "temperatures": temps,
                     "before": calibration_metrics(calibration_samples(eval_rounds)),
                     "after": calibration_metrics(calibration_samples(eval_rounds, temps))}
        tps = n_tokens / t_total if t_total > 0 else None
        if has_conf:
            calib["threshold_sweep"] = threshold_sweep(all_rounds)
        entries[name] = {
            "tau": tau_from_sums(sum_len, n_rounds), "rounds": n_rounds, "tokens": n_tokens,
            "block_size": block, "max_tau": block + 1,
            "mean_proposed": (sum(r.proposed for r in all_rounds) / n_rounds) if n_rounds else None,
            "verify_rate": (sum_len / sum(r.proposed + 1 for r in all_rounds)) if n_rounds else None,
            "by_segment": {s: {"tau": tau_from_sums(sum(v), len(v)), "rounds": len(v), "tokens": sum(v)}
                           for s, v in sorted(seg_groups.items())},
            "by_turn": _group(records, "turn"), "by_context": _group(records, "ctx"),
            "conditional_acceptance": conditional_acceptance(all_rounds, block or None),
            "calibration": calib,
            "timing": {"seconds": t_total, "target_s": t_target, "drafter_s": t_drafter, "overhead_s": t_over,
                       "overhead_share": t_over / t_total if t_total else None, "tokens_per_s": tps},
            "per_call": per_call,
        }
    p_tokens = sum(len(g.tokens) for g in plain)
    p_secs = sum(g.total_s for g in plain)
    p_tps = p_tokens / p_secs if p_secs > 0 else None
    for e in entries.values():
        tps = e["timing"]["tokens_per_s"]
        e["speedup_vs_plain"] = tps / p_tps if tps and p_tps else None
    names = list(entries)
    pairs = list(compare) if compare is not None else [(a, b) for a in names for b in names if a != b]
    comparisons = {f"{a}__vs__{b}": {"candidate": a, "incumbent": b, **compare_entries(entries[a], entries[b], seed)}
                   for a, b in pairs}
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
        "lossless": {"checked": greedy, "calls_checked": checked, "near_ties": near_ties,
                     "tie_tolerance": tie_tolerance},
        "plain": {"tokens": p_tokens, "seconds": p_secs, "tokens_per_s": p_tps,
                  "target_s": sum(g.target_s for g in plain), "overhead_s": sum(g.overhead_s for g in plain)},
        "proposers": entries,
        "comparisons": comparisons,
    })
    return EvalReport(_clean(report))


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
    names = list(entries)
    pairs = list(compare) if compare is not None else [(a, b) for a in names for b in names if a != b]
    engines = sorted({getattr(r, "engine", "?") for r in runs.values()})
    first = next(iter(runs.values()), None)
    lossless: dict[str, Any] = {"checked": False, "reason": "remote engine: outputs are not compared token by token"}
    plain: dict[str, Any] = {"tokens": None, "seconds": None, "tokens_per_s": None}
    checks = {n: (r.info or {}).get("lossless") for n, r in runs.items()}
    if runs and all(checks.values()):
        lossless = {"checked": True, "against": "the same engine's target alone, token ids, same prompts",
                    "calls_checked": sum(c["calls"] for c in checks.values()),
                    "identical": all(c["identical"] for c in checks.values()),
                    "near_ties": [{**m, "proposer": n} for n, c in checks.items() for m in c["mismatched_calls"]
                                  if m.get("near_tie")],
                    "mismatched_calls": {n: c["mismatched_calls"] for n, c in checks.items() if c["mismatched_calls"]}}
        info0 = first.info or {}
        if info0.get("plain_tokens") and info0.get("plain_seconds"):
            p_tps = info0["plain_tokens"] / info0["plain_seconds"]
            plain = {"tokens": info0["plain_tokens"], "seconds": info0["plain_seconds"], "tokens_per_s": p_tps}
            for e in entries.values():
                tps = e["timing"]["tokens_per_s"]
                e["speedup_vs_plain"] = tps / p_tps if tps else None
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
        "comparisons": {f"{a}__vs__{b}": {"candidate": a, "incumbent": b,
                                          **compare_entries(entries[a], entries[b], seed)} for a, b in pairs},
    }))
