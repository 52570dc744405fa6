"""What a trace records, per rank: training, inference, CUDA/HIP graph capture or replay,
CPU-only work or a loop bound by data loading (:func:`workload`).

The verdict conditions the findings' advice (``docs/semantics.md (workload)``): no "try CUDA
graphs" where graphs are captured or replayed already, memory advice in terms of the KV
cache, batch and sequence length for inference, a capture described as a capture.

It is read from names the profiler records, counted once per rank (:func:`_rank_markers`):

* backward: CPU operators or annotations (an Nsight export's NVTX ranges)
  ``autograd::engine::evaluate_function: ...``, ``*Backward*``, ``*_backward*`` (``aten::``
  backward operators, FSDP's ``pre_backward``/``post_backward`` hooks), DDP's
  ``reducer::copy_bucket_to_grad``; and backward kernels (``*backward*``, ``wgrad``,
  ``dgrad``, ``bwd``: cuDNN/CUTLASS weight and data gradients, FlashAttention's
  ``flash_bwd_*``), which a trace without host ranges still names. They run only when
  autograd computes gradients;
* optimizer steps: ``Optimizer.step#...`` (PyTorch's profiler hook), ``optimizer.step``
  annotations, fused optimizer operators (``aten::_fused_adam(w)_``, ``aten::_fused_sgd_``),
  and fused/multi-tensor optimizer kernels (``multi_tensor_apply`` with Adam, SGD, LAMB,
  Adagrad or Lion functors, Apex/DeepSpeed ``multi_tensor_adam``);
* a forward that sets up a backward: hooks registered only when autograd records the
  forward (``Register*Backward*``: FSDP's ``RegisterPostBackwardFunction``; DDP's
  ``reducer::search_unused_parameters``): training even where the window holds no backward
  (these set neither ``has_backward`` nor ``has_optimizer``);
* graph capture: runtime calls ``cudaStreamBeginCapture``/``EndCapture`` (and ``hip``/``cu``
  spellings), ``cudaGraphInstantiate``;
* graph replay: ``cudaGraphLaunch``, ``hipGraphLaunch``, ``cuGraphLaunch``;
* inference hints: ``inference_mode``/``no_grad`` frames or annotations, ``prefill`` and
  ``decode`` annotations (reported as evidence; the verdict needs only the absence of
  backward and optimizer);
* data loading: the main thread's time in DataLoader annotations within its iterations,
  as the ``dataloader_stall`` finding measures it (:func:`.host_findings.host_facts`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from ..format import short_name
from ..model.schema import EventKind
from ..model.text import searched
from ..model.trace import Trace
from . import _links as lk
from ._common import empty, scoped
from ._memo import per_rank
from .host_findings import host_facts

__all__ = ["DATA_LOADING_MIN_PCT", "GRAPH_LAUNCH", "VERDICTS", "RankWorkload", "workload", "workload_of"]

#: The verdicts, in precedence order: the first that applies is a rank's ``workload``.
VERDICTS = ("graph_capture", "graph_replay", "data_loading_bound", "cpu_only", "training", "inference")

#: A rank is ``data_loading_bound`` when its main thread spends at least this share (%) of
#: its iterations waiting on the DataLoader: more than half of every step is then spent
#: waiting for data, so data loading, not the model, sets the pace (a faster GPU or model
#: could at most halve the step time, a faster input pipeline could do more).
DATA_LOADING_MIN_PCT = 50.0

#: The runtime/driver calls that replay a CUDA/HIP graph: every GPU activity of the graph
#: shares the call's correlation id (its ``launch_eid``, docs/schema.md).
GRAPH_LAUNCH = re.compile(r"^(?:cuda|hip|cu)GraphLaunch")

_CPU_KINDS = (EventKind.CPU_OP.value, EventKind.USER_ANNOTATION.value, EventKind.PYTHON_FUNCTION.value)
_RUNTIME_KINDS = (EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value)
_GPU_WORK_KINDS = (EventKind.KERNEL.value, EventKind.GPU_MEMCPY.value, EventKind.GPU_MEMSET.value)
_ANNOTATION_KINDS = (EventKind.USER_ANNOTATION.value, EventKind.GPU_USER_ANNOTATION.value)

_HOST_RANGE_KINDS = (EventKind.CPU_OP.value, EventKind.USER_ANNOTATION.value)

#: Names with "backward" in them that run in the *forward*: hooks that set up the backward pass
#: (FSDP's ``RegisterPostBackwardFunction``). They are not backward work, but they are set up only
#: when autograd records the forward (``torch.is_grad_enabled()``): ``grad_forward`` counts them.
_REGISTERS_BACKWARD = re.compile(r"register\w*backward", re.IGNORECASE)

#: The markers counted, by group: (the event kinds looked at, the pattern searched in names,
#: a pattern whose names are left out, or None).
_MARKERS: dict[str, tuple[tuple[str, ...], re.Pattern[str], re.Pattern[str] | None]] = {
    # Backward operators and ranges: CPU operators in a Kineto trace, NVTX ranges in an Nsight
    # export (emit_nvtx, record_function), FSDP's and DDP's backward hooks.
    "backward": (
        _HOST_RANGE_KINDS,
        re.compile(r"^autograd::engine::evaluate_function|Backward|\w_backward|ddp\.reducer::copy_bucket_to_grad"),
        _REGISTERS_BACKWARD,
    ),
    # Backward kernels: what a trace without host ranges still names (an Nsight export without NVTX).
    "backward_kernels": (
        (EventKind.KERNEL.value,),
        re.compile(r"backward|(?<![a-z])(?:wgrad|dgrad|bwd)(?![a-z])", re.IGNORECASE),
        None,
    ),
    # Set up in a forward that computes gradients (training), before any backward runs.
    "grad_forward": (
        _HOST_RANGE_KINDS,
        re.compile(r"register\w*backward|ddp\.reducer::search_unused_parameters", re.IGNORECASE),
        None,
    ),
    "optimizer": (
        _HOST_RANGE_KINDS,
        re.compile(r"^Optimizer\.step#|optimizer\.step|^aten::_fused_(?:adamw?|sgd|adagrad)_?$"),
        None,
    ),
    # Optimizer kernels: fused/multi-tensor optimizer updates (PyTorch's fused Adam/SGD, Apex,
    # DeepSpeed); plain foreach kernels are left out (gradient clipping and AMP use them too).
    "optimizer_kernels": (
        (EventKind.KERNEL.value,),
        re.compile(
            r"multi_tensor_apply.*(?:adam|sgd|lamb|adagrad|lion)|fused_?(?:adam|sgd|lamb)|multi_tensor_(?:adam|sgd|lamb)",
            re.IGNORECASE,
        ),
        None,
    ),
    "begin_capture": (_RUNTIME_KINDS, re.compile(r"^(?:cuda|hip|cu)StreamBeginCapture"), None),
    "end_capture": (_RUNTIME_KINDS, re.compile(r"^(?:cuda|hip|cu)StreamEndCapture"), None),
    "instantiate": (_RUNTIME_KINDS, re.compile(r"^(?:cuda|hip|cu)GraphInstantiate"), None),
    "graph_launch": (_RUNTIME_KINDS, GRAPH_LAUNCH, None),
    "no_grad": (_CPU_KINDS, re.compile(r"inference_mode|no_grad", re.IGNORECASE), None),
    "prefill": (_ANNOTATION_KINDS, re.compile(r"prefill", re.IGNORECASE), None),
    "decode": (_ANNOTATION_KINDS, re.compile(r"decode", re.IGNORECASE), None),
}

_COLUMNS = {
    "rank": "int64",
    "workload": "str",
    "evidence": "str",
    "has_backward": "bool",
    "has_optimizer": "bool",
    "graph_capture": "bool",
    "graph_replay": "bool",
}


@dataclass(frozen=True)
class RankWorkload:
    """One row of :func:`workload` (what the findings' advice reads)."""

    rank: int
    workload: str
    evidence: str
    has_backward: bool
    has_optimizer: bool
    graph_capture: bool
    graph_replay: bool

    @property
    def uses_graphs(self) -> bool:
        """CUDA/HIP graphs are captured or replayed on this rank: "try CUDA graphs" does not apply."""
        return self.graph_capture or self.graph_replay

    @property
    def inference(self) -> bool:
        """The rank runs GPU work without backward or optimizer (inference, graphs or not)."""
        return self.workload != "cpu_only" and not (self.has_backward or self.has_optimizer)


def workload(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """What each rank's trace records: training, inference, graph capture or replay, CPU-only
    work, or a loop bound by data loading, with the evidence in words.

    One verdict per rank, the first of these that applies (precedence):

    1. ``graph_capture``: the rank captures CUDA/HIP graphs (``cudaStreamBeginCapture``,
       ``cudaStreamEndCapture``, ``cudaGraphInstantiate``, ``hip*``): its timings are those
       of the capture (recording, instantiation, warm-up), not of steady-state steps.
    2. ``graph_replay``: it replays graphs (``cudaGraphLaunch``, ``hipGraphLaunch``).
    3. ``data_loading_bound``: its main thread waits on the DataLoader for at least
       :data:`DATA_LOADING_MIN_PCT` (50) % of its iterations (as ``dataloader_stall``
       measures it).
    4. ``cpu_only``: no GPU work (kernels, copies, sets) at all.
    5. ``training``: backward operators or kernels (``autograd::engine::evaluate_function``,
       ``*Backward*``, ``*_backward*``, ``wgrad``/``dgrad``/``bwd`` kernels), optimizer steps
       or kernels (``Optimizer.step#...``, ``optimizer.step``, ``multi_tensor_apply`` Adam/SGD
       kernels), or backward hooks set up in the forward (``RegisterPostBackwardFunction``).
    6. ``inference``: GPU work without backward or optimizer.

    Parameters
    ----------
    trace : Trace
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        One row per rank, sorted by rank:

        rank : int
        workload : str
            ``graph_capture``, ``graph_replay``, ``data_loading_bound``, ``cpu_only``,
            ``training`` or ``inference``.
        evidence : str
            Why, in words, with the counts of what was found (backward operators,
            optimizer steps, capture and launch calls, GPU activities, the data-loading
            share, prefill/decode annotations, ``inference_mode``/``no_grad`` hints).
        has_backward : bool
            Backward operators or kernels were recorded.
        has_optimizer : bool
            Optimizer steps or optimizer kernels were recorded.
        graph_capture : bool
            Graph capture calls were recorded.
        graph_replay : bool
            Graph launches were recorded.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> w = tv.workload(tv.load(tv.sample_path()))
    >>> w["workload"].unique().tolist()  # the bundled DLRM step: backward and Adagrad on 8 ranks
    ['training']
    """
    scope = scoped(trace, ranks=ranks, iterations=iterations)
    return workload_of(scope, time_range=time_range, host=host_facts(scope, time_range=time_range, operators=False))


def workload_of(
    trace: Trace, *, time_range: tuple[int, int] | None, host: Mapping[int, Mapping[str, Any]]
) -> pd.DataFrame:
    """:func:`workload` of a scoped trace given its ranks' host facts
    (:func:`.host_findings.host_facts`: the findings pass the ones they compute)."""
    windowed = trace if time_range is None else trace.select(time_range=time_range)
    markers = per_rank(windowed, _rank_markers, keep=time_range is None)
    rows = [_verdict(r, markers[r], host.get(r)) for r in trace.ranks]
    if not rows:
        return empty(_COLUMNS)
    return pd.DataFrame([vars(x) for x in rows], columns=list(_COLUMNS)).astype(_COLUMNS)


@lru_cache(maxsize=1 << 16)
def _marks(group: str, name: str) -> bool:
    """Whether ``name`` is a marker of ``group`` (:data:`_MARKERS`: its pattern, not its exclusion);
    once per distinct name (the ranks of a trace share most names)."""
    _, pattern, exclude = _MARKERS[group]
    text = searched(name)
    return bool(pattern.search(text)) and not (exclude is not None and exclude.search(text))


def _rank_markers(trace: Trace) -> dict[str, Any]:
    """One rank's counts of each marker group, the first names matched, and its GPU work count."""
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    codes = np.asarray(ev["name"].array.codes)
    cats = ev["name"].cat.categories
    out: dict[str, Any] = {"gpu_work": int(lk.category_mask(ev["kind"], _GPU_WORK_KINDS).sum()), "names": {}}
    by_kinds: dict[tuple[str, ...], tuple[np.ndarray, list[str]]] = {}
    for group, (kinds, _, _) in _MARKERS.items():
        if kinds not in by_kinds:
            c = codes[lk.category_mask(ev["kind"], kinds)].astype(np.int64)
            counts = np.bincount(c[c >= 0], minlength=len(cats)) if len(c) else np.zeros(0, dtype=np.int64)
            present = np.flatnonzero(counts)
            by_kinds[kinds] = (counts[present], [str(x) for x in cats[present].tolist()])
        counts, names = by_kinds[kinds]
        hit = [i for i, n in enumerate(names) if _marks(group, n)]
        out[group] = int(counts[hit].sum()) if hit else 0
        top = sorted(hit, key=lambda i: (-int(counts[i]), names[i]))
        out["names"][group] = [names[i] for i in top[:2]] + (["..."] if len(top) > 2 else [])
    return out


def _verdict(rank: int, m: dict[str, Any], host: Mapping[str, Any] | None) -> RankWorkload:
    def named(group: str) -> str:
        names = m["names"][group]
        if group.endswith("_kernels"):  # C++ signatures: the kernel's short name
            names = [n if n == "..." else short_name(n) for n in names]
        shown = ", ".join(names)
        return f" ({shown})" if shown else ""

    capture = m["begin_capture"] + m["end_capture"] + m["instantiate"] > 0
    replay = m["graph_launch"] > 0
    backward = m["backward"] + m["backward_kernels"] > 0
    optimizer = m["optimizer"] + m["optimizer_kernels"] > 0
    grad_forward = m["grad_forward"] > 0
    dl_pct = 0.0
    if host is not None and host.get("wall_ns", 0) > 0:
        dl_pct = 100.0 * float(host["dataloader_ns"]) / float(host["wall_ns"])
    facts = []
    if capture:
        facts.append(
            f"{m['begin_capture']} stream capture begin and {m['end_capture']} end calls, "
            f"{m['instantiate']} graph instantiations"
        )
    if replay:
        facts.append(f"{m['graph_launch']} graph launches{named('graph_launch')}")
    if m["backward"]:
        facts.append(f"{m['backward']} backward operators{named('backward')}")
    if m["backward_kernels"]:
        facts.append(f"{m['backward_kernels']} backward kernels{named('backward_kernels')}")
    if not backward:
        facts.append("no backward operators or kernels")
    if m["optimizer"]:
        facts.append(f"{m['optimizer']} optimizer steps{named('optimizer')}")
    if m["optimizer_kernels"]:
        facts.append(f"{m['optimizer_kernels']} optimizer kernels{named('optimizer_kernels')}")
    if not optimizer:
        facts.append("no optimizer steps")
    if grad_forward:
        facts.append(
            f"{m['grad_forward']} backward hooks set up in the forward{named('grad_forward')}, "
            "done only when gradients will be computed"
        )
    facts.append(f"{m['gpu_work']} GPU activities (kernels, copies, sets)")
    if dl_pct > 0:
        facts.append(f"the main thread waits on the DataLoader for {dl_pct:.0f}% of its iterations")
    for group, what in (("prefill", "prefill"), ("decode", "decode"), ("no_grad", "inference_mode/no_grad")):
        if m[group]:
            facts.append(f"{m[group]} {what} annotations or frames{named(group)}")
    if capture:
        verdict, why = "graph_capture", "CUDA/HIP graphs are captured here: the timings are those of the capture"
    elif replay:
        verdict, why = "graph_replay", "CUDA/HIP graphs are replayed"
    elif dl_pct >= DATA_LOADING_MIN_PCT:
        verdict, why = (
            "data_loading_bound",
            f"data loading takes at least {DATA_LOADING_MIN_PCT:.0f}% of the iterations",
        )
    elif m["gpu_work"] == 0:
        verdict, why = "cpu_only", "no GPU work was recorded"
    elif backward or optimizer:
        verdict, why = "training", "gradients are computed or applied"
    elif grad_forward:
        verdict, why = "training", "the forward sets up a backward pass (the window holds no backward)"
    else:
        verdict, why = "inference", "GPU work without backward or optimizer"
    return RankWorkload(
        rank=int(rank),
        workload=verdict,
        evidence=f"{why}: " + "; ".join(facts) + ".",
        has_backward=backward,
        has_optimizer=optimizer,
        graph_capture=capture,
        graph_replay=replay,
    )
