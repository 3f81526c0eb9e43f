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
    code = f"import sys, {module}; bad = [m for m in {HEAVY!r} if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def module_graph(type_imports: bool = False) -> dict[str, set[str]]:
    """Which of our modules each module of drafters/, service/ and workers/ imports at run time (function-level
    imports included, ``if TYPE_CHECKING:`` blocks excluded unless ``type_imports``). ``from pkg import name``
    is an edge to ``pkg`` (its ``__init__`` runs) and, when ``pkg.name`` is a module, to that module too."""
    files = {}
    for root in ("drafters", "service", "workers"):
        for path in (REPO / root).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text())
        typing_only = set() if type_imports else {
            id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
            and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                edges |= {base} | {f"{base}.{a.name}" for a in node.names}
        graph[name] = {e for e in edges if e in files and e != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root, children in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(children)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_circles_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    """No module imports, directly or through others, a module that imports it back (docs/architecture.md
    section 1): each floor and each package can be read bottom-up."""
    assert circles(module_graph()) == []


def test_no_import_circle_even_for_type_hints() -> None:
    """Modules that name each other's types only (``if TYPE_CHECKING:``) are still a circle to a reader: none
    (drafters/train/optim.py and state.py were one; they share training_model.py instead)."""
    assert circles(module_graph(type_imports=True)) == []


def test_the_stages_call_the_library_not_a_command_line() -> None:
    """What a stage runs lives in the library (``new_drafter``: drafters/train/start.py), never in a module
    that is a command line (``python -m drafters.train``'s drafters/train/cli.py)."""
    graph = module_graph()
    assert {m: "drafters.train.cli" for m, deps in graph.items() if "drafters.train.cli" in deps
            and not m.startswith("drafters.train")} == {}
