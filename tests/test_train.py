"""drafters.train: learning signal, exact resume, warm start, cancel/SIGTERM, feature cache, data parallel.

Target: a tiny Llama (d=64, 4 layers, V=256) first fitted for a few seconds to synthetic tool-call-like
conversations, so that its next-token distributions are peaked and learnable (a random-init target is nearly
uniform, which makes 1 - TV close to 1 before any training). Drafter: 1 layer, block size 4, Markov rank 16.
"""

from __future__ import annotations

import json
import os
import random
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import transformers

from drafters.dspark.config import DSparkConfig
from drafters.dspark.model import DSparkDrafter
from drafters.errors import TracedraftError
from drafters.target import Target, load_target
from drafters.train import (
    STATE_JSON,
    STATE_TENSORS,
    TrainConfig,
    TrainError,
    feature_bytes_per_token,
    load_drafter_weights,
    lr_factor,
    train,
)

V = 256
# Segment values (drafters.render.Segment)
USER, TEXT, TOOL_NAME, TOOL_ARGS, TOOL_STRUCTURE, MARKUP = 2, 4, 6, 7, 8, 0


@dataclass
class Seq:  # RenderedSequence-shaped
    conversation_id: str
    call_ids: list
    input_ids: list
    loss_mask: list
    segments: list


def synth_sequences(n: int, seed: int) -> list[Seq]:
    """Two-turn conversations: user words, then an assistant tool call that copies user words as arguments
    (tool-call structure tokens, a tool name chosen by the first user word, argument key/value tokens)."""
    rng = random.Random(seed)
    out = []
    for c in range(n):
        ids, mask, seg = [1], [0], [MARKUP]
        for _turn in range(2):
            words = [rng.randrange(10, 60) for _ in range(rng.randrange(5, 10))]
            ids += [2, *words, 3]
            mask += [0] * (len(words) + 2)
            seg += [MARKUP] + [USER] * len(words) + [MARKUP]
            ids.append(4)
            mask.append(0)
            seg.append(MARKUP)
            name = 100 + words[0] % 5
            key = 110 + words[1] % 4
            vals = words[2:5]
            a_ids = [5, name, 6, key, *vals, 7, 8, 3]
            a_seg = [TOOL_STRUCTURE, TOOL_NAME, TOOL_STRUCTURE, TOOL_ARGS, *[TOOL_ARGS] * len(vals),
                     TOOL_STRUCTURE, TOOL_STRUCTURE, TOOL_STRUCTURE]
            ids += a_ids
            mask += [1] * len(a_ids)
            seg += a_seg
        out.append(Seq(f"c{seed}-{c}", [f"c{seed}-{c}"], ids, mask, seg))
    return out


TRAIN = synth_sequences(48, 1)
VAL = synth_sequences(12, 2)


def _fit_target() -> transformers.LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=V,
                                   max_position_embeddings=256)
    m = transformers.LlamaForCausalLM(cfg)
    opt = torch.optim.AdamW(m.parameters(), lr=2e-2)
    data = synth_sequences(32, 99)
    T = max(len(s.input_ids) for s in data)
    ids = torch.tensor([s.input_ids + [0] * (T - len(s.input_ids)) for s in data])
    lab = torch.tensor([s.input_ids + [-100] * (T - len(s.input_ids)) for s in data])
    for _ in range(30):
        loss = m(ids, labels=lab).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return m.eval()


@pytest.fixture(autouse=True)
def _one_thread():
    # The CI box has 2 shared cores: oversubscribed intra-op threads make tiny models ~10x slower.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def target_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tiny_target")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    _fit_target().save_pretrained(d)
    torch.set_num_threads(n)
    return d


@pytest.fixture
def target(target_dir) -> Target:
    return load_target(str(target_dir))


def make_drafter(target: Target, seed: int = 0) -> DSparkDrafter:
    torch.manual_seed(seed)
    cfg = DSparkConfig.from_target(target.config, None, num_hidden_layers=1, block_size=4, markov_rank=16,
                                   target_layer_ids=[0, 2], mask_token_id=V - 1)
    return DSparkDrafter(cfg, target.embed_weight, target.lm_head_weight)


