"""The wheels the offline image builds install: downloaded on the host, checked against the locks' sha256.

deploy/app/requirements.lock (the application image: torch 2.13.0 CPU and the project's closure) and
deploy/s3/requirements.lock (SeaweedFS, the S3 server) name every file by hash; ``ensure`` downloads only the
entries whose file is not in deploy/wheels/ yet, so a second run needs no network.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path

from deploy.stack.engine import REPO, run
from deploy.stack.errors import StackError

WHEELS = REPO / "deploy" / "wheels"
LOCKS = (REPO / "deploy" / "app" / "requirements.lock", REPO / "deploy" / "s3" / "requirements.lock")
#: CPython 3.11 on x86_64 glibc up to Debian 12's 2.36 (pip does not widen an explicit --platform itself).
PLATFORM = ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
            *(a for minor in range(5, 37) for a in ("--platform", f"manylinux_2_{minor}_x86_64")),
            *(a for tag in ("manylinux1", "manylinux2010", "manylinux2014") for a in ("--platform", f"{tag}_x86_64"))]
#: torch's CPU build is not on PyPI under its +cpu version: PyTorch's own index has it.
TORCH_INDEX = os.environ.get("TRACEDRAFT_TORCH_INDEX", "https://download.pytorch.org/whl/cpu")
_LINE = re.compile(r"^(?P<req>[A-Za-z0-9_.\-]+==\S+)\s+--hash=sha256:(?P<sha>[0-9a-f]{64})\s*$")


def locked(lock: Path) -> dict[str, str]:
    """sha256 -> ``name==version`` of every entry of a lock file. Raises StackError on a malformed line."""
    out = {}
    for n, line in enumerate(lock.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise StackError("build_failed", f"{lock.relative_to(REPO)}:{n}: not `name==version --hash=sha256:HEX`")
        out[m["sha"]] = m["req"]
    return out


def present() -> set[str]:
    """sha256 of every wheel already in deploy/wheels/."""
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in WHEELS.glob("*.whl")}


def ensure(log=print) -> None:
    """Download the locked wheels that deploy/wheels/ lacks (pip checks each file's sha256).
    Raises StackError ``build_failed`` naming the missing wheels and how to bring them by hand."""
    want = {sha: req for lock in LOCKS for sha, req in locked(lock).items()}
    have = present()
    missing = {sha: req for sha, req in want.items() if sha not in have}
    if not missing:
        log(f"wheels: all {len(want)} locked wheels in deploy/wheels/")
        return
    log(f"wheels: downloading {len(missing)} of {len(want)} locked wheels into deploy/wheels/")
    extra = ["--extra-index-url", TORCH_INDEX] if any(r.startswith("torch==") for r in missing.values()) else []
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.writelines(f"{req} --hash=sha256:{sha}\n" for sha, req in missing.items())
    try:
        run([sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "-d", str(WHEELS),
             *PLATFORM, *extra, "-r", f.name], timeout=3600)
    except StackError as e:
        raise StackError("build_failed", f"could not download {len(missing)} locked wheels "
                         f"({', '.join(sorted(missing.values())[:5])}...): {e.message}",
                         f"on a machine with the package index: python3 -m pip download --no-deps "
                         f"--require-hashes -d deploy/wheels -r deploy/app/requirements.lock "
                         f"--extra-index-url {TORCH_INDEX} (same for deploy/s3/requirements.lock), then copy "
                         "deploy/wheels/ here") from e
    finally:
        os.unlink(f.name)
    have = present()
    still = {sha: req for sha, req in want.items() if sha not in have}
    if still:
        raise StackError("build_failed", f"deploy/wheels/ still lacks {sorted(still.values())}",
                         "delete deploy/wheels/*.whl and run `scripts/stack build` again")
