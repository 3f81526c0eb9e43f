"""``/v1/datasets``: upload (streamed, bounded, sniffed; optionally with a declared mapping), list, get,
report, delete."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import anyio.to_thread
import sqlalchemy as sa
from fastapi import APIRouter, Query, Request

from service import datasets as datasets_mod
from service.api.deps import AppSettings, Caller, CurrentCaller, DbSession, Store
from service.api.errors import ApiError, not_found
from service.api.routers import MAX_PAGE, page_query
from service.api.schemas import (
    DatasetFile,
    DatasetOut,
    DatasetReportOut,
    DeletedOut,
    ErrorDetail,
    Page,
    error_responses,
)
from service.api.uploads import (
    MAX_FORM_FIELD_BYTES,
    RAW_CONTENT_TYPES,
    BodyPuller,
    Budget,
    InspectingReader,
    MultipartStream,
    Part,
    RawBodyReader,
    multipart_boundary,
)
from service.db.models import Dataset
from service.redaction import public_error
from service.settings import Settings
from service.storage import ArtifactError, ArtifactStore

log = logging.getLogger("tracedraft.api")
router = APIRouter(prefix="/v1/datasets", tags=["datasets"])

FORM_FIELDS = ("name", "format", "on_error")
MULTIPART_OVERHEAD = 1 << 20  # headers and boundaries allowed on top of the file bytes

_BINARY = {"type": "string", "format": "binary"}
UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "Trace files (JSON/JSONL, optionally gzip or zstd). Multipart: one or more `file` "
        "fields, and optionally one `mapping` field: a declared mapping file (YAML or JSON, at most "
        f"{datasets_mod.MAX_MAPPING_BYTES} bytes) for a trace format that has no module, checked at once "
        "(422 `bad_mapping`) and kept with the dataset; or the raw bytes of one file as the body (name it "
        "with `?filename=`).",
        "content": {
            "multipart/form-data": {"schema": {
                "type": "object",
                "properties": {
                    "file": {"type": "array", "items": _BINARY},
                    "mapping": _BINARY,
                    "name": {"type": "string", "maxLength": 300},
                    "format": {"type": "string", "maxLength": 64},
                    "on_error": {"type": "string", "enum": ["skip", "fail"]},
                },
                "required": ["file"],
                "additionalProperties": False,
            }},
            "application/octet-stream": {"schema": _BINARY},
            "application/jsonl": {"schema": _BINARY},
            "application/gzip": {"schema": _BINARY},
            "application/zstd": {"schema": _BINARY},
        },
    }
}


def _check_format(fmt: str | None, param: str = "format") -> str | None:
    if not fmt:
        return None
    from drafters.traces.formats import get_format

    try:
        get_format(fmt)
    except KeyError:
        raise ApiError(422, "invalid_value", f"unknown trace format {fmt[:64]!r}", param) from None
    return fmt


def dataset_out(ds: Dataset, *, with_report: bool = True) -> DatasetOut:
    """The API view of a dataset row (manifest from ``options["files"]``, its declared mapping from
    ``options["mapping"]``, never internal URIs)."""
    files = [DatasetFile(name=f.get("name", ""), sha256=f.get("sha256", ""), size=int(f.get("size", 0)),
                         compression=f.get("compression"), decompressed_size=f.get("decompressed_size"))
             for f in datasets_mod.raw_files(ds)]
    entry = datasets_mod.mapping_entry(ds)
    mapping = DatasetFile(name=entry["name"], sha256=entry["sha256"], size=int(entry["size"])) if entry else None
    return DatasetOut(
        id=ds.id, name=ds.name, status=ds.status, sha256=ds.sha256, size_bytes=ds.size_bytes, format=ds.format,
        compression=ds.compression, files=files, mapping=mapping, counts=dict(ds.counts or {}),
        error=ErrorDetail(**public_error(ds.error)) if ds.error else None,
        report=ds.report if with_report else None, created_at=ds.created_at, updated_at=ds.updated_at,
    )


def get_dataset_row(db: Any, caller: Caller, dataset_id: str, param: str | None = None) -> Dataset:
    """The caller's dataset, else 404 (identical for another organization's)."""
    ds = db.get(Dataset, dataset_id)
    if ds is None or ds.org_id != caller.org_id:
        raise not_found("dataset", dataset_id, param)
    return ds


class _UploadForm:
    """What a request body holds, read as it streams: the trace files (``files()`` yields them for the store,
    each behind an ``InspectingReader`` that bounds decompression), the form fields and the mapping part."""

    def __init__(self, request_pull: BodyPuller, boundary: bytes | None, filename: str | None, budget: Budget):
        self.pull, self.boundary, self.filename, self.budget = request_pull, boundary, filename, budget
        self.inspectors: list[InspectingReader] = []
        self.fields: dict[str, str] = {}
        self.mappings: list[datasets_mod.MappingFile] = []

    def _inspect(self, source: Any, filename: str | None) -> tuple[str, InspectingReader]:
        name = datasets_mod.safe_name(filename)
        self.inspectors.append(InspectingReader(source, self.budget, name))
        return name, self.inspectors[-1]

    def files(self) -> Iterator[tuple[str, InspectingReader]]:
        if self.boundary is None:
            yield self._inspect(RawBodyReader(self.pull), self.filename)
            return
        for part in MultipartStream(self.pull, self.boundary).parts():
            if part.name == "file":
                yield self._inspect(part, part.filename)
            elif part.name == "mapping":
                self.mappings.append(_read_mapping(part, given_before=bool(self.mappings)))
            elif part.name in FORM_FIELDS:
                if part.name in self.fields:
                    raise ApiError(422, "invalid_value", f"form field {part.name!r} given twice", part.name)
                self.fields[part.name] = part.read_all(MAX_FORM_FIELD_BYTES).decode("utf-8", "replace")
            else:
                raise ApiError(422, "unknown_field", f"unknown form field {part.name[:100]!r}",
                               part.name[:100] or None)


def _receive(request_pull: BodyPuller, *, multipart_boundary_: bytes | None, filename: str | None,
             query_opts: dict[str, Any], db: Any, store: ArtifactStore, settings: Settings,
             caller: Caller) -> Dataset:
    """Runs in a worker thread: stream the body into the store, create and (when small) validate the row."""
    form = _UploadForm(request_pull, multipart_boundary_, filename,
                       Budget(settings.max_decompressed_bytes, settings.max_compression_ratio))
    try:
        dataset = datasets_mod.create_dataset(db, store, caller.org_id, form.files(), options={},
                                              max_bytes=settings.max_upload_bytes, commit=False)
        _describe_upload(dataset, form, query_opts, store)
    except ArtifactError as exc:
        db.rollback()
        if exc.code == "payload_too_large":
            raise ApiError(413, "payload_too_large",
                           f"the upload exceeds the limit of {settings.max_upload_bytes} bytes", "file") from None
        raise
    except datasets_mod.DatasetError as exc:
        db.rollback()
        if exc.code == "empty_upload" and not form.inspectors:
            raise ApiError(422, "missing_field", "no `file` field in the multipart body", "file") from None
        raise
    except BaseException:
        db.rollback()
        raise
    db.commit()

    decompressed = sum(i.decompressed_size for i in form.inspectors)
    if 0 < decompressed <= settings.inline_validation_max_bytes:
        from service.api.validation import validate_dataset

        try:
            validate_dataset(db, store, dataset, settings)
        except Exception as exc:  # noqa: BLE001 - stays `validating`; a job's validate stage retries it
            db.rollback()
            log.warning("inline validation of dataset %s failed: %s", dataset.id, type(exc).__name__)
    return dataset


def _describe_upload(dataset: Dataset, form: _UploadForm, query_opts: dict[str, Any],
                     store: ArtifactStore) -> None:
    """Fill the new (uncommitted) row from the form and the query: name, options, per-file compression and
    sizes, the mapping. Raises ApiError 422 (``invalid_value``, ``format_and_mapping``, unknown format)."""
    opts = dict(query_opts)
    if "on_error" in form.fields:
        if form.fields["on_error"] not in ("skip", "fail"):
            raise ApiError(422, "invalid_value", "on_error must be skip or fail", "on_error")
        opts["on_error"] = form.fields["on_error"]
    if "format" in form.fields:
        opts["format"] = _check_format(form.fields["format"].strip())
    if form.mappings and opts.get("format"):
        raise ApiError(422, "format_and_mapping", "give a trace format or a mapping, not both: the mapping "
                       "says how to read the files", "mapping")
    if form.fields.get("name", "").strip():
        dataset.name = datasets_mod.safe_name(form.fields["name"])[:300]
    elif query_opts.get("name"):
        dataset.name = datasets_mod.safe_name(query_opts["name"])[:300]
    opts.pop("name", None)
    files = [{**f, "compression": insp.compression, "decompressed_size": insp.decompressed_size,
              **({"truncated": True} if insp.truncated else {})}
             for f, insp in zip(datasets_mod.raw_files(dataset), form.inspectors, strict=False)]
    dataset.options = {**{k: v for k, v in opts.items() if v is not None}, "files": files}
    dataset.compression = ",".join(sorted({i.compression for i in form.inspectors if i.compression})) or None
    if form.mappings:
        datasets_mod.attach_mapping(store, dataset, form.mappings[0])


def _read_mapping(part: Part, *, given_before: bool) -> datasets_mod.MappingFile:
    """The ``mapping`` part, read whole (bounded: 413) and checked at once (422 ``bad_mapping``), so a bad
    mapping sent before the files is refused before they are stored."""
    if given_before:
        raise ApiError(422, "invalid_value", "form field 'mapping' given twice: a dataset has one mapping",
                       "mapping")
    data = part.read_all(datasets_mod.MAX_MAPPING_BYTES, status=413, code="payload_too_large")
    mapping = datasets_mod.MappingFile(datasets_mod.safe_name(part.filename or "mapping"), data)
    datasets_mod.check_mapping(mapping)
    return mapping


@router.post(
    "", status_code=201, response_model=DatasetOut, openapi_extra=UPLOAD_BODY,
    responses=error_responses(400, 401, 413, 415, 422),
    summary="Upload trace files",
)
async def upload_dataset(
    request: Request,
    caller: CurrentCaller,
    db: DbSession,
    settings: AppSettings,
    store: Store,
    filename: Annotated[str | None, Query(max_length=255, description="Display name of a raw-body upload.")] = None,
    name: Annotated[str | None, Query(max_length=300)] = None,
    format: Annotated[str | None, Query(max_length=64, description="Trace format; default: detect.")] = None,
    on_error: Annotated[Literal["skip", "fail"], Query()] = "skip",
) -> DatasetOut:
    """Stream trace files into the artifact store and create a dataset.

    Small uploads (``inline_validation_max_bytes``) come back validated (``ready``/``failed`` with the
    report); larger ones stay ``validating`` until a job's validate stage runs.
    """
    metrics = request.app.state.metrics
    try:
        ctype = request.headers.get("content-type", "")
        mime = ctype.split(";", 1)[0].strip().lower()
        boundary: bytes | None = None
        if mime == "multipart/form-data":
            boundary = multipart_boundary(ctype)
            allowance = settings.max_upload_bytes + MULTIPART_OVERHEAD
        elif mime in RAW_CONTENT_TYPES:
            allowance = settings.max_upload_bytes
        else:
            raise ApiError(415, "unsupported_media_type",
                           f"Content-Type {mime or '(none)'!r} is not accepted: use multipart/form-data or the "
                           "raw file as application/octet-stream, application/jsonl, application/gzip or "
                           "application/zstd", "Content-Type")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > allowance:
            raise ApiError(413, "payload_too_large",
                           f"the upload exceeds the limit of {settings.max_upload_bytes} bytes", "file")
        query_opts = {"format": _check_format(format), "on_error": on_error, "name": name}
        pull = BodyPuller(request.stream())
        dataset = await anyio.to_thread.run_sync(
            lambda: _receive(pull, multipart_boundary_=boundary, filename=filename, query_opts=query_opts,
                             db=db, store=store, settings=settings, caller=caller)
        )
    except ApiError as exc:
        metrics.uploads_rejected.labels(exc.code).inc()
        raise
    metrics.upload_bytes.inc(dataset.size_bytes)
    log.info("dataset %s uploaded by key %s: %d bytes, status %s", dataset.id, caller.key_prefix,
             dataset.size_bytes, dataset.status)
    return dataset_out(dataset)


@router.get("", response_model=Page[DatasetOut], responses=error_responses(401, 422), summary="List datasets")
def list_datasets(
    caller: CurrentCaller,
    db: DbSession,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
    after: Annotated[str | None, Query(max_length=40, description="next_cursor of the previous page")] = None,
    status: Annotated[Literal["validating", "ready", "failed"] | None, Query()] = None,
) -> Page[DatasetOut]:
    """The organization's datasets, newest first (reports omitted: see ``/report``)."""
    q = sa.select(Dataset).where(Dataset.org_id == caller.org_id)
    if status:
        q = q.where(Dataset.status == status)
    rows, has_more, cursor = page_query(db, q, Dataset.id, after, limit)
    return Page[DatasetOut](data=[dataset_out(d, with_report=False) for d in rows], has_more=has_more,
                            next_cursor=cursor)


