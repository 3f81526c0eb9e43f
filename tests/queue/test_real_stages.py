"""The real pipeline (workers/stages/) on Celery workers, as the stack runs it.

Two workers stand for two machines: a cpu worker and a gpu worker with separate home (work) directories
and one shared artifact store, so every hand-over between stages goes through the store. The target is
the tiny random Llama with SmolLM2's tokenizer (tests/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import CHATML_TOOLS, EXAMPLES

pytestmark = [pytest.mark.redis, pytest.mark.postgres]

TRACES = [EXAMPLES / "traces" / "fasthooks__sample_main_transcript.jsonl",
          *sorted((EXAMPLES / "traces").glob("pydantic-ai__test_openai_*.yaml"))]


def _spec(target: Path, max_steps: int) -> dict:
    return {
        "target": {"model": str(target), "chat_template": CHATML_TOOLS.read_text()},
        "recipe": {"max_steps": max_steps, "num_draft_layers": 1, "num_anchors": 8, "tokens_per_batch": 1024,
                   "max_train_tokens": 20000, "val_max_seqs": 4, "checkpoint_every": 5, "validate_every": 20},
        "evaluation": {"max_calls": 2, "max_new_tokens": 8},
    }


@pytest.fixture
def shared_store(queue_env, tmp_path: Path):
    """One artifact store for the test process and every worker (a shared bucket in the stack)."""
    from service.settings import reload_settings

    uri = f"file://{tmp_path / 'store'}"
    old = os.environ.get("TRACEDRAFT_ARTIFACT_URI")
    os.environ["TRACEDRAFT_ARTIFACT_URI"] = uri
    queue_env.env["TRACEDRAFT_ARTIFACT_URI"] = uri
    reload_settings()
    yield uri
    queue_env.env.pop("TRACEDRAFT_ARTIFACT_URI")
    if old is None:
        os.environ.pop("TRACEDRAFT_ARTIFACT_URI")
    else:
        os.environ["TRACEDRAFT_ARTIFACT_URI"] = old
    reload_settings()


def _submit(qe, target: Path, max_steps: int) -> str:
    from service import datasets, jobs
    from service.queue import dispatch
    from service.storage import ArtifactStore

    with qe.sessions() as s:
        ds = datasets.create_dataset_from_paths(s, ArtifactStore.from_settings(), qe.org_id, TRACES)
        job = jobs.create_job(s, qe.org_id, ds, _spec(target, max_steps))
        job_id = job.id
    dispatch("validate", job_id)
    return job_id


def _policy_env(target: Path) -> dict[str, str]:
    """A production worker's job policy: the tiny target's directory is the one the operator allowed."""
    import json

    return {"TRACEDRAFT_ENFORCE_JOB_POLICY": "true", "TRACEDRAFT_ALLOWED_TARGET_DIRS": json.dumps([str(target.parent)])}


def _machine(workers, tmp_path: Path, name: str, queue: str, target: Path):
    home = tmp_path / name
    return workers.start(queue, env={"TRACEDRAFT_HOME": str(home), "TRACEDRAFT_TEST_STAGES": "",
                                     "CUDA_VISIBLE_DEVICES": "", **_policy_env(target)}), home


def _versions(qe, job_id: str) -> list:
    import sqlalchemy as sa

    from service.db.models import DrafterVersion

    with qe.sessions() as s:
        return list(s.scalars(sa.select(DrafterVersion).where(DrafterVersion.job_id == job_id)))


def _gone(path: Path, timeout: float) -> bool:
    """Whether ``path`` is gone within ``timeout`` seconds (a worker cleans up after committing the status)."""
    import time

    deadline = time.monotonic() + timeout
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return not path.exists()


def test_job_runs_every_real_stage_across_two_machines(queue_env, workers, shared_store, tiny_target_dir,
                                                       tmp_path: Path) -> None:
    _, cpu_home = _machine(workers, tmp_path, "cpu-machine", "cpu", tiny_target_dir)
    _, gpu_home = _machine(workers, tmp_path, "gpu-machine", "gpu", tiny_target_dir)
    job_id = _submit(queue_env, tiny_target_dir, max_steps=10)
    job = queue_env.wait(job_id, timeout=600)
    assert job.status == "succeeded", job.error
    assert [v.version for v in _versions(queue_env, job_id)] == [1]
    proposers = job.result["evaluating"]["report"]["proposers"]
    assert proposers["candidate"]["tau"] >= 1.0
    assert {"ngram", "suffix", "hybrid", "cascade"} <= set(proposers) and proposers["hybrid"]["what_if"] is True
    assert proposers["hybrid"]["speedup_vs_plain"] is None and proposers["suffix"]["what_if"] is False
    # Each machine did its own stages and got the others' outputs from the store only.
    # (the prepared data reached the gpu machine through the store: its stage ran from the fetched copy)
    cpu_work, gpu_work = cpu_home / "work" / job_id, gpu_home / "work" / job_id
    # The job ended there (register): its work directory goes with it, just after the status commit.
    assert _gone(cpu_work, timeout=30)
    # The gpu machine fetched the scrubbed canonical conversations (regeneration reads their tools), never
    # the raw upload.
    assert not (gpu_work / "raw").exists()


def test_training_killed_resumes_on_another_machine_from_the_store(queue_env, workers, shared_store,
                                                                   tiny_target_dir, tmp_path: Path) -> None:
    import time

    workers.start("cpu", env={"TRACEDRAFT_HOME": str(tmp_path / "cpu"), "TRACEDRAFT_TEST_STAGES": "",
                              **_policy_env(tiny_target_dir)})
    first, _ = _machine(workers, tmp_path, "gpu-1", "gpu", tiny_target_dir)
    job_id = _submit(queue_env, tiny_target_dir, max_steps=100)

    def checkpointed(job) -> bool:
        return any("latest" in ((e.data or {}).get("checkpoint") or {}) for e in queue_env.events(job_id))

    queue_env.wait(job_id, until=checkpointed, timeout=600)
    first.kill9()  # the machine is gone, its disk with it
    time.sleep(1)
    _machine(workers, tmp_path, "gpu-2", "gpu", tiny_target_dir)
    job = queue_env.wait(job_id, timeout=900)
    assert job.status == "succeeded", job.error
    assert job.attempts == 2
    messages = [e.message for e in queue_env.events(job_id)]
    assert any("fetched from the artifact store" in m for m in messages), messages[-20:]
    assert len(_versions(queue_env, job_id)) == 1
