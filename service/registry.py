"""The drafter registry (docs/architecture.md section 4): immutable versions, aliases, history, gc.

- ``register_version``: uploads a checkpoint, then records an immutable ``DrafterVersion``; exactly once
  per job (``drafter_versions.job_id`` is UNIQUE). When the promotion gate passed, the alias
  ``challenger`` moves to the new version (actor ``system``).
- ``promote``: moves an alias (default ``champion``) after re-verifying the sha256 of every file and the
  compatibility with the alias's current holder (target model, tokenizer and chat-template hashes from
  the lineage) unless forced with a reason; ``champion`` also needs a passed promotion gate, or force with
  a reason (what was forced past is recorded in the alias event's reason). Alias moves of one drafter are serialized by a row lock on
  the drafter (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's single writer lock). Every move writes
  an ``AliasEvent``.
- ``rollback``: moves an alias back to its previous holder (replaying the history, so repeated rollbacks
  walk further back) or to a named version.
- ``resolve_ref``: ``name@champion``, ``name@v3``, ``name:3``, ``name@latest``, ``name`` (= champion).
- ``gc`` (``service.gc``): deletes store files no live row references, older than a retention.
- ``diff_versions``: what changed between two versions: first the recipe (seed included), data and score
  (``version_score``: the candidate's tau and speed-up), then config, lineage, report, files.

- derived exports (a version's llama.cpp GGUF) live in ``service/registry_exports.py``: files derived
  from a version's weights, beside its checkpoint: stored under ``<checkpoint>/exports/``, its sha256 added to the version's
  ``files`` (so the files route serves it, verified, and promotion re-verifies it) and its record (size,
  format, converter, who, when) under ``lineage["exports"][name]``. The weights never change; publishing
  the same bytes again is a no-op, different bytes under a published name are refused.

Errors: ``RegistryError`` with codes ``not_found``, ``invalid_ref``, ``invalid_value``,
``incompatible_version``, ``gate_not_passed``, ``checksum_mismatch``, ``artifact_missing``,
``reason_required``, ``nothing_to_rollback``, ``export_conflict``.

Lineage keys the compatibility check reads: ``target_model``, ``tokenizer_sha256``,
``chat_template_sha256`` (also recorded: ``target_revision``, ``job_id``, ``dataset_sha256s``,
``base_version``, ``target_layer_ids``, ``block_size``, ``code_version``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from drafters.errors import TracedraftError
from service.db.base import utcnow
from service.db.models import (
    Alias,
    AliasEvent,
    Drafter,
    DrafterVersion,
    Organization,
)
from service.db.session import lock_row
from service.gc import GcReport, gc, live_references  # noqa: F401 - gc lived here; callers import it from here
from service.storage import ArtifactError, ArtifactStore

CHAMPION = "champion"
CHALLENGER = "challenger"
COMPAT_KEYS = ("target_model", "tokenizer_sha256", "chat_template_sha256")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class RegistryError(TracedraftError):
    """A registry operation refused or failed; ``code`` is stable (see the module docstring)."""


@dataclass
class AliasMove:
    """The outcome of ``promote``/``rollback``: the alias, from which version to which (numbers),
    whether it moved (False when it already pointed there), the event written, and the compatibility
    problems that were overridden by ``force``."""

    alias: str
    from_version: int | None
    to_version: int
    moved: bool
    event: AliasEvent | None = None
    overridden: list[str] = field(default_factory=list)


def _org_id(org: Organization | str) -> str:
    return org if isinstance(org, str) else org.id


# --- lookups ----------------------------------------------------------------------------------------------


def get_drafter(session: Session, org: Organization | str, name: str) -> Drafter:
    """The drafter ``name`` of ``org``. Raises RegistryError ``not_found`` (also for another org's)."""
    drafter = session.scalars(
        sa.select(Drafter).where(Drafter.org_id == _org_id(org), Drafter.name == name)
    ).one_or_none()
    if drafter is None:
        raise RegistryError("not_found", f"no drafter {name!r}", where="drafter")
    return drafter


def list_drafters(session: Session, org: Organization | str) -> list[Drafter]:
    """Drafters of an organization, by name."""
    return list(session.scalars(sa.select(Drafter).where(Drafter.org_id == _org_id(org)).order_by(Drafter.name)))


def list_versions(session: Session, drafter: Drafter) -> list[DrafterVersion]:
    """Versions of a drafter, oldest first."""
    return list(session.scalars(
        sa.select(DrafterVersion).where(DrafterVersion.drafter_id == drafter.id).order_by(DrafterVersion.version)
    ))


def get_version(session: Session, drafter: Drafter, version: int) -> DrafterVersion:
    """Version number ``version`` of ``drafter``. Raises RegistryError ``not_found``."""
    row = session.scalars(
        sa.select(DrafterVersion).where(DrafterVersion.drafter_id == drafter.id, DrafterVersion.version == version)
    ).one_or_none()
    if row is None:
        raise RegistryError("not_found", f"drafter {drafter.name!r} has no version {version}", where="version")
    return row


def get_alias(session: Session, drafter: Drafter, alias: str, *, fresh: bool = False) -> Alias | None:
    """The alias row (or None). ``fresh`` re-reads it from the database, bypassing the session cache."""
    q = sa.select(Alias).where(Alias.drafter_id == drafter.id, Alias.name == alias)
    if fresh:
        q = q.execution_options(populate_existing=True)
    return session.scalars(q).one_or_none()


def list_aliases(session: Session, drafter: Drafter) -> dict[str, int]:
    """``{alias name: version number}`` of a drafter."""
    rows = session.execute(
        sa.select(Alias.name, DrafterVersion.version)
        .join(DrafterVersion, Alias.version_id == DrafterVersion.id)
        .where(Alias.drafter_id == drafter.id)
        .order_by(Alias.name)
    )
    return {name: version for name, version in rows}


_REF_RE = re.compile(r"^(?P<name>[^@:\s]+)(?:@(?P<tag>[^@:\s]+)|:(?P<num>\d+))?$")


def resolve_ref(session: Session, org: Organization | str, ref: str) -> DrafterVersion:
    """Resolve a registry reference to a version.

    Forms: ``name@alias`` (e.g. ``qwen3-4b@champion``), ``name@v3``, ``name:3``, ``name@latest`` (highest
    version) and ``name`` (its champion). Raises RegistryError ``invalid_ref`` for a malformed reference,
    ``not_found`` for an unknown drafter, version or alias.
    """
    m = _REF_RE.match(ref.strip()) if isinstance(ref, str) else None
    if m is None:
        raise RegistryError("invalid_ref", f"invalid drafter reference {ref!r}; expected name@alias, "
                            "name@v3 or name:3", where="ref")
    drafter = get_drafter(session, org, m["name"])
    if m["num"] is not None:
        return get_version(session, drafter, int(m["num"]))
    tag = m["tag"] or CHAMPION
    if re.fullmatch(r"v\d+", tag):
        return get_version(session, drafter, int(tag[1:]))
    if tag == "latest":
        versions = list_versions(session, drafter)
        if not versions:
            raise RegistryError("not_found", f"drafter {drafter.name!r} has no versions", where="ref")
        return versions[-1]
    alias = get_alias(session, drafter, tag)
    if alias is None:
        raise RegistryError("not_found", f"drafter {drafter.name!r} has no alias {tag!r}", where="ref")
    return alias.drafter_version


# --- registration -----------------------------------------------------------------------------------------


def _existing_for_job(session: Session, job_id: str | None, org_id: str) -> DrafterVersion | None:
    if job_id is None:
        return None
    row = session.scalars(
        sa.select(DrafterVersion).where(DrafterVersion.job_id == job_id).execution_options(populate_existing=True)
    ).one_or_none()
    if row is not None and row.drafter.org_id != org_id:
        raise RegistryError("invalid_value", f"job {job_id} belongs to another organization", where="job_id")
    return row


def _get_or_create_drafter(session: Session, org_id: str, name: str, target_model: str) -> Drafter:
    q = sa.select(Drafter).where(Drafter.org_id == org_id, Drafter.name == name)
    drafter = session.scalars(q).one_or_none()
    if drafter is None:
        drafter = Drafter(org_id=org_id, name=name, target_model=target_model)
        session.add(drafter)
        try:
            session.commit()  # its own short transaction, so a concurrent creator just loses the race
        except IntegrityError:
            session.rollback()
            drafter = session.scalars(q).one()
    if drafter.target_model != target_model:
        raise RegistryError(
            "incompatible_version",
            f"drafter {name!r} is registered for target {drafter.target_model!r}, not {target_model!r}; "
            "use another drafter name for another target",
            where="target_model",
        )
    return drafter


def _upload_checkpoint(
    store: ArtifactStore, prefix: str, source: str | Path, source_files: Mapping[str, str] | None
) -> tuple[str, dict[str, str], int]:
    """Upload a checkpoint to ``prefix``; returns (uri, {file: sha256}, total bytes)."""
    if source_files is None:
        src = Path(source)
        if not src.is_dir():
            raise RegistryError("artifact_missing", f"checkpoint directory {src} does not exist", where=str(src))
        uri, files = store.put_dir(prefix, src)
        if not files:
            raise RegistryError("invalid_value", f"checkpoint directory {src} is empty", where=str(src))
        size = sum((src / name).stat().st_size for name in files)
        return uri, files, size
    # The checkpoint already lies in the store (e.g. a gpu worker uploaded it under jobs/<id>/):
    # copy it under the version's prefix, verifying every file on the way.
    src_key = store.key(str(source))
    files, size = {}, 0
    for name, digest in sorted(source_files.items()):
        try:
            stored = store.copy(f"{src_key}/{name}", f"{prefix}/{name}", digest)
        except ArtifactError as e:
            raise as_registry_error(e) from e
        files[name] = stored.sha256
        size += stored.size
    return store.uri(prefix), files, size


def register_version(
    session: Session,
    store: ArtifactStore,
    org: Organization | str,
    drafter_name: str,
    target_model: str,
    job_id: str | None,
    checkpoint_dir: str | Path,
    config: Mapping[str, Any],
    lineage: Mapping[str, Any],
    report: Mapping[str, Any] | None = None,
    gate: Mapping[str, Any] | None = None,
    *,
    checkpoint_files: Mapping[str, str] | None = None,
    report_dir: str | Path | None = None,
    actor: str = "system",
    auto_promote: bool = False,
) -> DrafterVersion:
    """Register an immutable version of ``drafter_name`` (created on first use) from a checkpoint.

    ``checkpoint_dir`` is a local directory, or, with ``checkpoint_files`` ({name: sha256}), a URI/key in
    ``store`` whose files are copied and verified. ``report_dir`` (optional, local) holds the rendered report
    (HTML, plots). Files are uploaded first under ``drafters/<org>/<name>/<job id>/``, then the row is
    committed: a failure leaves at most unreferenced files (``gc`` removes them), never a partial entry.

    Commits (it is a unit of work; the drafter row is created in its own short transaction first).
    Idempotent by ``job_id``: a second call for the same job returns the first version and writes nothing.
    When ``gate["passed"]`` the alias ``challenger`` moves to the new version (actor ``system``); with
    ``auto_promote`` too, ``champion`` moves as well (checked like ``promote``). Raises RegistryError
    ``invalid_value`` (bad name, empty checkpoint), ``incompatible_version`` (the drafter serves another
    target), ``artifact_missing`` / ``checksum_mismatch`` (a bad source checkpoint).
    """
    org_id = _org_id(org)
    if not isinstance(drafter_name, str) or not NAME_RE.match(drafter_name):
        raise RegistryError("invalid_value", f"invalid drafter name {drafter_name!r}: use letters, digits, "
                            "'.', '_' and '-' (at most 100 characters)", where="drafter_name")
    existing = _existing_for_job(session, job_id, org_id)
    if existing is not None:
        return existing

    lineage = {**dict(lineage), "job_id": job_id}
    lineage.setdefault("target_model", target_model)
    # Deterministic prefix: a retried registration of the same job rewrites the same files.
    slot = job_id or "manual-" + hashlib.sha256(
        json.dumps([dict(config), lineage], sort_keys=True, default=str).encode()
    ).hexdigest()[:16]
    prefix = f"drafters/{org_id}/{drafter_name}/{slot}"
    checkpoint_uri, files, size = _upload_checkpoint(store, f"{prefix}/checkpoint", checkpoint_dir,
                                                     checkpoint_files)
    report_uri, report_files = None, {}
    if report_dir is not None:
        report_uri, report_files = store.put_dir(f"{prefix}/report", report_dir)

    drafter = _get_or_create_drafter(session, org_id, drafter_name, target_model)
    drafter = lock_row(session, Drafter, drafter.id)
    existing = _existing_for_job(session, job_id, org_id)  # a concurrent registration may have won
    if existing is not None:
        session.rollback()
        return existing
    last = session.scalar(sa.select(sa.func.max(DrafterVersion.version)).where(DrafterVersion.drafter_id == drafter.id))
    version = DrafterVersion(
        drafter_id=drafter.id,
        version=(last or 0) + 1,
        job_id=job_id,
        checkpoint_uri=checkpoint_uri,
        files=files,
        size_bytes=size,
        config=dict(config),
        lineage=lineage,
        report=dict(report) if report is not None else None,
        report_uri=report_uri,
        report_files=report_files,
        gate=dict(gate) if gate is not None else None,
        created_by=actor,
    )
    session.add(version)
    try:
        session.flush()
        if gate is not None and gate.get("passed"):
            _move_alias(session, drafter, CHALLENGER, version, actor="system", action="register",
                        reason=f"gate passed for job {job_id}", forced=False)
            if auto_promote:
                current = get_alias(session, drafter, CHAMPION, fresh=True)
                problems = compatibility(version, current.drafter_version) if current else []
                if not problems:
                    _move_alias(session, drafter, CHAMPION, version, actor="system", action="promote",
                                reason=f"auto-promotion: gate passed for job {job_id}", forced=False)
        session.commit()
    except IntegrityError:
        session.rollback()
        existing = _existing_for_job(session, job_id, org_id)
        if existing is None:
            raise
        return existing
    return version


# --- alias moves ------------------------------------------------------------------------------------------


def compatibility(candidate: DrafterVersion, holder: DrafterVersion) -> list[str]:
    """Why ``candidate`` cannot replace ``holder`` behind an alias (empty list: compatible).

    Compares the lineage's target model, tokenizer hash and chat-template hash; a value missing on one
    side counts as a mismatch (compatibility cannot be shown).
    """
    problems = []
    for key in COMPAT_KEYS:
        a, b = candidate.lineage.get(key), holder.lineage.get(key)
        if key == "target_model":
            a = a or candidate.drafter.target_model
            b = b or holder.drafter.target_model
        if a != b:
            problems.append(f"{key} differs: v{candidate.version} has {a!r}, v{holder.version} has {b!r}")
    return problems


def as_registry_error(e: ArtifactError) -> RegistryError:
    code = "checksum_mismatch" if e.code == "artifact_corrupt" else e.code
    return RegistryError(code, e.message, where=e.where)


def verify_version(store: ArtifactStore, version: DrafterVersion) -> None:
    """Re-hash every checkpoint file of ``version``. Raises RegistryError ``checksum_mismatch`` (a file
    was altered or truncated) or ``artifact_missing``, naming the files."""
    if not version.files:
        raise RegistryError("artifact_missing", f"version {version.version} lists no files",
                            where=version.checkpoint_uri)
    try:
        store.verify_dir(version.checkpoint_uri, version.files)
    except ArtifactError as e:
        raise as_registry_error(e) from e


def _move_alias(
    session: Session, drafter: Drafter, alias: str, version: DrafterVersion, *, actor: str, action: str,
    reason: str, forced: bool,
) -> tuple[int | None, AliasEvent | None]:
    row = get_alias(session, drafter, alias, fresh=True)
    previous = row.drafter_version.version if row is not None else None
    if row is not None and row.version_id == version.id:
        return previous, None
    if row is None:
        session.add(Alias(drafter_id=drafter.id, name=alias, drafter_version=version))
    else:
        row.drafter_version = version  # the relationship, so row.version is right after the move
        row.updated_at = utcnow()
    event = AliasEvent(drafter_id=drafter.id, alias=alias, from_version=previous, to_version=version.version,
                       action=action, actor=actor, reason=reason, forced=forced)
    session.add(event)
    session.flush()
    return previous, event


def _check_alias_name(alias: str) -> None:
    if not isinstance(alias, str) or not NAME_RE.match(alias) or re.fullmatch(r"v\d+|latest", alias):
        raise RegistryError("invalid_value", f"invalid alias name {alias!r}", where="alias")


def promotion_problems(candidate: DrafterVersion, alias: str, holder: DrafterVersion | None) -> list[str]:
    """What stands between ``candidate`` and ``alias`` (empty: nothing): for ``champion`` a promotion gate
    that did not pass (or was never run), then the incompatibilities with the current ``holder``."""
    problems = []
    if alias == CHAMPION and not (candidate.gate or {}).get("passed"):
        why = "; ".join(str(r) for r in ((candidate.gate or {}).get("reasons") or [])[:2])
        problems.append(f"gate not passed for v{candidate.version}" + (f": {why}" if why else " (no gate decision "
                        "recorded)"))
    if holder is not None and holder.id != candidate.id:
        problems += compatibility(candidate, holder)
    return problems


def refusal(version: int, alias: str, problems: list[str]) -> RegistryError:
    """The error of a promotion refused for ``problems``: ``gate_not_passed`` when the gate is among them,
    else ``incompatible_version``."""
    gate_failed = problems[0].startswith("gate not passed")
    code = "gate_not_passed" if gate_failed else "incompatible_version"
    head = (f"v{version} cannot become {alias} without force" if gate_failed
            else f"v{version} is not compatible with {alias}")
    return RegistryError(code, f"{head}: " + "; ".join(problems) + ". Use force with a reason to override.",
                         where="version")


def promote(
    session: Session,
    store: ArtifactStore,
    org: Organization | str,
    drafter_name: str,
    version: int,
    alias: str = CHAMPION,
    *,
    actor: str,
    reason: str = "",
    force: bool = False,
    dry_run: bool = False,
) -> AliasMove:
    """Point ``alias`` of ``drafter_name`` at ``version`` and record who, when and why.

    Steps: re-verify every file's sha256 (never skipped, even with ``force``); lock the drafter row so
    concurrent moves of its aliases run one after the other; check ``promotion_problems`` (for champion, a
    passed gate; compatibility with the alias's current holder) and refuse unless ``force`` with a non-empty
    ``reason``; move the alias and write an ``AliasEvent`` (``forced`` and the problems forced past in its
    reason); commit. Pointing an alias where it already points is a no-op (``moved=False``).

    ``dry_run``: only the look-ups and checks, nothing verified, moved or raised for the problems; the
    returned move has ``moved=False`` and the problems that need force in ``overridden``.

    Raises RegistryError ``not_found``, ``checksum_mismatch``, ``artifact_missing``, ``gate_not_passed``,
    ``incompatible_version``, ``reason_required``, ``invalid_value``.
    """
    _check_alias_name(alias)
    if force and not reason.strip():
        raise RegistryError("reason_required", "a forced promotion needs a reason", where="reason")
    drafter = get_drafter(session, org, drafter_name)
    target = get_version(session, drafter, version)
    if dry_run:
        current = get_alias(session, drafter, alias)
        holder = current.drafter_version if current is not None else None
        already = holder is not None and holder.id == target.id
        return AliasMove(alias, holder.version if holder else None, version, moved=False,
                         overridden=[] if already else promotion_problems(target, alias, holder))
    verify_version(store, target)  # outside the lock: hashing GBs must not block other admins

    drafter = lock_row(session, Drafter, drafter.id)
    try:
        current = get_alias(session, drafter, alias, fresh=True)
        if current is not None and current.version_id == target.id:
            session.rollback()
            return AliasMove(alias, version, version, moved=False)
        problems = promotion_problems(target, alias, current.drafter_version if current is not None else None)
        if problems and not force:
            raise refusal(version, alias, problems)
        recorded = reason + ("" if not problems else " [forced past: " + "; ".join(problems) + "]")
        previous, event = _move_alias(session, drafter, alias, target, actor=actor, action="promote",
                                      reason=recorded, forced=bool(problems))
        session.commit()
    except BaseException:
        session.rollback()
        raise
    return AliasMove(alias, previous, version, moved=True, event=event, overridden=problems)


def _effective_stack(events: list[AliasEvent]) -> list[int]:
    """The alias's holders as a stack: a promotion pushes, a rollback pops back to its target."""
    stack: list[int] = []
    for ev in events:
        if ev.action == "rollback" and ev.to_version in stack:
            while stack and stack[-1] != ev.to_version:
                stack.pop()
        else:
            stack.append(ev.to_version)
    return stack


def rollback(
    session: Session,
    store: ArtifactStore,
    org: Organization | str,
    drafter_name: str,
    alias: str = CHAMPION,
    to_version: int | None = None,
    *,
    actor: str,
    reason: str = "",
    force: bool = False,
    dry_run: bool = False,
) -> AliasMove:
    """Move ``alias`` back to its previous holder (from the history; repeated rollbacks walk further back)
    or to ``to_version``.

    The target's files are re-verified. A previous holder is accepted without the other checks (it already
    held the alias); an explicit ``to_version`` that never held it is checked like ``promote``
    (``promotion_problems``). ``dry_run``: the move it would make (``moved=False``), nothing verified or
    moved. Raises RegistryError ``nothing_to_rollback`` (no alias or no earlier holder), plus the errors of
    ``promote``.
    """
    drafter = get_drafter(session, org, drafter_name)
    drafter = lock_row(session, Drafter, drafter.id)
    try:
        current = get_alias(session, drafter, alias, fresh=True)
        if current is None:
            raise RegistryError("nothing_to_rollback", f"drafter {drafter_name!r} has no alias {alias!r}",
                                where="alias")
        history = _events(session, drafter.id, alias)
        stack = _effective_stack(history)
        if to_version is None:
            if len(stack) < 2:
                raise RegistryError("nothing_to_rollback",
                                    f"{alias} of {drafter_name!r} has no earlier holder", where="alias")
            to_version = stack[-2]
        target = get_version(session, drafter, to_version)
        held_before = any(ev.to_version == to_version for ev in history)
        problems = [] if held_before else promotion_problems(target, alias, current.drafter_version)
        if target.id == current.version_id or dry_run:
            holder = current.drafter_version.version
            session.rollback()
            return AliasMove(alias, holder, to_version, moved=False, overridden=problems)
        verify_version(store, target)
        if problems and not force:
            err = refusal(to_version, alias, problems)
            raise RegistryError(err.code, f"v{to_version} never held {alias}; " + err.message, where="to_version")
        if problems and not reason.strip():
            raise RegistryError("reason_required", "a forced rollback needs a reason", where="reason")
        previous, event = _move_alias(session, drafter, alias, target, actor=actor, action="rollback",
                                      reason=reason, forced=bool(problems))
        session.commit()
    except BaseException:
        session.rollback()
        raise
    return AliasMove(alias, previous, to_version, moved=True, event=event, overridden=problems)


def _events(session: Session, drafter_id: str, alias: str | None) -> list[AliasEvent]:
    q = sa.select(AliasEvent).where(AliasEvent.drafter_id == drafter_id)
    if alias is not None:
        q = q.where(AliasEvent.alias == alias)
    return list(session.scalars(q.order_by(AliasEvent.id)))


def alias_history(
    session: Session, org: Organization | str, drafter_name: str, alias: str | None = None
) -> list[AliasEvent]:
    """Every move of ``alias`` (or of all aliases) of the drafter, oldest first."""
    drafter = get_drafter(session, org, drafter_name)
    return _events(session, drafter.id, alias)


# --- comparison -------------------------------------------------------------------------------------------


def _flatten(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(obj, Mapping) and obj:
        for k in sorted(obj, key=str):
            yield from _flatten(obj[k], f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, obj


def _diff_maps(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, list[Any]]:
    fa, fb = dict(_flatten(a or {})), dict(_flatten(b or {}))
    return {k: [fa.get(k), fb.get(k)] for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)}


def version_score(report: Mapping[str, Any] | None, gate: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A version's headline: ``{"tau", "speedup_vs_plain", "gate"}``: the candidate's accepted length per
    verification round (tau) and its speed-up over the target alone (the report's
    ``proposers["candidate"]["speedup_vs_plain"]``; None when the report did not measure it), and the gate's
    verdict (True/False; None when no gate ran). Reports without ``proposers`` (a bare ``tau`` number or
    ``{"candidate": tau}``) give their tau; missing or odd fields give None, never an error."""
    rep = report if isinstance(report, Mapping) else {}
    proposers = rep.get("proposers") if isinstance(rep.get("proposers"), Mapping) else {}
    name = ((gate or {}).get("details") or {}).get("candidate") or "candidate"
    entry = proposers.get(name) if isinstance(proposers.get(name), Mapping) else {}
    tau = entry.get("tau") if entry else rep.get("tau")
    if isinstance(tau, Mapping):
        tau = tau.get("candidate")
    speed = entry.get("speedup_vs_plain") if entry else rep.get("speedup_vs_plain")
    number = (int, float)
    return {"tau": tau if isinstance(tau, number) else None,
            "speedup_vs_plain": speed if isinstance(speed, number) else None,
            "gate": None if not gate else bool(gate.get("passed"))}


def _data_of(v: Any) -> dict[str, Any]:
    """The data a version was trained on, as the lineage records it (both spellings of the key)."""
    lin = v.lineage or {}
    return {"dataset_sha256": lin.get("dataset_sha256", lin.get("dataset_sha256s"))}


def diff_versions(v1: DrafterVersion, v2: DrafterVersion) -> dict[str, Any]:
    """Differences between two versions, headline first: ``"recipe"`` (the training recipe the lineage
    records, seed included), ``"data"`` (the dataset hashes) and ``"score"`` (``version_score``), then
    ``"config"|"lineage"|"report"|"gate"``, each ``{dotted.key: [v1, v2]}`` (dotted keys flatten nested dicts),
    and ``"files": {"added": [...], "removed": [...], "changed": [...]}``."""
    f1, f2 = v1.files or {}, v2.files or {}
    return {
        "from": v1.version,
        "to": v2.version,
        "recipe": _diff_maps((v1.lineage or {}).get("recipe"), (v2.lineage or {}).get("recipe")),
        "data": _diff_maps(_data_of(v1), _data_of(v2)),
        "score": _diff_maps(version_score(v1.report, v1.gate), version_score(v2.report, v2.gate)),
        "config": _diff_maps(v1.config, v2.config),
        "lineage": _diff_maps(v1.lineage, v2.lineage),
        "report": _diff_maps(v1.report, v2.report),
        "gate": _diff_maps(v1.gate, v2.gate),
        "files": {
            "added": sorted(set(f2) - set(f1)),
            "removed": sorted(set(f1) - set(f2)),
            "changed": sorted(k for k in set(f1) & set(f2) if f1[k] != f2[k]),
        },
    }
