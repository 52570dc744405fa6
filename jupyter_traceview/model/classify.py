"""Kernel classification: the one place that decides what a GPU activity does.

Rules, in order, for an event of a GPU activity kind (``kernel``, ``gpu_memcpy``,
``gpu_memset``, ``cuda_sync``):

1. ``cuda_sync`` events are ``other``; ``gpu_memcpy`` and ``gpu_memset`` are ``memory``.
2. A name matching one of ``Classifier.communication`` is ``communication``.
3. A name matching one of ``Classifier.memory`` is ``memory``.
4. A name matching one of ``Classifier.other`` is ``other``.
5. Anything else is ``compute``.

Patterns are Python regular expressions, searched anywhere in the name
(``re.search``); anchor them with ``^`` to match a prefix. Extend the defaults
with :meth:`Classifier.extend`, e.g. for an in-house all-to-all kernel::

    clf = tv.Classifier().extend(communication=[r"my_a2a_kernel"])
    trace = tv.load("run/", classifier=clf)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .schema import GPU_CLASS_CATEGORIES, EventKind, GpuClass, categorical

__all__ = ["COPY_KINDS", "Classifier", "copy_kind_of"]

#: Communication kernels. NCCL names its kernels ``ncclKernel_*`` (<= 2.18) and
#: ``ncclDevKernel_*`` (>= 2.19); RCCL keeps NCCL's names; DeepEP, NVSHMEM, vLLM's custom
#: all-reduce and TensorRT-LLM's all-reduce kernels are communication too.
DEFAULT_COMMUNICATION: tuple[str, ...] = (
    r"^nccl",  # ncclKernel_*, ncclDevKernel_*, ncclx
    r"ncclKernel",  # templated names: void ncclKernel<...>
    r"ncclDevKernel",
    r"^rccl",
    r"^hccl",  # Habana collective library
    r"deep_ep::",  # DeepEP dispatch/combine (intranode, internode, low-latency)
    r"nvshmem",  # NVSHMEM-based all-to-all and one-sided kernels
    r"cross_device_reduce",  # vLLM custom all-reduce
    r"(?:one|two)Shot(?:All)?Reduce",  # TensorRT-LLM custom all-reduce
    r"userbuffers",  # Transformer Engine userbuffers comm/GEMM overlap
)

#: Memory kernels (beyond the gpu_memcpy/gpu_memset kinds): HIP and MTIA copy engines.
DEFAULT_MEMORY: tuple[str, ...] = (
    r"^Memcpy",
    r"^Memset",
    r"^hipMemcpy",
    r"^hipMemset",
    r"^dma",  # MTIA DMA engine
)

#: Device events that are not work (synchronisation records under another category).
DEFAULT_OTHER: tuple[str, ...] = (
    r"^Stream Wait Event",
    r"^Stream Sync",
    r"^Event Sync",
    r"^Context Sync",
)

_COPY_KIND = re.compile(r"Memcpy\s*([A-Za-z]to[A-Za-z])")
#: Categories of gpu_args.copy_kind.
COPY_KINDS = ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH", "memset")


def copy_kind_of(name: str) -> str | None:
    """The copy direction of a memcpy/memset name: HtoD, DtoH, DtoD, PtoP, HtoH or memset."""
    if "Memset" in name or "memset" in name:
        return "memset"
    m = _COPY_KIND.search(name)
    if m is None:
        return None
    kind = m.group(1)
    return kind if kind in COPY_KINDS else None


#: The characters with a meaning in a regular expression outside a class (no flags are set:
#: ``#`` and spaces are text): a pattern without them matches itself.
_SPECIAL = frozenset(".^$*+?{}[]\\|()")


class _Matcher:
    """Whether a name matches any of some patterns (``re.search``): a pattern that is plain
    text, or ``^`` and plain text, is looked for with ``in`` or ``str.startswith`` (several
    times faster than a regular expression that tries every alternative at every position
    of a long kernel name); the others are one compiled alternation, compiled when first
    needed."""

    def __init__(self, patterns: Iterable[str]) -> None:
        prefixes, texts, others = [], [], []
        for p in patterns:
            if p.startswith("^") and _SPECIAL.isdisjoint(p[1:]):
                prefixes.append(p[1:])
            elif _SPECIAL.isdisjoint(p):
                texts.append(p)
            else:
                others.append(p)
        self.prefixes = tuple(prefixes)
        self.texts = tuple(texts)
        self.regex = re.compile("|".join(f"(?:{p})" for p in others)) if others else None

    def search(self, name: str) -> bool:
        if name.startswith(self.prefixes):
            return True
        for text in self.texts:
            if text in name:
                return True
        return self.regex is not None and self.regex.search(name) is not None


#: The default patterns, by field: a classifier with them needs no check of its patterns.
_DEFAULTS = {"communication": DEFAULT_COMMUNICATION, "memory": DEFAULT_MEMORY, "other": DEFAULT_OTHER}


@dataclass(frozen=True)
class Classifier:
    """Patterns that classify GPU activities as compute, communication, memory or other.

    Each field is a tuple of regular expressions searched in the activity's name.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> mine = tv.Classifier().extend(communication=["^my_allreduce"])
    >>> mine.classify("my_allreduce_kernel"), tv.Classifier().classify("my_allreduce_kernel")
    (<GpuClass.COMMUNICATION: 'communication'>, <GpuClass.COMPUTE: 'compute'>)
    """

    #: Names of communication kernels (checked first).
    communication: tuple[str, ...] = field(default=DEFAULT_COMMUNICATION)
    #: Names of memory kernels (checked second).
    memory: tuple[str, ...] = field(default=DEFAULT_MEMORY)
    #: Names of device events that are not work, e.g. synchronisation (checked third).
    other: tuple[str, ...] = field(default=DEFAULT_OTHER)

    def __post_init__(self) -> None:
        for label in ("communication", "memory", "other"):
            value = getattr(self, label)
            if isinstance(value, str):
                raise TypeError(
                    f"Classifier.{label} must be a sequence of patterns, got the string {value!r}; write ({value!r},)"
                )
            object.__setattr__(self, label, tuple(value))
            if getattr(self, label) == _DEFAULTS[label]:
                continue  # known good (tests/model/test_classify.py compiles them); every load makes one
            for pattern in getattr(self, label):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"Classifier.{label}: bad regular expression {pattern!r}: {exc}") from None

    def extend(
        self,
        *,
        communication: Iterable[str] = (),
        memory: Iterable[str] = (),
        other: Iterable[str] = (),
    ) -> Classifier:
        """A classifier with these patterns added to the current ones."""
        return replace(
            self,
            communication=self.communication + tuple(communication),
            memory=self.memory + tuple(memory),
            other=self.other + tuple(other),
        )

    @cached_property
    def _matchers(self) -> tuple[_Matcher, ...]:
        return (_Matcher(self.communication), _Matcher(self.memory), _Matcher(self.other))

    def classify(self, name: str, kind: str | EventKind = EventKind.KERNEL) -> GpuClass | None:
        """The class of one activity, or None for kinds that are not GPU activities."""
        return self._classify(name, EventKind(kind))

    @lru_cache(maxsize=1 << 16)  # noqa: B019 - classifiers are few, frozen and hashable
    def _classify(self, name: str, kind: EventKind) -> GpuClass | None:
        if kind is EventKind.CUDA_SYNC:
            return GpuClass.OTHER
        if kind in (EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET):
            return GpuClass.MEMORY
        if kind is not EventKind.KERNEL:
            return None
        comm, mem, other = self._matchers
        if comm.search(name):
            return GpuClass.COMMUNICATION
        if mem.search(name):
            return GpuClass.MEMORY
        if other.search(name):
            return GpuClass.OTHER
        return GpuClass.COMPUTE

    def classify_column(self, name: pd.Categorical, kind: pd.Categorical) -> pd.Categorical:
        """Vectorised :meth:`classify` over categorical ``name`` and ``kind`` columns.

        Work is per kind present and per distinct kernel name, so it costs little even on
        millions of rows: only kernels' classes depend on their names.
        """
        codes = self.class_codes(np.asarray(name.codes), name.categories, np.asarray(kind.codes), list(kind.categories))
        return categorical(codes=codes, categories=GPU_CLASS_CATEGORIES)

    def class_codes(
        self, name_codes: np.ndarray, names: pd.Index | list[str], kind_codes: np.ndarray, kind_values: list[str]
    ) -> np.ndarray:
        """:meth:`classify_column`'s codes into ``GPU_CLASS_CATEGORIES`` (int8, -1: no class),
        from rows' codes into ``names`` (an Index, or a list of texts, which may repeat a text)
        and into ``kind_values``. The reader classifies several ranks' rows in one call."""
        out = np.full(len(name_codes), -1, dtype=np.int8)
        if len(out):
            # One class code per kind category (and -1 for a missing kind, at index -1);
            # -2 marks kernels, classified below by name.
            per_kind = np.full(len(kind_values) + 1, -1, dtype=np.int8)
            for kc in np.flatnonzero(np.bincount(kind_codes[kind_codes >= 0], minlength=len(kind_values))).tolist():
                k = EventKind(kind_values[kc])
                if k is EventKind.KERNEL:
                    per_kind[kc] = -2
                else:
                    cls = self._classify("", k)
                    if cls is not None:
                        per_kind[kc] = _CLASS_CODE[cls]
            out = per_kind[kind_codes]
            out[name_codes < 0] = -1  # no name, no class
            kernels = np.flatnonzero(out == -2)
            if len(kernels):
                uniq, inverse = np.unique(name_codes[kernels], return_inverse=True)
                if isinstance(names, list):
                    texts = list(map(names.__getitem__, uniq.tolist()))
                elif len(names) <= 4096:  # all the names as an array: cheaper than a pandas take
                    texts = names.to_numpy()[uniq].tolist()
                else:
                    texts = names.take(uniq).tolist()
                memo = self._kernel_codes
                mapped = np.empty(len(uniq), dtype=np.int8)
                for i, text in enumerate(texts):
                    text = str(text)
                    code = memo.get(text)
                    if code is None:
                        if len(memo) >= 1 << 16:
                            memo.clear()
                        cls = self._classify(text, EventKind.KERNEL)
                        code = memo[text] = -1 if cls is None else _CLASS_CODE[cls]
                    mapped[i] = code
                out[kernels] = mapped[inverse]
        return out

    @cached_property
    def _kernel_codes(self) -> dict[str, int]:
        """Class codes of kernel names met so far (this classifier's, bounded)."""
        return {}


_CLASS_CODE = {GpuClass(c): i for i, c in enumerate(GPU_CLASS_CATEGORIES)}


@lru_cache(maxsize=1)
def _rules_digest() -> str:
    """The SHA-256 of this module's source: the rules are its code, so any edit to it gives
    another :func:`rules_key` (and the cache classifies again) without a version to bump."""
    import hashlib

    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


@lru_cache(maxsize=16)
def rules_key(classifier: Classifier) -> str:
    """A key that is equal for two classifiers exactly when they classify alike: the rules'
    code (this module's source), the classes' categories and the patterns (for the classes
    the cache keeps)."""
    import hashlib
    import json

    what = [_rules_digest(), list(GPU_CLASS_CATEGORIES), classifier.communication, classifier.memory, classifier.other]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]
