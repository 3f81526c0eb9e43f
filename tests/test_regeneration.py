"""On-policy regeneration (drafters.regeneration) and the tool calls the target writes (drafters.toolcalls),
with the real SmolLM2 tokenizer and the shipped tool-aware template; answers come from scripted backends
and from a tiny random target in this process."""

from __future__ import annotations

import json

import httpx
import pytest

from drafters.errors import TracedraftError
from drafters.regeneration import (
    GenerationCancelled,
    HFBackend,
    LlamaServerBackend,
    OpenAIBackend,
    RegenerationStore,
    Request,
    Sampling,
    regenerate,
    regenerated_rows,
)
from drafters.render import Renderer, Segment, tools_to_openai
from drafters.toolcalls import check_tool_calls, find_tool_calls
from tests.test_render import (
    CHATML_TOOLS,
    WEATHER,
    _openai_messages,
    read_template,
    smollm2_tokenizer,
    weather_conversation,
)

CALL = '<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


@pytest.fixture(scope="module")
def tok():
    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def renderer(tok):
    return Renderer(tok, chat_template=str(CHATML_TOOLS))


@pytest.fixture(scope="module")
def prompts(renderer):
    conv = weather_conversation()
    return [renderer.render_prompt(c) for c in conv.calls()], {c.id: tools_to_openai(c.tools) for c in conv.calls()}


class ScriptedBackend:
    """Answers from a script (text per call id), counting what it was asked; ``fail_after`` batches raise."""

    name = "scripted"

    def __init__(self, tok, answers: dict[str, str], batch_size: int = 2, fail_after: int | None = None):
        self.tok, self.answers, self.batch_size, self.fail_after = tok, answers, batch_size, fail_after
        self.asked: list[str] = []

    def generate(self, requests, sampling, cancelled=None, on_step=None):
        if self.fail_after is not None and len(self.asked) >= self.fail_after * self.batch_size:
            raise TracedraftError("regeneration_endpoint_unreachable", "down", "http://x (call ?)")
        self.asked += [r.call_id for r in requests]
        return [self.tok.encode(self.answers[r.call_id], add_special_tokens=False) for r in requests]


# ------------------------------------------------------------------------------------------- tool calls


def test_parallel_tool_calls_are_all_found_and_checked(tok, renderer):
    text = ("Checking both." + "\n" + CALL.format(name="get_weather", args='{"city": "Paris"}') + "\n"
            + CALL.format(name="get_weather", args='{"city": "Rome"}') + "<|im_end|>")
    calls = check_tool_calls(find_tool_calls(renderer, text), tools_to_openai([WEATHER]))
    assert [(c.name, c.arguments, c.error) for c in calls] == [
        ("get_weather", {"city": "Paris"}, None), ("get_weather", {"city": "Rome"}, None)]


def test_broken_tool_calls_are_counted_with_their_codes(tok, renderer):
    tools = tools_to_openai([WEATHER])
    text = (CALL.format(name="get_time", args='{"tz": "CET"}') + "\n"  # no such tool
            + CALL.format(name="get_weather", args='{"town": "Rome"}') + "\n"  # misses required "city"
            + "<tool_call>\nget_weather(city='Oslo')\n</tool_call>\n"  # not the template's form at all
            # Arguments that are not JSON: the rest of the answer is taken as their text (as labelled).
            + CALL.format(name="get_weather", args='{"city": "Paris",]'))
    calls = check_tool_calls(find_tool_calls(renderer, text), tools)
    assert [c.error for c in calls] == ["unknown_tool", "schema_mismatch", "invalid_json", "unparseable"]
    assert "city" in calls[1].detail and calls[2].arguments_text.startswith('{"city": "Paris",]')


# ------------------------------------------------------------------------------------------- the run


def answers_for(prompts_list) -> dict[str, str]:
    tool = CALL.format(name="get_weather", args='{"city": "Oslo"}')
    return {p.call_id: (tool if i % 2 == 0 else f"Answer number {i}.") + "<|im_end|>"
            for i, p in enumerate(prompts_list)}


