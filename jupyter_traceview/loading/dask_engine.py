"""``tv.load(..., engine="dask")``: ranks parsed and analysed on dask.distributed workers.

The notebook process keeps only each rank's metadata and futures; the tables stay on the
workers. Everything a :class:`~jupyter_traceview.Trace` computes goes through
``map_ranks``, which here runs the per-rank function on the worker that holds the rank
and brings back only its (small) result. Results are identical to the in-process engines.

With ``client=None`` a ``LocalCluster`` (one single-threaded worker process per core) is
started for the trace and closed when the last trace using it is garbage-collected or
:meth:`DaskTrace.close` is called; pass a ``distributed.Client`` to use an existing cluster.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import TraceFormatError, TraceSelectionError, TraceviewError
from ..model.classify import Classifier
from ..model.rank_data import RankData, RankMeta
from ..model.trace import Trace
from . import cache as _cache
from . import heap
from .dataset import read_rank
from .ingest import number_unranked, read_file, report_failures, warn_reader_messages, warn_skipped_events, with_rank
from .readers.files import TraceFile
from .run_notes import run_folder, run_status_of, skipped_files_of

__all__ = ["DaskTrace"]

T = TypeVar("T")


class _Cluster:
    """Owns a LocalCluster started for traces; closes it when no trace needs it any more."""

    def __init__(self, client: Any, cluster: Any | None) -> None:
        self.client = client
        self._cluster = cluster
        self._finalizer = weakref.finalize(self, _shutdown, client, cluster) if cluster is not None else None

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


def _shutdown(client: Any, cluster: Any) -> None:
    try:
        client.close()
    finally:
        cluster.close()


def _start_client(client: Any | None) -> _Cluster:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError(
            "engine='dask' needs dask.distributed: pip install 'dask[distributed]' (then restart the kernel)"
        ) from None
    if client is not None:
        return _Cluster(client, None)
    workers = max(1, min(os.cpu_count() or 1, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # port-in-use notices of the dashboard
        # distributed has no type hints for these constructors.
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        )
    return _Cluster(Client(cluster), cluster)  # type: ignore[no-untyped-call]


# ---------------------------------------------------------------------- worker functions
def _read_on_worker(
    tf: TraceFile, options: Any, cache_dir: str | None, classifier: Classifier
) -> list[RankData] | TraceFormatError:
    """Parse (or read from the cache) one file on a worker; errors come back as values.

    The worker keeps its heap between files as a pool's worker does (:mod:`.heap`): a dask
    nanny starts its worker with ``MALLOC_TRIM_THRESHOLD_`` set, which makes glibc map and
    unmap every big block afresh (measured at 64 x 1M on 2 workers: 17.3 million page faults
    and 65 s of system time of 138 s of CPU, against 0.1 million and 22 s in the pool).
    """
    heap.before_task(tf.size)
    try:
        ranks = None
        if cache_dir is not None:
            ranks = _cache.read(
                Path(cache_dir), _cache.entry_key(tf, options.cache_key_fields()), classifier=classifier
            )
        if ranks is None:
            ranks = read_file(tf, options, cache_dir, classifier)
    except TraceFormatError as exc:
        return exc
    return ranks


def _metas(result: list[RankData] | TraceFormatError) -> list[RankMeta] | TraceFormatError:
    if isinstance(result, TraceFormatError):
        return result
    return [d.meta for d in result]


def _pick(result: list[RankData], index: int, rank: int) -> RankData:

    return with_rank(result[index], rank)


def _apply(
    data: RankData,
    fn: Callable[..., Any],
    classifier: Classifier,
    source: str | None,
    window: tuple[int, int] | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    trace = Trace([data], classifier=classifier, source=source, window=window, _classified=True)
    return fn(trace, *args, **kwargs)


def _apply_to(
    data: RankData,
    args: tuple[Any, ...],
    *,
    fn: Callable[..., Any],
    classifier: Classifier,
    source: str | None,
    window: tuple[int, int] | None,
) -> Any:
    return _apply(data, fn, classifier, source, window, args, {})


def _transform(data: RankData, transform: Callable[..., RankData], kwargs: dict[str, Any]) -> RankData:
    return transform(data, **kwargs)


def _meta_of(data: RankData) -> RankMeta:
    return data.meta


# ---------------------------------------------------------------------- the trace
class DaskTrace(Trace):
    """A Trace whose rank tables live on dask.distributed workers (``engine="dask"``).

    It behaves as a :class:`Trace`: every analysis works on it and gives the same result.
    ``rank_data(r)``, ``events(r)`` and friends bring that rank's tables into this process;
    ``events()`` without a rank brings all of them (avoid it on big traces).
    """

    def __init__(
        self,
        futures: dict[int, Any],
        metas: dict[int, RankMeta],
        *,
        cluster: _Cluster,
        classifier: Classifier,
        source: str | None,
        window: tuple[int, int] | None = None,
    ) -> None:
        self._futures = dict(sorted(futures.items()))
        self._metas = metas
        self._cluster = cluster
        self._classifier = classifier
        self._source = source
        self._window = window
        self._cache: dict[str, Any] = {}

    @property
    def client(self) -> Any:
        """The ``distributed.Client`` running this trace's tasks."""
        return self._cluster.client

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(self._futures)

    def meta(self, rank: int) -> RankMeta:
        try:
            return self._metas[rank]
        except KeyError:
            raise TraceSelectionError.unknown("rank", rank, self.ranks) from None

    def rank_data(self, rank: int) -> RankData:
        if rank not in self._futures:
            raise TraceSelectionError.unknown("rank", rank, self.ranks)
        data: RankData = self.client.gather(self._futures[rank])
        return data

    def map_ranks(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> dict[int, T]:
        client = self.client
        futures = {
            r: client.submit(_apply, f, fn, self._classifier, self._source, self._window, args, kwargs, pure=False)
            for r, f in self._futures.items()
        }
        results = client.gather(list(futures.values()))
        return dict(zip(futures, results, strict=True))

    def keep_ranks(self, fn: Callable[..., Any], /, per_rank: Mapping[int, tuple[Any, ...]]) -> dict[int, Any]:
        # One client.map for all ranks (one message to the scheduler, not one per rank).
        ranks = list(per_rank)
        futures = self.client.map(
            _apply_to,
            [self._futures[r] for r in ranks],
            [per_rank[r] for r in ranks],
            fn=fn,
            classifier=self._classifier,
            source=self._source,
            window=self._window,
            pure=False,
        )
        return dict(zip(ranks, futures, strict=True))

    def gather_ranks(self, kept: Mapping[int, Any]) -> dict[int, Any]:
        values = self.client.gather(list(kept.values()))
        return dict(zip(kept, values, strict=True))

    def keep_on_workers(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> dict[int, Any]:
        """``fn(rank_data, *args, **kwargs)`` on the worker holding each rank, the results left there.

        Returns ``{rank: distributed.Future}``: for derived per-rank structures too big to
        bring back (the timeline's per-rank index); pass the futures to ``client.submit``.
        ``fn`` must be a module-level function.
        """
        client = self.client
        return {r: client.submit(fn, f, *args, pure=False, **kwargs) for r, f in self._futures.items()}

    def _rebuild(
        self,
        ranks: Sequence[int],
        transform: Callable[..., RankData],
        *,
        window: tuple[int, int] | None,
        classifier: Classifier,
        **kwargs: Any,
    ) -> Trace:
        client = self.client
        futures = {r: client.submit(_transform, self._futures[r], transform, kwargs, pure=False) for r in ranks}
        # A transform may change a rank's metadata (clock alignment records its shift there).
        metas = client.gather([client.submit(_meta_of, f, pure=False) for f in futures.values()])
        return self._carry_notes(
            DaskTrace(
                futures,
                dict(zip(futures, metas, strict=True)),
                cluster=self._cluster,
                classifier=classifier,
                source=self._source,
                window=window,
            )
        )

    def close(self) -> None:
        """Release the tables on the workers (and the LocalCluster started for this trace)."""
        self._futures = {}
        self._cluster.close()

    def __repr__(self) -> str:
        workers = len(self.client.scheduler_info().get("workers", {}))
        return super().__repr__() + f"\n  on dask: {workers} worker(s)"


def load_dask(
    files: list[TraceFile],
    *,
    options: Any,
    cache_dir: Path | None,
    classifier: Classifier,
    client: Any | None,
    wanted: set[int] | None,
    folder_mode: bool,
    on_error: str,
    source: str,
    claimed: set[int] | None = None,
) -> DaskTrace:
    """Parse every file on the workers and assemble a DaskTrace (see ``tv.load``).

    ``claimed``: ranks of files that ``ranks=`` left out (not for unnumbered ranks to take).
    """
    from .readers.common import NotATraceError

    claimed = set() if claimed is None else claimed

    cluster = _start_client(client)
    c = cluster.client
    cache_arg = str(cache_dir) if cache_dir is not None else None
    file_futures = c.map(
        _read_on_worker, files, options=options, cache_dir=cache_arg, classifier=classifier, pure=False
    )
    try:
        metas_per_file = c.gather(c.map(_metas, file_futures, pure=False))
    except Exception as exc:  # a worker died: out of memory, killed
        cluster.close()
        raise TraceviewError(f"a dask worker failed while reading the traces: {exc}") from exc

    failures: list[tuple[TraceFile, TraceFormatError]] = []
    not_traces: list[TraceFile] = []
    futures: dict[int, Any] = {}
    metas: dict[int, RankMeta] = {}
    # Ranks that readers could not number (Nsight exports) are numbered in file order.
    numbers = number_unranked([r if isinstance(r, list) else [] for r in metas_per_file], claimed)
    for tf, fut, result, ranks in zip(files, file_futures, metas_per_file, numbers, strict=True):
        if isinstance(result, TraceFormatError):
            if isinstance(result, NotATraceError) and folder_mode:
                not_traces.append(tf)
                continue
            if on_error == "raise":
                cluster.close()
                raise result
            failures.append((tf, result))
            continue
        for i, (meta, rank) in enumerate(zip(result, ranks, strict=True)):
            meta = dataclasses.replace(meta, rank=rank)
            if wanted is not None and meta.rank not in wanted:
                continue
            if meta.rank in metas:
                cluster.close()
                raise TraceFormatError(
                    meta.path,
                    f"claims rank {meta.rank}, as does {metas[meta.rank].path}",
                    "Two files claim one rank: remove one of them, or load them separately",
                )
            metas[meta.rank] = meta
            futures[meta.rank] = c.submit(_pick, fut, i, meta.rank, pure=False)
    if cache_dir is not None:
        _cache.prune(cache_dir)
    report_failures(not_traces, failures)
    warn_skipped_events(metas)
    warn_reader_messages(metas)
    if not metas:
        cluster.close()
        raise TraceFormatError(source, "no readable trace", "Point tv.load() at PyTorch profiler traces")
    trace = DaskTrace(futures, metas, cluster=cluster, classifier=classifier, source=source)
    trace._skipped = tuple(skipped_files_of(failures))
    trace._run_status = run_status_of(run_folder(tf.path for tf in files))
    return trace


def _read_dataset_rank(
    dest: str, meta: dict[str, Any], storage_options: Any, classifier: Classifier | None
) -> RankData:
    from ..model.trace import classified

    data = read_rank(dest, meta, storage_options)
    return data if classifier is None else classified(data, classifier)


def load_dataset_dask(
    dest: str,
    doc: dict[str, Any],
    metas: list[dict[str, Any]],
    *,
    classifier: Classifier | None,
    client: Any | None,
    storage_options: dict[str, Any] | None,
) -> DaskTrace:
    """A dataset written by ``tv.export`` read on the workers, each rank by the worker that
    keeps it (the dataset must be where the workers can read it: object storage, a shared disk)."""
    cluster = _start_client(client)
    c = cluster.client
    futures = {
        int(m["rank"]): c.submit(_read_dataset_rank, dest, m, storage_options, classifier, pure=False) for m in metas
    }
    window = doc.get("window")
    trace = DaskTrace(
        futures,
        {int(m["rank"]): RankMeta.from_json(m) for m in metas},
        cluster=cluster,
        classifier=classifier or Classifier(),
        source=doc.get("source") or dest,
        window=None if window is None else (int(window[0]), int(window[1])),
    )
    if doc.get("origin_ns") is not None:
        trace._origin = int(doc["origin_ns"])
    return trace
