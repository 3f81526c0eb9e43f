"""Build llama.cpp's ``llama-server`` (CPU only) from the sources vendored in the PyPI sdist of
``llama-cpp-python``, once per version, into a cache directory outside the clone (docs/serving.md 3).

Torch-free and stdlib-only, so the CLI can run it as a subprocess::

    python -m drafters.engines.llamacpp.build [--version 0.3.36] [--cache-dir DIR] [--jobs 2] [--json]
    python -m drafters.engines.llamacpp.build --llama-server /path/to/llama-server   # use an existing binary

Layout of ``<cache>/<version>/`` (cache = ``$TRACEDRAFT_LLAMACPP_DIR``, else
``$XDG_CACHE_HOME/tracedraft/llamacpp``, else ``~/.cache/tracedraft/llamacpp``)::

    src/                      vendored llama.cpp sources (src/.tracedraft-source.json written after extraction)
    build/                    cmake build tree (kept: a re-run after an interrupted build is incremental)
    bin/llama-server          the built binary (static: BUILD_SHARED_LIBS=OFF)
    convert/                  convert_hf_to_gguf.py + conversion/ + gguf-py/ (the GGUF exporter, same version)
    INSTALLED.json            the marker, written LAST: a directory without it is a half-built one and is
                              (incrementally) rebuilt by the next install

Errors raise ``LlamaCppBuildError`` (a TracedraftError) with stable codes: ``llamacpp_download_failed``,
``llamacpp_no_dspark`` (the sdist vendors a llama.cpp without ``--spec-type draft-dspark``),
``llamacpp_build_failed`` (with the log tail and the log path), ``llamacpp_not_installed``,
``llamacpp_bad_binary``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from drafters.checksums import sha256_file
from drafters.errors import TracedraftError

DEFAULT_VERSION = "0.3.36"
PACKAGE = "llama-cpp-python"
MARKER = "INSTALLED.json"
SOURCE_MARKER = ".tracedraft-source.json"
SERVER_TARGET = "llama-server"
# Evidence that the vendored llama.cpp serves DSpark drafters and converts our checkpoints.
DSPARK_EVIDENCE = (("common/speculative.cpp", "draft-dspark"), ("conversion/qwen.py", "Qwen3DSparkModel"))
# CPU only, no network at build time (no curl/openssl, no prebuilt web UI download), one static binary.
# GGML_LLAMAFILE=OFF: llamafile's tinyBLAS takes every matmul with 2 or more tokens (ggml-cpu.c; sgemm.cpp
# refuses n < 2), so a verification round and single-token decoding summed dot products in different orders
# and flipped near-tied argmaxes. Without it both go through ggml's vec_dot, one fixed order per output
# element whatever the batch: speculative output equals the target alone token for token.
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release", "-DGGML_CUDA=OFF", "-DGGML_METAL=OFF", "-DGGML_VULKAN=OFF",
    "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DGGML_LLAMAFILE=OFF",
)
CONVERTER_FILES = ("convert_hf_to_gguf.py",)
CONVERTER_DIRS = ("conversion", "gguf-py")


class LlamaCppBuildError(TracedraftError):
    """Installing or locating llama.cpp failed; ``code`` says which step."""


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The root holding one directory per version: ``cache_dir``, else ``$TRACEDRAFT_LLAMACPP_DIR``, else
    ``$XDG_CACHE_HOME/tracedraft/llamacpp``, else ``~/.cache/tracedraft/llamacpp``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    if os.environ.get("TRACEDRAFT_LLAMACPP_DIR"):
        return Path(os.environ["TRACEDRAFT_LLAMACPP_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "tracedraft" / "llamacpp"


def version_dir(version: str = DEFAULT_VERSION, cache_dir: str | Path | None = None) -> Path:
    """``<cache_root>/<version>``: everything one llama-cpp-python version installs."""
    return cache_root(cache_dir) / version


def read_marker(version: str = DEFAULT_VERSION, cache_dir: str | Path | None = None) -> dict | None:
    """The INSTALLED.json of a complete install whose binary and converter still exist, else None. A binary
    we built with other cmake flags than ``CMAKE_FLAGS`` (an older tracedraft) is stale, so None too: the
    next install reconfigures and rebuilds it incrementally."""
    path = version_dir(version, cache_dir) / MARKER
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    server = Path(info.get("llama_server", ""))
    conv = Path(info.get("converter", ""))
    if not (server.is_file() and os.access(server, os.X_OK) and conv.is_file()):
        return None
    if info.get("built") and not set(CMAKE_FLAGS) <= set(info.get("cmake_flags") or ()):
        return None
    return info


def is_installed(version: str = DEFAULT_VERSION, cache_dir: str | Path | None = None) -> bool:
    """True when a complete install of ``version`` exists (marker present, binary and converter there)."""
    return read_marker(version, cache_dir) is not None


def find_llama_server(llama_server: str | Path | None = None, version: str = DEFAULT_VERSION,
                      cache_dir: str | Path | None = None) -> Path:
    """The llama-server binary to use: ``llama_server`` if given, else ``$TRACEDRAFT_LLAMA_SERVER``, else the
    cached build of ``version``. Never builds. Raises LlamaCppBuildError(llamacpp_bad_binary) for a given
    path that is not an executable file, (llamacpp_not_installed) when nothing is installed, naming the
    command that installs it."""
    given = llama_server or os.environ.get("TRACEDRAFT_LLAMA_SERVER")
    if given:
        p = Path(given).expanduser()
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise LlamaCppBuildError("llamacpp_bad_binary", f"{p} is not an executable file", str(p))
        return p
    info = read_marker(version, cache_dir)
    if info is None:
        raise LlamaCppBuildError(
            "llamacpp_not_installed",
            f"llama.cpp {version} is not installed under {version_dir(version, cache_dir)}; run "
            f"`tracedraft engines install llamacpp --version {version}` (or `python -m "
            f"drafters.engines.llamacpp.build --version {version}`), or pass --llama-server PATH",
            str(version_dir(version, cache_dir)))
    return Path(info["llama_server"])


def find_converter(version: str = DEFAULT_VERSION, cache_dir: str | Path | None = None) -> Path:
    """Path of the vendored ``convert_hf_to_gguf.py`` of ``version`` (its ``conversion/`` and ``gguf-py/``
    beside it). Raises LlamaCppBuildError(llamacpp_not_installed) when not installed."""
    conv = version_dir(version, cache_dir) / "convert" / "convert_hf_to_gguf.py"
    if not conv.is_file() or not (conv.parent / "gguf-py").is_dir():
        raise LlamaCppBuildError(
            "llamacpp_not_installed",
            f"the GGUF converter of llama.cpp {version} is not under {conv.parent}; run "
            f"`tracedraft engines install llamacpp --version {version}` (or `python -m "
            f"drafters.engines.llamacpp.build --version {version}`)", str(conv))
    return conv


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock (fcntl) so two installs of one version never build into one tree."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(argv: Sequence[str], log_path: Path, code: str, where: str, cwd: Path | None = None) -> None:
    """Run a build step, appending its output to ``log_path``; raise LlamaCppBuildError(code) with the log
    tail when it fails."""
    with open(log_path, "ab") as log:
        log.write(("\n$ " + " ".join(map(str, argv)) + "\n").encode())
        log.flush()
        rc = subprocess.call(list(map(str, argv)), stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
    if rc != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise LlamaCppBuildError(code, f"`{' '.join(map(str, argv[:4]))} ...` failed (exit {rc}); log "
                                       f"{log_path}, tail:\n{tail}", where)


def download_sdist(version: str, dest: Path, python: str = sys.executable, log_path: Path | None = None) -> Path:
    """``pip download --no-deps --no-binary :all: llama-cpp-python==version`` into ``dest``; returns the
    .tar.gz. Raises LlamaCppBuildError(llamacpp_download_failed)."""
    dest.mkdir(parents=True, exist_ok=True)
    argv = [python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation",
            f"{PACKAGE}=={version}", "-d", str(dest)]
    log = log_path or dest / "download.log"
    try:
        _run(argv, log, "llamacpp_download_failed", f"{PACKAGE}=={version}")
    except LlamaCppBuildError:
        # --no-build-isolation needs scikit-build-core for metadata; retry with pip's default isolation.
        _run(argv[:7] + argv[8:], log, "llamacpp_download_failed", f"{PACKAGE}=={version}")
    found = sorted(dest.glob("llama_cpp_python-*.tar.gz")) + sorted(dest.glob("llama-cpp-python-*.tar.gz"))
    if not found:
        raise LlamaCppBuildError("llamacpp_download_failed", f"pip saved no sdist of {PACKAGE}=={version} in "
                                 f"{dest}", f"{PACKAGE}=={version}")
    return found[0]


def extract_vendored(sdist: Path, src_dir: Path) -> Path:
    """Extract ``<sdist>/vendor/llama.cpp`` into ``src_dir`` (written under a temporary name, then renamed).
    Raises LlamaCppBuildError(llamacpp_download_failed) when the sdist vendors no llama.cpp."""
    tmp = src_dir.with_name(src_dir.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        # <top>/vendor/llama.cpp/... only: the sdist also ships <top>/.git/modules/vendor/llama.cpp/ (git data).
        members = [m for m in tar.getmembers() if m.name.split("/")[1:3] == ["vendor", "llama.cpp"]]
        if not members:
            raise LlamaCppBuildError("llamacpp_download_failed", f"{sdist.name} vendors no llama.cpp "
                                     "(no vendor/llama.cpp/)", str(sdist))
        prefix = members[0].name.split("/")[0] + "/vendor/llama.cpp"
        with tempfile.TemporaryDirectory(dir=src_dir.parent) as unpack:
            tar.extractall(unpack, members=members, filter="data")
            shutil.move(str(Path(unpack) / prefix), str(tmp))
    shutil.rmtree(src_dir, ignore_errors=True)
    tmp.rename(src_dir)
    return src_dir


def check_dspark_support(src_dir: Path) -> list[str]:
    """Grep the vendored sources for DSpark support (``--spec-type draft-dspark`` in the speculative code,
    ``Qwen3DSparkModel`` in the converter). Returns the evidence lines; raises
    LlamaCppBuildError(llamacpp_no_dspark) naming what is missing."""
    evidence = []
    for rel, needle in DSPARK_EVIDENCE:
        f = src_dir / rel
        text = f.read_text(errors="replace") if f.is_file() else ""
        if needle not in text:
            raise LlamaCppBuildError(
                "llamacpp_no_dspark", f"the vendored llama.cpp has no DSpark support: '{needle}' not found in "
                f"{rel}; use llama-cpp-python {DEFAULT_VERSION} or newer", str(f))
        evidence.append(f"{rel}: {needle}")
    return evidence


def _cmake_argv(src: Path, build: Path, native: bool) -> list[str]:
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    return ["cmake", "-S", str(src), "-B", str(build), *gen, *CMAKE_FLAGS, f"-DGGML_NATIVE={'ON' if native else 'OFF'}"]


def _check_binary(server: Path) -> str:
    """Run ``llama-server --help``; return its ``--version`` line. Raises LlamaCppBuildError(
    llamacpp_bad_binary) when it does not run or does not list ``draft-dspark``."""
    try:
        help_out = subprocess.run([str(server), "--help"], check=False, capture_output=True, text=True, timeout=60)
        ver = subprocess.run([str(server), "--version"], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LlamaCppBuildError("llamacpp_bad_binary", f"{server} does not run: {e}", str(server)) from e
    if "draft-dspark" not in help_out.stdout + help_out.stderr:
        raise LlamaCppBuildError("llamacpp_bad_binary", f"{server} --help lists no 'draft-dspark' spec type: "
                                 "this llama-server cannot serve DSpark drafters", str(server))
    return (ver.stdout + ver.stderr).strip().splitlines()[0] if (ver.stdout + ver.stderr).strip() else "?"


def install_llamacpp(version: str = DEFAULT_VERSION, cache_dir: str | Path | None = None, *,
                     llama_server: str | Path | None = None, jobs: int = 2, native: bool = True,
                     force: bool = False, keep_build: bool = True, python: str = sys.executable,
                     log: Callable[[str], None] | None = None) -> Path:
    """Install llama.cpp ``version`` (the one vendored by ``llama-cpp-python==version``) and return the
    ``llama-server`` path. A no-op returning the cached path when INSTALLED.json is there (unless ``force``).

    Steps: pip-download the sdist (no deps, no binaries), extract ``vendor/llama.cpp`` to ``src/``, check it
    serves DSpark (``check_dspark_support``), copy the converter to ``convert/``, configure with cmake (CPU
    only, ``GGML_NATIVE`` = ``native``; pass native=False for a binary other machines can run), build only the
    ``llama-server`` target with ``jobs`` parallel jobs (about 11 minutes on 2 cores), copy it to ``bin/``,
    check ``--help`` lists ``draft-dspark``, then write INSTALLED.json last. With ``llama_server`` given, that
    binary is checked and recorded instead of building (the sdist is still fetched for the converter).
    Concurrent installs of one version serialise on a lock file. Raises LlamaCppBuildError (codes in the
    module docstring)."""
    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    vdir = version_dir(version, cache_dir)
    if not force and llama_server is None and (info := read_marker(version, cache_dir)) is not None:
        return Path(info["llama_server"])
    vdir.mkdir(parents=True, exist_ok=True)
    with _lock(vdir.parent / f".{version}.lock"):
        if not force and llama_server is None and (info := read_marker(version, cache_dir)) is not None:
            return Path(info["llama_server"])  # another process finished it while we waited
        t0 = time.monotonic()
        (vdir / MARKER).unlink(missing_ok=True)
        log_path = vdir / "build.log"
        src = vdir / "src"
        src_info = None
        with contextlib.suppress(OSError, ValueError):
            src_info = json.loads((src / SOURCE_MARKER).read_text())
        if src_info is None or src_info.get("version") != version:
            say(f"llama.cpp {version}: downloading the {PACKAGE} sdist ...")
            with tempfile.TemporaryDirectory(prefix="llamacpp-sdist-") as tmp:
                sdist = download_sdist(version, Path(tmp), python, log_path)
                sha = sha256_file(sdist)
                extract_vendored(sdist, src)
            src_info = {"version": version, "sdist": sdist.name, "sdist_sha256": sha}
            (src / SOURCE_MARKER).write_text(json.dumps(src_info, indent=1))
        evidence = check_dspark_support(src)
        conv = vdir / "convert"
        shutil.rmtree(conv, ignore_errors=True)
        conv.mkdir(parents=True)
        for f in CONVERTER_FILES:
            shutil.copy2(src / f, conv / f)
        for d in CONVERTER_DIRS:
            shutil.copytree(src / d, conv / d)
        bin_dir = vdir / "bin"
        bin_dir.mkdir(exist_ok=True)
        if llama_server is not None:
            server = Path(llama_server).expanduser().resolve()
            if not (server.is_file() and os.access(server, os.X_OK)):
                raise LlamaCppBuildError("llamacpp_bad_binary", f"{server} is not an executable file", str(server))
            flags: list[str] = []
        else:
            if shutil.which("cmake") is None:
                raise LlamaCppBuildError("llamacpp_build_failed", "cmake is not on PATH (apt-get install cmake "
                                         "ninja-build g++)", "cmake")
            build = vdir / "build"
            argv = _cmake_argv(src, build, native)
            flags = argv[5:]
            say(f"llama.cpp {version}: configuring (log {log_path}) ...")
            _run(argv, log_path, "llamacpp_build_failed", "cmake configure")
            say(f"llama.cpp {version}: building {SERVER_TARGET} with {jobs} jobs (about 11 min on 2 cores) ...")
            _run(["cmake", "--build", str(build), "--target", SERVER_TARGET, "-j", str(jobs)], log_path,
                 "llamacpp_build_failed", "cmake --build")
            built = build / "bin" / SERVER_TARGET
            if not built.is_file():
                raise LlamaCppBuildError("llamacpp_build_failed", f"the build finished but {built} is missing",
                                         str(built))
            server = bin_dir / SERVER_TARGET
            tmp_bin = bin_dir / f".{SERVER_TARGET}.tmp"
            shutil.copy2(built, tmp_bin)
            tmp_bin.replace(server)
            if not keep_build:
                shutil.rmtree(build, ignore_errors=True)
        server_version = _check_binary(server)
        info = {"version": version, "package": PACKAGE, **src_info, "llama_server": str(server),
                "server_version": server_version, "built": llama_server is None,
                "converter": str(conv / "convert_hf_to_gguf.py"), "cmake_flags": flags, "jobs": jobs,
                "dspark_evidence": evidence, "seconds": round(time.monotonic() - t0, 1),
                "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp_marker = vdir / f".{MARKER}.tmp"
        tmp_marker.write_text(json.dumps(info, indent=1))
        tmp_marker.replace(vdir / MARKER)  # written last: its presence means the install is complete
        say(f"llama.cpp {version}: installed {server} ({info['seconds']} s)")
        return server


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: install (or locate with --check) llama.cpp; prints the llama-server path (or JSON with --json).
    Exit codes: 0 ok, 1 a LlamaCppBuildError (its code and message on stderr / in the JSON)."""
    ap = argparse.ArgumentParser(prog="python -m drafters.engines.llamacpp.build",
                                 description="Build llama-server (CPU) from the llama.cpp vendored in the "
                                             "llama-cpp-python sdist; a no-op when already cached.")
    ap.add_argument("--version", default=DEFAULT_VERSION, help=f"llama-cpp-python version (default {DEFAULT_VERSION})")
    ap.add_argument("--cache-dir", default=None, help="cache root (default $TRACEDRAFT_LLAMACPP_DIR or "
                                                      "~/.cache/tracedraft/llamacpp)")
    ap.add_argument("--llama-server", default=None, help="use this existing llama-server instead of building")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--portable", action="store_true", help="GGML_NATIVE=OFF (binary for other CPUs)")
    ap.add_argument("--force", action="store_true", help="rebuild even when cached")
    ap.add_argument("--check", action="store_true", help="only report whether it is installed (exit 1 if not)")
    ap.add_argument("--json", action="store_true", help="print the install record as JSON")
    a = ap.parse_args(argv)
    try:
        if a.check:
            server = find_llama_server(a.llama_server, a.version, a.cache_dir)
        else:
            server = install_llamacpp(a.version, a.cache_dir, llama_server=a.llama_server, jobs=a.jobs,
                                      native=not a.portable, force=a.force)
    except TracedraftError as e:
        if a.json:
            print(json.dumps({"ok": False, "code": e.code, "message": e.message, "where": e.where}))
        else:
            print(f"error [{e.code}]: {e.message}", file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps({"ok": True, **(read_marker(a.version, a.cache_dir) or {"llama_server": str(server)})}))
    else:
        print(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