def test_a_killed_run_resumes_with_the_answers_it_stored(tmp_path, tok, prompts):
    plist, _ = prompts
    script = answers_for(plist)
    store = RegenerationStore(tmp_path)
    stop = [tok.convert_tokens_to_ids("<|im_end|>")]
    first = ScriptedBackend(tok, script, batch_size=2, fail_after=1)
    with pytest.raises(TracedraftError):
        regenerate(plist, first, store, target_id="t", sampling=Sampling(), stop_ids=stop)
    assert len(first.asked) == 2
    second = ScriptedBackend(tok, script, batch_size=2)
    answers, report = regenerate(plist, second, store, target_id="t", sampling=Sampling(), stop_ids=stop)
    assert sorted(second.asked + first.asked) == sorted(p.call_id for p in plist)  # only those not stored
    assert (report.reused, report.generated, report.calls) == (2, len(plist) - 2, len(plist))
    assert {k: tok.decode(a.token_ids) for k, a in answers.items()} == script
    # Another target, or other sampling, is another answer: nothing is reused.
    third = ScriptedBackend(tok, script, batch_size=2)
    regenerate(plist, third, store, target_id="t", sampling=Sampling(seed=1), stop_ids=stop)
    assert len(third.asked) == len(plist)


def test_a_cancel_stops_the_hf_backend_within_a_decode_step_and_stores_nothing_of_that_batch(tmp_path, tok,
                                                                                              prompts):
    from tests._speculate_helpers import tiny_target

    target = tiny_target(seed=3, scale=4.0)
    asked = []

    def cancel_on_third_step():
        asked.append(1)
        return len(asked) >= 3

    backend = HFBackend(target, stop_ids=[-1], batch_size=2, pad_id=0)  # no stop token: 200 steps otherwise
    with pytest.raises(GenerationCancelled):
        backend.generate([Request("a", [5, 9, 11], 0), Request("b", [1, 2], 0)], Sampling(max_tokens=200),
                         cancelled=cancel_on_third_step)
    assert len(asked) == 3  # asked once per decode step, stopped at the step that said yes

    # Through the runner: the first batch is stored, the batch cut short is not, and a resume writes it whole.
    plist, _ = prompts
    store = RegenerationStore(tmp_path)
    stop = [tok.convert_tokens_to_ids("<|im_end|>")]

    class CancelledInSecondBatch(ScriptedBackend):
        def generate(self, requests, sampling, cancelled=None, on_step=None):
            if self.asked:
                raise GenerationCancelled
            return super().generate(requests, sampling)

    answers, report = regenerate(plist, CancelledInSecondBatch(tok, answers_for(plist)), store, target_id="t",
                                 sampling=Sampling(), stop_ids=stop)
    assert report.cancelled and (report.generated, len(answers)) == (2, 2)
    again = ScriptedBackend(tok, answers_for(plist))
    _, report = regenerate(plist, again, store, target_id="t", sampling=Sampling(), stop_ids=stop)
    assert not report.cancelled and (report.reused, report.generated) == (2, len(plist) - 2)


def test_progress_inside_a_batch_counts_its_decode_steps_with_an_eta(tmp_path, monkeypatch):
    """One hf batch of long answers runs for minutes on a CPU: the runner reports it while it decodes, each
    report a larger fraction with an ETA, then the finished batch with its rate."""
    from types import SimpleNamespace

    from drafters.regeneration import run
    from tests._speculate_helpers import tiny_target

    monkeypatch.setattr(run, "STEP_REPORT_S", 0.0)  # every decode step reports
    target = tiny_target(seed=3, scale=4.0)
    prompts = [SimpleNamespace(call_id=f"c{i}", prompt_ids=[5, 9, 11 + i], completion_ids=[7] * 20)
               for i in range(2)]
    seen = []
    _, report = regenerate(prompts, HFBackend(target, stop_ids=[-1], batch_size=2, pad_id=0),
                           RegenerationStore(tmp_path), target_id="tiny", sampling=Sampling(max_tokens=20),
                           stop_ids=[-1], progress=lambda f, eta, m: seen.append((f, eta, m)))
    assert report.generated == 2 and report.tokens == 40
    inside, last = seen[:-1], seen[-1]
    assert len(inside) == 20  # one per decode step: the criterion runs after each of the 20 tokens
    fractions = [f for f, _, _ in inside]
    assert fractions == sorted(fractions) and 0 < fractions[0] < fractions[-1] <= 0.95
    assert fractions[9] == pytest.approx(10 / 20)  # 2 rows x 10 of the 20 tokens recorded, of 2 calls
    assert all(eta is not None and eta >= 0 for _, eta, _ in inside)
    assert "a batch of 2 at token 10 of about 20" in inside[9][2] and "tokens/s" not in inside[9][2]
    assert last[0] == 1.0 and last[1] == 0.0 and "2/2 calls" in last[2] and "tokens/s" in last[2]


