"""Kernel classification: the one place that decides what a GPU activity does.

Rules, in order, for an event of a GPU activity kind (``kernel``, ``gpu_memcpy``,
``gpu_memset``, ``cuda_sync``):

1. ``cuda_sync`` events are ``other``; ``gpu_memcpy`` and ``gpu_memset`` are ``memory``.
2. A name matching one of ``Classifier.communication`` is ``communication``.
3. A name matching one of ``Classifier.memory`` is ``memory``.
4. A name matching one of ``Classifier.other`` is ``other``.
5. Anything else is ``compute``.

Then, by context (:func:`by_context`), a kernel that rule 5 made compute and whose name
matches none of ``Classifier.compute`` either (an *unrecognised* kernel: no pattern knows
it) is ``communication``

6. when the innermost operator or annotation enclosing its launch call (the CPU op,
   ``record_function``/NVTX range, or Python frame around the ``cudaLaunchKernel``) matches
   one of ``Classifier.communication_context`` (``c10d::``, ``nccl:``,
   ``record_param_comms``, an ``all_to_all`` op, an expert-parallel ``dispatch``/``combine``
   range), or an enclosing Python frame names a communication library
   (``Classifier.communication_frames``: ``deep_ep``, ``pplx``, ``nvshmem``, ...);
7. or when it runs on a stream whose kernels are all communication or unrecognised, one of
   them made communication by rule 6: the stream of the library the context showed to
   communicate, which runs only its kernels. (An unknown kernel on a stream of named
   collectives, NCCL's, with no such evidence was put there by the program: it stays
   compute.)

A kernel the ``compute`` patterns know (GEMM libraries, ATen, Triton, ...; unless its own
name carries a ``communication_context`` word) is never made communication by its context: an annotation named ``dispatch`` around an MoE layer's
permutation kernels leaves them compute.

Patterns are Python regular expressions, searched anywhere in the name
(``re.search``); anchor them with ``^`` to match a prefix. Extend the defaults
with :meth:`Classifier.extend`, e.g. for an in-house all-to-all kernel::

    clf = tv.Classifier().extend(communication=[r"my_a2a_kernel"])
    trace = tv.load("run/", classifier=clf)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .schema import GPU_CLASS_CATEGORIES, EventKind, GpuClass, categorical
from .text import searched

__all__ = ["COPY_KINDS", "Classifier", "by_context", "copy_kind_of"]

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
    # DeepEP-style expert-parallel kernels outside deep_ep:: (forks keep the namespaces).
    r"intranode::dispatch",
    r"intranode::combine",
    r"internode::dispatch",
    r"internode::combine",
    r"internode_ll::dispatch",
    r"internode_ll::combine",
    r"nvshmem",  # NVSHMEM-based all-to-all and one-sided kernels
    r"msccl",  # MSCCL and MSCCL++ (mscclpp::)
    r"pplx",  # pplx-kernels all-to-all dispatch/combine
    r"^ccl_",  # oneCCL (ccl_*, ccl::)
    r"^ccl::",
    r" ccl::",
    r"::ccl::",
    r"^ucc_",  # UCC's executor kernels
    r" ucc_",
    r"cross_device_reduce",  # vLLM custom all-reduce
    r"(?:one|two)Shot(?:All)?Reduce",  # TensorRT-LLM custom all-reduce
    r"userbuffers",  # Transformer Engine userbuffers comm/GEMM overlap
    # XLA's collective ops as JAX profiles name device work (all-reduce-start.1; docs/jax.md).
    r"^all-reduce",
    r"^all-gather",
    r"^reduce-scatter",
    r"^all-to-all",
    r"^collective-permute",
)

#: Operators and annotations whose kernels communicate (rule 6): searched in the name of the
#: innermost CPU operator or ``record_function``/NVTX range around a kernel's launch call.
DEFAULT_COMMUNICATION_CONTEXT: tuple[str, ...] = (
    r"^c10d::",  # c10d::allreduce_, c10d::alltoall_base_, ...
    r"^_?c10d_functional::",  # functional collectives
    r"^nccl:",  # nccl:all_reduce, nccl:all_to_all (newer PyTorch's ranges)
    r"^rccl:",
    r"record_param_comms",  # the profiler's record of every c10d collective
    # A collective or expert-parallel verb as a word: all_to_all(_single), alltoall,
    # all_reduce, all_gather, reduce_scatter, and an EP library's dispatch/combine range.
    r"(?i:(?:^|[^a-z0-9])(?:all_?to_?all\w*|all_?reduce|all_?gather\w*|reduce_?scatter\w*|dispatch|combine)"
    r"(?:$|[^a-z0-9]))",
)

#: Python frames (rule 6) that name a communication library: a kernel launched inside one,
#: with no operator in between, communicates.
DEFAULT_COMMUNICATION_FRAMES: tuple[str, ...] = (
    r"deep_ep",
    r"pplx",
    r"nvshmem",
    r"msccl",
    r"(?:inter|intra)node(?:_ll)?_(?:dispatch|combine)",  # DeepEP's C++ methods as Python sees them
    r"low_latency_(?:dispatch|combine)",
)

#: Kernels known to compute: matched, they are never made communication by their context
#: (rules 6, 7) and are *recognised* (``tv.findings``' ``unrecognised_kernels`` counts the
#: compute kernels that match none). Vendor GEMM/conv libraries, attention kernels, ATen's
#: and Triton's kernels, optimizers, and the usual kernel families by name.
DEFAULT_COMPUTE: tuple[str, ...] = (
    r"(?i:gemm|gemv|cublas|cutlass|xmma|nvjet|cijk_|hipblas|rocblas|tensile|matmul|wgmma|hgmma|s884|s1688|h884)",
    r"(?i:conv|cudnn|miopen|winograd|dgrad|wgrad|fprop|im2col|col2im|nchw|nhwc)",
    r"(?i:flash|fmha|attn|attention|softmax|rotary|rope_)",
    r"(?i:triton|at::native|at::cuda|cunn_|cub::|thrust::|ck::|ck_tile|aiter|flashinfer|xformers|vllm|sglang)",
    r"(?i:elementwise|vectorized|pointwise|unrolled|reduce|reduction|norm|moments|dropout|philox|curand)",
    r"(?i:distribution|index|gather|scatter|embedding|sort|topk|radix|scan|cumsum|histogram|bincount|nonzero)",
    r"(?i:copy|transpose|permute|fill|arange|where|clamp|masked|upsample|pool|interpolate|grid_sampl|loss)",
    r"(?i:nll|entropy|gelu|silu|relu|sigmoid|tanh|swiglu|act_and_mul|quant|cast|adam|sgd|lamb)",
    r"(?i:multi_tensor|foreach|amp_|unscale|transformer_engine|deepgemm|deep_gemm|marlin|cutensor|cufft|fft)",
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
    """Whether a name matches any of some patterns (``re.search``), with as few regular
    expressions as can be: a pattern that is plain text, or ``^`` and plain text, is looked
    for with ``in`` or ``str.startswith`` (several times faster than a regular expression that
    tries every alternative at every position of a long kernel name), and so is each text of
    a pattern that spells a few texts (``(?:one|two)Shot(?:All)?Reduce``: four texts,
    :func:`_texts_of`); a case-insensitive group of plain words (``(?i:gemm|conv)``, as the
    default compute patterns are) is looked for with ``in`` in the lower-cased name where the
    name is ASCII (for ASCII text that is what the flag does; a name with other characters,
    which the flag may fold to ASCII ones, is searched by the regular expression); a pattern
    of :data:`_GUARDS` is searched only in a name holding one of its texts; the others are
    one alternation. Regular expressions are compiled when a name first needs them: the
    default patterns' took ~1 ms of a process's first load, and most traces need none."""

    def __init__(self, patterns: Iterable[str]) -> None:
        prefixes, texts, words, folded, guarded, others = [], [], [], [], [], []
        for p in patterns:
            if p.startswith("^") and _SPECIAL.isdisjoint(p[1:]):
                prefixes.append(p[1:])
            elif _SPECIAL.isdisjoint(p):
                texts.append(p)
            elif (alternatives := _plain_words(p)) is not None:
                words.extend(alternatives)
                folded.append(p)
            elif (spelled := _texts_of(p.removeprefix("^"))) is not None:
                (prefixes if p.startswith("^") else texts).extend(spelled)
            elif p in _GUARDS:
                guarded.append(p)
            else:
                others.append(p)
        self.prefixes = tuple(dict.fromkeys(prefixes))
        self.texts = tuple(dict.fromkeys(texts))
        #: The case-insensitive plain words, lower-cased, and the patterns they came from.
        self.words = tuple(dict.fromkeys(words))
        self._folded = tuple(folded)
        #: Patterns searched only where the (ASCII, lower-cased) name holds one of their texts.
        self.guarded = tuple(guarded)
        self._others = tuple(others)

    def search(self, name: str) -> bool:
        name = searched(name)
        if name.startswith(self.prefixes):
            return True
        for text in self.texts:
            if text in name:
                return True
        if self.words or self.guarded:
            lower = name.lower() if name.isascii() else None
            if self.words:
                if lower is not None:
                    if any(map(lower.__contains__, self.words)):
                        return True
                elif self._folded_regex.search(name) is not None:
                    return True
            for p in self.guarded:
                if lower is not None and not any(map(lower.__contains__, _GUARDS[p])):
                    continue
                if _compiled(p).search(name) is not None:
                    return True
        return self.regex is not None and self.regex.search(name) is not None

    @cached_property
    def regex(self) -> re.Pattern[str] | None:
        """The alternation of the patterns looked for no other way (None: there are none)."""
        return _alternation(self._others)

    @cached_property
    def _folded_regex(self) -> re.Pattern[str]:
        regex = _alternation(self._folded)
        assert regex is not None  # (only asked for where there are words)
        return regex


@lru_cache(maxsize=256)
def _matcher(patterns: tuple[str, ...]) -> _Matcher:
    """The matcher of these patterns, made once a process (every load makes a Classifier)."""
    return _Matcher(patterns)


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _alternation(patterns: Sequence[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def _plain_words(pattern: str) -> list[str] | None:
    """The lower-cased alternatives of ``(?i:word|word|...)`` whose words are plain ASCII text
    (no character with a meaning in a regular expression), else None."""
    if not (pattern.startswith("(?i:") and pattern.endswith(")")):
        return None
    words = pattern[4:-1].split("|")
    if not all(w and w.isascii() and _SPECIAL.isdisjoint(w) for w in words):
        return None
    return [w.lower() for w in words]


#: The most texts :func:`_texts_of` spells a pattern into.
_MAX_TEXTS = 64


def _texts_of(pattern: str) -> list[str] | None:
    """The texts a pattern made only of plain text, groups of plain alternatives
    (``(?:one|two)``) and optional characters or groups (``_?``, ``(?:All)?``) matches: a name
    holds a match exactly where it holds one of them. None for any other pattern (or one
    spelling more than :data:`_MAX_TEXTS` texts)."""
    out = [""]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "(":
            if not pattern.startswith("(?:", i):
                return None
            close = pattern.find(")", i)
            if close < 0:
                return None
            options = pattern[i + 3 : close].split("|")
            if not all(_SPECIAL.isdisjoint(o) for o in options):
                return None
            i = close + 1
        elif c in _SPECIAL:
            return None
        else:
            options = [c]
            i += 1
        if pattern.startswith("?", i):
            options = ["", *options]
            i += 1
        if i < len(pattern) and pattern[i] in "*+{":
            return None
        out = [a + b for a in out for b in options]
        if len(out) > _MAX_TEXTS:
            return None
    return out


#: Patterns that match only names holding one of some texts (lower-cased, for an ASCII name):
#: the regular expression is compiled and searched only for those. The default context
#: pattern needs one of its verbs, spelled each way it allows (``all_?reduce``: ``allreduce``,
#: ``all_reduce``); ``tests/model/test_classify_matcher.py`` checks the guard.
_GUARDS: dict[str, tuple[str, ...]] = {
    DEFAULT_COMMUNICATION_CONTEXT[-1]: tuple(
        text
        for verb in ("all_?to_?all", "all_?reduce", "all_?gather", "reduce_?scatter", "dispatch", "combine")
        for text in _texts_of(verb) or ()
    ),
}


#: The default patterns, by field: a classifier with them needs no check of its patterns.
_DEFAULTS = {
    "communication": DEFAULT_COMMUNICATION,
    "memory": DEFAULT_MEMORY,
    "other": DEFAULT_OTHER,
    "compute": DEFAULT_COMPUTE,
    "communication_context": DEFAULT_COMMUNICATION_CONTEXT,
    "communication_frames": DEFAULT_COMMUNICATION_FRAMES,
}


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
    #: Names of kernels known to compute: never made communication by their context, and
    #: *recognised* (the findings rule ``unrecognised_kernels`` reports the others).
    compute: tuple[str, ...] = field(default=DEFAULT_COMPUTE)
    #: Names of operators and annotations whose unrecognised kernels communicate (the
    #: innermost one around the launch call).
    communication_context: tuple[str, ...] = field(default=DEFAULT_COMMUNICATION_CONTEXT)
    #: Python frames around a launch call that name a communication library.
    communication_frames: tuple[str, ...] = field(default=DEFAULT_COMMUNICATION_FRAMES)

    def __post_init__(self) -> None:
        for label in _DEFAULTS:
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
        compute: Iterable[str] = (),
        communication_context: Iterable[str] = (),
        communication_frames: Iterable[str] = (),
    ) -> Classifier:
        """A classifier with these patterns added to the current ones."""
        for label, value in locals().items():
            if isinstance(value, str):
                raise TypeError(f"Classifier.extend({label}=...) takes a sequence of patterns; write [{value!r}]")
        return replace(
            self,
            communication=self.communication + tuple(communication),
            memory=self.memory + tuple(memory),
            other=self.other + tuple(other),
            compute=self.compute + tuple(compute),
            communication_context=self.communication_context + tuple(communication_context),
            communication_frames=self.communication_frames + tuple(communication_frames),
        )

    @cached_property
    def _matchers(self) -> tuple[_Matcher, ...]:
        return (_matcher(self.communication), _matcher(self.memory), _matcher(self.other))

    @cached_property
    def _context_matchers(self) -> tuple[_Matcher, _Matcher, _Matcher, _Matcher]:
        """The default compute patterns, the context, the frames, and the compute patterns
        added to the defaults (which no communication word in a name overrides)."""
        return (
            _matcher(tuple(p for p in self.compute if p in DEFAULT_COMPUTE)),
            _matcher(self.communication_context),
            _matcher(self.communication_frames),
            _matcher(tuple(p for p in self.compute if p not in DEFAULT_COMPUTE)),
        )

    def recognises(self, name: str, kind: str | EventKind = EventKind.KERNEL) -> bool:
        """Whether some pattern knows this activity: its kind or name decides its class
        (rules 1-4), or a ``compute`` pattern matches it and no ``communication_context``
        pattern does (a kernel named after a collective or a ``dispatch``/``combine`` is not
        known to compute by the default patterns; patterns added with
        ``extend(compute=...)`` always are). False for kernels that are compute only because nothing else
        matched: rules 6 and 7 may make them communication; ``unrecognised_kernels``
        reports the rest."""
        return EventKind(kind) is not EventKind.KERNEL or self._recognised(name)

    @lru_cache(maxsize=1 << 16)  # noqa: B019 - as _classify
    def _recognised(self, name: str) -> bool:
        if self._classify(name, EventKind.KERNEL) is not GpuClass.COMPUTE:
            return True
        known, context, _, added = self._context_matchers
        return added.search(name) or (known.search(name) and not context.search(name))

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
_OP_KINDS = (EventKind.CPU_OP.value, EventKind.USER_ANNOTATION.value)


def _texts(names: pd.Index | list[str], codes: np.ndarray) -> list[object]:
    """The names at ``codes`` (an Index's, taken at once)."""
    if isinstance(names, list):
        return [names[i] for i in codes.tolist()]
    return list(names.take(codes)) if len(codes) else []


def by_context(
    clf: Classifier,
    classes: np.ndarray,
    *,
    kind_codes: np.ndarray,
    kind_values: list[str],
    name_codes: np.ndarray,
    names: pd.Index | list[str],
    launch: np.ndarray,
    parent: np.ndarray,
    lanes: tuple[np.ndarray, ...],
) -> np.ndarray:
    """Rules 6 and 7 of the module's docstring: the class codes ``classes`` (of
    :meth:`Classifier.class_codes`) with the unrecognised compute kernels that communicate
    by their context made ``communication`` (a new array where any changes).

    Every array is one per row of a table (one rank's events, or several ranks' in a
    reader's batch): ``kind_codes`` into ``kind_values``; ``name_codes`` into ``names``;
    ``launch``, the row of a GPU activity's launch call, and ``parent``, the row of a CPU
    event's enclosing event on its thread (-1: none); ``lanes``, arrays whose values
    together name a device row's stream (device, stream and, in a batch, the file).
    """
    kinds = {v: i for i, v in enumerate(kind_values)}
    kernel_code = kinds.get(EventKind.KERNEL.value, -2)
    compute, comm = _CLASS_CODE[GpuClass.COMPUTE], _CLASS_CODE[GpuClass.COMMUNICATION]
    is_kernel = kind_codes == kernel_code
    cand = np.flatnonzero(is_kernel & (classes == compute) & (name_codes >= 0))
    if not len(cand):
        return classes
    _, context, frames, _ = clf._context_matchers
    uniq, inv = np.unique(name_codes[cand], return_inverse=True)
    unknown = np.array([not clf._recognised(str(x)) for x in _texts(names, uniq)], dtype=bool)
    cand = cand[unknown[inv.reshape(-1)]]
    if not len(cand):
        return classes
    out: np.ndarray = classes.copy()

    # Rule 6: up from the launch call to the innermost operator or annotation; Python frames
    # on the way count when they name a communication library.
    op_codes = np.array([kinds[k] for k in _OP_KINDS if k in kinds], dtype=np.int64)
    py_code = kinds.get(EventKind.PYTHON_FUNCTION.value, -2)
    verdicts: dict[int, tuple[bool, bool]] = {}  # name code -> (context, frame)
    hit = np.zeros(len(cand), dtype=bool)
    at = launch[cand]
    idx = np.flatnonzero(at >= 0)
    at = parent[at[idx]]
    for _ in range(1 << 15):  # (nesting depth is an int16: no chain is longer)
        if not len(idx):
            break
        keep = at >= 0
        idx, at = idx[keep], at[keep]
        if not len(idx):
            break
        k, nm = kind_codes[at], name_codes[at]
        new = [c for c in np.unique(nm).tolist() if c not in verdicts]
        for c, text in zip(new, _texts(names, np.array([max(c, 0) for c in new], dtype=np.int64)), strict=True):
            text = str(text) if c >= 0 else ""
            verdicts[c] = (context.search(text), frames.search(text))
        codes = nm.tolist()
        is_ctx = np.fromiter((verdicts[c][0] for c in codes), dtype=bool, count=len(codes))
        is_frame = np.fromiter((verdicts[c][1] for c in codes), dtype=bool, count=len(codes))
        is_op = np.isin(k, op_codes)
        found = (is_op & is_ctx) | ((k == py_code) & is_frame)
        hit[idx[found]] = True
        go_on = ~(is_op | found)
        idx, at = idx[go_on], parent[at[go_on]]
    out[cand[hit]] = comm

    # Rule 7: a stream whose kernels are all communication or unrecognised, with a kernel made
    # communication by its context, is that library's stream: it runs only communication.
    rest = cand[~hit]
    kern = np.flatnonzero(is_kernel)
    if len(rest) and hit.any():
        lane_keys = np.stack([np.asarray(a)[kern].astype(np.int64) for a in lanes], axis=1)
        _, lane_of = np.unique(lane_keys, axis=0, return_inverse=True)
        lane_of = lane_of.reshape(-1)
        unrecognised = np.zeros(len(out), dtype=bool)
        unrecognised[rest] = True
        cls = out[kern]
        n = int(lane_of.max()) + 1
        compute_known = np.bincount(lane_of, weights=(cls == compute) & ~unrecognised[kern], minlength=n)
        by_ctx = np.zeros(len(out), dtype=bool)
        by_ctx[cand[hit]] = True
        has_ctx = np.bincount(lane_of, weights=by_ctx[kern], minlength=n)
        comm_lane = (compute_known == 0) & (has_ctx > 0)
        where = np.zeros(len(out), dtype=bool)
        where[kern[comm_lane[lane_of]]] = True
        out[rest[where[rest]]] = comm
    return out


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

    what = [_rules_digest(), list(GPU_CLASS_CATEGORIES), *(getattr(classifier, label) for label in _DEFAULTS)]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]