def cfg(**kw) -> TrainConfig:
    base = {"max_steps": 10, "lr": 3e-3, "warmup_ratio": 0.1, "tokens_per_batch": 256, "num_anchors": 12,
            "seed": 7, "feature_cache": "off", "validate_every": 0, "checkpoint_every": 0, "keep_last": 2}
    base.update(kw)
    return TrainConfig(**base)


def weights(d: DSparkDrafter) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in d.named_parameters() if p.requires_grad}


def train_losses(res) -> list[float]:
    return [h["loss"] for h in res.history if h["phase"] == "train"]


# ------------------------------------------------------------------------------------------------ tests
def test_lr_schedule():
    f = [lr_factor(i, 100, 0.04) for i in range(100)]
    assert f[:4] == [0.25, 0.5, 0.75, 1.0]
    assert f[4] == 1.0 and abs(f[52] - 0.5) < 0.02 and f[99] < 0.001
    assert all(a >= b for a, b in zip(f[4:], f[5:], strict=False))  # noqa: RUF007


def test_learns_loss_down_tau_up(target, tmp_path):
    d = make_drafter(target)
    seen = []
    res = train(target, d, TRAIN, VAL, cfg(max_steps=40, validate_every=10, feature_cache="auto"), tmp_path,
                progress=seen.append)
    losses = train_losses(res)
    taus = [h["expected_tau"] for h in res.history if h["phase"] == "validate"]
    print("losses", [round(x, 3) for x in losses[:3]], [round(x, 3) for x in losses[-3:]], "taus", taus)
    assert len(taus) == 5  # steps 0, 10, 20, 30, 40
    assert res.feature_cache["mode"] == "cache"
    assert sum(losses[-5:]) / 5 < 0.6 * sum(losses[:3]) / 3, losses
    assert taus[-1] > taus[0] + 0.6, taus  # block 4: tau in [1, 5]
    assert taus[-1] >= max(taus[:-1]) - 0.05
    assert res.best_expected_tau == max(taus)
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["expected_tau"] == max(taus)
    assert (tmp_path / "best" / "model.safetensors").is_file()
    # progress: train reports with rates/ETA, validation reports with tau, and a final "done"
    tr = [p for p in seen if p.phase == "train"]
    assert len(tr) == 40 and tr[-1].step == 40 and tr[-1].total_steps == 40
    assert tr[0].tokens_per_s > 0 and tr[-1].eta_s == 0 and tr[5].eta_s > 0
    assert seen[-1].phase == "done"
    # no pickle anywhere: every file is safetensors or JSON
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all(p.suffix in (".safetensors", ".json") for p in files), files
    # optimizer state loads with weights_only semantics (safetensors: no code execution possible)
    st = json.loads((res.last_dir / STATE_JSON).read_text())
    assert st["step"] == 40


def read_tokens(c: TrainConfig, val=()) -> tuple[int, int]:
    """(sequences, tokens) the first ``c.max_steps`` steps of one process read (every micro-batch of them)
    plus the validation set: what the feature cache must hold."""
    from drafters.train.data import load_data, step_micro_batches

    data = load_data(TRAIN, list(val), c)
    seen = {s.key: len(s.ids) for step in range(c.max_steps)
            for mb in step_micro_batches(data, c, step, 0, 1, torch.ones(4)) for s in mb.seqs}
    seen |= {s.key: len(s.ids) for s in data.val}
    return len(seen), sum(seen.values())


def test_online_and_cached_features_agree(target, tmp_path):
    r1 = train(target, make_drafter(target), TRAIN, [], cfg(max_steps=2, feature_cache="off"), tmp_path / "a")
    r2 = train(target, make_drafter(target), TRAIN, [], cfg(max_steps=2, feature_cache="on"), tmp_path / "b")
    assert r1.feature_cache["mode"] == "online" and r2.feature_cache["mode"] == "cache"
    man = json.loads((tmp_path / "b" / "feature_cache" / "manifest.json").read_text())
    n, toks = read_tokens(cfg(max_steps=2))
    assert man["layer_ids"] == [0, 2] and man["num_sequences"] == n == r2.feature_cache["sequences"]
    assert r2.feature_cache["estimate_bytes"] == toks * feature_bytes_per_token(64, 2) == toks * 774
    torch.testing.assert_close(torch.tensor(train_losses(r1)), torch.tensor(train_losses(r2)), rtol=1e-4, atol=1e-5)


