"""Training throughput on CPU with SmolLM2-135M-Instruct as the target.

For each configuration (1 and 5 draft layers x online and cached target features) runs a few optimizer
steps of ``drafters.train.train`` and prints: training tokens/s (real tokens, steady state: the first step
is excluded), seconds per step, and the share of step time spent in the target forward (online) or in reading
features from the cache (cached). The one-off cache build time is reported separately.

Data: the real example traces (examples/traces) ingested and rendered through the ChatML tool template when
the ingest/render modules work, else synthetic tool-call conversations through the tokenizer's template.

    .venv/bin/python benchmarks/bench_train.py [--steps 4] [--tokens-per-batch 2048] [--num-anchors 128]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drafters.dspark.config import DSparkConfig
from drafters.dspark.model import DSparkDrafter
from drafters.target import load_target
from drafters.train import FeatureCache, TrainConfig, train


@dataclass
class Seq:
    conversation_id: str
    call_ids: list
    input_ids: list
    loss_mask: list
    segments: list


def real_sequences(tok) -> tuple[list, str]:
    from drafters.render import Renderer
    from drafters.traces.ingest import ingest

    res = ingest(sorted((ROOT / "examples" / "traces").glob("*")), on_error="skip")
    r = Renderer(tok, chat_template=str(ROOT / "examples" / "chat_templates" / "chatml_tools.jinja"),
                 max_seq_len=1024)
    seqs = [s for c in res.conversations for s in r.render_conversation(c)]
    if not seqs:
        raise RuntimeError("no sequences rendered")
    return seqs, f"examples/traces: {len(res.conversations)} conversations"


def synthetic_sequences(tok, n: int = 48) -> tuple[list, str]:
    rng = random.Random(0)
    out = []
    for i in range(n):
        city = rng.choice(["Paris", "Berlin", "Tokyo", "Lima", "Oslo", "Cairo"])
        msgs = [{"role": "user", "content": f"What's the weather in {city} on day {rng.randint(1, 28)}?"}]
        prompt = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        answer = (f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "{city}", '
                  f'"unit": "{rng.choice(["c", "f"])}"}}}}\n</tool_call><|im_end|>\n')
        p = tok(prompt, add_special_tokens=False)["input_ids"]
        a = tok(answer * 3, add_special_tokens=False)["input_ids"]
        out.append(Seq(str(i), [str(i)], p + a, [0] * len(p) + [1] * len(a), [1] * len(p) + [7] * len(a)))
    return out, f"synthetic tool calls: {n} sequences"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--tokens-per-batch", type=int, default=2048)
    ap.add_argument("--num-anchors", type=int, default=128)
    ap.add_argument("--layers", default="1,5")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--max-seqs", type=int, default=24, help="sequences used (the cached run featurizes all)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    target = load_target("smollm2-135m-instruct")
    print(f"target {target.name} loaded in {time.perf_counter() - t0:.1f} s "
          f"(L={target.num_layers}, d={target.hidden_size}, V={target.vocab_size}, {target.dtype}), "
          f"{torch.get_num_threads()} threads")
    try:
        seqs, src = real_sequences(target.tokenizer)
    except Exception as e:  # noqa: BLE001  the pipeline modules may be incomplete; measure anyway
        print(f"(real traces unavailable: {type(e).__name__}: {e}; using synthetic data)")
        seqs, src = synthetic_sequences(target.tokenizer)
    seqs = seqs[: a.max_seqs]
    ntok = sum(len(s.input_ids) for s in seqs)
    nsup = sum(sum(s.loss_mask) for s in seqs)
    print(f"data: {src}; {len(seqs)} sequences, {ntok} tokens ({nsup} supervised)")

    # time the target forward / the cache reads by wrapping them
    timers = {"target": 0.0, "cache": 0.0}
    orig_features = target.features
    orig_get = FeatureCache.get

    def timed_features(*args, **kw):
        s = time.perf_counter()
        r = orig_features(*args, **kw)
        timers["target"] += time.perf_counter() - s
        return r

    def timed_get(self, *args, **kw):
        s = time.perf_counter()
        r = orig_get(self, *args, **kw)
        timers["cache"] += time.perf_counter() - s
        return r

    target.features = timed_features
    FeatureCache.get = timed_get
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = Path(tmp) / "fcache"
        for layers in [int(x) for x in a.layers.split(",")]:
            for mode in ("off", "on"):
                torch.manual_seed(0)
                dcfg = DSparkConfig.from_target(target.config, target.tokenizer, num_hidden_layers=layers)
                drafter = DSparkDrafter(dcfg, target.embed_weight, target.lm_head_weight)
                ntrain = sum(p.numel() for p in drafter.parameters() if p.requires_grad)
                cfg = TrainConfig(max_steps=a.steps + 1, lr=3e-4, tokens_per_batch=a.tokens_per_batch,
                                  num_anchors=a.num_anchors, feature_cache=mode,
                                  feature_cache_dir=str(cache_dir), feature_cache_max_bytes=8 << 30)
                step_t: list[float] = []
                tok_n: list[int] = []
                marks = {"t": None, "target": 0.0, "cache": 0.0, "build": 0.0}
                build_start = time.perf_counter()

                def prog(p, step_t=step_t, tok_n=tok_n, marks=marks, build_start=build_start):
                    now = time.perf_counter()
                    print(f"  [{p.phase}] step {p.step} t={now - build_start:.1f}s {p.message or ''}", flush=True)
                    if p.phase == "cache":
                        marks["build"] = now - build_start  # the last "cache" report ends the build
                    if p.phase in ("validate", "train"):
                        if marks["t"] is not None and p.phase == "train":
                            step_t.append(now - marks["t"])
                        marks["t"] = now
                        if p.phase == "train" and p.step == 1:  # steady state starts after step 1
                            marks["target"], marks["cache"] = timers["target"], timers["cache"]
                            step_t.clear()

                hist_tokens: list[int] = []
                timers["target"] = timers["cache"] = 0.0
                res = train(target, drafter, seqs, [], cfg, Path(tmp) / f"run{layers}{mode}", progress=prog,
                            resume=False)
                hist_tokens = [h["tokens"] for h in res.history if h["phase"] == "train"][1:]
                tsec = sum(step_t)
                share_t = (timers["target"] - marks["target"]) / tsec if tsec else float("nan")
                share_c = (timers["cache"] - marks["cache"]) / tsec if tsec else float("nan")
                row = {
                    "draft_layers": layers, "features": "online" if mode == "off" else "cached",
                    "trainable_params_M": round(ntrain / 1e6, 1), "steps_timed": len(step_t),
                    "s_per_step": round(tsec / max(1, len(step_t)), 2),
                    "tokens_per_s": round(sum(hist_tokens) / tsec, 1) if tsec else None,
                    "target_forward_share": round(share_t, 3),
                    "cache_read_share": round(share_c, 3),
                    "cache_build_s": round(marks["build"], 1) if mode == "on" and marks["build"] else None,
                    "cache_bytes": res.feature_cache.get("bytes"),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("\n| draft layers | features | tokens/s | s/step | target fwd share | cache read share | cache build s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['draft_layers']} | {r['features']} | {r['tokens_per_s']} | {r['s_per_step']} | "
              f"{r['target_forward_share']:.0%} | {r['cache_read_share']:.0%} | {r['cache_build_s'] or '-'} |")


if __name__ == "__main__":
    main()