def test_answers_longer_than_recorded_rescale_the_eta_as_the_run_proceeds(tmp_path, monkeypatch):
    """Recorded answers of 5 tokens, the target writes 20: inside the first batch the ETA is recomputed at
    every step (never the same figure twice in a row, never None) and the fraction never goes back; the
    second batch is expected to overrun as the first did (about 20 steps, not 5)."""
    from types import SimpleNamespace

    from drafters.regeneration import run
    from tests._speculate_helpers import tiny_target

    monkeypatch.setattr(run, "STEP_REPORT_S", 0.0)
    prompts = [SimpleNamespace(call_id=f"c{i}", prompt_ids=[5, 9, 11 + i], completion_ids=[7] * 5) for i in range(4)]
    seen = []
    regenerate(prompts, HFBackend(tiny_target(seed=3, scale=4.0), stop_ids=[-1], batch_size=2, pad_id=0),
               RegenerationStore(tmp_path), target_id="tiny", sampling=Sampling(max_tokens=20), stop_ids=[-1],
               progress=lambda f, eta, m: seen.append((f, eta, m)))
    first = [x for x in seen if "at token" in x[2] and x[0] < 0.5]
    assert len(first) == 20 and all(eta is not None for _, eta, _ in first)
    assert all(a[1] != b[1] for a, b in zip(first, first[1:]))  # recomputed at every step
    fractions = [f for f, _, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    second = [m for f, _, m in seen if "at token 1 of" in m and f >= 0.5]
    assert second and "of about 20" in second[0]


class SlowBackend(ScriptedBackend):
    """An HTTP-like backend: answers after ``delay`` seconds, reports no decode steps."""

    def __init__(self, tok, answers, delay: float, batch_size: int = 2):
        super().__init__(tok, answers, batch_size)
        self.delay = delay

    def generate(self, requests, sampling, cancelled=None, on_step=None):
        import time

        time.sleep(self.delay)
        return super().generate(requests, sampling, cancelled, on_step)


def test_a_backend_without_decode_steps_is_reported_by_a_clock_during_every_batch(tok, monkeypatch):
    """A server backend (SGLang, llama-server) answers a batch at once: a clock reports it while it runs,
    from the first batch on, and from the second batch on with an ETA at the pace the first measured."""
    from types import SimpleNamespace

    from drafters.regeneration import run

    monkeypatch.setattr(run, "STEP_REPORT_S", 0.05)
    prompts = [SimpleNamespace(call_id=f"c{i}", prompt_ids=[5, 6 + i], completion_ids=[5] * 3) for i in range(4)]
    backend = SlowBackend(tok, {p.call_id: "ok ok<|im_end|>" for p in prompts}, delay=1.0)  # slack for a loaded CPU
    seen = []
    regenerate(prompts, backend, _mem_store(), target_id="t", sampling=Sampling(max_tokens=8),
               stop_ids=[tok.convert_tokens_to_ids("<|im_end|>")], progress=lambda f, eta, m: seen.append((f, eta, m)))
    inside = [x for x in seen if "a batch of 2" in x[2]]
    first, second = ([x for x in inside if x[0] < 0.5], [x for x in inside if x[0] >= 0.5])
    assert len(first) >= 3 and "running for" in first[0][2] and first[0][1] is None
    assert len(second) >= 3 and all(eta is not None for _, eta, _ in second) and "about token" in second[0][2]
    etas = [eta for _, eta, _ in second]
    assert etas == sorted(etas, reverse=True) and etas[0] > etas[-1]  # counts down as the batch runs
    assert seen[-1][0] == 1.0 and seen[-1][1] == 0.0


def test_calls_are_batched_by_recorded_answer_length_then_prompt_length(tok):
    """A batch decodes until its longest answer ends: short answers go together, then similar prompts."""
    from types import SimpleNamespace

    def prompt(call_id, n_prompt, n_answer):
        return SimpleNamespace(call_id=call_id, prompt_ids=list(range(1, n_prompt + 1)),
                               completion_ids=[5] * n_answer)

    plist = [prompt("long", 10, 400), prompt("tool", 50, 30), prompt("text", 20, 120), prompt("tool2", 5, 30),
             prompt("unknown", 8, 0)]
    backend = ScriptedBackend(tok, {p.call_id: "ok<|im_end|>" for p in plist}, batch_size=2)
    stop = [tok.convert_tokens_to_ids("<|im_end|>")]
    regenerate(plist, backend, _mem_store(), target_id="t", sampling=Sampling(max_tokens=160), stop_ids=stop)
    assert backend.asked == ["unknown", "tool2", "tool", "text", "long"]  # (0,8) (30,5) (30,50) (120,20) (160,10)


def test_rows_keep_the_recorded_context_byte_for_byte(tok, renderer, prompts):
    plist, tools_of = prompts
    stop = [tok.convert_tokens_to_ids("<|im_end|>")]
    answers, _ = regenerate(plist, ScriptedBackend(tok, answers_for(plist)), _mem_store(), target_id="t",
                            sampling=Sampling(), stop_ids=stop)
    rows, stats = regenerated_rows(plist, answers, renderer, tools_of)
    conv = weather_conversation()
    for row, call, p in zip(rows, conv.calls(), plist, strict=True):
        # What an OpenAI-compatible server renders for the recorded context (an independent conversion).
        served = tok.apply_chat_template(_openai_messages(call), tools=tools_of[call.id], tokenize=False,
                                         add_generation_prompt=True, chat_template=read_template(CHATML_TOOLS))
        n = len(p.prompt_ids)
        assert tok.decode(row.input_ids[:n], skip_special_tokens=False) == served
        assert row.loss_mask == [0] * n + [1] * (len(row.input_ids) - n)
        assert tok.decode(row.input_ids[n:], skip_special_tokens=False) == answers_for(plist)[call.id]
    # Calls 0 and 2 answered with a tool call: its arguments are labelled tool_args, the text is text.
    args = [tok.decode([t for t, s, m in zip(r.input_ids, r.segments, r.loss_mask) if m and s == Segment.TOOL_ARGS])
            for r in rows]
    # (token-level: " {" and "}}" straddle the markup and are labelled by their middle character)
    assert args[0] == ' {"city": "Oslo"}}' and args[1] == ""
    assert stats.to_dict()["tool_calls"] == (len(plist) + 1) // 2
    assert stats.to_dict()["tool_calls_failed"] == {}


def test_an_answer_past_max_tokens_is_kept_and_marked_truncated(tok, prompts):
    plist, _ = prompts
    script = {p.call_id: "word " * 40 for p in plist}
    answers, report = regenerate(plist[:1], ScriptedBackend(tok, script), _mem_store(), target_id="t",
                                 sampling=Sampling(max_tokens=8), stop_ids=[2])
    (answer,) = answers.values()
    assert answer.truncated and len(answer.token_ids) == 8 and report.truncated == 1


# ------------------------------------------------------------------------------------------- backends


def test_hf_backend_greedy_equals_plain_decoding_and_stops_at_the_stop_token():
    from drafters.speculate import plain_generate
    from tests._speculate_helpers import tiny_target

    target = tiny_target(seed=3, scale=4.0)
    prompt = [5, 9, 11, 3, 7]
    ref = plain_generate(target, prompt, 24).tokens
    stop = ref[10]
    backend = HFBackend(target, stop_ids=[stop], batch_size=2, pad_id=0)
    short = [1, 2]
    out = backend.generate([Request("a", prompt, 0), Request("b", short, 0)], Sampling(max_tokens=24))
    first_stop = ref.index(stop)
    assert out[0][: first_stop + 1] == ref[: first_stop + 1]  # left padding did not change the answer
    assert plain_generate(target, short, 5).tokens[:3] == out[1][:3]


def test_openai_backend_request_and_answer_shapes(tok):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"text": "Hi there.", "finish_reason": "stop", "index": 0}]})

    eot = tok.convert_tokens_to_ids("<|im_end|>")
    backend = OpenAIBackend("http://sglang:30000", "agent", lambda s: tok.encode(s, add_special_tokens=False), eot,
                            transport=httpx.MockTransport(handler))
    (ids,) = backend.generate([Request("c1", [1, 2, 3], 7)], Sampling(temperature=0.7, top_p=0.8, top_k=20))
    assert tok.decode(ids) == "Hi there.<|im_end|>"
    assert seen[0] == {"model": "agent", "prompt": [1, 2, 3], "max_tokens": 256, "temperature": 0.7, "top_p": 0.8,
                       "seed": 7, "skip_special_tokens": False, "stop_token_ids": [eot], "top_k": 20}