@router.get("/{dataset_id}", response_model=DatasetOut, responses=error_responses(401, 404, 422),
            summary="Get a dataset")
def get_dataset(dataset_id: str, caller: CurrentCaller, db: DbSession) -> DatasetOut:
    return dataset_out(get_dataset_row(db, caller, dataset_id))


@router.get("/{dataset_id}/report", response_model=DatasetReportOut, responses=error_responses(401, 404, 422),
            summary="Get a dataset's validation report")
def get_dataset_report(dataset_id: str, caller: CurrentCaller, db: DbSession) -> DatasetReportOut:
    ds = get_dataset_row(db, caller, dataset_id)
    return DatasetReportOut(id=ds.id, status=ds.status, report=ds.report, counts=dict(ds.counts or {}),
                            error=ErrorDetail(**public_error(ds.error)) if ds.error else None)


@router.delete("/{dataset_id}", response_model=DeletedOut, responses=error_responses(401, 404, 409, 422),
               summary="Delete a dataset (refused while a job uses it)")
def delete_dataset(dataset_id: str, caller: CurrentCaller, db: DbSession, store: Store) -> DeletedOut:
    datasets_mod.delete_dataset(db, store, caller.org_id, dataset_id)
    return DeletedOut(id=dataset_id, object="dataset")
