"""What a job may make a worker load or call: the target allow-list, the SGLang endpoint hosts, the base drafter.

``target.model`` is loaded by a worker (``drafters.target.load_target``: the special spec
``smollm2-135m-instruct``, a ``.gguf`` file, a local model directory, or a HF id from the local cache), and
``target.sglang.endpoint`` is called by a worker. A tenant must not make a worker read an arbitrary file or
call an arbitrary URL, so both are checked against the operator's settings twice: by ``POST /v1/jobs``
(``service/api/routers/jobs.py``, refusing with 422) and by the worker before every stage
(``check_job_spec``, failing the job), because the operator may tighten the lists while jobs wait in the
queue, and a worker's disk is the one whose symlinks matter:

- ``allowed_targets``: exact specs / HF ids, or glob patterns (``fnmatch.fnmatchcase``) matched against
  id-like specs only (``org/name`` made of letters, digits, ``.``, ``_``, ``-``; never a path).
- ``allowed_target_dirs``: an absolute local path (a directory or a ``.gguf``) is allowed when, normalized
  lexically, it lies under one of them (``..`` segments are refused outright; when the path exists on the
  API's machine its real path, symlinks followed, must lie under the real path of the same directory).
  Relative paths and ``~`` are refused: they would resolve against the worker's working directory or home.
- ``allowed_sglang_hosts``: the endpoint's host (case-insensitive, IPv6 brackets dropped).
- ``remote_code_targets``: the targets that may load with ``trust_remote_code`` (their repository's Python
  code runs on the worker), exact entries or globs; none by default.

- ``base_drafter``: a registry reference only (``name@alias``, ``name@v3``, ``name:3``), never a path.

Refusals are ``TracedraftError("target_not_allowed" | "endpoint_not_allowed" | "base_drafter_not_allowed",
..., where=<field path>)``; the API answers them with 422. The embedded ``tracedraft run`` is the operator's
own process and turns the worker check off (``Settings.enforce_job_policy``).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from typing import Any
from urllib.parse import urlsplit

from drafters.errors import TracedraftError
from service.settings import Settings

#: A HF hub id or a bare spec name: ``name`` or ``org/name`` (no path syntax).
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_GLOB_CHARS = set("*?[")


def _is_id_like(spec: str) -> bool:
    return bool(_ID_RE.match(spec)) and ".." not in spec and not spec.lower().endswith(".gguf")


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _path_allowed(spec: str, dirs: list[str]) -> bool:
    """Whether the absolute path ``spec`` lies under one of ``dirs`` (lexically and, where the path exists
    here, after following symlinks)."""
    if not spec.startswith("/") or "\\" in spec or "\x00" in spec:
        return False
    if ".." in spec.split("/"):
        return False
    norm = posixpath.normpath(spec)
    for d in dirs:
        if not d.startswith("/"):
            continue  # a relative allowed dir would depend on the worker's cwd: ignored
        base = posixpath.normpath(d)
        if not _under(norm, base):
            continue
        if os.path.lexists(norm):
            real, real_base = os.path.realpath(norm), os.path.realpath(base)
            if not _under(real, real_base):
                continue  # a symlink pointing out of the allowed directory
        return True
    return False


def _listed(model: str, patterns: list[str], dirs: list[str]) -> bool:
    """Whether ``model`` is an exact entry of ``patterns``, an id-like spec matching one of its globs, or an
    absolute path under one of ``dirs``."""
    if model in patterns:
        return True
    if _is_id_like(model):
        return any(_GLOB_CHARS & set(p) and fnmatch.fnmatchcase(model, p) for p in patterns)
    return _path_allowed(model, dirs)


def check_target(model: str, settings: Settings, param: str = "target.model") -> None:
    """Refuse a target spec the operator did not allow.

    Allowed: an exact entry of ``settings.allowed_targets``; an id-like spec matching one of its glob
    patterns; an absolute path under ``settings.allowed_target_dirs``. Raises TracedraftError
    ``target_not_allowed`` (where ``param``) otherwise.
    """
    allowed = list(settings.allowed_targets or [])
    if _listed(model, allowed, list(settings.allowed_target_dirs or [])):
        return
    shown = ", ".join(allowed[:10]) + (" ..." if len(allowed) > 10 else "")
    kind = "target" if _is_id_like(model) else "local target path"
    raise TracedraftError(
        "target_not_allowed",
        f"{kind} {model[:200]!r} is not allowed on this server; allowed targets: {shown or '(none)'}"
        + ("" if _is_id_like(model) else "; local paths must be absolute and lie under a directory the "
           "operator allowed (TRACEDRAFT_ALLOWED_TARGET_DIRS)"),
        where=param,
    )


def check_remote_code(model: str, trust_remote_code: bool, settings: Settings,
                      param: str = "target.trust_remote_code") -> None:
    """Refuse ``trust_remote_code`` for a target the operator did not vet: it runs the Python files of the
    model's repository on the worker (Kimi-K2's tokenizer is such code). Allowed when ``model`` is an exact
    entry or matches a glob of ``settings.remote_code_targets`` (paths: exact entries only). Raises
    TracedraftError ``remote_code_not_allowed`` (where ``param``)."""
    allowed = list(settings.remote_code_targets or [])
    if not trust_remote_code or _listed(model, allowed, []):
        return
    raise TracedraftError(
        "remote_code_not_allowed",
        f"target {model[:200]!r} may not run its repository's own code on this server (trust_remote_code); "
        "the operator allows it per target in TRACEDRAFT_REMOTE_CODE_TARGETS",
        where=param,
    )


def check_sglang_endpoint(host: str | None, settings: Settings, param: str = "target.sglang.endpoint") -> None:
    """Refuse an SGLang endpoint whose host is not in ``settings.allowed_sglang_hosts``.

    ``host`` is the parsed URL's host (pydantic ``HttpUrl.host``). Raises TracedraftError
    ``endpoint_not_allowed`` (where ``param``).
    """
    allowed = {h.strip().lower().strip("[]") for h in settings.allowed_sglang_hosts or []}
    h = (host or "").strip().lower().strip("[]").rstrip(".")
    if h and h in allowed:
        return
    raise TracedraftError(
        "endpoint_not_allowed",
        f"SGLang endpoint host {h[:100]!r} is not allowed on this server; allowed hosts: "
        f"{', '.join(sorted(allowed)) or '(none)'}",
        where=param,
    )


def check_base_drafter_ref(ref: str | None, param: str = "base_drafter") -> None:
    """Refuse a base drafter that is not a registry reference: a path would be read on the worker's disk,
    where other organizations' artifacts may lie. Raises TracedraftError ``base_drafter_not_allowed``."""
    if ref and ("/" in ref or "\\" in ref or "://" in ref or ref.startswith("~")):
        raise TracedraftError("base_drafter_not_allowed", "base_drafter must be a registry reference such as "
                              "name@champion, name@v3 or name:3", where=param)


def check_job_spec(spec: dict[str, Any], settings: Settings) -> None:
    """Apply every rule above to a stored job spec (``job.spec``), as a worker does before each stage.

    Raises TracedraftError ``target_not_allowed`` / ``remote_code_not_allowed`` / ``endpoint_not_allowed`` /
    ``base_drafter_not_allowed``.
    """
    target = spec.get("target") or {}
    check_target(str(target.get("model") or ""), settings)
    check_remote_code(str(target.get("model") or ""), bool(target.get("trust_remote_code")), settings)
    endpoint = (target.get("sglang") or {}).get("endpoint")
    if endpoint:
        check_sglang_endpoint(urlsplit(str(endpoint)).hostname, settings)
    regen_endpoint = ((spec.get("data") or {}).get("regeneration") or {}).get("endpoint")
    if regen_endpoint:
        check_sglang_endpoint(urlsplit(str(regen_endpoint)).hostname, settings, "data.regeneration.endpoint")
    check_base_drafter_ref(spec.get("base_drafter"))