def test_openai_backend_ends_an_answer_with_the_turn_end_the_server_names():
    """gpt-oss ends a turn with <|return|> or <|call|>: the answer ends with the one SGLang (matched_stop) or
    vLLM (stop_reason) names; a server naming none of several is a coded error, never a guess."""
    answers = iter([{"text": "x", "finish_reason": "stop", "matched_stop": 201},
                    {"text": "x", "finish_reason": "stop", "stop_reason": 200},
                    {"text": "x", "finish_reason": "length"},
                    {"text": "x", "finish_reason": "stop", "matched_stop": "</s>"}])

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": [{**next(answers), "index": 0}]})

    backend = OpenAIBackend("http://sglang:30000", "gpt-oss", lambda s: [7], [200, 201],
                            transport=httpx.MockTransport(handler))
    got = [backend.generate([Request(f"c{i}", [1], 0)], Sampling())[0] for i in range(3)]
    assert got == [[7, 201], [7, 200], [7]]
    with pytest.raises(TracedraftError) as e:
        backend.generate([Request("c3", [1], 0)], Sampling())
    assert e.value.code == "regeneration_stop_unknown"


def test_llama_server_cannot_name_one_of_several_turn_ends():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"tokens": [7, 8], "stop_type": "eos"})

    one = LlamaServerBackend("http://llama:8080", stop_ids=[200], transport=httpx.MockTransport(handler))
    assert one.generate([Request("a", [1], 0)], Sampling())[0] == [7, 8, 200]
    two = LlamaServerBackend("http://llama:8080", stop_ids=[200, 201], transport=httpx.MockTransport(handler))
    with pytest.raises(TracedraftError) as e:
        two.generate([Request("a", [1], 0)], Sampling())
    assert e.value.code == "regeneration_stop_unknown"


