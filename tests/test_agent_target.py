"""The demo agent target smollm2-135m-agent (drafters.agent_target, drafters.agent_target_build).

Fast tests: the committed adapter is the one its build record describes (sha256, size, recipe, template),
the split it was trained on is reproducible and holds out every conversation the demo job evaluates on
(checked through the service's real dataset validation), the step schedule, and the merge of a LoRA adapter
into a (tiny) base. Slow tests load the real merged target: it differs from the base, writes a valid tool
call on a training prompt where the base does not, and exports to a GGUF that llama-server serves with the
same greedy answer.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from drafters.agent_target import ADAPTER_DIR, adapter_files, agent_key, merge_adapter
from drafters.agent_target_build import (
    EXAMPLE_TEMPLATE,
    LORA_TARGETS,
    BuildConfig,
    example_trace_files,
    save_adapter,
    split_examples,
    step_schedule,
)
from drafters.checksums import sha256_file
from drafters.render import Segment
from drafters.target_cache import AGENT_SPEC, SMOLLM2_SPEC, TargetLoadError


@pytest.fixture(scope="module")
def record() -> dict:
    """The committed build record of the adapter."""
    return json.loads((ADAPTER_DIR / "build_record.json").read_text())


@pytest.fixture(scope="module")
def split():
    return split_examples(example_trace_files(), BuildConfig().heldout_fraction)


def _digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()


# ------------------------------------------------------------------------------------------- committed files


def test_committed_adapter_is_the_recorded_build(record):
    files = adapter_files()
    assert sha256_file(files["adapter"]) == record["adapter_sha256"]
    assert files["adapter"].stat().st_size == record["adapter_bytes"] <= 10_500_000
    config = json.loads(files["config"].read_text())
    assert config["peft_type"] == "LORA" and config["base_model_name_or_path"] == SMOLLM2_SPEC
    assert (config["r"], config["lora_alpha"]) == (record["config"]["r"], record["config"]["alpha"])
    assert sorted(config["target_modules"]) == sorted(LORA_TARGETS) == sorted(record["lora_targets"])
    # trained with exactly the shipped tool-aware template, which the merged tokenizer then carries
    assert files["template"].read_bytes() == EXAMPLE_TEMPLATE.read_bytes()
    assert record["data"]["template_sha256"] == hashlib.sha256(EXAMPLE_TEMPLATE.read_bytes()).hexdigest()
    from drafters.target import smollm2_gguf_path

    assert record["base_sha256"] == sha256_file(smollm2_gguf_path())
    assert record["data"]["files"] == [
        {"name": p.name, "sha256": sha256_file(p)} for p in example_trace_files()
    ]


def test_record_reports_the_measured_figures(record):
    figs = record["figures"][AGENT_SPEC]["heldout"]
    assert figs["calls"] == record["data"]["heldout_calls"] and record["figures"]["max_calls"] is None
    assert figs["rate_recorded"] == figs["recorded_calls_with_tool_call"] / figs["recorded_tool_calls"]
    assert figs["valid"] <= figs["parsed"] <= figs["tool_calls"]


def test_missing_adapter_file_is_target_not_found(tmp_path):
    with pytest.raises(TargetLoadError) as e:
        adapter_files(tmp_path)
    assert e.value.code == "target_not_found" and e.value.where == str(tmp_path / "adapter_model.safetensors")
    assert "drafters.agent_target_build" in e.value.message


def test_agent_key_follows_the_weights_not_the_record(tmp_path):
    for f in adapter_files().values():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    key = agent_key("b" * 64, tmp_path)
    assert key == agent_key("b" * 64, ADAPTER_DIR)
    (tmp_path / "build_record.json").write_text("{}")
    assert agent_key("b" * 64, tmp_path) == key
    assert agent_key("c" * 64, tmp_path) != key
    raw = bytearray((tmp_path / "adapter_model.safetensors").read_bytes())
    raw[-1] ^= 1
    (tmp_path / "adapter_model.safetensors").write_bytes(bytes(raw))
    assert agent_key("b" * 64, tmp_path) != key


# ---------------------------------------------------------------------------------------------------- split


def test_split_is_the_recorded_one_and_disjoint(split, record):
    from drafters.traces.ingest import ingest, split_conversations

    train, held = {c.content_hash() for c in split.train}, {c.content_hash() for c in split.heldout}
    assert not train & held and train and held
    assert _digest([c.id for c in split.train]) == record["data"]["train_ids_sha256"]
    assert _digest([c.id for c in split.heldout]) == record["data"]["heldout_ids_sha256"]
    assert len(split.heldout_calls()) == record["data"]["heldout_calls"]
    # held out under the files' own names too (the ids a user ingesting examples/traces directly gets)
    convs = ingest(example_trace_files()).conversations
    assert record["config"]["heldout_fraction"] == BuildConfig().heldout_fraction
    own = {c.content_hash() for c in split_conversations(convs, BuildConfig().heldout_fraction)[1]}
    assert own <= held and split.demo_heldout <= held and own != split.demo_heldout


def test_upload_names_give_the_demo_jobs_split(split, tmp_path):
    """The service's own dataset validation (as `tracedraft run` runs it on scripts/demo's files) holds out
    exactly ``split.demo_heldout``, and none of those conversations is in the adapter's training set."""
    from drafters.traces.ingest import read_canonical
    from service import datasets
    from service.db.models import Organization
    from service.db.session import make_engine, upgrade
    from service.storage import ArtifactStore

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    upgrade(url)
    engine = make_engine(url)
    store = ArtifactStore(f"file://{tmp_path / 'artifacts'}")
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        org = Organization(name="acme")
        session.add(org)
        session.commit()
        ds = datasets.create_dataset_from_paths(session, store, org.id, example_trace_files())
        datasets.validate_dataset(session, store, ds.id, tmp_path / "work", heldout_fraction=0.1)
        moved = session.get(type(ds), ds.id).counts["near_duplicates_moved"]
    engine.dispose()
    assert not (tmp_path / "work" / "raw").exists()  # the raw bytes live in the store only
    job_held = {c.content_hash() for c in read_canonical(tmp_path / "work" / "canonical" / "heldout.jsonl")}
    # the hash split's held-out set, less the near duplicates of training conversations it moved to train
    assert job_held <= split.demo_heldout and len(split.demo_heldout - job_held) == moved > 0
    assert not job_held & {c.content_hash() for c in split.train}


