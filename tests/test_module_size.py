"""No god modules: every module outside loading/readers/ stays under ~800 lines.

A module that grows past the limit does several jobs; split it along its seams (see
docs/architecture.md). The readers are exempt: a file format's reader is one job, however
long. A module still too long is listed below with the reason, until it is split.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 800
#: Modules over the limit, each with why it is still allowed (remove the line when split).
KNOWN_EXCEPTIONS: dict[str, str] = {}


def _modules() -> list[Path]:
    py = [p for p in (ROOT / "jupyter_traceview").rglob("*.py") if "readers" not in p.relative_to(ROOT).parts]
    ts = [p for p in (ROOT / "js").rglob("*.ts") if "node_modules" not in p.parts]
    return sorted(py + ts)


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_over_the_limit() -> None:
    too_long = {
        str(p.relative_to(ROOT)): _lines(p)
        for p in _modules()
        if _lines(p) > MAX_LINES and str(p.relative_to(ROOT)) not in KNOWN_EXCEPTIONS
    }
    assert too_long == {}, f"modules over {MAX_LINES} lines (split them along their seams): {too_long}"


def test_known_exceptions_are_still_needed() -> None:
    """An exception whose module was split (or is gone) is removed from the list."""
    stale = [m for m in KNOWN_EXCEPTIONS if not (ROOT / m).exists() or _lines(ROOT / m) <= MAX_LINES]
    assert stale == [], f"remove these from KNOWN_EXCEPTIONS: {stale}"
