"""Count the private names that a package's modules use from one another.

A private name is one that starts with ``_`` and is not a dunder (``__all__``). It counts
when a module of the package uses it from ANOTHER module of the package:

* ``from .x import _y`` (or ``from pkg.x import _y``, any relative level), and
* ``m._y``, where ``m`` names another module of the package in this module (``from . import
  x``, ``from .x import y as m`` where ``y`` is a submodule, ``import pkg.x as m``).

Each (module, ``other_module._name``) pair counts once, however often it is used.

    python scripts/private_names.py [PACKAGE_DIR]     # prints the total (and the pairs)

``count(package_dir)`` maps each module (dotted, relative to the package's parent) to the
sorted list of ``"other_module._name"`` it uses.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

__all__ = ["count", "is_private"]


def is_private(name: str) -> bool:
    """``_x`` but not ``__x__``."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under the package (``__init__`` as the package)."""
    root = package_dir.parent
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute dotted name of ``from <level dots><target> import ...`` in ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def _uses(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    bound: dict[str, str] = {}  # local name -> another module of the package
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(module, is_package, node.level, node.module)
            for alias in node.names:
                local = alias.asname or alias.name
                sub = f"{source}.{alias.name}"
                if sub in modules:  # a submodule imported by name
                    if sub != module:
                        bound[local] = sub
                elif source in modules and source != module and is_private(alias.name):
                    found.add(f"{source}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.name != module and alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and is_private(node.attr)
        ):
            found.add(f"{bound[node.value.id]}.{node.attr}")
    return found


def count(package_dir: str | Path) -> dict[str, list[str]]:
    """Each module of the package -> the ``"other_module._name"`` private names it uses (modules
    that use none are left out)."""
    modules = _modules(Path(package_dir).resolve())
    out = {}
    for module, path in modules.items():
        used = _uses(module, path, modules)
        if used:
            out[module] = sorted(used)
    return out


def main(argv: list[str]) -> int:
    package_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "jupyter_traceview"
    found = count(package_dir)
    for module, names in found.items():
        print(f"{module}: {', '.join(names)}")
    print(f"total: {sum(len(v) for v in found.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