def test_step_schedule_passes_and_text_share():
    tool, text = [Segment.TEXT, Segment.TOOL_NAME], [Segment.TEXT]
    rows = [SimpleNamespace(segments=tool if i % 3 == 0 else text) for i in range(30)]  # 10 tool, 20 text
    cfg = BuildConfig(tool_epochs=3, text_share=0.25, rows_per_step=4, seed=1)
    steps = step_schedule(rows, cfg)
    seen = [i for s in steps for i in s]
    assert all(seen.count(i) == 3 for i in range(0, 30, 3))
    picked = {i for i in seen if i % 3}
    assert len(picked) == 5 and all(seen.count(i) == 1 for i in picked)
    assert all(len(s) <= 4 for s in steps) and len(steps) == 4 + 3 + 3  # 15, 10 and 10 rows, 4 a step
    assert step_schedule(rows, cfg) == steps
    assert step_schedule(rows, BuildConfig(tool_epochs=3, text_share=0.25, rows_per_step=4, seed=2)) != steps


# ---------------------------------------------------------------------------------------------------- merge


def test_merge_adds_the_saved_lora_delta(tiny_target_dir, tmp_path):
    """save_adapter (bf16) then merge_adapter: every adapted weight is W + (alpha / r) B A of the saved
    matrices, the rest is unchanged, and the tokenizer carries the template."""
    import torch
    from peft import get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from drafters.agent_target_build import lora_config

    cfg = BuildConfig(r=4, alpha=8)
    base = AutoModelForCausalLM.from_pretrained(str(tiny_target_dir), dtype=torch.float32)
    ref = {k: v.clone() for k, v in base.state_dict().items()}
    torch.manual_seed(0)
    peft_model = get_peft_model(base, lora_config(cfg))
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)  # trained B is nonzero (peft initialises it to 0)
    save_adapter(peft_model, tmp_path / "adapter", "{{ 'tmpl' }}")
    merge_adapter(tiny_target_dir, tmp_path / "adapter", tmp_path / "merged")

    merged = AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged"), dtype=torch.float32).state_dict()
    saved = load_file(str(tmp_path / "adapter" / "adapter_model.safetensors"))
    assert all(v.dtype == torch.bfloat16 for v in saved.values())
    adapted = 0
    for key, w in ref.items():
        a_key = "base_model.model." + key.replace(".weight", ".lora_A.weight")
        if a_key in saved:
            b = saved[a_key.replace("lora_A", "lora_B")].float()
            torch.testing.assert_close(merged[key], w + (cfg.alpha / cfg.r) * b @ saved[a_key].float())
            adapted += 1
        else:
            torch.testing.assert_close(merged[key], w, rtol=0, atol=0)
    assert adapted == 8 * len(LORA_TARGETS)  # every projection of the 8 layers
    assert AutoTokenizer.from_pretrained(str(tmp_path / "merged")).chat_template == "{{ 'tmpl' }}"