def test_a_short_run_caches_only_what_its_steps_read_and_says_how_long_the_pass_takes(target, tmp_path):
    """max_steps 2 of a 48-sequence set: the feature pass covers the sequences those 2 steps read and the
    validation set, with a report before the first batch and one per batch, each with an ETA recomputed
    from the pass's own rate; a run over several epochs caches every training sequence."""
    seen = []
    short = cfg(max_steps=2, feature_cache="on")
    r = train(target, make_drafter(target), TRAIN, VAL, short, tmp_path / "short", progress=seen.append)
    n, _ = read_tokens(short, VAL)
    assert r.feature_cache["sequences"] == n < len(TRAIN) + len(VAL)
    assert r.feature_cache["train_sequences"] == n - len(VAL) < len(TRAIN) // 2
    cache = [p for p in seen if p.phase == "cache"]
    assert cache[0].message.startswith(f"target features for the training cache: 0/{n} sequences")
    assert cache[0].eta_s is None and len(cache) >= 3 and cache[-1].message.split(": ")[1].startswith(f"{n}/{n}")
    etas = [p.eta_s for p in cache[1:]]
    assert all(e is not None and e >= 0 for e in etas) and etas[-1] == 0 and "s left in this pass" in cache[1].message
    long = train(target, make_drafter(target), TRAIN, [], cfg(max_steps=40, feature_cache="on"), tmp_path / "long")
    assert long.feature_cache["train_sequences"] == len(TRAIN)


def test_bf16_target_cache_holds_what_it_computed_at_the_estimated_size(target_dir, tmp_path):
    """A bf16 target handing fp32 features to the fp32 drafter (the CPU training stage's set-up) caches them in
    bf16: exact (they are bf16 values), the size the limit check estimated, and training on the cache equals
    training on online features."""
    t = load_target(str(target_dir), dtype=torch.bfloat16)
    t.feature_dtype = torch.float32
    r_on = train(t, make_drafter(t), TRAIN, [], cfg(max_steps=2, feature_cache="on"), tmp_path / "c")
    r_off = train(t, make_drafter(t), TRAIN, [], cfg(max_steps=2, feature_cache="off"), tmp_path / "o")
    _, toks = read_tokens(cfg(max_steps=2))
    assert r_on.feature_cache["estimate_bytes"] == toks * feature_bytes_per_token(64, 2, 2)
    assert r_on.feature_cache["bytes"] == r_on.feature_cache["estimate_bytes"]
    man = json.loads((tmp_path / "c" / "feature_cache" / "manifest.json").read_text())
    assert man["dtype"] == "bfloat16"
    assert train_losses(r_on) == train_losses(r_off)


def test_feature_cache_refused_past_limit(target, tmp_path):
    with pytest.raises(TrainError) as e:
        train(target, make_drafter(target), TRAIN, VAL, cfg(feature_cache="on", feature_cache_max_bytes=10_000),
              tmp_path)
    assert e.value.code == "feature_cache_too_large" and e.value.where == "feature_cache_max_bytes"
    assert "MiB" in e.value.message
    # "auto" falls back to online features instead
    r = train(target, make_drafter(target), TRAIN, [], cfg(max_steps=1, feature_cache="auto",
                                                              feature_cache_max_bytes=10_000), tmp_path / "auto")
    assert r.feature_cache["mode"] == "online"


