"""drafters.train with ``parallel="fsdp"`` (FSDP2 sharding) on CPU over gloo, against the replicated path.

One pair of spawned processes (starting two interpreters that import torch costs most of the time on the
shared 2-core box) runs, on the tiny target and drafter of tests/test_train.py:
  full:    6 FSDP steps, grad_accum 2 (global batch 4), validation and checkpoints every 2 steps, keep_last 2;
  run:     the same run stopped by SIGTERM on rank 0 only after step 3, then resumed with a fresh drafter;
  bf16:    a bf16 drafter (bf16 target), 4 steps, and again stopped at 2 and resumed: fp32 master shards,
           bf16 compute and export;
  lora:    3 steps of LoRA fine-tuning (adapters and frozen base weights sharded; merged export);
  ddp:     the FSDP checkpoint of step 4 resumed with parallel="ddp";
  unused:  one backward where rank 1's micro-batch has no valid slot (its heads get no gradient).
The test process then runs the same schedule in one process with grad_accum 4 (the same global batch).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from drafters.target import load_target
from drafters.train import STATE_JSON, STATE_TENSORS, TrainConfig, TrainError, train
from tests.test_train import TRAIN, VAL, cfg, make_drafter, target, target_dir, train_losses, weights  # noqa: F401

LORA = {"r": 4, "alpha": 8}
FSDP_CFG = {"max_steps": 6, "grad_accum": 2, "validate_every": 2, "checkpoint_every": 2, "keep_last": 2}


def _save_run(out: Path, name: str, d, res) -> None:
    save_file({k: v.contiguous() for k, v in weights(d).items()}, str(out / f"{name}.w.safetensors"))
    (out / f"{name}.json").write_text(json.dumps({
        "losses": train_losses(res), "steps": res.steps, "cancelled": res.cancelled, "parallel": res.parallel,
        "stop_reason": res.stop_reason,
        "taus": [[h["step"], h["expected_tau"]] for h in res.history if h["phase"] == "validate"],
        "best_expected_tau": res.best_expected_tau, "dtypes": sorted({str(v.dtype) for v in weights(d).values()}),
        "plain": all(type(p) is torch.nn.Parameter for p in d.parameters())}))


def _fsdp_worker(rank: int, world: int, tdir: str, out: str, port: int) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    out_p = Path(out)
    t = load_target(tdir)
    c = cfg(parallel="fsdp", **FSDP_CFG)
    d = make_drafter(t)
    full_rows = d.fc.weight.shape[0]
    seen: dict[str, list] = {"fc_local_rows": [], "embed_plain": []}

    def look(p) -> None:  # during the run the drafter's weights are shards, the target's tensors are not
        if p.phase == "train":
            from torch.distributed.tensor import DTensor

            seen["fc_local_rows"].append(d.fc.weight.to_local().shape[0] if isinstance(d.fc.weight, DTensor) else -1)
            seen["embed_plain"].append(type(d.embed_tokens.weight) is torch.nn.Parameter)

    res = train(t, d, TRAIN, VAL, c, out_p / "full", progress=look)
    if rank == 0:
        _save_run(out_p, "full", d, res)
        (out_p / "sharding.json").write_text(json.dumps({"full_rows": full_rows, **seen}))

    def sigterm_rank0_at_3(p) -> None:  # progress is reported on rank 0 only: rank 1 learns it via the group
        if p.phase == "train" and p.step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    part = train(t, make_drafter(t), TRAIN, VAL, c, out_p / "run", progress=sigterm_rank0_at_3,
                 handle_sigterm=True)
    if rank == 0:
        (out_p / "part.json").write_text(json.dumps({"steps": part.steps, "cancelled": part.cancelled,
                                                      "last_dir": part.last_dir.name}))
    torch.manual_seed(1000 + rank)  # resume must not depend on the processes' global RNG
    d_res = make_drafter(t, seed=3)  # a different init: everything must come from the checkpoint
    res = train(t, d_res, TRAIN, VAL, c, out_p / "run")
    if rank == 0:
        _save_run(out_p, "resumed", d_res, res)

    tb = load_target(tdir, dtype=torch.bfloat16)

    def bf16_drafter(seed: int = 0):
        db = make_drafter(tb, seed)
        for p in db.parameters():
            if p.requires_grad:
                p.data = p.data.to(torch.bfloat16)
        return db

    cb = cfg(parallel="fsdp", max_steps=4, checkpoint_every=2)
    db = bf16_drafter()
    res = train(tb, db, TRAIN, [], cb, out_p / "bf16")
    if rank == 0:
        _save_run(out_p, "bf16", db, res)
    at = {"step": 0}
    part = train(tb, bf16_drafter(), TRAIN, [], cb, out_p / "bf16_run", progress=lambda p: at.update(step=p.step),
                 should_stop=lambda: at["step"] >= 2)
    if rank == 0:
        (out_p / "bf16_part.json").write_text(json.dumps({"steps": part.steps, "cancelled": part.cancelled}))
    db = bf16_drafter(seed=4)
    res = train(tb, db, TRAIN, [], cb, out_p / "bf16_run")  # the fp32 master shards come from the file
    if rank == 0:
        _save_run(out_p, "bf16_resumed", db, res)

    dl = make_drafter(t)
    res = train(t, dl, TRAIN, [], cfg(parallel="fsdp", max_steps=3, lora=LORA), out_p / "lora")
    if rank == 0:
        _save_run(out_p, "lora", dl, res)

    # The FSDP checkpoint of step 4 resumed with parallel="ddp" (same processes, same global batch).
    if rank == 0:
        shutil.copytree(out_p / "full" / "step_000004", out_p / "ddp" / "step_000004")
        (out_p / "ddp" / "latest.json").write_text(json.dumps({"step": 4, "dir": "step_000004"}))
    dist.barrier()
    dd = make_drafter(t, seed=5)
    res = train(t, dd, TRAIN, VAL, cfg(parallel="ddp", **FSDP_CFG), out_p / "ddp")
    if rank == 0:
        _save_run(out_p, "ddp_resumed", dd, res)

    # A micro-batch with no valid slot on rank 1 only (all blocks dummy): the heads get no gradient there,
    # and the reduce-scatter must still match rank 0's (else gloo aborts the process).
    from drafters.train.parallel import shard_fsdp

    du = make_drafter(t)
    unit, _ = shard_fsdp(du, torch.device("cpu"), world, 64)
    s = TRAIN[rank]
    ids, mask = torch.tensor([s.input_ids]), torch.tensor([s.loss_mask])
    aux, last = t.features(ids, [0, 2])
    total, *_ = unit(ids, mask, aux, last, torch.tensor([[30, 35]]), torch.full((1, 2), rank == 0),
                     torch.tensor(8.0))
    total.backward()
    grads = [p.grad for p in du.parameters() if p.requires_grad]
    if rank == 0:
        (out_p / "unused.json").write_text(json.dumps({"with_grad": sum(g is not None for g in grads),
                                                       "params": len(grads)}))
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def fsdp_runs(target_dir, tmp_path_factory) -> Path:  # noqa: F811
    import torch.multiprocessing as mp

    out = tmp_path_factory.mktemp("fsdp")
    port = 29500 + (os.getpid() + 500) % 1000
    mp.spawn(_fsdp_worker, args=(2, str(target_dir), str(out), port), nprocs=2, join=True)
    return out


@pytest.fixture(scope="module")
def single_run(target_dir, tmp_path_factory):  # noqa: F811
    """The same schedule and global batch in one process, replicated path."""
    t = load_target(str(target_dir))
    d = make_drafter(t)
    out = tmp_path_factory.mktemp("single")
    res = train(t, d, TRAIN, VAL, cfg(**{**FSDP_CFG, "grad_accum": 4}), out)
    return res, weights(d), t


def _run(out: Path, name: str) -> tuple[dict, dict[str, torch.Tensor]]:
    return json.loads((out / f"{name}.json").read_text()), load_file(str(out / f"{name}.w.safetensors"))


@pytest.mark.slow  # ~35 s on the shared 2-core box (setup): two interpreters, six short training runs
def test_fsdp_two_processes_equal_one_process(fsdp_runs, single_run):
    res1, w1, _ = single_run
    full, wf = _run(fsdp_runs, "full")
    assert full["parallel"] == "fsdp" and res1.parallel == "single"
    assert full["steps"] == 6 and not full["cancelled"]
    sh = json.loads((fsdp_runs / "sharding.json").read_text())  # really sharded: half of fc's rows per rank
    assert sh["fc_local_rows"] == [sh["full_rows"] // 2] * 6 and sh["embed_plain"] == [True] * 6
    torch.testing.assert_close(torch.tensor(full["losses"]), torch.tensor(train_losses(res1)), rtol=1e-5, atol=1e-6)
    taus1 = [[h["step"], h["expected_tau"]] for h in res1.history if h["phase"] == "validate"]
    assert [s for s, _ in full["taus"]] == [s for s, _ in taus1] == [0, 2, 4, 6]
    f64 = torch.float64
    torch.testing.assert_close(torch.tensor(full["taus"], dtype=f64), torch.tensor(taus1, dtype=f64), rtol=1e-5,
                               atol=1e-6)
    # the caller gets a plain drafter back, with the trained weights
    assert full["plain"] and full["dtypes"] == ["torch.float32"]
    assert set(wf) == set(w1)
    for k in w1:
        torch.testing.assert_close(wf[k], w1[k], rtol=1e-4, atol=1e-5)
    # checkpoints: written once (rank 0), keep_last 2, the global batch and the mode recorded, no pickle
    run = fsdp_runs / "full"
    assert sorted(p.name for p in run.glob("step_*")) == ["step_000004", "step_000006"]
    st = json.loads((run / "step_000006" / STATE_JSON).read_text())
    assert st["world_size"] == 2 and st["per_step"] == 4 and st["parallel"] == "fsdp"
    files = [p for p in run.rglob("*") if p.is_file()]
    assert all(p.suffix in (".safetensors", ".json") for p in files), files
    assert not any(".tmp" in p.name for p in run.iterdir())
    # best-by-validation works under FSDP and picks what the single process picks
    best = json.loads((run / "best.json").read_text())
    assert best["expected_tau"] == pytest.approx(res1.best_expected_tau, rel=1e-5)
    assert (run / "best" / "model.safetensors").is_file()


@pytest.mark.slow  # shares the spawned runs of the test above
def test_fsdp_export_is_full_and_loads(fsdp_runs, single_run):
    from drafters.dspark.checkpoint import load_checkpoint

    res1, w1, t = single_run
    ck = fsdp_runs / "full" / "step_000006"
    plain = load_checkpoint(ck, t.embed_weight, t.lm_head_weight)
    got = {n: p.detach() for n, p in plain.named_parameters() if p.requires_grad}
    assert set(got) == set(w1)
    for k in w1:  # the full unsharded tensors, not a rank's shard
        assert got[k].shape == w1[k].shape, k
        torch.testing.assert_close(got[k], w1[k], rtol=1e-4, atol=1e-5)
    # the optimizer state is whole too: it matches the replicated run's file tensor for tensor
    s_fsdp = load_file(str(ck / STATE_TENSORS))
    s_1 = load_file(str(res1.last_dir / STATE_TENSORS))
    assert set(s_fsdp) == set(s_1)
    for k in s_1:
        assert s_fsdp[k].shape == s_1[k].shape, k
        if k.startswith("opt."):
            torch.testing.assert_close(s_fsdp[k], s_1[k], rtol=1e-3, atol=1e-6)


@pytest.mark.slow  # shares the spawned runs of the test above
def test_fsdp_sigterm_and_resume_are_exact(fsdp_runs):
    part = json.loads((fsdp_runs / "part.json").read_text())
    assert part == {"steps": 3, "cancelled": True, "last_dir": "step_000003"}
    full, wf = _run(fsdp_runs, "full")
    resumed, wr = _run(fsdp_runs, "resumed")
    assert resumed["steps"] == 6 and not resumed["cancelled"]
    assert resumed["losses"] == full["losses"]  # history carried over + identical continuation
    # the same validations; the resumed run adds one at the step it resumed from (its initial tau)
    assert [t for t in resumed["taus"] if t[0] != 3] == full["taus"]
    assert [t[0] for t in resumed["taus"]] == [0, 2, 3, 4, 6]
    assert all(torch.equal(wf[k], wr[k]) for k in wf)
    assert sorted(p.name for p in (fsdp_runs / "run").glob("step_*")) == ["step_000004", "step_000006"]


@pytest.mark.slow  # shares the spawned runs of the test above
def test_fsdp_bf16_keeps_fp32_master_shards_and_resumes_exactly(fsdp_runs):
    b, wb = _run(fsdp_runs, "bf16")
    assert b["steps"] == 4 and all(torch.isfinite(torch.tensor(b["losses"])))
    assert b["plain"] and b["dtypes"] == ["torch.bfloat16"]  # handed back in the caller's dtype
    ck = fsdp_runs / "bf16" / "step_000004"
    st = load_file(str(ck / STATE_TENSORS))
    exported = load_file(str(ck / "model.safetensors"))
    names = json.loads((ck / STATE_JSON).read_text())["param_names"]
    assert [k for k in st if k.startswith("master.")] and all(
        st[f"master.{i}"].dtype == torch.float32 for i in range(len(names)))
    assert all(v.dtype == torch.bfloat16 for v in exported.values())
    # the export is the fp32 master rounded to bf16, and so are the weights handed back
    for i, n in enumerate(names):
        assert torch.equal(exported[n], st[f"master.{i}"].to(torch.bfloat16)) and torch.equal(wb[n], exported[n])
    assert json.loads((fsdp_runs / "bf16_part.json").read_text()) == {"steps": 2, "cancelled": True}
    r, wr = _run(fsdp_runs, "bf16_resumed")
    assert r["losses"] == b["losses"]
    assert all(torch.equal(wb[k], wr[k]) for k in wb)


def test_parallel_mode_is_validated_and_single_process_fsdp_runs_unsharded(target, tmp_path):  # noqa: F811
    with pytest.raises(TrainError) as e:
        train(target, make_drafter(target), TRAIN, VAL, cfg(parallel="zero3"), tmp_path / "bad")
    assert e.value.code == "invalid_train_config" and e.value.where == "parallel"
    assert "'ddp' or 'fsdp'" in e.value.message and "zero3" in e.value.message
    # no process group: FSDP has nothing to shard over, the run is the plain one (same losses)
    r_f = train(target, make_drafter(target), TRAIN, [], cfg(max_steps=2, parallel="fsdp"), tmp_path / "f")
    r_p = train(target, make_drafter(target), TRAIN, [], cfg(max_steps=2), tmp_path / "p")
    assert r_f.parallel == r_p.parallel == "single"
    assert train_losses(r_f) == train_losses(r_p)
    # a checkpoint does not pin the mode: the schedule fingerprint ignores it
    assert TrainConfig(parallel="fsdp").schedule_fingerprint() == TrainConfig().schedule_fingerprint()


def test_cli_parallel_flag_offers_the_modes(capsys):
    from drafters.train import main

    with pytest.raises(SystemExit):
        main(["--target", "x", "--train", "y", "--out", "z", "--parallel", "zero3"])
    err = capsys.readouterr().err
    assert "--parallel" in err and "invalid choice: 'zero3'" in err and "'fsdp'" in err


@pytest.mark.slow  # shares the spawned runs of the test above
def test_fsdp_lora_equals_one_process(fsdp_runs, target, tmp_path):  # noqa: F811
    d = make_drafter(target)
    res = train(target, d, TRAIN, [], cfg(max_steps=3, lora=LORA, grad_accum=2), tmp_path)
    lora, _ = _run(fsdp_runs, "lora")
    torch.testing.assert_close(torch.tensor(lora["losses"]), torch.tensor(train_losses(res)), rtol=1e-5, atol=1e-6)
    assert lora["plain"]
    ck = fsdp_runs / "lora" / "step_000003"
    exported, ref = load_file(str(ck / "model.safetensors")), load_file(str(res.last_dir / "model.safetensors"))
    assert set(exported) == set(ref) and not any("lora_" in k for k in exported)  # merged, full tensors
    for k in ref:
        torch.testing.assert_close(exported[k], ref[k], rtol=1e-4, atol=1e-5)
    st, st1 = load_file(str(ck / STATE_TENSORS)), load_file(str(res.last_dir / STATE_TENSORS))
    model_keys = sorted(k for k in st1 if k.startswith("model."))
    assert model_keys and model_keys == sorted(k for k in st if k.startswith("model."))  # unmerged, for resume
    for k in model_keys:
        torch.testing.assert_close(st[k], st1[k], rtol=1e-4, atol=1e-5)


def _run_train_stage(target_dir, tmp_path, name: str, *, processes: int = 1, cancelled=lambda: False,
                     progress=None, **recipe_over):
    """Run the real training stage (workers.stages.train) for one step (unless the recipe says otherwise) on
    the tiny target, in ``processes`` torchrun processes (1: in-process); returns its result and events."""
    from types import SimpleNamespace

    from drafters.shards import save_sequences
    from workers import stages

    prep = tmp_path / "prepared"
    if not prep.exists():
        prep.mkdir()
        save_sequences(TRAIN[:8], prep / "train.safetensors")
        save_sequences(VAL[:2], prep / "val.safetensors")
    events: list[tuple] = []
    recipe = {"max_steps": 1, "num_draft_layers": 1, "block_size": 4, "markov_rank": 16, "target_layer_ids": [0, 2],
              "mask_token_id": 255, "num_anchors": 4, "tokens_per_batch": 256, "val_max_seqs": 2,
              "target_dtype": "float32", **recipe_over}
    ctx = SimpleNamespace(
        spec={"target": {"model": str(target_dir)}, "recipe": recipe},
        results={"preparing": {"prepared": {"uri": None, "local": str(prep)}}}, workdir=tmp_path / name,
        settings=SimpleNamespace(pipeline="inline", cache_dir=tmp_path / "cache", train_processes=processes),
        event=lambda *a: events.append(a), metrics=lambda *a: None,
        progress=progress or (lambda *a, **k: None), cancelled=cancelled)
    return stages.train(ctx), events


def test_recipe_parallel_reaches_the_training_stage(target_dir, tmp_path):  # noqa: F811
    """The job recipe's ``parallel`` is validated by the API and handed to TrainConfig by the training stage;
    a stage worker trains in one process, so "fsdp" there says, in a warning event, that it did not shard."""
    from pydantic import ValidationError

    from service.api.schemas import Recipe

    assert Recipe(parallel="fsdp").parallel == "fsdp" and Recipe().parallel == "auto"
    with pytest.raises(ValidationError):
        Recipe(parallel="zero3")
    out, events = _run_train_stage(target_dir, tmp_path, "work", parallel="fsdp")
    assert out["train_config"]["parallel"] == "fsdp" and out["parallel"] == "single" and out["steps"] == 1
    warn = [e for e in events if e[0] == "warning"]
    assert len(warn) == 1 and warn[0][3] == {"code": "parallel_single_process"} and "torchrun" in warn[0][2]
    out, events = _run_train_stage(target_dir, tmp_path, "work2", parallel="auto")
    assert out["train_config"]["parallel"] == "auto" and out["parallel"] == "single"
    assert not [e for e in events if e[0] == "warning"]


def test_auto_parallel_shards_when_the_replicated_state_does_not_fit():
    from drafters.train import REPLICATED_BYTES_PER_PARAM, choose_parallel

    assert REPLICATED_BYTES_PER_PARAM == 18  # fp32 master + grad + 2 AdamW moments + bf16 copy
    n = 1_200_000_000  # ~ a 5-layer Qwen3-4B drafter: 21.6 GB replicated
    assert choose_parallel(n, 70 << 30) == "ddp"
    assert choose_parallel(n, 40 << 30) == "fsdp"
    assert choose_parallel(n, None) == "ddp"  # CPU: no device memory to protect


def test_recipe_mode_and_loss_precision_reach_the_training_stage(target_dir, tmp_path):  # noqa: F811
    """recipe.mode "lora" trains LoRA adapters (merged in the export); recipe.loss_matmul_dtype and
    recipe.compute_dtype reach TrainConfig, and "auto" resolves per machine (bf16 on a CPU with native bf16)."""
    from pydantic import ValidationError

    from drafters.target import cpu_bf16_fast
    from service.api.schemas import Recipe

    with pytest.raises(ValidationError):
        Recipe(loss_matmul_dtype="float16")
    with pytest.raises(ValidationError):
        Recipe(compute_dtype="float16")
    out, _ = _run_train_stage(target_dir, tmp_path, "lora", mode="lora", loss_matmul_dtype="float32",
                              compute_dtype="float32")
    assert out["train_config"]["lora"]["r"] == 16 and out["train_config"]["loss_matmul_dtype"] == "float32"
    assert out["train_config"]["compute_dtype"] == "float32"
    out, _ = _run_train_stage(target_dir, tmp_path, "full")
    assert out["train_config"]["lora"] is None
    assert out["train_config"]["loss_matmul_dtype"] == ("bfloat16" if cpu_bf16_fast() else "auto")
    assert out["train_config"]["compute_dtype"] == ("bfloat16" if cpu_bf16_fast() else "auto")


@pytest.mark.slow  # shares the spawned runs of the test above
def test_fsdp_rank_without_valid_slots_still_reduces(fsdp_runs):
    u = json.loads((fsdp_runs / "unused.json").read_text())
    assert u["with_grad"] == u["params"] > 0  # zeros were reduce-scattered for the unused heads



@pytest.mark.slow  # shares the spawned runs of the test above
def test_fsdp_checkpoint_resumes_under_ddp(fsdp_runs):
    """The checkpoint format is the same in both modes: the FSDP run's step 4, resumed by the same two
    processes with parallel="ddp", continues as the FSDP run did."""
    full, wf = _run(fsdp_runs, "full")
    ddp, wd = _run(fsdp_runs, "ddp_resumed")
    assert ddp["parallel"] == "ddp" and ddp["steps"] == 6
    assert ddp["losses"][:4] == full["losses"][:4]  # carried over from the FSDP checkpoint
    torch.testing.assert_close(torch.tensor(ddp["losses"]), torch.tensor(full["losses"]), rtol=1e-5, atol=1e-6)
    for k in wf:
        torch.testing.assert_close(wd[k], wf[k], rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # three torchrun launches of two gloo processes (~1 min on the shared 2-core box)
def test_training_stage_launches_torchrun_follows_it_and_resumes_after_a_cancel(target_dir, tmp_path):  # noqa: F811
    """With TRACEDRAFT_TRAIN_PROCESSES = 2 the stage runs the trainer under torchrun (here 2 CPU processes over
    gloo, FSDP): progress reaches the job, the result and the published checkpoint are the same as in-process;
    a cancel stops every rank at a checkpoint, and the next delivery resumes to the same final weights."""
    from safetensors.torch import load_file

    recipe = {"parallel": "fsdp", "max_steps": 30, "checkpoint_every": 2, "validate_every": 10}
    seen: list[float] = []
    full, events = _run_train_stage(target_dir, tmp_path, "full", processes=2,
                                    progress=lambda frac, *a, **k: seen.append(frac), **recipe)
    assert full["steps"] == 30 and full["parallel"] == "fsdp" and full["processes"] == 2
    assert seen and max(seen) == 1.0  # rank 0's reports became job progress
    assert full["drafter_config"]["block_size"] == 4 and full["best_expected_tau"] is not None
    assert [e for e in events if e[0] == "info" and e[3] == {"processes": 2}]
    assert not [e for e in events if e[0] == "warning"]  # fsdp really shards here

    stop = {"now": False}

    def progress(frac, *a, **k) -> None:
        stop["now"] = stop["now"] or frac >= 0.1  # cancel once step 3 is reported

    part, _ = _run_train_stage(target_dir, tmp_path, "resumed", processes=2, progress=progress,
                               cancelled=lambda: stop["now"], **recipe)
    assert part.get("cancelled") and 3 <= part["steps"] < 30, part
    resumed, _ = _run_train_stage(target_dir, tmp_path, "resumed", processes=2, **recipe)
    assert resumed["steps"] == 30
    w_full = load_file(str(Path(full["last_dir"]) / "model.safetensors"))
    w_res = load_file(str(Path(resumed["last_dir"]) / "model.safetensors"))
    assert w_full.keys() == w_res.keys()
    bad = {k: float((w_res[k].float() - w_full[k].float()).abs().max()) for k in w_full if not torch.equal(w_res[k], w_full[k])}
    assert not bad, (part["steps"], bad)