# ----------------------------------------------------------------------------------------------- real target


def _first_training_tool_call(split):
    """The first training call of the function-calling examples (glaive) whose recorded answer was a tool
    call. (The Claude Code sessions' calls are longer than the build's max_seq_len: the adapter saw them
    with their early context cut, so their full prompts are not what it trained on.)"""
    from drafters.tool_call_eval import recorded_tool_names

    return next(
        call
        for conv in split.train
        if conv.source.file.endswith("glaive_toolcall_en_demo.json")
        for call in conv.calls()
        if recorded_tool_names(call)
    )


@pytest.mark.slow
def test_agent_target_loads_merged_and_writes_tool_calls(split):
    import torch

    from drafters.render import Renderer
    from drafters.target import load_target, load_tokenizer
    from drafters.tool_call_eval import greedy_answers, outcome_of

    agent, base = load_target(AGENT_SPEC), load_target(SMOLLM2_SPEC)
    assert agent.name == AGENT_SPEC and agent.revision.startswith("lora:") and agent.dtype == torch.float32
    assert Path(agent.source_path).name == f"agent-{agent.source_sha256}"
    a, b = agent.model.state_dict(), base.model.state_dict()
    assert a.keys() == b.keys()
    changed = {k for k in a if not torch.equal(a[k], b[k])}
    assert len(changed) == agent.num_layers * len(LORA_TARGETS)  # the adapted projections, nothing else
    assert all(k.endswith(tuple(f"{m}.weight" for m in LORA_TARGETS)) for k in changed)
    template = EXAMPLE_TEMPLATE.read_text()
    assert agent.tokenizer.chat_template == template == load_tokenizer(AGENT_SPEC).chat_template

    call = _first_training_tool_call(split)
    renderer = Renderer(agent.tokenizer, chat_template=template)
    prompt = renderer.render_prompt(call).prompt_ids
    assert len(prompt) < BuildConfig().max_seq_len  # trained on whole
    (text,) = greedy_answers(agent.model, agent.tokenizer, [prompt], max_new_tokens=96, batch_size=1)
    assert text.startswith("<tool_call>\n"), text
    outcome = outcome_of(call, text, renderer)
    assert (outcome.tool_calls, outcome.valid, outcome.problems) == (1, 1, []), text
    (plain,) = greedy_answers(base.model, base.tokenizer, [prompt], max_new_tokens=96, batch_size=1)
    assert not plain.startswith("<tool_call>")  # the adapter made the difference


@pytest.mark.slow
def test_agent_target_exports_to_gguf_that_llama_server_serves(split, tmp_path):
    from drafters.engines.llamacpp import (
        LlamaClient,
        LlamaServer,
        export_target_gguf,
        read_gguf_metadata,
        resolve_target_files,
    )
    from drafters.engines.llamacpp import build as lb
    from drafters.render import Renderer
    from drafters.target import load_target
    from drafters.tool_call_eval import greedy_answers

    try:
        binary = lb.find_llama_server()
    except lb.LlamaCppBuildError as e:
        pytest.skip(
            f"llama-server not built ({e.code}); run `tracedraft engines install llamacpp`"
        )
    target_dir, target_gguf = resolve_target_files(AGENT_SPEC)
    agent = load_target(AGENT_SPEC)
    assert (target_dir, target_gguf) == (Path(agent.source_path), None)
    gguf = export_target_gguf(target_dir, tmp_path / "agent-f32.gguf")
    meta = read_gguf_metadata(gguf)
    assert meta["general.architecture"] == "llama" and meta["llama.block_count"] == agent.num_layers
    assert meta["tokenizer.chat_template"] == EXAMPLE_TEMPLATE.read_text()

    call = _first_training_tool_call(split)
    prompt = (
        Renderer(agent.tokenizer, chat_template=EXAMPLE_TEMPLATE.read_text()).render_prompt(call).prompt_ids
    )
    (hf_text,) = greedy_answers(agent.model, agent.tokenizer, [prompt], max_new_tokens=48, batch_size=1)
    with LlamaServer(binary, gguf, threads=2, log_dir=tmp_path) as server:
        client = LlamaClient(server)
        try:
            body = client.complete(prompt, n_predict=48, temperature=0.0, seed=0)
        finally:
            client.close()
    served = agent.tokenizer.decode(body["tokens"], skip_special_tokens=False)
    assert served.startswith("<tool_call>\n")
    assert hf_text.startswith(served) or served.startswith(hf_text)  # the same greedy answer (fp32 both)