def test_resume_is_exact(target, tmp_path):
    c = cfg(max_steps=12, checkpoint_every=5, feature_cache="auto", grad_accum=2)
    full_d = make_drafter(target)
    full = train(target, full_d, TRAIN, VAL, c, tmp_path / "full")
    # interrupted after 7 steps (should_stop polled between steps), then resumed in a NEW process state
    n = {"k": 0}

    def stop_after_7():
        return n["k"] >= 7

    def count(p):
        if p.phase == "train":
            n["k"] = p.step

    part = train(target, make_drafter(target), TRAIN, VAL, c, tmp_path / "run", progress=count,
                 should_stop=stop_after_7)
    assert part.cancelled and part.steps == 7 and part.stop_reason == "cancelled"
    assert part.last_dir.name == "step_000007"
    torch.manual_seed(12345)  # resume must not depend on the global RNG of the new process
    resumed_d = make_drafter(target, seed=3)  # different init: everything must come from the checkpoint
    resumed = train(target, resumed_d, TRAIN, VAL, c, tmp_path / "run")
    assert not resumed.cancelled and resumed.steps == 12
    assert train_losses(resumed) == train_losses(full)  # history carried over + identical continuation
    wf, wr = weights(full_d), weights(resumed_d)
    assert all(torch.equal(wf[k], wr[k]) for k in wf)
    # keep_last=2: only the last two step checkpoints remain
    assert sorted(p.name for p in (tmp_path / "run").glob("step_*")) == ["step_000010", "step_000012"]
    # a different schedule refuses to resume from this run
    with pytest.raises(TrainError) as e:
        train(target, make_drafter(target), TRAIN, VAL, cfg(max_steps=12, lr=1e-3, grad_accum=2), tmp_path / "run")
    assert e.value.code == "resume_mismatch"


def test_warm_start_loads_weights_with_fresh_optimizer(target, tmp_path):
    base_d = make_drafter(target)
    base = train(target, base_d, TRAIN, VAL, cfg(max_steps=8), tmp_path / "base")
    warm_d = make_drafter(target, seed=5)
    seen = []
    warm = train(target, warm_d, TRAIN, VAL, cfg(max_steps=3, init_from=str(base.last_dir), warmup_ratio=0.5),
                 tmp_path / "warm", progress=seen.append)
    # validation at step 0 of the warm run sees the base drafter's weights
    assert warm.initial_expected_tau == pytest.approx(base.history[-1]["expected_tau"], abs=1e-6)
    # fresh schedule (warmup from step 0) and fresh AdamW state (step count = this run's steps)
    tr = [p for p in seen if p.phase == "train"]
    assert tr[0].lr == pytest.approx(3e-3 * 1 / 1)  # int(0.5*3)=1 warmup step: (0+1)/1
    from safetensors.torch import load_file

    st = load_file(str(warm.last_dir / STATE_TENSORS))
    assert float(st["opt.0.step"]) == 3.0
    # a mismatched checkpoint is refused by name
    other = DSparkDrafter(make_drafter(target).config.replace(markov_rank=8), target.embed_weight,
                          target.lm_head_weight)
    with pytest.raises(TrainError) as e:
        load_drafter_weights(other, base.last_dir)
    assert e.value.code == "checkpoint_mismatch" and "markov" in e.value.where


def test_cancel_leaves_loadable_checkpoint(target, tmp_path):
    calls = {"n": 0}

    def stop():
        calls["n"] += 1
        return calls["n"] > 3

    d = make_drafter(target)
    res = train(target, d, TRAIN, VAL, cfg(max_steps=50), tmp_path, should_stop=stop)
    assert res.cancelled and res.steps == 3 and res.stop_reason == "cancelled"
    assert {p.name for p in res.last_dir.iterdir()} >= {"config.json", "model.safetensors", STATE_JSON,
                                                          STATE_TENSORS}
    fresh = make_drafter(target, seed=9)
    load_drafter_weights(fresh, res.last_dir)
    wd, wf = weights(d), weights(fresh)
    assert all(torch.equal(wd[k], wf[k]) for k in wd)
    cfgj = json.loads((res.last_dir / "config.json").read_text())
    assert cfgj["architectures"] == ["Qwen3DSparkModel"] and cfgj["block_size"] == 4


