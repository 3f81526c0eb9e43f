"""User verbs through the running API: datasets, jobs (submit, list, show, events, follow, cancel) and
drafters (list, versions, show, diff, export), on SQLite and PostgreSQL; output and exit codes."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from pathlib import Path

from tests.cli.conftest import EXAMPLE_TRACE


def upload(cli) -> dict:
    r = cli("datasets", "upload", EXAMPLE_TRACE, "--name", "glaive", "--wait", "--json")
    assert r.code == 0, r.err
    return r.json


def test_datasets_upload_list_show(stack, cli):
    ds = upload(cli)
    assert ds["name"] == "glaive" and ds["status"] == "ready"
    assert ds["files"][0]["sha256"] == hashlib.sha256(EXAMPLE_TRACE.read_bytes()).hexdigest()
    assert ds["report"]["counts"]["conversations"] > 0
    # the offline preview splits as the upload did: the file read under its stored name (its ids hold the name),
    # held-out near-duplicates moved to train (a new user saw 242 / 23 previewed and 237 / 28 stored)
    preview = cli("datasets", "validate", EXAMPLE_TRACE, "--json", api=False).json["split"]
    assert preview == {"train": ds["counts"]["train_conversations"], "heldout": ds["counts"]["heldout_conversations"]}

    r = cli("datasets", "list", "--json")
    assert r.code == 0 and [d["id"] for d in r.json] == [ds["id"]]
    r = cli("datasets", "list")
    assert r.code == 0 and ds["id"] in r.out and "ready" in r.out

    r = cli("datasets", "show", ds["id"])
    assert r.code == 0, r.err
    assert "Validation report" in r.out and "conversations" in r.out and ds["files"][0]["sha256"] in r.out
    assert cli("datasets", "show", ds["id"], "--json").json["id"] == ds["id"]

    # another organization's key sees nothing: 404 -> exit 3, one error line with the code
    from service import auth

    with stack.Session() as s:
        other = auth.create_org(s, "globex")
        key, _ = auth.create_api_key(s, other, "x")
    r = cli("datasets", "show", ds["id"], key=key)
    assert r.code == 3 and r.err.startswith("error [not_found]")
    assert cli("datasets", "list", "--json", key=key).json == []
    # a bad key: 401 -> exit 4; an unreachable API: exit 1
    assert cli("datasets", "list", key="td_" + "x" * 43).code == 4
    r = cli("datasets", "list", "--api-url", "http://127.0.0.1:9")
    assert r.code == 1 and "[unavailable]" in r.err
    # a file that does not exist: file_not_found, exit 1 (as from run and datasets validate), before any request
    assert cli("datasets", "upload", stack.tmp / "nope.jsonl").code == 1


def test_datasets_validate_offline(tmp_path: Path, cli):
    r = cli("datasets", "validate", EXAMPLE_TRACE, "--json", api=False)
    assert r.code == 0, r.err
    rep = r.json
    assert rep["counts"]["conversations"] > 0 and rep["formats"]
    assert rep["split"]["train"] + rep["split"]["heldout"] == rep["counts"]["conversations"]

    bad = tmp_path / "broken.jsonl"
    good_line = json.dumps({"messages": [{"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": "hello, my key is sk-abcdefghijklmnopqrstuvwxyz0123456789"}]})
    bad.write_text(good_line + "\n{not json\n" + good_line.replace("hi", "yo") + "\n")
    r = cli("datasets", "validate", bad, "--format", "openai_chat", api=False)
    assert r.code == 0, r.out + r.err
    assert "Errors" in r.out and "broken.jsonl:2" in r.out  # the bad line, with file:line
    assert "Scrubbed" in r.out
    r = cli("datasets", "validate", bad, "--format", "openai_chat", "--json", api=False)
    errors = r.json["errors"]
    assert errors and errors[0]["line"] == 2 and errors[0]["file"].endswith("broken.jsonl")
    assert sum(r.json["scrub_counts"].values()) >= 1
    # --strict turns line errors into exit 1; a file with nothing usable is exit 1 too
    assert cli("datasets", "validate", bad, "--format", "openai_chat", "--strict", api=False).code == 1
    empty = tmp_path / "junk.txt"
    empty.write_text("nothing to see\n")
    assert cli("datasets", "validate", empty, api=False).code != 0
    assert cli("datasets", "validate", tmp_path / "missing.jsonl", api=False).code == 1  # as from run


def test_jobs_submit_list_show_events_cancel(stack, cli):
    ds = upload(cli)
    r = cli("jobs", "submit", "--dataset", ds["id"], "--target", "HuggingFaceTB/SmolLM2-135M-Instruct",
            "--recipe", "max_steps=20", "--recipe", "mode=lora", "--eval", "engine=hf",
            "--metadata", "team=search", "--idempotency-key", "k-1", "--json")
    assert r.code == 0, r.err
    job = r.json
    assert job["status"] == "queued" and job["spec"]["recipe"] == {"max_steps": 20, "mode": "lora"}
    deadline = time.monotonic() + 5
    while ("validate", job["id"]) not in stack.dispatched and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ("validate", job["id"]) in stack.dispatched

    # the same idempotency key and body: the same job; a different body: 409 -> exit 4
    again = cli("jobs", "submit", "--dataset", ds["id"], "--target", "HuggingFaceTB/SmolLM2-135M-Instruct",
                "--recipe", "max_steps=20", "--recipe", "mode=lora", "--eval", "engine=hf",
                "--metadata", "team=search", "--idempotency-key", "k-1", "--json")
    assert again.code == 0 and again.json["id"] == job["id"]
    r = cli("jobs", "submit", "--dataset", ds["id"], "--target", "other/model", "--idempotency-key", "k-1")
    assert r.code == 4 and "[idempotency_conflict]" in r.err
    # invalid input: 422 -> exit 2 with the field; unknown dataset -> 404 -> exit 3
    r = cli("jobs", "submit", "--dataset", ds["id"], "--target", "m", "--recipe", "lr=-1")
    assert r.code == 2 and "recipe.lr" in r.err
    assert cli("jobs", "submit", "--dataset", "ds_missing", "--target", "m").code == 3

    r = cli("jobs", "list", "--metadata", "team=search", "--json")
    assert r.code == 0 and [j["id"] for j in r.json] == [job["id"]]
    assert cli("jobs", "list", "--status", "succeeded", "--json").json == []
    r = cli("jobs", "show", job["id"])
    assert r.code == 0 and job["id"] in r.out and "queued" in r.out

    r = cli("jobs", "events", job["id"], "--json")
    assert r.code == 0
    events = [json.loads(line) for line in r.out.splitlines()]
    assert events[0]["seq"] == 1 and events[0]["message"] == "job queued"

    # --follow streams until the job finishes; exit 0 for succeeded
    from service import jobs

    def worker() -> None:
        time.sleep(0.3)
        with stack.Session() as s:
            jobs.start_job(s, job["id"], stage="training")
            jobs.set_progress(s, job["id"], 0.5, 30.0, "training 50%")
            jobs.succeed_job(s, job["id"])

    t = threading.Thread(target=worker)
    t.start()
    r = cli("jobs", "events", job["id"], "--follow")
    t.join()
    assert r.code == 0, r.out + r.err
    assert "training 50%" in r.out and "job succeeded" in r.out
    assert r.out.count("job queued") == 1  # no event printed twice across page + stream

    # cancelling a finished job is refused (409 job_finished -> exit 4); a queued one is cancelled
    r = cli("jobs", "cancel", job["id"])
    assert r.code == 4 and "[job_finished]" in r.err
    second = cli("jobs", "submit", "--dataset", ds["id"], "--target", "m2", "--json").json
    r = cli("jobs", "cancel", second["id"], "--json")
    assert r.code == 0 and r.json["status"] == "cancelled"
    r = cli("jobs", "events", second["id"], "--follow", "--json")
    assert r.code == 1  # a cancelled job is not a success
    # a cancelled job resumes at its stage (queued again); a succeeded one cannot (409 -> exit 4)
    r = cli("jobs", "resume", second["id"], "--json")
    assert r.code == 0 and r.json["status"] == "queued" and r.json["stage"] == "validating", r.err
    r = cli("jobs", "resume", job["id"])
    assert r.code == 4 and "[job_finished]" in r.err
    assert cli("jobs", "show", "job_nope").code == 3


def test_drafters_list_versions_show_diff_export(stack, cli, tmp_path: Path):
    v1 = stack.register(1)
    stack.register(2)
    cli("promote", "smol-agent", str(v1), "--reason", "x", "--yes", key="admin")

    r = cli("drafters", "list", "--json")
    assert r.code == 0 and r.json[0]["name"] == "smol-agent" and r.json[0]["aliases"] == {"champion": 1,
                                                                                          "challenger": 2}
    r = cli("drafters", "list")
    assert "champion=v1" in r.out
    r = cli("drafters", "versions", "smol-agent", "--json")
    assert [v["version"] for v in r.json] == [1, 2]
    r = cli("drafters", "versions", "smol-agent")
    assert r.code == 0 and "passed" in r.out
    r = cli("drafters", "show", "smol-agent", "champion", "--json")
    assert r.code == 0 and r.json["version"] == 1 and set(r.json["files"]) == {"config.json", "model.safetensors"}
    r = cli("drafters", "show", "smol-agent", "latest")
    assert r.code == 0 and "smol-agent@v2" in r.out and "tokenizer_sha256" in r.out
    assert cli("drafters", "show", "smol-agent", "canary").code == 3

    r = cli("drafters", "diff", "smol-agent", "champion", "v2", "--json")
    assert r.code == 0, r.err
    d = r.json
    assert (d["from"], d["to"]) == (1, 2)
    assert d["config"]["lr"][0] < d["config"]["lr"][1]
    assert d["files"]["changed"] == ["config.json", "model.safetensors"]
    r = cli("drafters", "diff", "smol-agent", "1", "2")
    assert r.code == 0 and "Differences v1 -> v2" in r.out

    out = tmp_path / "export"
    r = cli("drafters", "export", "smol-agent", "champion", out, "--format", "deepspec", "--json")
    assert r.code == 0, r.err
    with stack.Session() as s:
        from service import registry

        files = registry.get_version(s, registry.get_drafter(s, stack.org, "smol-agent"), 1).files
    for name, digest in files.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert "model.safetensors" in (out / "SHA256SUMS").read_text()

    ready = tmp_path / "ready"
    r = cli("drafters", "export", "smol-agent", "2", ready, "--format", "gguf-ready")
    assert r.code == 0, r.err
    note = (ready / "README.md").read_text()
    assert "convert_hf_to_gguf.py" in note and "--spec-draft-n-max 7" in note
    # gguf without --org downloads the published GGUF; none is published yet (tests/cli/test_export_gguf.py)
    r = cli("drafters", "export", "smol-agent", "2", tmp_path / "g", "--format", "gguf")
    assert r.code == 3 and "[not_published]" in r.err and "--org" in r.err
    assert cli("drafters", "export", "smol-agent", "2", tmp_path / "g", "--format", "onnx").code == 2

    # a tampered stored file: the export refuses (checksum_mismatch, exit 4) and leaves no partial file
    ver_dir = Path(stack.store.root) / "drafters"
    target = next(p for p in ver_dir.rglob("model.safetensors") if hashlib.sha256(p.read_bytes()).hexdigest()
                  == files["model.safetensors"])
    target.write_bytes(b"tampered")
    bad = tmp_path / "bad"
    r = cli("drafters", "export", "smol-agent", "champion", bad)
    assert r.code == 4 and "[checksum_mismatch]" in r.err
    assert not bad.exists()  # the directory the export created is removed again: nothing partial left


def test_datasets_validate_a_directory_of_mixed_field_files(tmp_path: Path, cli):
    """Every file of a mixed directory is either understood with exact counts or refused with a code; a
    run with refused content never prints "result: ok"."""
    import shutil

    fx = Path(__file__).parents[1] / "traces" / "fixtures"
    d = tmp_path / "field"
    d.mkdir()
    for name in ("llamafactory_v1_reason_tool_use.json", "inspect_ai_log.eval", "inspect_ai_log.json",
                 "vercel_ai_openai_steps.json",
                 "trae_agent_trajectory.json", "letta_memgpt_indices.af", "letta_customer_service.af",
                 "any_agent_trace_no_input.json", "generic/langchain_chat_history.json", "generic/preference_pairs.json"):
        shutil.copy(fx / name, d / Path(name).name)
    shutil.copytree(fx / "openhands_sdk", d / "openhands_sdk")
    lines = (fx / "swe_smith_trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    (d / "cut.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2], encoding="utf-8")  # torn write
    (d / "NOTES.txt").write_text("not a trace\n", encoding="utf-8")

    r = cli("datasets", "validate", d, "--json", api=False)
    assert r.code == 0, r.err
    rep = r.json
    assert rep["ok"] is False and "error:parser_error" not in rep["problem_counts"]
    files = {Path(k).name: v for k, v in rep["files"].items()}
    want = {"llamafactory_v1_reason_tool_use.json": (4, "ok"), "inspect_ai_log.eval": (2, "ok"),
            "vercel_ai_openai_steps.json": (1, "ok"), "trae_agent_trajectory.json": (1, "ok"),
            "letta_memgpt_indices.af": (1, "ok"), "langchain_chat_history.json": (1, "ok"), "events": (1, "ok"),
            "cut.jsonl": (1, "partial"), "letta_customer_service.af": (0, "refused"),
            "any_agent_trace_no_input.json": (0, "refused"), "preference_pairs.json": (0, "refused"),
            "NOTES.txt": (0, "refused"), "inspect_ai_log.json": (0, "duplicate")}
    assert {k: (v["conversations"], v["status"]) for k, v in files.items()} == want
    codes = {(Path(p["file"]).name, p["code"]) for p in rep["errors"]}
    assert {("cut.jsonl", "invalid_json"), ("letta_customer_service.af", "no_assistant_message"),
            ("any_agent_trace_no_input.json", "content_not_captured"), ("preference_pairs.json", "ambiguous_shape"),
            ("NOTES.txt", "unknown_format")} <= codes
    (cut,) = [p for p in rep["errors"] if p["file"].endswith("cut.jsonl")]
    assert cut["line"] == 2
    text = cli("datasets", "validate", d, api=False)
    assert "result: ok" not in text.out and "refused" in text.out
    assert "duplicate of inspect_ai_log.eval" in text.out  # the same log as .eval and .json: understood once


def test_validate_counts_duplicates_or_everything(tmp_path: Path, cli):
    """--no-dedup counts every conversation the files hold (a conversation identical to another included)."""
    row = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    path = tmp_path / "twice.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    counts = cli("datasets", "validate", path, "--json", api=False).json["counts"]
    assert (counts["conversations"], counts["duplicates_dropped"]) == (1, 1)
    counts = cli("datasets", "validate", path, "--json", "--no-dedup", api=False).json["counts"]
    assert (counts["conversations"], counts["duplicates_dropped"]) == (2, 0)


def test_validate_previews_the_split_a_dataset_gets(cli):
    """The offline preview splits as a dataset is split (at least one conversation held out): two
    conversations whose ids both hash into train show 1 train / 1 held-out, as the service stores them."""
    from drafters.traces.ingest import ingest, split_of

    path = Path(__file__).parents[1] / "traces" / "fixtures" / "inspect_ai_log.eval"
    ids = [c.id for c in ingest([path]).conversations]
    assert len(ids) == 2 and all(split_of(i) == "train" for i in ids)  # the plain hash split holds none out
    r = cli("datasets", "validate", path, "--json", api=False)
    assert r.code == 0 and r.json["split"] == {"train": 1, "heldout": 1}


def test_a_missing_file_is_the_same_error_from_run_validate_and_upload(stack, cli):
    missing = stack.tmp / "nope.jsonl"
    outcomes = set()
    for args in (("run", missing, "--target", "smollm2-135m-instruct"), ("datasets", "validate", missing),
                 ("datasets", "upload", missing)):
        r = cli(*args, api=args[0] != "run")
        assert r.err.startswith("error [file_not_found] no such trace file: "), (args, r.err)
        outcomes.add(r.code)
    assert outcomes == {1}
    # a directory is no trace file: said so (the README's `run path/to/traces/` had been refused as not found)
    r = cli("run", stack.tmp, "--target", "smollm2-135m-instruct", api=False)
    assert r.code == 1 and r.err.startswith(f"error [not_a_file] {stack.tmp} is a directory: give its trace files")


def test_a_refused_upload_says_why_its_dataset_is_kept_and_how_to_delete_it(stack, cli):
    bad = stack.tmp / "garbage.jsonl"
    bad.write_text("hello, not json\n")
    r = cli("datasets", "upload", bad, "--json")
    assert r.code == 1
    ds = r.json
    assert ds["status"] == "failed" and "invalid_json" in ds["error"]["message"]
    assert f"dataset {ds['id']} is kept" in r.err and f"tracedraft datasets delete {ds['id']}" in r.err
    r = cli("datasets", "delete", ds["id"], "--yes")
    assert r.code == 0 and f"deleted dataset {ds['id']}" in r.out
    assert cli("datasets", "list", "--json").json == []


def test_jobs_show_summarizes_each_stage_without_cutting_words(stack, cli):
    from service import jobs

    with stack.Session() as s:
        job = jobs.create_job(s, stack.org, None, {"target": {"model": "m"}})
        long_path = "/var/lib/tracedraft/work/" + "deep/" * 30 + "best"
        jobs.set_result(s, job.id, "training", {"steps": 40, "best_dir": long_path, "stop_reason": "max_steps",
                                                 "history": [{"step": i, "loss": 1.0 / (i + 1)} for i in range(40)],
                                                 "drafter_config": {f"k{i}": i for i in range(30)}})
        job_id = job.id
    r = cli("jobs", "show", job_id)
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if x.startswith("training:"))
    assert "steps=40" in line and "history=[40 items]" in line and "drafter_config={30 keys}" in line
    assert re.search(r"best_dir=/var/lib/tracedraft/work(/deep)+\.\.\., ", line), line  # cut at a "/", marked
    assert r.out.rstrip().endswith(f"every output in full: tracedraft jobs show {job_id} --json")
    assert '{"' not in r.out  # no raw JSON
