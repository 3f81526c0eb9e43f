"""The recipe, defined once (drafters.recipe): the API takes it, the training stage resolves it for its
machine (drafters.train.resolve), and TrainConfig checks the same bounds on every way in (code, --config-json,
flags)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from drafters.errors import TracedraftError
from drafters.recipe import Recipe, StageRecipe
from drafters.train import TrainConfig, TrainError
from drafters.train.resolve import CPU_DEFAULTS, GPU_DEFAULTS, Machine, resolve_recipe

CPU = Machine("cpu", cpu_bf16=False)
CPU_BF16 = Machine("cpu", cpu_bf16=True)
GPU = Machine("cuda")


def test_the_api_recipe_is_the_drafters_recipe():
    from service.api import schemas

    assert schemas.Recipe is Recipe and schemas.JobSpec.model_fields["recipe"].annotation is Recipe
    with pytest.raises(ValidationError):  # the API does not take the stage-only settings
        Recipe(target_dtype="float32")


def test_auto_resolves_per_machine():
    cpu = resolve_recipe(StageRecipe(), CPU)
    t = cpu.train
    assert (t.max_steps, t.lr, t.num_anchors, t.tokens_per_batch) == (100, 3e-3, 16, 1024)
    assert (t.checkpoint_every, t.validate_every, t.val_max_seqs) == (10, 25, 4)
    assert (t.seed, t.time_budget_s, t.lora, t.init_from) == (0, None, None, None)
    assert t.loss_matmul_dtype == t.compute_dtype == "auto"
    assert cpu.drafter == {"num_hidden_layers": 1} and cpu.max_train_tokens == 24_000
    assert resolve_recipe(StageRecipe(), CPU_BF16).train.compute_dtype == "bfloat16"
    gpu = resolve_recipe(StageRecipe(), GPU)
    t = gpu.train
    assert (t.max_steps, t.lr, t.checkpoint_every, t.validate_every) == (3000, 2e-4, 300, 750)
    assert gpu.train.loss_matmul_dtype == "auto" and gpu.drafter["num_hidden_layers"] == 5
    assert gpu.max_train_tokens is None
    assert CPU_DEFAULTS.max_calls == 6 and GPU_DEFAULTS.max_new_tokens == 512  # evaluation's, same table


def test_given_values_pass_through_to_the_trainer_and_the_drafter():
    recipe = StageRecipe(mode="lora", max_steps=40, lr=3e-4, warmup_ratio=0.1, seed=5,
                         segment_weights={"tool_args": 3.0}, compute_dtype="float32", parallel="fsdp",
                         block_size=4, markov_rank=32, target_layer_ids=[1, 3], checkpoint_every=7,
                         feature_cache="off", max_train_tokens=500)
    r = resolve_recipe(recipe, CPU_BF16, init_from="/ckpt")
    t = r.train
    assert (t.max_steps, t.lr, t.warmup_ratio, t.seed, t.time_budget_s) == (40, 3e-4, 0.1, 5, None)
    assert (t.checkpoint_every, t.validate_every, t.init_from, t.parallel) == (7, 10, "/ckpt", "fsdp")
    assert t.segment_weights == {"tool_args": 3.0} and t.feature_cache == "off"
    assert t.compute_dtype == "float32" and t.loss_matmul_dtype == "bfloat16"  # given vs machine's auto
    assert t.lora == {"r": 16, "alpha": 32, "dropout": 0.0, "train_norms": True}
    assert r.drafter == {"num_hidden_layers": 1, "block_size": 4, "markov_rank": 32,
                         "target_layer_ids": [1, 3]}
    assert r.max_train_tokens == 500


def test_a_time_budget_is_the_schedule():
    """With a time budget the trainer fits the schedule into it: no step or epoch cap unless the recipe
    gives one, and checkpoints / validations follow the horizon it sets (None: a tenth / a quarter)."""
    t = resolve_recipe(StageRecipe(time_budget_s=1200), CPU).train
    assert (t.max_steps, t.epochs, t.time_budget_s) == (None, None, 1200.0)
    assert t.checkpoint_every is None and t.validate_every is None
    t.validate()
    recipe = StageRecipe(time_budget_s=1200, max_steps=100000, epochs=2, validate_every=50)
    capped = resolve_recipe(recipe, CPU)
    assert (capped.train.max_steps, capped.train.epochs, capped.train.validate_every) == (100000, 2.0, 50)
    assert capped.train.checkpoint_interval(600) == 60 and capped.train.validate_interval(600) == 50


def test_stored_spec_is_read_typed_with_coded_errors():
    # the embedded run stores nulls and "auto"; both mean unset
    r = StageRecipe.from_spec({"max_steps": "auto", "time_budget_s": None, "num_draft_layers": 2})
    assert r.max_steps == "auto" and r.time_budget_s == "auto" and r.num_draft_layers == 2
    assert StageRecipe.from_spec(None) == StageRecipe()
    with pytest.raises(TracedraftError) as e:
        StageRecipe.from_spec({"lr": -1.0})
    assert e.value.code == "invalid_recipe" and e.value.where == "recipe.lr"
    assert "greater than 0" in e.value.message
    with pytest.raises(TracedraftError) as e:
        StageRecipe.from_spec({"max_stpes": 10})
    assert e.value.where == "recipe.max_stpes"


@pytest.mark.parametrize(("field", "value"), [("lr", -1e-3), ("warmup_ratio", 1.0), ("grad_accum", 0),
                                              ("parallel", "zero3"), ("compute_dtype", "float16"),
                                              ("weight_decay", -0.1), ("keep_last", 0)])
def test_trainer_checks_the_bounds_the_recipe_checks(field, value):
    """One definition of each bound: the value the API's recipe refuses, TrainConfig refuses too."""
    with pytest.raises(ValidationError):
        Recipe(**{field: value})
    with pytest.raises(TrainError) as e:
        TrainConfig(**{field: value}).validate()
    assert e.value.code == "invalid_train_config" and e.value.where == field