def test_sigterm_checkpoints_and_restores_handler(target, tmp_path):
    prev = signal.getsignal(signal.SIGTERM)

    def on_progress(p):
        if p.phase == "train" and p.step == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    res = train(target, make_drafter(target), TRAIN, VAL, cfg(max_steps=50), tmp_path, progress=on_progress,
                handle_sigterm=True)
    assert res.cancelled and res.steps == 2
    assert (res.last_dir / "model.safetensors").is_file()
    assert signal.getsignal(signal.SIGTERM) == prev


def test_bad_config_and_data(target, tmp_path):
    with pytest.raises(TrainError) as e:
        train(target, make_drafter(target), TRAIN, VAL, cfg(feature_cache="maybe"), tmp_path)
    assert e.value.where == "feature_cache"
    with pytest.raises(TrainError) as e:
        train(target, make_drafter(target), TRAIN, VAL, cfg(segment_weights={"TOOLS": 2.0}), tmp_path)
    assert e.value.where == "segment_weights"
    no_sup = [Seq("x", [], s.input_ids, [0] * len(s.input_ids), s.segments) for s in TRAIN[:3]]
    with pytest.raises(TrainError) as e:
        train(target, make_drafter(target), no_sup, VAL, cfg(), tmp_path)
    assert e.value.code == "no_training_data"
    assert isinstance(e.value, TracedraftError)


def test_bf16_compute_trains_under_autocast_and_keeps_fp32_weights(target, tmp_path):
    """compute_dtype "bfloat16": the drafter's training forward runs its matmuls in bf16 (autocast), its
    weights and gradients stay fp32, validation runs in fp32, and the losses follow the fp32 run closely."""
    seen: list[tuple[bool, torch.dtype]] = []

    def record(_m, _inp, out):
        seen.append((torch.is_grad_enabled(), out.dtype))

    d = make_drafter(target)
    for mod in (d.fc, d.layers[0].mlp.down_proj):
        mod.register_forward_hook(record)
    r16 = train(target, d, TRAIN, VAL, cfg(max_steps=3, compute_dtype="bfloat16"), tmp_path / "bf16")
    assert {dt for grad, dt in seen if grad} == {torch.bfloat16}  # every training forward
    assert {dt for grad, dt in seen if not grad} == {torch.float32}  # validation
    assert all(p.dtype == torch.float32 for p in d.trainable_parameters())
    r32 = train(target, make_drafter(target), TRAIN, VAL, cfg(max_steps=3), tmp_path / "fp32")
    l16, l32 = train_losses(r16), train_losses(r32)
    assert l16 != l32  # the bf16 products changed the arithmetic ...
    torch.testing.assert_close(torch.tensor(l16), torch.tensor(l32), rtol=2e-2, atol=0)  # ... not the training
    with pytest.raises(TrainError) as e:
        train(target, make_drafter(target), TRAIN, VAL, cfg(compute_dtype="float16"), tmp_path / "bad")
    assert e.value.code == "invalid_train_config" and e.value.where == "compute_dtype"


def test_segment_weights_oversample_tool_args():
    from drafters.train.data import Seq as TrainSeq
    from drafters.train.data import batch_anchors, collate, segment_weight_table

    s = TRAIN[0]
    item = TrainSeq(torch.tensor(s.input_ids), torch.tensor(s.loss_mask), torch.tensor(s.segments), "t0")
    _ids, mask, seg = collate([item])
    heavy = segment_weight_table({"TOOL_ARGS": 50.0})
    counts = {True: 0, False: 0}
    for k in range(200):
        a, keep = batch_anchors(mask, seg, 2, [k], heavy)
        for p in a[0][keep[0]].tolist():
            counts[int(seg[0, p + 1]) == TOOL_ARGS] += 1
    assert counts[True] > 3 * counts[False]



def _per_call_rows(seqs: list[Seq]) -> list[Seq]:
    """The rows a per-call render makes: the first assistant turn is context (mask 0, its labels kept)."""
    out = []
    for s in seqs:
        second = max(i for i, m in enumerate(s.loss_mask) if m == 0) + 1  # where the last answer starts
        mask = [m if i >= second else 0 for i, m in enumerate(s.loss_mask)]
        out.append(Seq(s.conversation_id, s.call_ids, s.input_ids, mask, s.segments))
    return out


