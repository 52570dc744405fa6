"""The Trace: per-rank columnar tables of a (distributed) profiling run, and its metadata."""

from __future__ import annotations

import contextlib
import html
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from ..errors import OptionError, TraceSelectionError
from ..format import duration, headline_items, plural, ranges, time
from . import intervals as iv
from .classify import Classifier, by_context
from .display_hook import Headline, SkippedFile, headline_hook, mimebundle_hook
from .frames import paused_gc
from .rank_data import RankData, RankMeta, replaced
from .schema import GPU_ACTIVITY_KINDS, GPU_CLASS_CATEGORIES, EventKind, categorical

__all__ = ["Trace"]

T = TypeVar("T")

_ACTIVITY = [k.value for k in GPU_ACTIVITY_KINDS]

_ITERATION_COLUMNS = ["rank", "step", "start_ns", "end_ns", "dur_ns", "gpu_start_ns", "gpu_end_ns"]


def concat_ranks(frames: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """Concatenate per-rank frames under a leading ``rank`` column, keeping categoricals."""
    ranks = list(frames)
    parts = [frames[r] for r in ranks]
    if not parts:
        return pd.DataFrame({"rank": pd.Series([], dtype=np.int32)})
    columns: dict[str, Any] = {
        "rank": np.repeat(np.asarray(ranks, dtype=np.int32), [len(f) for f in parts]),
    }
    for col in parts[0].columns:
        values = [f[col] for f in parts]
        if isinstance(values[0].dtype, pd.CategoricalDtype):
            columns[col] = union_categoricals([v.array for v in values], ignore_order=True)
        else:
            columns[col] = np.concatenate([v.to_numpy() for v in values])
    return pd.DataFrame(columns)


class Trace:
    """A profiling run: one table set per rank, loaded by :func:`jupyter_traceview.load`.

    Tables follow :mod:`jupyter_traceview.model.schema` (see ``docs/schema.md``). Frames returned
    by the accessors are shallow copies: change them freely, the trace is not affected.

    Everything here rests on four primitives: :attr:`ranks`, :meth:`meta`,
    :meth:`rank_data` and :meth:`map_ranks` (plus ``_rebuild`` for narrowing). A trace
    whose ranks live elsewhere (``engine="dask"``) overrides just those.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> trace.ranks
    (0, 1, 2, 3, 4, 5, 6, 7)
    >>> kernels = trace.events(0).query("kind == 'kernel'")
    """

    def __init__(
        self,
        ranks: Iterable[RankData],
        *,
        classifier: Classifier | None = None,
        source: str | None = None,
        window: tuple[int, int] | None = None,
        skipped_files: Iterable[SkippedFile] = (),
        run_status: str = "ok",
        _classified: bool = False,
    ) -> None:
        data = sorted(ranks, key=lambda d: d.meta.rank)
        seen: dict[int, str] = {}
        for d in data:
            if d.meta.rank in seen:
                raise ValueError(f"two tables for rank {d.meta.rank}: {seen[d.meta.rank]} and {d.meta.path}")
            seen[d.meta.rank] = d.meta.path
        self._classifier = classifier or Classifier()
        if not _classified:
            with paused_gc():
                data = [classified(d, self._classifier) for d in data]
        self._data: dict[int, RankData] = {d.meta.rank: d for d in data}
        self._source = source
        self._window = window
        self._skipped: tuple[SkippedFile, ...] = tuple(skipped_files)
        self._run_status = run_status
        self._cache: dict[str, Any] = {}
        #: The origin inherited from the trace this one was narrowed from (see t0_ns).
        self._origin: int | None = None

    # ------------------------------------------------------------------ primitives
    @property
    def ranks(self) -> tuple[int, ...]:
        """The ranks held, sorted."""
        return tuple(self._data)

    def meta(self, rank: int) -> RankMeta:
        """What rank ``rank``'s file says about itself."""
        return self.rank_data(rank).meta

    def rank_data(self, rank: int) -> RankData:
        """The raw per-rank tables (not copied: do not modify them)."""
        try:
            return self._data[rank]
        except KeyError:
            raise TraceSelectionError.unknown("rank", rank, self.ranks) from None

    def map_ranks(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> dict[int, T]:
        """``fn(one_rank_trace, *args, **kwargs)`` for every rank, as {rank: result}.

        ``one_rank_trace`` is a Trace holding that rank only, with this trace's classifier
        and window. Analyses run per rank this way, so that the ranks can be processed
        where they live (the workers of ``engine="dask"``); ``fn`` must therefore be a
        module-level function, and its result small.
        """
        return {r: fn(self._one(r), *args, **kwargs) for r in self._data}

    @property
    def client(self) -> Any:
        """The ``distributed.Client`` whose workers hold the ranks (``engine="dask"``), else None."""
        return None

    def keep_on_workers(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> dict[int, Any]:
        """``fn(rank_data, *args, **kwargs)`` for every rank, left where the rank lives.

        Here (ranks in this process) the results themselves; on a trace whose ranks live on
        dask workers, futures of results kept there (see :attr:`client`). For derived
        per-rank structures too big to bring back (the timeline's per-rank index). ``fn``
        must be a module-level function.
        """
        return {r: fn(d, *args, **kwargs) for r, d in self._data.items()}

    def keep_ranks(self, fn: Callable[..., Any], /, per_rank: Mapping[int, tuple[Any, ...]]) -> dict[int, Any]:
        """``fn(one_rank_trace, *per_rank[r])`` for each rank ``r`` of ``per_rank``, left where the rank lives.

        :meth:`map_ranks` for state kept between calls (the distributed what-if replay):
        here the results themselves; on a trace whose ranks live on dask workers, futures
        of results kept there, and the arguments may be such futures (what an earlier call
        kept for that rank). :meth:`gather_ranks` brings results back. ``fn`` must be a
        module-level function.
        """
        return {r: fn(self._one(r), *args) for r, args in per_rank.items()}

    def gather_ranks(self, kept: Mapping[int, Any]) -> dict[int, Any]:
        """The values of results :meth:`keep_ranks` kept (here: the results themselves)."""
        return dict(kept)

    def _one(self, rank: int) -> Trace:
        one = Trace(
            [self.rank_data(rank)],
            classifier=self._classifier,
            source=self._source,
            window=self._window,
            _classified=True,
        )
        one._origin = getattr(self, "_origin", None)
        return self._carry_notes(one)

    def _rebuild(
        self,
        ranks: Sequence[int],
        transform: Callable[..., RankData],
        *,
        window: tuple[int, int] | None,
        classifier: Classifier,
        **kwargs: Any,
    ) -> Trace:
        """A trace of ``transform(rank_data, **kwargs)`` for the given ranks."""
        return Trace(
            [transform(self._data[r], **kwargs) for r in ranks],
            classifier=classifier,
            source=self._source,
            window=window,
            skipped_files=self.skipped_files,
            run_status=self.run_status,
            _classified=True,
        )

    def _carry_notes(self, other: Trace) -> Trace:
        """``other`` (made from this trace) with this trace's :attr:`skipped_files` and :attr:`run_status`."""
        other._skipped = self.skipped_files
        other._run_status = self.run_status
        return other

    # ------------------------------------------------------------------ identity
    @property
    def source(self) -> str | None:
        """The path the trace was loaded from, if any."""
        return self._source

    @property
    def skipped_files(self) -> tuple[SkippedFile, ...]:
        """The trace files the load left out (``tv.load(..., on_error="skip")``): their
        ``path`` and the ``reason``; empty when every file was read."""
        return getattr(self, "_skipped", ())

    @property
    def run_status(self) -> str:
        """How the ``%%traceprofile`` run that wrote this trace ended, from its run record:
        ``"ok"``, ``"error"`` (the cell raised: its last step is partial) or ``"interrupted"``;
        ``"ok"`` for a trace without a run record."""
        return getattr(self, "_run_status", "ok")

    @property
    def classifier(self) -> Classifier:
        """The kernel classification in use (see :meth:`with_classifier`)."""
        return self._classifier

    @property
    def window(self) -> tuple[int, int] | None:
        """The time range this trace was narrowed to with ``select(time_range=...)``, or None.

        The events were clipped to it (see :meth:`select`).
        """
        return self._window

    def _cached(self, key: str, compute: Callable[[], T]) -> T:
        if key not in self._cache:
            self._cache[key] = compute()
        # Each key is computed by one function, so its value has that function's type.
        return cast(T, self._cache[key])

    def __len__(self) -> int:
        return sum(self._cached("lengths", lambda: self.map_ranks(_n_events)).values())

    # ------------------------------------------------------------------ tables
    def events(self, rank: int | None = None) -> pd.DataFrame:
        """Events of one rank, or of all ranks with a leading ``rank`` column."""
        if rank is not None:
            return self.rank_data(rank).events.copy(deep=False)
        return self._cached("events", lambda: concat_ranks(self.map_ranks(_table, "events"))).copy(deep=False)

    def gpu_args(self, rank: int | None = None) -> pd.DataFrame:
        """Kernel launch and copy arguments, keyed by ``eid`` (see ``docs/schema.md``)."""
        if rank is not None:
            return self.rank_data(rank).gpu_args.copy(deep=False)
        return self._cached("gpu_args", lambda: concat_ranks(self.map_ranks(_table, "gpu_args"))).copy(deep=False)

    def comms(self, rank: int | None = None) -> pd.DataFrame:
        """Collective-communication metadata, keyed by ``eid`` (see ``docs/schema.md``)."""
        if rank is not None:
            return self.rank_data(rank).comms.copy(deep=False)
        return self._cached("comms", lambda: concat_ranks(self.map_ranks(_table, "comms"))).copy(deep=False)

    def memory(self, rank: int | None = None) -> pd.DataFrame:
        """Allocator records (``profile_memory=True``), keyed by ``eid`` (see ``docs/schema.md``)."""
        if rank is not None:
            return self.rank_data(rank).memory.copy(deep=False)
        return self._cached("memory", lambda: concat_ranks(self.map_ranks(_table, "memory"))).copy(deep=False)

    def op_args(self, rank: int | None = None) -> pd.DataFrame:
        """Recorded operator arguments (shapes, dtypes), keyed by ``eid`` (see ``docs/schema.md``)."""
        if rank is not None:
            return self.rank_data(rank).op_args.copy(deep=False)
        return self._cached("op_args", lambda: concat_ranks(self.map_ranks(_table, "op_args"))).copy(deep=False)

    def counters(self, rank: int | None = None) -> pd.DataFrame:
        """Hardware counter samples (CUPTI PM sampling's ``GPU N Counters`` tracks), by ``ts_ns`` (see ``docs/schema.md``)."""
        if rank is not None:
            return self.rank_data(rank).counters.copy(deep=False)
        return self._cached("counters", lambda: concat_ranks(self.map_ranks(_table, "counters"))).copy(deep=False)

    @property
    def metadata(self) -> pd.DataFrame:
        """One row per rank: file, rank source, world size, backend, device, clock, events.

        ``clock_offset_ns`` is the shift subtracted from the rank's times by clock
        alignment (``tv.align_clocks``); 0 if none.
        """
        return pd.DataFrame(list(self.map_ranks(_metadata_row).values()))

    @property
    def t0_ns(self) -> int:
        """The trace's origin (absolute ns): the earliest event start over all ranks.

        Every relative time the package shows counts from it: the timeline's axis, the
        charts' axes and tooltips, the tables and the findings (``+18.1 ms`` means
        ``t0_ns + 18_100_000``), so a time read anywhere can be given to
        ``timeline.show_range(trace.t0_ns + a, trace.t0_ns + b)``. DataFrames keep absolute
        ``*_ns`` times. A trace narrowed with :meth:`select` or :meth:`with_classifier`
        keeps the origin of the trace it came from; aligning clocks (which moves the
        times) gives a new one.
        """
        origin = getattr(self, "_origin", None)
        if origin is not None:
            return int(origin)
        starts = [s for s in self._cached("starts", lambda: self.map_ranks(_first_start)).values() if s is not None]
        return min(starts) if starts else 0

    def _keep_origin(self, other: Trace) -> Trace:
        """``other`` (a narrowing of this trace) with this trace's origin."""
        other._origin = self.t0_ns
        return other

    @property
    def iterations(self) -> pd.DataFrame:
        """ProfilerStep iterations per rank.

        Columns: ``rank``, ``step`` (the N of ProfilerStep#N), ``start_ns``, ``end_ns``,
        ``dur_ns`` (the CPU-side span), ``gpu_start_ns``, ``gpu_end_ns`` (first start and
        last end of the GPU activities launched in the step; -1 if none).
        """
        return self._cached("iterations", self._iterations).copy(deep=False)

    def _iterations(self) -> pd.DataFrame:
        parts = [p for p in self.map_ranks(_rank_iterations).values() if len(p)]
        if not parts:
            return pd.DataFrame({c: pd.Series([], dtype=np.int64) for c in _ITERATION_COLUMNS})
        # Column by column (what pd.concat, then astype per column, gives: an int64 column and
        # a float64 one, -1 where a step launched nothing, concatenate to float64, then int64),
        # one frame built at once: a few ms less per call on a one-rank trace.
        return pd.DataFrame(
            {
                c: (
                    parts[0][c].to_numpy() if len(parts) == 1 else np.concatenate([p[c].to_numpy() for p in parts])
                ).astype(np.int64)
                for c in _ITERATION_COLUMNS
            }
        )

    # ------------------------------------------------------------------ narrowing
    def select(
        self,
        *,
        ranks: Iterable[int] | int | None = None,
        iterations: Iterable[int] | int | None = None,
        time_range: tuple[int, int] | None = None,
        _clip: bool = True,
    ) -> Trace:
        """A trace narrowed to some ranks, ProfilerStep iterations and/or a time range.

        ``iterations`` keeps the events of those steps (GPU activities by their launch).

        ``time_range=(start_ns, end_ns)`` (absolute ns, as in ``ts_ns``; relative times
        shown anywhere count from :attr:`t0_ns`) clips every event to ``[start_ns,
        end_ns)``: an event crossing an edge keeps only its part inside (its ``ts_ns`` and
        ``dur_ns`` change), an event entirely outside is dropped, an instant (``dur_ns``
        0) is kept when it lies inside. Every analysis of the result therefore describes
        exactly that window: busy time over two adjacent windows adds up to the busy time
        over both, and no span exceeds the window. The range is kept as :attr:`window`;
        selecting again intersects it. The origin (:attr:`t0_ns`) stays the trace's.

        Unknown ranks or iterations raise :class:`TraceSelectionError` listing those that
        exist. (``_clip=False``, for the analyses documented to count whole events, keeps the
        events overlapping the window unclipped.)

        Examples
        --------
        >>> import jupyter_traceview as tv
        >>> trace = tv.load(tv.sample_path())
        >>> t0 = trace.t0_ns
        >>> part = trace.select(ranks=0, time_range=(t0 + 5_000_000, t0 + 6_000_000))
        >>> ev = part.events(0)
        >>> bool(ev["ts_ns"].min() >= t0 + 5_000_000), bool((ev["ts_ns"] + ev["dur_ns"]).max() <= t0 + 6_000_000)
        (True, True)
        >>> part.t0_ns == t0
        True
        """
        keep = list(self.ranks)
        if ranks is not None:
            wanted = [ranks] if isinstance(ranks, (int, np.integer)) else list(ranks)
            for r in wanted:
                if r not in keep:
                    raise TraceSelectionError.unknown("rank", r, self.ranks)
            keep = sorted({int(r) for r in wanted})
        window = self._window
        if time_range is not None:
            lo, hi = (int(time_range[0]), int(time_range[1]))
            if hi <= lo:
                raise OptionError(f"time_range must be (start_ns, end_ns) with end > start, got {time_range}")
            if window is not None:
                lo, hi = max(lo, window[0]), min(hi, window[1])
            window = (lo, hi)
        steps: list[int] | None = None
        if iterations is not None:
            steps = [iterations] if isinstance(iterations, (int, np.integer)) else list(iterations)
            available = sorted(set(self.iterations["step"].tolist()))
            for s in steps:
                if s not in available:
                    raise TraceSelectionError.unknown("iteration", s, available)
        return self._keep_origin(
            self._rebuild(
                keep,
                _select_rank,
                window=window,
                classifier=self._classifier,
                steps=steps,
                time_window=window,
                clip=_clip,
            )
        )

    def with_classifier(self, classifier: Classifier) -> Trace:
        """The same trace with GPU activities classified by ``classifier``."""
        return self._keep_origin(
            self._rebuild(list(self.ranks), classified, window=self._window, classifier=classifier, clf=classifier)
        )

    # ------------------------------------------------------------------ display
    def _headline(self) -> Headline:
        """``tv.headline(self)`` (installed by the package root), computed once; a copy."""
        hook = headline_hook()
        if hook is None:
            raise RuntimeError("no headline function installed: import jupyter_traceview")
        return self._cached("headline_dict", lambda: hook(self)).copy()

    def _extent_ns(self) -> int:
        """Last event end over all ranks minus :attr:`t0_ns`: the width of the timeline."""
        ends = [e for e in self._cached("ends", lambda: self.map_ranks(_last_end)).values() if e is not None]
        return max(ends) - self.t0_ns if ends else 0

    def _figures(self) -> list[tuple[str, str, str]]:
        """``tv.headline(self)`` as (label, value, hint) texts (see ``format.headline_items``)."""
        if headline_hook() is None:
            return [("ranks", str(len(self.ranks)), "")]
        return headline_items(self._headline())

    def __repr__(self) -> str:
        n = len(self.ranks)
        lines = [f"<Trace {plural(n, 'rank')} [{ranges(self.ranks)}] from {self._source or '(memory)'}>"]
        lines += [f"  {label}: {value}" + (f"  ({hint})" if hint else "") for label, value, hint in self._figures()]
        if self._window:
            lo, hi = self._window
            lines.append(f"  window: {time(lo - self.t0_ns)} to {time(hi - self.t0_ns)} ({duration(hi - lo)})")
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any] | None:
        """In a kernel with widgets: a compact summary with a button that opens ``tv.Dashboard``.

        Elsewhere (a terminal, a static viewer) None, and the text and HTML reprs show.
        """
        hook = mimebundle_hook()
        if hook is None:
            return None
        return hook(self, include=include, exclude=exclude)

    def _repr_html_(self) -> str:
        cells = self._figures()
        if self._window:
            lo, hi = self._window
            cells.append(("window", f"{time(lo - self.t0_ns)} to {time(hi - self.t0_ns)}", duration(hi - lo)))
        rows = "".join(
            f"<tr title='{html.escape(hint, quote=True)}'><th style='text-align:left;padding-right:1em'>"
            f"{html.escape(k)}</th><td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v, hint in cells
        )
        src = html.escape(self._source or "(memory)")
        return (
            f"<div class='jp-traceview-summary'><div><b>Trace</b> <code>{src}</code></div><table>{rows}</table></div>"
        )


# ---------------------------------------------------------------------- per-rank pieces
# Module-level functions, so that they can run where the ranks live (see Trace.map_ranks).


def classified(d: RankData, clf: Classifier) -> RankData:
    """A rank's tables with the ``gpu_class`` column computed by ``clf``."""
    ev = d.events.copy(deep=False)
    cls = clf.classify_column(ev["name"].array, ev["kind"].array)
    cls = categorical(codes=_by_context(ev, clf, np.asarray(cls.codes)), categories=GPU_CLASS_CATEGORIES)
    if "gpu_class" in ev.columns:
        ev["gpu_class"] = cls
    else:
        ev.insert(ev.columns.get_loc("kind") + 1, "gpu_class", cls)
    return replaced(d, events=ev)


def _by_context(ev: pd.DataFrame, clf: Classifier, codes: np.ndarray) -> np.ndarray:
    """:func:`~.classify.by_context` over a rank's events (whose eids may not be its rows:
    a trace narrowed by :meth:`Trace.select` keeps its events' eids)."""
    eid = ev["eid"].to_numpy()
    positional = np.array_equal(eid, np.arange(len(eid)))
    index = None if positional else pd.Index(eid)

    def rows(col: str) -> np.ndarray:
        x = ev[col].to_numpy().astype(np.int64, copy=False)
        return x if index is None else np.where(x >= 0, index.get_indexer(x), -1)

    name, kind = ev["name"].array, ev["kind"].array
    return by_context(
        clf,
        codes.astype(np.int8, copy=False),
        kind_codes=np.asarray(kind.codes),
        kind_values=list(kind.categories),
        name_codes=np.asarray(name.codes),
        names=name.categories,
        launch=rows("launch_eid"),
        parent=rows("parent_eid"),
        lanes=(ev["device"].to_numpy(), ev["stream"].to_numpy()),
    )


def _select_rank(
    d: RankData, *, steps: list[int] | None, time_window: tuple[int, int] | None, clip: bool = True
) -> RankData:
    ev = d.events
    keep = np.ones(len(ev), dtype=bool)
    if steps is not None:
        keep &= ev["step"].isin(steps).to_numpy()
    clipped: tuple[np.ndarray, np.ndarray] | None = None
    if time_window is not None:
        lo, hi = time_window
        ts = ev["ts_ns"].to_numpy()
        end = ts + ev["dur_ns"].to_numpy()
        instant = end == ts
        keep &= np.where(instant, (ts >= lo) & (ts < hi), (ts < hi) & (end > lo))
        if clip and ((ts < lo).any() or (end > hi).any()):
            clipped = (np.maximum(ts, lo), np.minimum(end, hi))
    if keep.all() and clipped is None:
        return d
    events = ev
    eids = ev["eid"].to_numpy()[keep]
    gpu_args = d.gpu_args.loc[d.gpu_args["eid"].isin(eids)].reset_index(drop=True)
    if clipped is not None:
        events = ev.copy(deep=False)
        old_dur = ev["dur_ns"].to_numpy()
        new_dur = clipped[1] - clipped[0]
        events["ts_ns"] = clipped[0].astype(ev["ts_ns"].dtype, copy=False)
        events["dur_ns"] = new_dur.astype(ev["dur_ns"].dtype, copy=False)
        gpu_args = _prorate_bytes(gpu_args, ev["eid"].to_numpy()[keep], old_dur[keep], new_dur[keep])
    return RankData(
        meta=d.meta,
        events=events.loc[keep].reset_index(drop=True),
        gpu_args=gpu_args,
        comms=d.comms.loc[d.comms["eid"].isin(eids)].reset_index(drop=True),
        memory=d.memory.loc[d.memory["eid"].isin(eids)].reset_index(drop=True),
        op_args=d.op_args.loc[d.op_args["eid"].isin(eids)].reset_index(drop=True),
        counters=_select_counters(d.counters, events.loc[keep], time_window),
    )


def _select_counters(counters: pd.DataFrame, events: pd.DataFrame, time_window: tuple[int, int] | None) -> pd.DataFrame:
    """The counter samples taken in ``time_window`` (``[lo, hi)``), else within the span of the kept ``events``."""
    if not len(counters):
        return counters
    if time_window is not None:
        lo, hi = time_window
    elif len(events):
        ts = events["ts_ns"].to_numpy()
        lo, hi = int(ts.min()), int((ts + events["dur_ns"].to_numpy()).max()) + 1
    else:
        return counters.iloc[:0]
    t = counters["ts_ns"].to_numpy()
    return counters.loc[(t >= lo) & (t < hi)].reset_index(drop=True)


def _prorate_bytes(gpu_args: pd.DataFrame, eid: np.ndarray, old_dur: np.ndarray, new_dur: np.ndarray) -> pd.DataFrame:
    """A clipped copy keeps the bytes of its part inside: ``bytes * new_dur / old_dur``.

    Its recorded bandwidth (a rate) is unchanged; copies not clipped keep their bytes.
    """
    if "bytes" not in gpu_args.columns or not len(gpu_args):
        return gpu_args
    cut = np.flatnonzero(new_dur < old_dur)
    if not len(cut):
        return gpu_args
    frac = dict(zip(eid[cut].tolist(), (new_dur[cut] / old_dur[cut]).tolist(), strict=True))
    ga_eid = gpu_args["eid"].to_numpy()
    f = np.array([frac.get(e, 1.0) for e in ga_eid.tolist()], dtype=np.float64)
    b = gpu_args["bytes"].to_numpy()
    changed = (f < 1.0) & (b >= 0)
    if not changed.any():
        return gpu_args
    out = gpu_args.copy(deep=False)
    out["bytes"] = np.where(changed, np.rint(b * f), b).astype(b.dtype, copy=False)
    return out


def _only(trace: Trace) -> RankData:
    (r,) = trace.ranks
    return trace.rank_data(r)


def _n_events(trace: Trace) -> int:
    return len(_only(trace).events)


def _table(trace: Trace, name: str) -> pd.DataFrame:
    frame: pd.DataFrame = getattr(_only(trace), name)
    return frame


def _first_start(trace: Trace) -> int | None:
    ev = _only(trace).events
    return int(ev["ts_ns"].iloc[0]) if len(ev) else None


def _metadata_row(trace: Trace) -> dict[str, Any]:
    d = _only(trace)
    m = d.meta
    device = ""
    dev = d.events["device"].to_numpy()
    devices = np.flatnonzero(np.bincount(dev[dev >= 0], minlength=1)).tolist()  # sorted distinct ids
    props = m.device_props(devices[0]) if devices else None
    if props is not None:
        device = str(props.get("name", ""))
    return {
        "rank": m.rank,
        "path": m.path,
        "rank_source": m.rank_source,
        "world_size": m.world_size,
        "backend": m.backend,
        "devices": devices,
        "device_name": device,
        "ts_precision": m.ts_precision,
        "base_time_ns": m.base_time_ns,
        "clock_offset_ns": int(m.extra.get("clock_offset_ns", 0)),
        "events": len(d.events),
    }


def _last_end(trace: Trace) -> int | None:
    ev = _only(trace).events
    return int((ev["ts_ns"].to_numpy() + ev["dur_ns"].to_numpy()).max()) if len(ev) else None


#: Iterations of each rank's tables, computed once per RankData: a trace narrowed to some
#: ranks (``select(ranks=...)``, as every per-rank analysis scopes) shares its ranks' tables.
_ITERATIONS: weakref.WeakKeyDictionary[RankData, pd.DataFrame] = weakref.WeakKeyDictionary()


def _rank_iterations(trace: Trace) -> pd.DataFrame:
    """The ProfilerStep spans of a one-rank trace (see Trace.iterations)."""
    d = _only(trace)
    found = _ITERATIONS.get(d)
    if found is None:
        found = _ITERATIONS[d] = _iterations_of(d)
    return found


def _iterations_of(d: RankData) -> pd.DataFrame:
    ev = d.events
    names = ev["name"].array
    kinds = ev["kind"].array
    # Decided once per distinct name and kind, not per event (a million events have few names);
    # per step with numpy reductions, not by grouping frames.
    step_name = np.append(np.asarray(names.categories.str.startswith("ProfilerStep#"), dtype=bool), False)
    step_kind = np.append(
        np.asarray(kinds.categories.isin([EventKind.USER_ANNOTATION.value, EventKind.CPU_OP.value]), dtype=bool),
        False,
    )
    act_kind = np.append(np.asarray(kinds.categories.isin(_ACTIVITY), dtype=bool), False)
    kind_codes = np.asarray(kinds.codes)
    step = ev["step"].to_numpy()
    ts = ev["ts_ns"].to_numpy()
    dur = ev["dur_ns"].to_numpy()
    if iv.native is not None:
        found = _native_iterations(np.asarray(names.codes), kind_codes, step, ts, dur, step_name, step_kind, act_kind)
        if found is not None:
            return _iterations_frame(d.meta.rank, *found)
    rows = np.flatnonzero(step_name[np.asarray(names.codes)] & step_kind[kind_codes])
    if not len(rows):
        return pd.DataFrame()
    steps = np.unique(step[rows])
    start, end = _span_per_group(np.searchsorted(steps, step[rows]), ts[rows], dur[rows], len(steps))
    # The GPU activities launched in each of these steps.
    acts = np.flatnonzero(act_kind[kind_codes] & (step >= 0))
    at = step[acts]
    if steps[0] >= 0 and steps[-1] <= 4 * len(acts) + 4096:
        # Each activity's step among ``steps`` through a table (-1: not a step of a range).
        table = np.full(int(steps[-1]) + 2, -1, dtype=np.int64)
        table[steps] = np.arange(len(steps), dtype=np.int64)
        pos = table[np.minimum(at, int(steps[-1]) + 1)]
        hit = pos >= 0
    else:
        pos = np.minimum(np.searchsorted(steps, at), len(steps) - 1)
        hit = steps[pos] == at
    acts, pos = acts[hit], pos[hit]
    g_start, g_end = _span_per_group(pos, ts[acts], dur[acts], len(steps))
    return _iterations_frame(d.meta.rank, steps, start, end, g_start, g_end, np.bincount(pos, minlength=len(steps)))


def _native_iterations(*columns: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """:func:`_iterations_of`'s reductions by the compiled loop (``intervals.native.iterations``):
    (steps, start, end, g_start, g_end, launched), as the numpy code below computes them; None
    where the loop does not take these columns (the numpy code then runs)."""
    step = columns[2]
    bufs = [np.empty(len(step), dtype=np.int64) for _ in range(6)]
    try:
        k = iv.native.iterations(*columns, *bufs)
    except (ValueError, TypeError, BufferError):
        return None
    if k == 0:
        return ()
    steps, *rest = (b[:k].copy() for b in bufs)
    return (steps.astype(step.dtype), *rest)  # the steps in the column's dtype, as np.unique gives them


def _iterations_frame(
    rank: int,
    steps: np.ndarray | None = None,
    start: np.ndarray | None = None,
    end: np.ndarray | None = None,
    g_start: np.ndarray | None = None,
    g_end: np.ndarray | None = None,
    launched: np.ndarray | None = None,
) -> pd.DataFrame:
    """The frame of :func:`_iterations_of` from its reductions (none: no step)."""
    if steps is None or start is None or end is None or g_start is None or g_end is None or launched is None:
        return pd.DataFrame()
    none = launched == 0
    if none.any():  # -1 where a step launched nothing (floats, as the join this replaces gave)
        g_start = np.where(none, -1, g_start).astype(np.float64)
        g_end = np.where(none, -1, g_end).astype(np.float64)
    # One frame built at once (inserting and setting columns one by one costs more than
    # the rest of this function on a million events).
    return pd.DataFrame(
        {
            "rank": np.full(len(steps), rank, dtype=np.int64),
            "step": steps,
            "start_ns": start,
            "end_ns": end,
            "gpu_start_ns": g_start,
            "gpu_end_ns": g_end,
            "dur_ns": end - start,
        }
    )


def _span_per_group(group: np.ndarray, ts: np.ndarray, dur: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group id (0..n-1), the first start and the last end of its events."""
    start = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    end = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    if iv.native is not None:  # one compiled pass (ValueError for a group out of range: below)
        c64 = np.ascontiguousarray
        with contextlib.suppress(ValueError):
            g, t, d = c64(group, dtype=np.int64), c64(ts, dtype=np.int64), c64(dur, dtype=np.int64)
            iv.native.span_per_group(g, t, d, start, end)
            return start, end
    np.minimum.at(start, group, ts)
    np.maximum.at(end, group, ts + dur)
    return start, end