def test_train_config_json_round_trip_and_unknown_fields():
    cfg = TrainConfig(max_steps=3, segment_weights={7: 2.0, "TOOL_NAME": 1.5}, betas=(0.8, 0.95),
                      lora={"r": 4, "alpha": 8})
    back = TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg and back.schedule_fingerprint() == cfg.schedule_fingerprint()
    with pytest.raises(TrainError) as e:
        TrainConfig.from_dict({"max_steps": 3, "max_stpes": 4})
    assert e.value.code == "invalid_train_config" and e.value.where == "max_stpes"
    with pytest.raises(TrainError) as e:
        TrainConfig.from_dict({"lora": {"r": 4, "rank": 8}})
    assert e.value.where == "lora" and "rank" in e.value.message


@pytest.mark.parametrize(("extra", "config", "where"), [
    (["--compute-dtype", "float16"], None, "compute_dtype"),
    (["--lr", "-1"], None, "lr"),
    ([], {"warmup_ratio": 2.0}, "warmup_ratio"),
    ([], {"max_stpes": 4}, "max_stpes"),
])
def test_cli_validates_before_loading_anything(tmp_path, extra, config, where):
    """The torchrun command line takes no recipe: its flags and --config-json get the same coded errors, and
    before the target loads (the target here does not exist)."""
    from drafters.train import main

    args = ["--target", str(tmp_path / "no-such-target"), "--train", "x", "--out", str(tmp_path / "out"),
            *extra]
    if config is not None:
        (tmp_path / "cfg.json").write_text(json.dumps(config))
        args += ["--config-json", str(tmp_path / "cfg.json")]
    with pytest.raises(TrainError) as e:
        main(args)
    assert e.value.code == "invalid_train_config" and e.value.where == where


def test_the_api_recipe_refuses_what_the_trainer_would_refuse():
    """One set of value types: an unknown segment or Markov head type is refused when the job is submitted,
    not later in the training stage."""
    with pytest.raises(ValidationError, match="unknown segment 'tool_argz'"):
        Recipe(segment_weights={"tool_argz": 2.0})
    with pytest.raises(ValidationError, match="markov_head_type"):
        Recipe(markov_head_type="lstm")
    assert Recipe(segment_weights={"tool_args": 4.0}, markov_head_type="gated").markov_head_type == "gated"


def test_training_target_dtype_auto_follows_the_cpu():
    assert Machine("cpu", cpu_bf16=True).training_target_dtype("auto") == "bfloat16"
    assert Machine("cpu", cpu_bf16=False).training_target_dtype("auto") is None
    assert Machine("cuda").training_target_dtype("auto") is None
    assert Machine("cpu", cpu_bf16=True).training_target_dtype("float32") == "float32"


def test_drafter_init_reaches_the_trainer_and_is_checked():
    # "auto" (the target's layers where the shapes allow) unless the recipe says; a typo is refused with
    # the field named, before anything runs.
    assert resolve_recipe(StageRecipe(), Machine("cpu")).train.drafter_init == "auto"
    assert resolve_recipe(StageRecipe(drafter_init="random"), Machine("cpu")).train.drafter_init == "random"
    with pytest.raises(TracedraftError) as e:
        StageRecipe.from_spec({"drafter_init": "targets"})
    assert e.value.code == "invalid_recipe" and e.value.where == "recipe.drafter_init"
    with pytest.raises(TrainError):
        TrainConfig.from_dict({"drafter_init": "zeros"})


def test_history_anchors_reach_the_trainer_and_are_checked():
    assert resolve_recipe(StageRecipe(), Machine("cpu")).train.history_anchors is False
    assert resolve_recipe(StageRecipe(history_anchors=True), Machine("cpu")).train.history_anchors is True
    with pytest.raises(TracedraftError) as e:
        StageRecipe.from_spec({"history_anchors": "sometimes"})
    assert e.value.code == "invalid_recipe" and e.value.where == "recipe.history_anchors"
    with pytest.raises(TrainError) as e:
        TrainConfig.from_dict({"history_anchors": "yes"})
    assert e.value.where == "history_anchors"