def test_history_anchors_supervise_the_earlier_assistant_turns_only():
    from drafters.train.data import load_data

    rows = _per_call_rows(TRAIN[:4])
    plain = load_data(rows, [], cfg())
    hist = load_data(rows, [], cfg(history_anchors=True))
    for row, a, b in zip(rows, plain.train, hist.train, strict=True):
        assert a.mask.tolist() == row.loss_mask  # off: the row's own answer alone
        seg = torch.tensor(row.segments)
        assistant = (seg == TOOL_NAME) | (seg == TOOL_ARGS) | (seg == TOOL_STRUCTURE)
        # on: the answer plus every assistant-written token of the context, and nothing else
        assert b.mask.bool().tolist() == (a.mask.bool() | assistant).tolist()
        assert int(b.mask.sum()) > int(a.mask.sum())
        assert not b.mask[(seg == USER) | (seg == MARKUP)].any()
    assert cfg(history_anchors=True).schedule_fingerprint() != cfg().schedule_fingerprint()
    # off, the fingerprint is what it was before the field existed: older runs still resume
    assert cfg().schedule_fingerprint() == "81c83630591868c1"


def test_history_anchors_put_blocks_on_the_earlier_turns():
    from drafters.dspark.losses import position_weights
    from drafters.train.data import load_data, step_micro_batches

    rows = _per_call_rows(TRAIN)
    first_answer_end = {}  # row -> last position of the context (history ends before the answer)
    for i, r in enumerate(rows):
        first_answer_end[i] = r.loss_mask.index(1)
    slots = position_weights(4)
    in_history = {}
    for on in (False, True):
        c = cfg(history_anchors=on, num_anchors=4)
        data = load_data(rows, [], c)
        hits = 0
        for step in range(6):
            for mb in step_micro_batches(data, c, step, 0, 1, slots):
                for seq, anchors, keep in zip(mb.seqs, mb.anchors, mb.keep, strict=True):
                    row = int(seq.key[1:])
                    hits += int((anchors[keep] < first_answer_end[row]).sum())
        in_history[on] = hits
    assert in_history[False] == 0 and in_history[True] > 10

# ------------------------------------------------------------------------------------------------ data parallel
def _dp_worker(rank: int, world: int, target_dir: str, out: str, port: int) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    t = load_target(target_dir)
    d = make_drafter(t, seed=rank)  # rank 1 starts elsewhere: train() must give every rank rank 0's weights
    res = train(t, d, TRAIN, VAL, cfg(max_steps=4, grad_accum=1), Path(out) / "dp")
    if rank == 0:
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in weights(d).items()}, str(Path(out) / "w.safetensors"))
        (Path(out) / "losses.json").write_text(json.dumps(train_losses(res)))
    dist.destroy_process_group()


@pytest.mark.slow  # ~18 s on the shared 2-core box (two interpreters importing torch/transformers)
def test_two_process_gloo_equals_one_process(target, target_dir, tmp_path):
    import torch.multiprocessing as mp
    from safetensors.torch import load_file

    port = 29500 + os.getpid() % 1000
    mp.spawn(_dp_worker, args=(2, str(target_dir), str(tmp_path), port), nprocs=2, join=True)
    d = make_drafter(target)
    res = train(target, d, TRAIN, VAL, cfg(max_steps=4, grad_accum=2), tmp_path / "single")
    dp_losses = json.loads((tmp_path / "losses.json").read_text())
    torch.testing.assert_close(torch.tensor(dp_losses), torch.tensor(train_losses(res)), rtol=1e-5, atol=1e-6)
    w_dp, w_1 = load_file(str(tmp_path / "w.safetensors")), weights(d)
    for k in w_1:
        torch.testing.assert_close(w_dp[k], w_1[k], rtol=1e-4, atol=1e-5)
    # the checkpoint records the global batch, written once by rank 0
    st = json.loads(((tmp_path / "dp") / "step_000004" / STATE_JSON).read_text())
    assert st["world_size"] == 2 and st["per_step"] == 2


