"""Request and response models of the REST API (pydantic v2).

Requests forbid unknown fields (``extra="forbid"``: a typo is a 422 ``unknown_field``, never silently
ignored). Every recipe and evaluation setting accepts ``"auto"`` (the default), which the worker resolves
for its machine (drafters.train.resolve: CPU demo vs GPU defaults); the stored job spec omits ``auto``
values so the worker's defaults apply. Responses are complete models, so ``/openapi.json`` documents
every field.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator

from drafters.recipe import Auto, PositiveIntOrAuto, Recipe

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
MAX_METADATA_KEYS = 16


class Request_(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Response_(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# --- errors -------------------------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. not_found, idempotency_conflict.")
    message: str = Field(description="What went wrong, for people.")
    param: str | None = Field(default=None, description="The field, header or parameter at fault.")


class ErrorResponse(BaseModel):
    error: ErrorDetail


# --- pagination -----------------------------------------------------------------------------------------

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    """One page of a list, newest first. Pass ``next_cursor`` as ``after=`` to get the next page."""

    data: list[T]
    has_more: bool
    next_cursor: str | None = None


# --- datasets -------------------------------------------------------------------------------------------


class DatasetFile(BaseModel):
    name: str = Field(description="The uploaded file name (display only, never a path).")
    sha256: str
    size: int = Field(description="Bytes as uploaded (compressed size for gzip/zstd).")
    compression: str | None = Field(default=None, description="gzip, zstd or null.")
    decompressed_size: int | None = None


class DatasetOut(Response_):
    id: str
    object: Literal["dataset"] = "dataset"
    name: str
    status: Literal["validating", "ready", "failed"]
    sha256: str = Field(description="sha256 of the ordered file hashes (and of the mapping's, when there is "
                        "one): the dataset's identity.")
    size_bytes: int
    format: str | None = None
    compression: str | None = None
    files: list[DatasetFile] = Field(default_factory=list)
    mapping: DatasetFile | None = Field(default=None, description="The declared mapping file the traces are "
                                        "read with (uploaded as the `mapping` part), or null: formats detected.")
    counts: dict[str, Any] = Field(default_factory=dict)
    error: ErrorDetail | None = None
    report: dict[str, Any] | None = Field(default=None, description="The validation report, once validated.")
    created_at: dt.datetime
    updated_at: dt.datetime


class DatasetReportOut(BaseModel):
    id: str
    status: Literal["validating", "ready", "failed"]
    report: dict[str, Any] | None = None
    counts: dict[str, Any] = Field(default_factory=dict)
    error: ErrorDetail | None = None


class DeletedOut(BaseModel):
    id: str
    object: str
    deleted: bool = True


# --- jobs -----------------------------------------------------------------------------------------------


class SGLangSpec(Request_):
    """Where the target is served for regeneration and the ``sglang`` engine."""

    endpoint: HttpUrl | None = Field(default=None, description="Base URL of a running SGLang server.")
    launch: dict[str, Any] | None = Field(
        default=None, description="Arguments to launch SGLang (e.g. {\"tp_size\": 2, \"mem_fraction_static\": 0.8})."
    )


class TargetSpec(Request_):
    model: str = Field(min_length=1, max_length=500, description="HF model id, local dir or .gguf of the target.")
    revision: str | None = Field(default=None, max_length=200)
    chat_template: str | None = Field(default=None, max_length=200_000, description="Jinja chat template text.")
    template_kwargs: dict[str, Any] = Field(default_factory=dict)
    max_seq_len: PositiveIntOrAuto = "auto"
    tokenizer_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    trust_remote_code: bool = Field(default=False, description="Load the target's tokenizer and model with "
                                    "the Python code of its repository (Kimi-K2's tokenizer needs it); the "
                                    "operator allows it per target (TRACEDRAFT_REMOTE_CODE_TARGETS).")
    sglang: SGLangSpec | None = None


class RegenerationOptions(Request_):
    """How the target regenerates the training answers (on-policy regeneration, docs/dspark.md section 3.3)."""

    engine: Literal["auto", "llamacpp", "openai", "hf"] = Field(
        default="auto", description="'openai': an OpenAI-compatible /v1/completions endpoint (SGLang, vLLM); "
        "'llamacpp': llama-server on this worker; 'hf': the target in the worker's process. 'auto' = 'openai' "
        "when an endpoint is named, else 'hf' (the exact tokens the hf evaluation's target writes).")
    endpoint: HttpUrl | None = Field(default=None, description="Base URL of the OpenAI-compatible server "
                                     "(default: target.sglang.endpoint).")
    model: str | None = Field(default=None, max_length=500, description="Model name the endpoint serves "
                              "(default: target.model).")
    slots: PositiveIntOrAuto = Field(default="auto", description="Answers generated at once (server slots or "
                                     "batch rows); auto = 4 on CPU, 64 on GPU.")
    temperature: Annotated[float, Field(ge=0, le=2)] = Field(
        default=0.0, description="0 = greedy, the answers the target serves at temperature 0 (DeepSpec "
        "regenerates at 0.7, top_p 0.8, top_k 20 for variety over generic chat).")
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    top_k: Annotated[int, Field(ge=0)] = 0
    max_tokens: PositiveIntOrAuto = Field(default="auto", description="Longest answer (longer ones are kept and "
                                          "marked truncated); auto = 256 on CPU, 2048 on GPU.")
    seed: Annotated[int, Field(ge=0)] = 0


class DataOptions(Request_):
    format: str | None = Field(default=None, description="A trace format name; null detects per file.")
    on_error: Literal["skip", "fail"] = "skip"
    scrub: bool = True
    heldout_fraction: Annotated[float, Field(gt=0, lt=1)] | Auto = "auto"
    regenerate: Literal["auto", "always", "never"] = Field(
        default="auto", description="Regenerate every training answer with the target before training: "
        "'auto' = when the traces were written by another model (the model_mismatch warning).")
    regeneration: RegenerationOptions = Field(default_factory=RegenerationOptions)


class EvaluationSettings(Request_):
    engine: Literal["auto", "hf", "sglang", "llamacpp"] = "auto"
    max_calls: PositiveIntOrAuto = "auto"
    max_new_tokens: PositiveIntOrAuto = "auto"
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.0
    seed: Annotated[int, Field(ge=0)] = 0
    suffix_cap: Annotated[int, Field(ge=1, le=64)] = Field(
        default=24, description="Most drafts per round of suffix decoding, in the baseline and the cascade "
        "(24: vLLM's default); the report also gives suffix decoding capped at the drafter's block size.")
    suffix_max_sequences: Annotated[int, Field(ge=1, le=10_000_000)] = Field(
        default=10000, description="Most recent training answers suffix decoding indexes (vLLM's "
        "suffix_decoding_max_cached_requests).")
    suffix_max_tokens: Annotated[int, Field(ge=1, le=100_000_000)] = Field(
        default=5_000_000, description="Most tokens suffix decoding's index may hold (about 400 bytes a "
        "token); a larger corpus fails the evaluation with suffix_corpus_too_large, never an out-of-memory kill.")
    cascade_threshold: Annotated[float, Field(ge=0, le=64)] | Auto = Field(
        default="auto", description="Expected accepted drafts at or above which the cascade verifies suffix "
        "decoding's proposal without running the drafter; auto = fitted on the development split.")
    draft_vocab_size: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        default=8192, description="Token ids the drafter may draft: the most frequent of the training "
        "answers, plus each request's prompt tokens (drafting cost, docs/dspark.md 5.5).")


class PromotionPolicy(Request_):
    min_gain: Annotated[float, Field(ge=0)] = 0.02
    max_segment_loss: Annotated[float, Field(ge=0)] = 0.03
    min_support: Annotated[int, Field(ge=0)] = 20
    auto_promote: bool = False


class JobSpec(Request_):
    """What a job does (stored as ``job.spec``)."""

    target: TargetSpec
    base_drafter: str | None = Field(
        default=None, max_length=300,
        description="Registry reference of the drafter to start from (name@champion, name@v3, name:3).",
    )
    drafter_name: str | None = Field(default=None, pattern=NAME_PATTERN,
                                     description="Registry name to publish under (default <target>-agent).")
    data: DataOptions = Field(default_factory=DataOptions)
    recipe: Recipe = Field(default_factory=Recipe)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    promotion: PromotionPolicy = Field(default_factory=PromotionPolicy)


class JobCreate(JobSpec):
    dataset_id: str = Field(min_length=1, max_length=40)
    metadata: dict[str, str] = Field(
        default_factory=dict, description=f"Up to {MAX_METADATA_KEYS} string pairs; filter with metadata.KEY=VALUE."
    )

    @field_validator("metadata")
    @classmethod
    def _check_metadata(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) > MAX_METADATA_KEYS:
            raise ValueError(f"at most {MAX_METADATA_KEYS} metadata keys")
        for k, val in v.items():
            if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", k):
                raise ValueError(f"metadata key {k[:70]!r} must be 1-64 of letters, digits, _ . : -")
            if len(val) > 512:
                raise ValueError(f"metadata value of {k!r} is longer than 512 characters")
        return v


def spec_to_stored(spec: JobSpec) -> dict[str, Any]:
    """The job spec as stored: JSON, with ``auto`` and null values left out (the worker's defaults apply)."""

    def strip(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if v is not None and v != "auto"}
        return obj

    return strip(spec.model_dump(mode="json"))


class JobError(BaseModel):
    code: str
    message: str
    param: str | None = None


class JobOut(Response_):
    id: str
    object: Literal["job"] = "job"
    dataset_id: str | None
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    stage: str | None
    progress: float
    eta_seconds: float | None = None
    attempts: int
    cancel_requested: bool
    error: JobError | None = None
    spec: dict[str, Any] = Field(description="The job's spec as stored (auto values omitted).")
    metadata: dict[str, Any] = Field(default_factory=dict)
    result: dict[str, Any] = Field(default_factory=dict, description="Outputs per stage.")
    created_at: dt.datetime
    updated_at: dt.datetime
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None


class JobEventOut(Response_):
    seq: int
    ts: dt.datetime
    level: str
    type: str
    message: str
    data: dict[str, Any] | None = None


class EventPage(BaseModel):
    data: list[JobEventOut]
    has_more: bool
    next_after: int = Field(description="Pass as after= to get the following events.")


class CheckpointOut(BaseModel):
    name: str = Field(description="Checkpoint directory name (e.g. step_000300).")
    step: int | None = None
    kind: Literal["best", "last", "validation", "checkpoint"]
    expected_tau: float | None = Field(default=None, description="Validation expected accepted length "
                                       "(bonus token included) at that step, when known.")
    ts: dt.datetime | None = None


class CheckpointList(BaseModel):
    job_id: str
    data: list[CheckpointOut]


# --- drafters -------------------------------------------------------------------------------------------


class DrafterOut(Response_):
    name: str
    object: Literal["drafter"] = "drafter"
    target_model: str
    description: str = ""
    aliases: dict[str, int] = Field(default_factory=dict, description="alias -> version number")
    latest_version: int | None = None
    created_at: dt.datetime
    updated_at: dt.datetime


class DrafterVersionOut(BaseModel):
    drafter: str
    version: int
    ref: str = Field(description="name@vN")
    id: str
    job_id: str | None = None
    checkpoint_uri: str
    files: dict[str, Any] = Field(default_factory=dict)
    size_bytes: int
    config: dict[str, Any] = Field(default_factory=dict)
    lineage: dict[str, Any] = Field(default_factory=dict)
    gate: dict[str, Any] | None = None
    aliases: list[str] = Field(default_factory=list)
    score: dict[str, Any] = Field(default_factory=dict, description="The headline of the evaluation: the "
                                  "candidate's `tau` (accepted length per verification round), its "
                                  "`speedup_vs_plain` (null when not measured) and the `gate` verdict (null "
                                  "when no gate ran). Given in lists too, where `report` is omitted.")
    report: dict[str, Any] | None = None
    created_by: str
    created_at: dt.datetime


class AliasEventOut(BaseModel):
    alias: str
    from_version: int | None = None
    to_version: int
    action: str
    actor: str
    reason: str
    forced: bool
    ts: dt.datetime


class AliasOut(BaseModel):
    alias: str
    version: int
    updated_at: dt.datetime
    history: list[AliasEventOut] = Field(default_factory=list)


class AliasList(BaseModel):
    drafter: str
    data: list[AliasOut]
    history: list[AliasEventOut] = Field(default_factory=list, description="Every alias move, oldest first.")


class PromoteRequest(Request_):
    version: Annotated[int, Field(ge=1, le=2**31 - 1)]
    reason: str = Field(default="", max_length=2000)
    force: bool = Field(default=False, description="Move even though the gate did not pass (champion) or the "
                        "version is incompatible with the alias's holder; needs a `reason`. Recorded.")
    dry_run: bool = Field(default=False, description="Check only (permissions, the version, what would need "
                          "`force`, in `overridden`); nothing is verified or moved.")


class PromoteOut(BaseModel):
    drafter: str
    alias: str
    from_version: int | None = None
    to_version: int
    moved: bool
    overridden: list[str] = Field(default_factory=list, description="Problems forced past (a gate that did not "
                                  "pass, incompatibilities); with `dry_run`, the problems that need `force`.")
    dry_run: bool = False


class RollbackRequest(Request_):
    """Move an alias back: to its previous holder (from the history) or to ``to_version``."""

    to_version: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = Field(
        default=None, description="Version to go back to; default: the alias's previous holder (repeated "
        "rollbacks walk further back).")
    reason: str = Field(min_length=1, max_length=2000, description="Why (kept in the alias history).")
    force: bool = Field(default=False, description="Allow a to_version that never held the alias and is "
                        "incompatible with the current holder (never skips the checksum check).")
    dry_run: bool = Field(default=False, description="Check only: the move it would make; nothing moves.")


class RollbackOut(PromoteOut):
    """The outcome of a rollback (``moved`` is false when the alias already pointed there)."""


# --- health ---------------------------------------------------------------------------------------------


class HealthOut(BaseModel):
    status: Literal["ok"] = "ok"


class ReadyOut(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str]


_ERROR_TEXT = {
    400: "Bad request", 401: "Missing, invalid or revoked API key", 403: "Admin key required",
    404: "Not found (also another organization's resource)", 409: "Conflict", 413: "Payload too large",
    415: "Unsupported media type", 422: "Invalid request (param names the field)",
    429: "Rate limited (see Retry-After)", 503: "Unavailable",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the given error statuses (all share ``ErrorResponse``)."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {"model": ErrorResponse, "description": _ERROR_TEXT.get(status, "Error")}
        if status == 429:
            entry["headers"] = {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}}
        out[status] = entry
    return out
