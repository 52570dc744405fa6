"""The one palette of jupyter_traceview, shared by Python charts and the TypeScript widgets.

The colours live in ``colors.json`` next to this module. Python reads them here; every
widget sends the file's content once to its front end (trait ``_palette``), so a colour
changed in the JSON changes everywhere. The order of :data:`KINDS` is the integer code
that binary payloads use for a kind.

Kinds are what the timeline colours by: the GPU classes of :class:`~jupyter_traceview.GpuClass`
(``compute``, ``communication``, ``memory``, and ``sync`` for the ``other`` class) and the
CPU-side kinds (``cpu_op``, ``runtime``, ``annotation``, ``python``, ``other``), see
:func:`kind_of`.

Names are coloured by a stable hash (CRC-32 of the UTF-8 name) into the ``names`` palette,
so a kernel has the same colour in every chart, widget and session.
"""

from __future__ import annotations

import json
import zlib
from functools import cache
from pathlib import Path
from typing import Literal, TypedDict

import numpy as np

from ..model.schema import EventKind, GpuClass

__all__ = [
    "KINDS",
    "NamePalette",
    "Palette",
    "PaletteKind",
    "Theme",
    "ThemeColor",
    "kind_code",
    "kind_color",
    "kind_of",
    "name_color",
    "name_color_index",
    "palette",
]

Theme = Literal["light", "dark"]
_PATH = Path(__file__).with_name("colors.json")


class PaletteKind(TypedDict):
    """One colour kind of the palette: its key (:data:`KINDS`), label and colour per theme."""

    key: str
    label: str
    light: str
    dark: str


class ThemeColor(TypedDict):
    """A CSS colour per theme."""

    light: str
    dark: str


class NamePalette(TypedDict):
    """The colours names are hashed into (:func:`name_color_index`), per theme."""

    light: list[str]
    dark: list[str]


class Palette(TypedDict):
    """``colors.json`` (without its comment): what every widget sends once, as ``_palette``.

    Mirrored by ``Palette`` in ``js/timeline/messages.ts``.
    """

    kinds: list[PaletteKind]
    names: NamePalette
    highlight: ThemeColor
    selection: ThemeColor
    flow: ThemeColor


@cache
def _load() -> Palette:
    with _PATH.open(encoding="utf-8") as f:
        data = json.load(f)
    return Palette(
        kinds=[PaletteKind(key=k["key"], label=k["label"], light=k["light"], dark=k["dark"]) for k in data["kinds"]],
        names=NamePalette(light=list(data["names"]["light"]), dark=list(data["names"]["dark"])),
        highlight=ThemeColor(light=data["highlight"]["light"], dark=data["highlight"]["dark"]),
        selection=ThemeColor(light=data["selection"]["light"], dark=data["selection"]["dark"]),
        flow=ThemeColor(light=data["flow"]["light"], dark=data["flow"]["dark"]),
    )


def palette() -> Palette:
    """The palette of ``colors.json``, without its comment (a fresh copy: change it freely)."""
    copy: Palette = json.loads(json.dumps(_load()))
    return copy


#: Kind keys in code order (the code of a kind is its position).
KINDS: tuple[str, ...] = tuple(k["key"] for k in _load()["kinds"])
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}

#: GPU activity class -> timeline kind.
_GPU_CLASS_KIND = {
    GpuClass.COMPUTE.value: "compute",
    GpuClass.COMMUNICATION.value: "communication",
    GpuClass.MEMORY.value: "memory",
    GpuClass.OTHER.value: "sync",
}
#: Event kind (not a GPU activity) -> timeline kind.
_EVENT_KIND = {
    EventKind.CPU_OP.value: "cpu_op",
    EventKind.USER_ANNOTATION.value: "annotation",
    EventKind.GPU_USER_ANNOTATION.value: "annotation",
    EventKind.PYTHON_FUNCTION.value: "python",
    EventKind.CUDA_RUNTIME.value: "runtime",
    EventKind.CUDA_DRIVER.value: "runtime",
}


def kind_of(event_kind: str, gpu_class: str | None = None) -> str:
    """The colour kind of an event from its ``kind`` and ``gpu_class`` columns."""
    if isinstance(gpu_class, str) and gpu_class in _GPU_CLASS_KIND:
        return _GPU_CLASS_KIND[gpu_class]
    return _EVENT_KIND.get(str(event_kind), "other")


def kind_code(kind: str) -> int:
    """The integer code of a colour kind (its position in :data:`KINDS`)."""
    try:
        return _KIND_CODE[kind]
    except KeyError:
        raise ValueError(f"unknown colour kind {kind!r}; the palette has: {', '.join(KINDS)}") from None


def kind_codes(event_kind: np.ndarray, gpu_class: np.ndarray) -> np.ndarray:
    """Vectorised :func:`kind_of` -> code, over category code arrays of ``kind`` and ``gpu_class``.

    ``event_kind`` holds codes into :data:`jupyter_traceview.model.schema.KIND_CATEGORIES`,
    ``gpu_class`` codes into :data:`jupyter_traceview.model.schema.GPU_CLASS_CATEGORIES` (-1: none).
    """
    from ..model.schema import GPU_CLASS_CATEGORIES, KIND_CATEGORIES

    by_kind = np.array([_KIND_CODE[kind_of(k)] for k in KIND_CATEGORIES], dtype=np.uint8)
    by_class = np.array([_KIND_CODE[_GPU_CLASS_KIND[c]] for c in GPU_CLASS_CATEGORIES], dtype=np.uint8)
    ek = np.asarray(event_kind, dtype=np.int64)
    gc = np.asarray(gpu_class, dtype=np.int64)
    out = by_kind[np.clip(ek, 0, len(by_kind) - 1)]
    has_class = gc >= 0
    out[has_class] = by_class[gc[has_class]]
    out[ek < 0] = _KIND_CODE["other"]
    return out


def kind_color(kind: str, theme: Theme = "light") -> str:
    """The CSS colour of a kind (see :data:`KINDS`) in the light or dark theme."""
    return str(_load()["kinds"][kind_code(kind)][theme])


def name_color_index(name: str) -> int:
    """Position of ``name``'s colour in the names palette: a stable hash of the name."""
    return zlib.crc32(name.encode("utf-8")) % len(_load()["names"]["light"])


def name_color(name: str, theme: Theme = "light") -> str:
    """The CSS colour of an event name (the same in every chart and widget)."""
    return str(_load()["names"][theme][name_color_index(name)])
