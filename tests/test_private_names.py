"""Private names stay private: few of the package's ``_names`` are used from another module.

A module that reaches into another's ``_name`` shows a seam in the wrong place: the name is
shared, so it is public within the package (renamed without the underscore), or the code
that uses it belongs beside it. ``scripts/private_names.py`` counts the uses
(``from .x import _y`` and ``x._y`` on an imported module of the package), each
(module, name) pair once; ``python scripts/private_names.py`` lists them.

Issue 36 asked for at most 10; the package reached 0 (the readers made packages with public
names inside, the analyses' and the timeline views' shared helpers renamed), and the
threshold holds it there: a new use is a seam to fix, not a number to raise.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD = 0


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("private_names", ROOT / "scripts" / "private_names.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_private_names_used_across_modules_stay_under_the_threshold() -> None:
    found = _script().count(ROOT / "jupyter_traceview")
    total = sum(len(names) for names in found.values())
    listed = "\n".join(f"  {module}: {', '.join(names)}" for module, names in sorted(found.items()))
    assert total <= THRESHOLD, (
        f"{total} private names are used from other modules (at most {THRESHOLD}). "
        f"Make a shared name public in its module, or move the code that uses it beside it:\n{listed}"
    )


def test_the_count_sees_both_kinds_of_use(tmp_path: Path) -> None:
    """The counter itself, on a package made here: ``from .a import _x`` and ``a._y`` count,
    a module's own ``_names``, dunders and public names do not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("_x = 1\n_y = 2\nz = 3\n_own = 4\nprint(_own)\n")
    (pkg / "b.py").write_text("from . import a\nfrom .a import _x, z\nprint(a._y, a._y, a.__name__, _x, z)\n")
    assert _script().count(pkg) == {"pkg.b": ["pkg.a._x", "pkg.a._y"]}
