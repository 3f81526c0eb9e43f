"""The no-registry stack's images, built here: a Debian 12 base made with debootstrap, then PostgreSQL and
Redis from Debian's packages, SeaweedFS's S3 server, and the application from the locked wheels (Dockerfile).

Each image carries the label ``tracedraft.recipe``: a hash of the files it is built from. An image whose
label matches is not rebuilt, so a second `scripts/stack up` starts in seconds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from deploy.stack import wheels
from deploy.stack.engine import REPO, STATE, Engine, deadline_s
from deploy.stack.errors import StackError

BASE_REPO = "localhost/tracedraft-debian"
SUITE = "bookworm"
APP_SOURCES = ("Dockerfile", "pyproject.toml", "deploy/app/requirements.lock", "drafters", "service",
               "workers", "migrations")


@dataclass(frozen=True)
class Image:
    """One image of the stack: its pinned tag (what deploy/compose.local.yml names), its build file and the
    repository paths its content comes from."""

    tag: str
    containerfile: str
    sources: tuple[str, ...]


IMAGES = (
    Image("localhost/tracedraft-postgres:15-bookworm", "deploy/postgres/Containerfile", ("deploy/postgres",)),
    Image("localhost/tracedraft-redis:7.0-bookworm", "deploy/redis/Containerfile", ("deploy/redis",)),
    Image("localhost/tracedraft-s3:seaweedfs-4.48", "deploy/s3/Containerfile", ("deploy/s3",)),
    Image("localhost/tracedraft:0.1.0-cpu", "Dockerfile", APP_SOURCES),
)


def recipe_hash(image: Image, base: str) -> str:
    """sha256 (16 hex) over the base tag and every file under the image's sources (sorted, with paths)."""
    h = hashlib.sha256(base.encode())
    for src in (image.containerfile, *image.sources):
        root = REPO / src
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for p in files:
            if "__pycache__" in p.parts or p.suffix == ".pyc":
                continue
            h.update(str(p.relative_to(REPO)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def label_of(engine: Engine, tag: str) -> str | None:
    """The image's tracedraft.recipe label; None when the image does not exist."""
    proc = engine.run(["image", "inspect", "--format", '{{ index .Config.Labels "tracedraft.recipe" }}', tag],
                      60, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def debian_mirror() -> str:
    """TRACEDRAFT_DEBIAN_MIRROR, else the first Debian archive this host's apt uses, else deb.debian.org."""
    if os.environ.get("TRACEDRAFT_DEBIAN_MIRROR"):
        return os.environ["TRACEDRAFT_DEBIAN_MIRROR"]
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        try:
            text = path.read_text()
        except OSError:
            continue
        for uri in re.findall(r"(?:^deb\s+(?:\[[^]]*\]\s+)?|^URIs:\s*)(\S+)", text, flags=re.MULTILINE):
            if "security" not in uri and "debian" in uri:
                return uri
    return "http://deb.debian.org/debian"


def existing_base(engine: Engine) -> str | None:
    """The newest base image made here earlier (``localhost/tracedraft-debian:<point release>-minbase``)."""
    proc = engine.run(["images", "--format", "{{.Repository}}:{{.Tag}}", BASE_REPO], 60, check=False)
    tags = [t for t in proc.stdout.split() if t.endswith("-minbase")]
    return max(tags) if tags else None


def base_image(engine: Engine, log=print) -> str:
    """The Debian 12 base image: reused when made before, else debootstrap --variant=minbase from the mirror,
    imported as ``localhost/tracedraft-debian:<Debian point release>-minbase``. Raises StackError
    ``base_image_failed`` naming the cause and the fix (no debootstrap, not root, mirror unreachable)."""
    found = existing_base(engine)
    if found:
        log(f"base: {found} (made earlier)")
        return found
    if shutil.which("debootstrap") is None:
        raise StackError("base_image_failed", "no base image yet and debootstrap is not installed",
                         "apt-get install -y debootstrap   (then scripts/stack up again)")
    if os.geteuid() != 0:
        raise StackError("base_image_failed", "debootstrap must run as root to make the base image",
                         "sudo scripts/stack build")
    mirror, rootfs, logfile = debian_mirror(), STATE / "rootfs", STATE / "debootstrap.log"
    shutil.rmtree(rootfs, ignore_errors=True)
    STATE.mkdir(parents=True, exist_ok=True)
    log(f"base: debootstrap --variant=minbase {SUITE} from {mirror} (about 2 min; log {logfile})")
    t0 = time.monotonic()
    with open(logfile, "w") as f:
        try:
            proc = subprocess.run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), mirror], stdout=f,
                                  stderr=subprocess.STDOUT, timeout=deadline_s("1800"),
                                  check=False)
        except subprocess.TimeoutExpired:
            proc = None
    if proc is None or proc.returncode != 0:
        tail = "\n".join(logfile.read_text().splitlines()[-5:])
        raise StackError("base_image_failed", f"debootstrap from {mirror} failed:\n{tail}",
                         "TRACEDRAFT_DEBIAN_MIRROR=http://<a reachable Debian mirror>/debian scripts/stack up")
    version = (rootfs / "etc" / "debian_version").read_text().strip()
    tag = f"{BASE_REPO}:{version}-minbase"
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        imported = subprocess.run([engine.name, "import", "-", tag], stdin=tar.stdout, capture_output=True,
                                  env={**os.environ, **engine.env}, timeout=900, check=False)
    finally:
        tar.wait()
    if imported.returncode != 0:
        raise StackError("base_image_failed", f"`{engine.name} import` of {rootfs} failed: "
                         f"{imported.stderr.decode(errors='replace')[-500:]}", f"{engine.name} system info")
    shutil.rmtree(rootfs, ignore_errors=True)
    log(f"base: {tag} made in {time.monotonic() - t0:.0f} s")
    return tag


def build(engine: Engine, image: Image, base: str, log=print) -> None:
    """Build one image unless its recipe label is current. The build's output goes to STATE/build-*.log;
    raises StackError ``build_failed`` with its last lines."""
    recipe = recipe_hash(image, base)
    if label_of(engine, image.tag) == recipe:
        log(f"image: {image.tag} up to date")
        return
    name = image.tag.split("/")[-1].replace(":", "_")
    logfile = STATE / f"build-{name}.log"
    log(f"image: building {image.tag} from {image.containerfile} (log {logfile})")
    t0 = time.monotonic()
    argv = [engine.name, "build", "-t", image.tag, "-f", image.containerfile, "--build-arg", f"BASE_IMAGE={base}",
            "--label", f"tracedraft.recipe={recipe}", "."]
    env = {**engine.env, "DOCKER_BUILDKIT": "1"}  # RUN --mount needs BuildKit on Docker
    with open(logfile, "w") as f:
        try:
            proc = subprocess.run(argv, cwd=REPO, env={**os.environ, **env}, stdout=f, stderr=subprocess.STDOUT,
                                  timeout=deadline_s("1800"), check=False)
        except subprocess.TimeoutExpired:
            proc = None
    if proc is None or proc.returncode != 0:
        tail = "\n".join(logfile.read_text().splitlines()[-12:])
        raise StackError("build_failed", f"building {image.tag} failed:\n{tail}", f"see {logfile}")
    log(f"image: {image.tag} built in {time.monotonic() - t0:.0f} s")


def build_all(engine: Engine, log=print) -> None:
    """Wheels, base, then every image of the no-registry stack."""
    wheels.ensure(log)
    base = base_image(engine, log)
    for image in IMAGES:
        build(engine, image, base, log)
