"""Build hook: compile the package's C extensions (the Kineto scanner) during `pip install`.

hatchling runs this for `pip install .` (a wheel) and `pip install -e .` (an editable
install). Each extension is compiled in place, next to its source, by setuptools' own
`build_ext` (which knows gcc, clang and MSVC and Python's flags), and the wheel then carries
the compiled module and gets a platform tag. `python hatch_build.py` does the same by hand
(after editing a `.c` file in an editable install).

The extensions make the reader faster; they change no result. When no C compiler is present
the build warns and goes on, and `tv.load` reads with the pure-Python path (msgspec).
`TRACEVIEW_REQUIRE_NATIVE=1` turns that warning into an error: release wheels are built with
it (see `[tool.cibuildwheel]` in pyproject.toml), so a wheel can never ship without them.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent

# module name -> C source, relative to the repository root.
EXTENSIONS = {
    "jupyter_traceview.loading.readers._kscan": "jupyter_traceview/loading/readers/_kscan.c",
    "jupyter_traceview.model._sweep": "jupyter_traceview/model/_sweep.c",
    "jupyter_traceview.analysis._loops": "jupyter_traceview/analysis/_loops.c",
}


class NativeBuildError(RuntimeError):
    """A C extension could not be built and TRACEVIEW_REQUIRE_NATIVE=1 asked for it."""


def source_digest(source: Path) -> str:
    """The SHA-256 of a C source, followed by the package's headers it includes
    (`#include "../_buffers.h"`, by a path relative to it): compiled into its module as
    `SOURCE_SHA256`, so that an edited header makes every module that includes it stale."""
    text = source.read_bytes()
    digest = hashlib.sha256(text)
    for name in re.findall(rb'^#include "([^"]+)"', text, flags=re.MULTILINE):
        digest.update((source.parent / name.decode()).read_bytes())
    return digest.hexdigest()


def build_extensions(
    *,
    required: bool = False,
    quiet: bool = True,
    root: Path = ROOT,
    extensions: dict[str, str] = EXTENSIONS,
) -> list[Path]:
    """Compile every extension whose source exists, in place under `root`; return the built files.

    A failure (no compiler, no Python headers) warns and is skipped, or raises
    `NativeBuildError` when `required`.
    """
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    built: list[Path] = []
    for name, rel in extensions.items():
        source = root / rel
        if not source.is_file():
            continue
        ext = Extension(
            name,
            [rel],
            # A string literal for the C preprocessor: the module exposes it, and a test
            # compares it with the source (a stale build in an editable install fails it).
            define_macros=[("TRACEVIEW_SOURCE_SHA256", f'"{source_digest(source)}"')],
        )
        dist = Distribution({"name": "jupyter_traceview", "ext_modules": [ext]})
        dist.script_args = ["build_ext"]
        cmd = build_ext(dist)
        cmd.inplace = True
        cmd.force = True
        cmd.build_temp = str(root / "build" / "native")
        cwd = Path.cwd()
        try:
            os.chdir(root)
            cmd.ensure_finalized()
            if quiet:
                cmd.verbose = 0
            cmd.run()
            built.append(root / cmd.get_ext_filename(name))
        except Exception as exc:  # any compiler failure means "no native path"
            message = (
                f"jupyter_traceview: could not compile {rel} ({type(exc).__name__}: {exc}). "
                "The package works without it; tv.load then reads Kineto JSON about 2x slower. "
                "Install a C compiler and Python's headers (Debian: apt-get install gcc python3-dev) "
                "and reinstall to get it."
            )
            if required:
                raise NativeBuildError(message) from exc
            warnings.warn(message, stacklevel=1)
        finally:
            os.chdir(cwd)
    return built


def _required() -> bool:
    return os.environ.get("TRACEVIEW_REQUIRE_NATIVE", "") == "1"


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # `python hatch_build.py` outside a build environment
    BuildHookInterface = object  # type: ignore[assignment,misc]


class NativeBuildHook(BuildHookInterface):  # type: ignore[misc,valid-type]
    """hatchling's custom build hook ([tool.hatch.build.hooks.custom] in pyproject.toml)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        built = build_extensions(required=_required())
        if not built:
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":
            # The compiled files are gitignored: include them explicitly.
            for path in built:
                build_data["force_include"][str(path)] = path.relative_to(ROOT).as_posix()


if __name__ == "__main__":
    try:
        paths = build_extensions(required=True, quiet=False)
    except NativeBuildError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    for path in paths:
        print(f"built {path.relative_to(ROOT)}")
    if not paths:
        print("no C sources to build")
