"""The C extensions' build (hatch_build.py): built from the current source, and optional.

`pip install` compiles each extension in place through hatch_build.py; without a compiler the
package still installs and the pure-Python reader is used. These tests check that this
environment runs the compiled code of the source as it is now (an editable install keeps an
old build after a `.c` file changes), and both outcomes of a compile.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import hatch_build  # noqa: E402  (the build hook lives at the repository root)

sys.path.remove(str(ROOT))

TINY = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "tiny", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_tiny(void) {
    PyObject *mod = PyModule_Create(&def);
    if (mod != NULL && PyModule_AddStringConstant(mod, "SOURCE_SHA256", TRACEVIEW_SOURCE_SHA256) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
"""


@pytest.mark.parametrize("name", sorted(hatch_build.EXTENSIONS))
def test_each_extension_runs_the_current_source(name: str) -> None:
    source = ROOT / hatch_build.EXTENSIONS[name]
    if not source.is_file():
        pytest.skip(f"{source.name} is not in this checkout")
    if os.environ.get("TRACEVIEW_NATIVE") == "0":
        pytest.skip("TRACEVIEW_NATIVE=0: the pure-Python path is asked for")
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        pytest.fail(
            f"{name} is not built in this environment ({exc}): `pip install -e .` compiles it "
            "(it needs a C compiler and Python's headers), or `python hatch_build.py`; "
            "TRACEVIEW_NATIVE=0 runs the tests without it"
        )
    assert getattr(module, "SOURCE_SHA256", None) == hatch_build.source_digest(source), (
        f"{name} was compiled from another version of {source.name} (the module must expose "
        "SOURCE_SHA256 = TRACEVIEW_SOURCE_SHA256): run `python hatch_build.py`"
    )


def _tiny_project(root: Path) -> dict[str, str]:
    (root / "pkg").mkdir()
    (root / "pkg" / "tiny.c").write_text(TINY)
    return {"pkg.tiny": "pkg/tiny.c"}


def test_a_compile_builds_the_module_in_place_with_its_source_digest(tmp_path: Path) -> None:
    extensions = _tiny_project(tmp_path)
    built = hatch_build.build_extensions(root=tmp_path, extensions=extensions, required=True)
    assert len(built) == 1
    assert built[0].parent == tmp_path / "pkg"
    assert built[0].name.startswith("tiny.")
    spec = importlib.util.spec_from_file_location("tiny", built[0])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert hatch_build.source_digest(tmp_path / "pkg" / "tiny.c") == module.SOURCE_SHA256


def test_a_missing_source_is_not_built(tmp_path: Path) -> None:
    assert hatch_build.build_extensions(root=tmp_path, extensions={"pkg.none": "pkg/none.c"}) == []


def test_without_a_compiler_the_build_warns_and_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extensions = _tiny_project(tmp_path)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert hatch_build.build_extensions(root=tmp_path, extensions=extensions) == []
    messages = [str(w.message) for w in caught]
    assert any("could not compile pkg/tiny.c" in m and "C compiler" in m for m in messages), messages
    assert not list((tmp_path / "pkg").glob("tiny.*.so"))


def test_a_required_build_without_a_compiler_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extensions = _tiny_project(tmp_path)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    with pytest.raises(hatch_build.NativeBuildError, match=r"could not compile pkg/tiny\.c"):
        hatch_build.build_extensions(root=tmp_path, extensions=extensions, required=True)