def test_bf16_drafter_keeps_fp32_master_weights_and_resumes_exactly(target_dir, tmp_path):
    t = load_target(str(target_dir), dtype=torch.bfloat16)
    assert t.dtype == torch.bfloat16

    def bf16_drafter(seed=0):
        d = make_drafter(t, seed)
        for p in d.parameters():
            if p.requires_grad:
                p.data = p.data.to(torch.bfloat16)
        return d

    c = cfg(max_steps=6, checkpoint_every=3)
    d_full = bf16_drafter()
    before = weights(d_full)
    full = train(t, d_full, TRAIN, [], c, tmp_path / "full")
    after = weights(d_full)
    assert all(v.dtype == torch.bfloat16 for v in after.values())
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(torch.isfinite(torch.tensor(train_losses(full))))
    from safetensors.torch import load_file

    st = load_file(str(full.last_dir / STATE_TENSORS))
    assert st["master.0"].dtype == torch.float32  # fp32 master copies travel with the checkpoint
    part = train(t, bf16_drafter(), TRAIN, [], c, tmp_path / "run",
                 should_stop=lambda: (tmp_path / "run" / "step_000003").exists())
    assert part.cancelled and part.steps == 3
    d_res = bf16_drafter(seed=4)
    res = train(t, d_res, TRAIN, [], c, tmp_path / "run")
    assert train_losses(res) == train_losses(full)
    wr = weights(d_res)
    assert all(torch.equal(after[k], wr[k]) for k in after)


def test_lora_exports_merged_and_resumes_exactly(target, tmp_path):
    from safetensors.torch import load_file

    from drafters.dspark.checkpoint import load_checkpoint

    c = cfg(max_steps=5, lora={"r": 4, "alpha": 8})
    d_full = make_drafter(target)
    full = train(target, d_full, TRAIN, VAL, c, tmp_path / "full")
    exported = load_file(str(full.last_dir / "model.safetensors"))
    assert not any("lora_" in k or "base_layer" in k for k in exported)
    assert full.best_expected_tau > full.initial_expected_tau
    # the merged export computes what the LoRA drafter computes
    plain = load_checkpoint(full.last_dir, target.embed_weight, target.lm_head_weight)
    ids = torch.tensor([TRAIN[0].input_ids])
    aux, _ = target.features(ids, [0, 2])
    anchors, keep = torch.tensor([[20, 30]]), torch.tensor([[True, True]])
    with torch.no_grad():
        torch.testing.assert_close(plain(ids, aux, anchors, keep), d_full(ids, aux, anchors, keep),
                                   rtol=1e-4, atol=1e-4)
    at = {"step": 0}
    part = train(target, make_drafter(target), TRAIN, VAL, c, tmp_path / "run",
                 progress=lambda p: at.update(step=p.step), should_stop=lambda: at["step"] >= 2)
    assert part.cancelled and part.steps == 2
    d_res = make_drafter(target)
    res = train(target, d_res, TRAIN, VAL, c, tmp_path / "run")
    assert train_losses(res) == train_losses(full)
    wf = dict(d_full.named_parameters())
    assert all(torch.equal(wf[n], p) for n, p in d_res.named_parameters())


def test_cli_entry_point(target_dir, tmp_path, capsys):
    from drafters.shards import save_sequences
    from drafters.train import main

    save_sequences(TRAIN, tmp_path / "train.safetensors")
    save_sequences(VAL, tmp_path / "val.safetensors")
    args = ["--target", str(target_dir), "--train", str(tmp_path / "train.safetensors"), "--val",
            str(tmp_path / "val.safetensors"), "--out", str(tmp_path / "out"), "--num-layers", "1",
            "--target-layer-ids", "0,2", "--block-size", "4", "--markov-rank", "16", "--mask-token-id", "255",
            "--max-steps", "3", "--tokens-per-batch", "256", "--num-anchors", "8", "--lr", "0.003", "--json"]
    assert main(args) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["steps"] == 3 and not res["cancelled"] and res["best_expected_tau"] > 1
    assert Path(res["best_dir"], "model.safetensors").is_file()
