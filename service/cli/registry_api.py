"""The registry through the REST API, for the CLI: VERSION arguments resolved (numbers, ``latest``, aliases),
versions and aliases read, and a version's files downloaded, each verified against its registered sha256.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

from drafters.checksums import sha256_file
from service.cli._common import CliError
from service.cli.registry_views import parse_version


def api_aliases(client: Any, name: str) -> dict[str, Any]:
    """GET /v1/drafters/{name}/aliases -> {"data": [{alias, version, ...}], "history": [...]}."""
    return client.get(f"/v1/drafters/{name}/aliases")


def api_resolve(client: Any, name: str, version: str) -> int:
    """A VERSION argument to a number, asking the API for aliases and ``latest``."""
    n = parse_version(version)
    if n is not None:
        return n
    if version == "latest":
        versions = client.paginate(f"/v1/drafters/{name}/versions")
        if not versions:
            raise CliError("not_found", f"drafter {name!r} has no versions", where="version")
        return max(int(v["version"]) for v in versions)
    for a in api_aliases(client, name).get("data", []):
        if a.get("alias") == version:
            return int(a["version"])
    raise CliError("not_found", f"drafter {name!r} has no alias {version!r}", where="version")


def api_version(client: Any, name: str, version: int) -> dict[str, Any]:
    """GET /v1/drafters/{name}/versions/{version}: the version as the API's DrafterVersionOut dict."""
    return client.get(f"/v1/drafters/{name}/versions/{version}")


def safe_relative_path(name: str) -> Path:
    """A checkpoint file name as a relative path that stays inside the export directory."""
    p = Path(name)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise CliError("invalid_value", f"refusing file name {name!r} from the registry", where=name)
    return p


def fetch_file(client: Any, name: str, version: int, rel: str, digest: str, dest: Path) -> None:
    """Stream one checkpoint file from ``GET /v1/drafters/{name}/versions/{v}/files/{rel}`` into ``dest``,
    hashing it on the way; raises CliError ``checksum_mismatch`` when the bytes (or the server's
    ``X-Content-SHA256``) differ from the registered sha256."""
    url = f"/v1/drafters/{quote(name, safe='')}/versions/{version}/files/{quote(rel, safe='/')}"
    h = hashlib.sha256()
    with client.stream("GET", url) as r, open(dest, "wb") as out:
        announced = r.headers.get("x-content-sha256")
        if announced and announced != digest:
            raise CliError("checksum_mismatch", f"{rel}: the server announces sha256 {announced}, the registry "
                           f"lists {digest}; nothing exported", where=rel)
        for chunk in r.iter_bytes():
            h.update(chunk)
            out.write(chunk)
    if h.hexdigest() != digest:
        raise CliError("checksum_mismatch", f"{rel}: downloaded sha256 {h.hexdigest()} != registered {digest} "
                       "(altered or cut short); nothing exported", where=rel)


def download_files(client: Any, view: dict[str, Any], out_dir: Path, files: dict[str, str] | None = None, *,
              flat: bool = False) -> dict[str, str]:
    """Fetch ``files`` ({name: sha256}; default every file the version lists) into ``out_dir`` through the
    API's files route, each verified against the sha256 the registry lists (the server verifies too).
    ``flat``: write each file under its base name (``exports/draft-f32.gguf`` -> ``OUT/draft-f32.gguf``).

    All files go to a private staging directory inside ``out_dir`` first and are moved into place only
    once every one of them matched: an error (network, checksum, interruption) leaves no partial or
    unverified file behind (the staging directory is removed; so is ``out_dir`` when this call created
    it and it stayed empty). Files already present and intact are kept as they are.
    """
    files = dict(view.get("files") or {}) if files is None else dict(files)
    if not files:
        raise CliError("artifact_missing", f"version {view.get('version')} lists no files")
    name, version = view["drafter"], view["version"]
    # refuse odd names before writing anything
    targets = {rel: out_dir / (safe_relative_path(rel).name if flat else safe_relative_path(rel)) for rel in files}
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = out_dir / f".tmp-export-{uuid.uuid4().hex}"
    try:
        staged: dict[str, Path] = {}
        for rel, digest in sorted(files.items()):
            dest = targets[rel]
            if dest.is_file() and sha256_file(dest) == digest:
                continue
            tmp = staging / safe_relative_path(rel)
            tmp.parent.mkdir(parents=True, exist_ok=True)
            fetch_file(client, name, version, rel, digest, tmp)
            staged[rel] = tmp
        for rel, tmp in staged.items():
            targets[rel].parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, targets[rel])
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                out_dir.rmdir()  # only when empty
        raise
    shutil.rmtree(staging, ignore_errors=True)
    return files
