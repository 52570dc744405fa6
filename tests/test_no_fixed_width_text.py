"""No fixed-width text arrays in the package (issue 37).

numpy's ``astype(str)``, ``dtype=str``, ``"<U..."`` dtypes and ``np.char`` make ``<U`` arrays:
every element as wide as the longest, so one 50 MB event name among a thousand rows asks for
200 GB. Text goes through :mod:`jupyter_traceview.model.text` (``as_text``, ``starts_with``),
which keeps Python strings in object arrays; this check keeps the other spellings out
(``tests/loading/test_hostile_sizes.py`` runs the analyses on such a name).
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jupyter_traceview"
#: The one module that names them, to say why they are avoided.
ALLOWED = {PACKAGE / "model" / "text.py"}
FORBIDDEN = re.compile(
    r"astype\(\s*(str|np\.str_|numpy\.str_|['\"]<?U\d*['\"])\s*\)"
    r"|dtype\s*=\s*(str|np\.str_|numpy\.str_)\b"
    r"|['\"]<U\d*['\"]"
    r"|dtype\s*=\s*['\"]U\d*['\"]"
    r"|\bnp\.char\."
)


def offending_lines(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path in ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{path.relative_to(root.parent)}:{number}: {line.strip()}")
    return found


def test_the_package_makes_no_fixed_width_text_arrays() -> None:
    found = offending_lines()
    assert not found, "fixed-width text arrays (use model.text.as_text / starts_with):\n" + "\n".join(found)


def test_the_check_finds_each_spelling(tmp_path: Path) -> None:
    spellings = [
        "x = names.astype(str)",
        "x = np.asarray(v, dtype=str)",
        "x = np.empty(3, dtype='<U10')",
        "x = v.astype('U')",
        "x = np.char.startswith(v, 'a')",
        "x = np.zeros(2, dtype=np.str_)",
    ]
    for i, line in enumerate(spellings):
        (tmp_path / f"m{i}.py").write_text(line + "\n")
    (tmp_path / "fine.py").write_text("x = as_text(v)\ny = pd.array(v, dtype='str')\n")
    found = offending_lines(tmp_path)
    assert len(found) == len(spellings), found
