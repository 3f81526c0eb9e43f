"""The registry's admin side as the CLI's ``promote``, ``rollback`` and ``alias history`` use it, behind one
interface (``RegistryAdmin``) with two implementations: ``ApiRegistryAdmin`` through the REST API (an admin
key), ``DbRegistryAdmin`` directly on the database (break-glass: ``--db-url`` and ``--org``; the actor is
``cli:<user>@<host>``). ``open_registry_admin`` picks one from the options, once per command. Both answer
in the API's shapes: version views (``registry_views.version_view``), alias-move dicts, alias events.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Protocol
from urllib.parse import quote

from service.cli._common import artifact_store, db_org, db_session, local_actor, make_client
from service.cli.registry_api import api_aliases, api_version
from service.cli.registry_views import version_view


class RegistryAdmin(Protocol):
    """What the alias verbs need from the registry. Errors raise TracedraftError (CliError from the API,
    RegistryError from the database) with the same stable codes: not_found, incompatible_version,
    checksum_mismatch, nothing_to_rollback, admin_required, ..."""

    def version(self, name: str, version: int) -> dict[str, Any]:
        """Version ``version`` of drafter ``name`` as a version view."""
        ...

    def alias_version(self, name: str, alias: str) -> int | None:
        """The version ``alias`` of drafter ``name`` points to; None when the drafter has no such alias."""
        ...

    def promote(self, name: str, version: int, alias: str, *, reason: str, force: bool,
                dry_run: bool = False) -> dict[str, Any]:
        """Point ``alias`` at ``version`` (checksums re-verified; a failed gate for champion and incompatible
        versions refused unless ``force``). Returns {drafter, alias, from_version, to_version, moved,
        overridden}. ``dry_run``: the permission and look-up checks only; ``overridden`` lists what would
        need ``force``; nothing moves."""
        ...

    def rollback(self, name: str, alias: str, to_version: int | None, *, reason: str,
                 force: bool, dry_run: bool = False) -> dict[str, Any]:
        """Move ``alias`` back to its previous holder, or to ``to_version``; recorded as a rollback.
        Returns the same shape as ``promote`` (``dry_run`` likewise)."""
        ...

    def alias_history(self, name: str, alias: str | None) -> list[dict[str, Any]]:
        """Every move of the drafter's aliases (only ``alias``'s when given), oldest first: {alias,
        from_version, to_version, action, actor, reason, forced, ts}."""
        ...


class ApiRegistryAdmin:
    """``RegistryAdmin`` through the REST API (``client``: an ApiClient with an admin key)."""

    def __init__(self, client: Any):
        self.client = client

    def version(self, name: str, version: int) -> dict[str, Any]:
        return api_version(self.client, name, version)

    def alias_version(self, name: str, alias: str) -> int | None:
        current = next((a for a in api_aliases(self.client, name).get("data", []) if a.get("alias") == alias),
                       None)
        return None if current is None else int(current["version"])

    def promote(self, name: str, version: int, alias: str, *, reason: str, force: bool,
                dry_run: bool = False) -> dict[str, Any]:
        return self.client.post(f"/v1/drafters/{quote(name, safe='')}/aliases/{quote(alias, safe='')}",
                                json={"version": version, "reason": reason, "force": force, "dry_run": dry_run})

    def rollback(self, name: str, alias: str, to_version: int | None, *, reason: str,
                 force: bool, dry_run: bool = False) -> dict[str, Any]:
        """``POST /v1/drafters/{name}/aliases/{alias}/rollback``: without ``to_version`` the server picks the
        previous holder from the alias history."""
        body: dict[str, Any] = {"reason": reason, "force": force, "dry_run": dry_run}
        if to_version is not None:
            body["to_version"] = to_version
        return self.client.post(f"/v1/drafters/{quote(name, safe='')}/aliases/{quote(alias, safe='')}/rollback",
                                json=body)

    def alias_history(self, name: str, alias: str | None) -> list[dict[str, Any]]:
        return [e for e in api_aliases(self.client, name).get("history") or []
                if alias is None or e.get("alias") == alias]


class DbRegistryAdmin:
    """``RegistryAdmin`` directly on the database through ``service.registry`` (``org``: the Organization
    row); alias moves re-verify checksums in the settings' artifact store."""

    def __init__(self, session: Any, org: Any):
        self.session, self.org = session, org

    def version(self, name: str, version: int) -> dict[str, Any]:
        from service import registry

        drafter = registry.get_drafter(self.session, self.org, name)
        return version_view(registry.get_version(self.session, drafter, version))

    def alias_version(self, name: str, alias: str) -> int | None:
        from service import registry

        cur = registry.get_alias(self.session, registry.get_drafter(self.session, self.org, name), alias)
        return None if cur is None else cur.version

    def promote(self, name: str, version: int, alias: str, *, reason: str, force: bool,
                dry_run: bool = False) -> dict[str, Any]:
        from service import registry

        move = registry.promote(self.session, artifact_store(), self.org, name, version, alias,
                                actor=local_actor(), reason=reason, force=force, dry_run=dry_run)
        return _move_result(name, alias, move, dry_run)

    def rollback(self, name: str, alias: str, to_version: int | None, *, reason: str,
                 force: bool, dry_run: bool = False) -> dict[str, Any]:
        from service import registry

        self.session.rollback()  # release the read snapshot before the locked move
        move = registry.rollback(self.session, artifact_store(), self.org, name, alias, to_version,
                                 actor=local_actor(), reason=reason, force=force, dry_run=dry_run)
        return _move_result(name, alias, move, dry_run)

    def alias_history(self, name: str, alias: str | None) -> list[dict[str, Any]]:
        from service import registry

        return [{"alias": e.alias, "from_version": e.from_version, "to_version": e.to_version,
                 "action": e.action, "actor": e.actor, "reason": e.reason, "forced": e.forced, "ts": e.ts}
                for e in registry.alias_history(self.session, self.org, name, alias)]


def _move_result(name: str, alias: str, move: Any, dry_run: bool) -> dict[str, Any]:
    """A ``registry.promote``/``rollback`` move (database path) as the API's alias-move answer."""
    return {"drafter": name, "alias": alias, "from_version": move.from_version, "to_version": move.to_version,
            "moved": move.moved, "overridden": move.overridden, "dry_run": dry_run}


@contextlib.contextmanager
def open_registry_admin(db_url: str | None, org: str | None, api_url: str | None,
                        api_key: str | None) -> Iterator[RegistryAdmin]:
    """The database implementation when ``db_url`` is given (``org`` required: CliError ``usage``
    otherwise, ``not_found`` for an unknown one), else the API one (CliError ``usage`` without a key).
    The session or the HTTP client is closed on exit."""
    if db_url is not None:
        with db_session(db_url) as session:
            yield DbRegistryAdmin(session, db_org(session, org))
    else:
        with make_client(api_url, api_key) as client:
            yield ApiRegistryAdmin(client)
