"""The rules of the house (docs/architecture.md section 1), checked on the source and on real imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "peft", "safetensors.torch", "sglang")
DRAFTERS_LIGHT = ("drafters.traces", "drafters.errors", "drafters.checksums", "drafters.recipe")


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, at any depth (function-level imports included), with its line."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def violations(package: str, forbidden) -> list[str]:
    bad = []
    for path in sorted((REPO / package).rglob("*.py")):
        for line, mod in imports_of(path):
            if forbidden(mod):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {mod}")
    return bad


def _is(mod: str, *names: str) -> bool:
    return any(mod == n or mod.startswith(n + ".") for n in names)


def test_drafters_never_imports_service_or_workers() -> None:
    assert violations("drafters", lambda m: _is(m, "service", "workers")) == []


def test_drafters_traces_is_torch_free() -> None:
    assert violations("drafters/traces", lambda m: _is(m, *HEAVY, "numpy")) == []


def test_service_never_imports_torch_heavy_drafters_or_workers() -> None:
    def forbidden(m: str) -> bool:
        if _is(m, *HEAVY, "workers"):
            return True
        return _is(m, "drafters") and not _is(m, *DRAFTERS_LIGHT)

    assert violations("service", forbidden) == []


@pytest.mark.parametrize("module", ["service.cli", "service.api.app", "service.queue", "service.registry",
                                    *DRAFTERS_LIGHT])
def test_service_modules_import_without_torch(module: str) -> None:
    """The API and CLI start on machines without a GPU stack: importing them, or the light parts of drafters
    they may import, loads no torch."""
    base = REPO / module.replace(".", "/")  # a module file or a package
    if not (base.with_suffix(".py").exists() or (base / "__init__.py").exists()):
        pytest.skip(f"{module} does not exist yet")
    code = f"import sys, {module}; bad = [m for m in {HEAVY!r} if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
