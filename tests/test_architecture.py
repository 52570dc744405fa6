"""The package's architecture, enforced: layers point one way, no cycles, no upward lazy imports.

The layer contract itself is ``[tool.importlinter]`` in pyproject.toml (run by ``lint-imports``);
these tests run it and add what it does not say: the import graph, counting imports made
inside functions, has no cycle, and no module below the entry points imports the package root.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "jupyter_traceview"
#: The entry points: they may import the package root (``import jupyter_traceview as tv``).
ENTRY_POINTS = (
    "jupyter_traceview.cli",
    "jupyter_traceview.server",
    "jupyter_traceview.notebook",
    "jupyter_traceview.__main__",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at module level or inside functions (names as modules)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for m, p in modules.items():
        targets = set()
        for t in _imports(p):
            while t and t not in modules:
                t = t.rpartition(".")[0]
            # A submodule importing its own package (``from . import x``) is not an edge.
            if t and t != m and not m.startswith(t + "."):
                targets.add(t)
        edges[m] = targets
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_entry_points_import_the_package_root() -> None:
    offenders = [
        m
        for m, targets in _graph().items()
        if "jupyter_traceview" in targets and not m.startswith(ENTRY_POINTS) and m != "jupyter_traceview"
    ]
    assert offenders == [], (
        f"these modules import the package root (import the module that defines the name): {offenders}"
    )


def test_layer_contract() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.fail("lint-imports (import-linter) is not installed: pip install -e '.[test]'")
    out = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