def test_an_endpoint_that_is_down_names_itself_and_the_call():
    backend = LlamaServerBackend("http://127.0.0.1:9", stop_ids=2, timeout=5)
    with pytest.raises(TracedraftError) as e:
        backend.generate([Request("conv-1:3", [1, 2], 0)], Sampling())
    assert e.value.code == "regeneration_endpoint_unreachable"
    assert "127.0.0.1:9/completion" in e.value.where and "conv-1:3" in e.value.where


def test_an_endpoint_error_is_reported_not_taken_as_an_answer():
    transport = httpx.MockTransport(lambda r: httpx.Response(503, text="overloaded"))
    backend = LlamaServerBackend("http://llama:8080", stop_ids=2, transport=transport)
    with pytest.raises(TracedraftError) as e:
        backend.generate([Request("c", [1], 0)], Sampling())
    assert e.value.code == "regeneration_endpoint_error" and "503" in e.value.message


def _mem_store():
    import tempfile

    return RegenerationStore(tempfile.mkdtemp(prefix="regen-"))



# ------------------------------------------------------------------------------------------- the stage


def _stage_ctx(tmp_path, target_dir, *, regenerate="auto", mismatch=True, template_text=None):
    """A StageContext stand-in for workers.stages.regenerate, with canonical and prepared files of the
    weather conversation (train) and one more (held out) written as the earlier stages write them."""
    from types import SimpleNamespace

    from drafters.shards import save_prompts
    from drafters.target import load_tokenizer
    from drafters.traces.ingest import write_canonical
    from workers.stages.prepare import _render_prompts

    canonical, prepared = tmp_path / "canonical", tmp_path / "prepared"
    canonical.mkdir(exist_ok=True)
    prepared.mkdir(exist_ok=True)
    train, held = weather_conversation(), weather_conversation(reasoning=False)
    held.id = "conv-2"
    write_canonical([train], canonical / "train.jsonl")
    write_canonical([held], canonical / "heldout.jsonl")
    template_text = template_text or read_template(CHATML_TOOLS)
    renderer = Renderer(load_tokenizer(str(target_dir)), chat_template=template_text)
    # As the prepare stage writes them: a call the template cannot render is left out (and reported).
    save_prompts(_render_prompts(renderer, [train]), prepared / "train_prompts.jsonl")
    save_prompts(_render_prompts(renderer, [held]), prepared / "heldout_prompts.jsonl")
    events = []
    warnings = [{"code": "model_mismatch", "message": "other model"}] if mismatch else []
    return SimpleNamespace(
        spec={"target": {"model": str(target_dir), "chat_template": template_text, "max_seq_len": 2048},
              "data": {"regenerate": regenerate, "regeneration": {"engine": "hf", "max_tokens": 12, "slots": 2}}},
        results={"validating": {"report": {"warnings": warnings}, "canonical": {"uri": None, "local": str(canonical)}},
                 "preparing": {"prepared": {"uri": None, "local": str(prepared)}}},
        workdir=tmp_path / "work", org_id="org_1", job_id="job_1",
        settings=SimpleNamespace(pipeline="inline", cache_dir=tmp_path / "cache"),
        event=lambda *a: events.append(a), metrics=lambda *a: None, progress=lambda *a, **k: None,
        cancelled=lambda: False), events


