"""Organizations and API keys.

A key is ``td_`` + 43 characters of base64url from 32 random bytes (256 bits), shown once at creation.
Only its hash is stored: HMAC-SHA256 keyed by ``settings.api_key_pepper`` (plain SHA-256 when the pepper
is empty; either is safe for high-entropy keys, the pepper additionally makes a leaked table useless
without the server secret). The first 12 characters (``prefix``) are stored in clear to identify a key
in listings and logs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from drafters.errors import TracedraftError
from service.db.base import utcnow
from service.db.models import ApiKey, Organization, Role

KEY_PREFIX = "td_"
VISIBLE_PREFIX_LEN = 12
LAST_USED_RESOLUTION = dt.timedelta(seconds=60)  # write last_used_at at most once a minute per key


class AuthError(TracedraftError):
    """Codes: ``not_found``, ``already_exists``, ``invalid_value``."""


def hash_api_key(plaintext: str, pepper: str | None = None) -> str:
    """Hex digest stored for a key: HMAC-SHA256(pepper, key), or SHA-256(key) with an empty pepper."""
    if pepper is None:
        from service.settings import get_settings

        pepper = get_settings().api_key_pepper
    data = plaintext.encode("utf-8")
    if pepper:
        return hmac.new(pepper.encode("utf-8"), data, hashlib.sha256).hexdigest()
    return hashlib.sha256(data).hexdigest()


def create_org(session: Session, name: str, *, commit: bool = True) -> Organization:
    """Create an organization. Raises AuthError ``already_exists`` when the name is taken."""
    name = name.strip()
    if not name:
        raise AuthError("invalid_value", "organization name is empty", where="name")
    if session.scalars(sa.select(Organization).where(Organization.name == name)).first() is not None:
        raise AuthError("already_exists", f"organization {name!r} already exists", where="name")
    org = Organization(name=name)
    session.add(org)
    try:
        session.commit() if commit else session.flush()
    except IntegrityError:
        session.rollback()
        raise AuthError("already_exists", f"organization {name!r} already exists", where="name") from None
    return org


def get_org(session: Session, id_or_name: str) -> Organization:
    """The organization with this id or name. Raises AuthError ``not_found``."""
    org = session.get(Organization, id_or_name) or session.scalars(
        sa.select(Organization).where(Organization.name == id_or_name)
    ).first()
    if org is None:
        raise AuthError("not_found", f"no organization {id_or_name!r}", where="org")
    return org


def create_api_key(
    session: Session,
    org: Organization | str,
    name: str = "",
    role: Role | str = Role.member,
    *,
    commit: bool = True,
) -> tuple[str, ApiKey]:
    """Create a key for ``org``; returns (plaintext, row). The plaintext is never stored: show it once.

    Raises AuthError ``invalid_value`` for an unknown role.
    """
    try:
        role = Role(role)
    except ValueError:
        raise AuthError("invalid_value", f"role must be one of {[r.value for r in Role]}", "role") from None
    org_id = org if isinstance(org, str) else org.id
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(org_id=org_id, name=name, role=role, prefix=plaintext[:VISIBLE_PREFIX_LEN],
                 key_hash=hash_api_key(plaintext))
    session.add(key)
    session.commit() if commit else session.flush()
    return plaintext, key


def verify_api_key(session: Session, plaintext: str | None, *, touch: bool = True) -> ApiKey | None:
    """The active key row for ``plaintext``, or None (unknown, malformed or revoked).

    The lookup is by hash (so timing reveals nothing about stored keys) and the digest is compared again
    with ``hmac.compare_digest``. With ``touch``, ``last_used_at`` is updated (at most once a minute,
    committed) so busy keys do not write on every request.
    """
    if not plaintext or not plaintext.startswith(KEY_PREFIX) or len(plaintext) > 200:
        return None
    digest = hash_api_key(plaintext)
    key = session.scalars(sa.select(ApiKey).where(ApiKey.key_hash == digest)).first()
    if key is None or not hmac.compare_digest(key.key_hash, digest) or key.revoked_at is not None:
        return None
    if touch:
        now = utcnow()
        if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
            session.execute(sa.update(ApiKey).where(ApiKey.id == key.id).values(last_used_at=now)
                            .execution_options(synchronize_session=False))
            session.commit()
            key.last_used_at = now
    return key


def list_api_keys(session: Session, org: Organization | str, *, include_revoked: bool = False) -> list[ApiKey]:
    """Keys of an organization, oldest first (rows carry the prefix only, never the key)."""
    org_id = org if isinstance(org, str) else org.id
    q = sa.select(ApiKey).where(ApiKey.org_id == org_id).order_by(ApiKey.created_at, ApiKey.id)
    if not include_revoked:
        q = q.where(ApiKey.revoked_at.is_(None))
    return list(session.scalars(q))


def revoke_api_key(session: Session, key_id_or_prefix: str, org: Organization | str | None = None,
                   *, commit: bool = True) -> ApiKey:
    """Revoke a key by id or visible prefix (scoped to ``org`` when given). Idempotent.

    Raises AuthError ``not_found`` (also for a key of another organization).
    """
    q = sa.select(ApiKey).where(sa.or_(ApiKey.id == key_id_or_prefix, ApiKey.prefix == key_id_or_prefix))
    if org is not None:
        q = q.where(ApiKey.org_id == (org if isinstance(org, str) else org.id))
    keys = list(session.scalars(q))
    if len(keys) != 1:
        raise AuthError("not_found", f"no single API key {key_id_or_prefix!r}", where="key")
    key = keys[0]
    if key.revoked_at is None:
        key.revoked_at = utcnow()
    session.commit() if commit else session.flush()
    return key