def test_the_stage_regenerates_stores_and_reuses(tmp_path, tiny_target_dir):
    from drafters.shards import load_sequences
    from workers import stages
    from workers.stages.common import training_rows

    ctx, _ = _stage_ctx(tmp_path, tiny_target_dir)
    out = stages.regenerate(ctx)
    n_train, n_held = len(list(weather_conversation().calls())), len(list(weather_conversation(False, False).calls()))
    report = out["report"]
    assert out["regenerated"] and (report["calls"], report["generated"], report["reused"]) == (n_train + n_held,
                                                                                             n_train + n_held, 0)
    assert report["engine"] == "hf" and 0 < report["tokens"] <= 12 * (n_train + n_held)
    assert report["tool_calls"]["answers"] == report["calls"]  # one denominator: every answer written
    ctx.results["regenerating"] = out  # as the pipeline stores a stage's result for the next ones
    rows_dir = training_rows(ctx, tmp_path / "prepared")
    rows = load_sequences(rows_dir / "train.safetensors")
    assert rows_dir.name == "regenerated" and len(rows) == n_train == report["rows"]
    assert len(load_sequences(rows_dir / "val.safetensors")) == n_held
    # A second job on the same dataset and target (another work directory) reuses every answer.
    ctx2, _ = _stage_ctx(tmp_path, tiny_target_dir)
    ctx2.workdir = tmp_path / "work2"
    again = stages.regenerate(ctx2)["report"]
    assert (again["reused"], again["generated"], again["tokens"]) == (n_train + n_held, 0, 0)
    assert load_sequences(tmp_path / "work2" / "regenerated" / "train.safetensors")[0].input_ids == rows[0].input_ids


@pytest.mark.parametrize("regenerate, mismatch", [("never", True), ("auto", False)])
def test_the_stage_is_skipped_when_not_asked_or_not_needed(tmp_path, tiny_target_dir, regenerate, mismatch):
    from workers import stages
    from workers.stages.common import training_rows

    ctx, _ = _stage_ctx(tmp_path, tiny_target_dir, regenerate=regenerate, mismatch=mismatch)
    ctx.results["regenerating"] = out = stages.regenerate(ctx)
    assert out["regenerated"] is False and training_rows(ctx, tmp_path / "prepared") == tmp_path / "prepared"


def test_tool_traces_need_a_template_that_writes_tool_calls(tmp_path, tiny_target_dir):
    """SmolLM2's own template drops tools: the target cannot be asked to call them, even where a user
    gave that template (prepare then only warns)."""
    from drafters.target import load_tokenizer
    from workers import stages

    own = load_tokenizer(str(tiny_target_dir)).chat_template  # given by the user: prepare only warns
    ctx, _ = _stage_ctx(tmp_path, tiny_target_dir, template_text=own)
    with pytest.raises(TracedraftError) as e:
        stages.regenerate(ctx)
    assert e.value.code == "regeneration_needs_tool_template" and e.value.where == "target.chat_template"
