"""Hardware counter samples of Kineto traces: the ``"GPU N Counters"`` tracks of CUPTI PM sampling.

Recent PyTorch profilers sample GPU performance-monitor metrics (CUPTI PM sampling,
``HARDWARE_COUNTERS`` activities) and write each sample as a Chrome-trace counter event on a
per-device process named by a string pid, as ``torch/profiler/_cupti/monitor_trace.py``
(``_gpu_counter_process``, ``_build_chrome_counters``) writes them::

    {"ph": "M", "name": "process_sort_index", "pid": "GPU 0 Counters", "tid": 0,
     "ts": 0.0, "args": {"sort_index": 100}}
    {"ph": "C", "name": "SM Active (%)", "pid": "GPU 0 Counters", "ts": 1.0, "args": {"": 80.0}}

one ``"C"`` event per sample and metric: ``name`` is the metric's label (Kineto's friendly
label, or the raw metric name such as ``dram__bytes_read.sum``), ``ts`` the sample's start
(microseconds after ``baseTimeNanoseconds``), and the value the single unnamed series
``args[""]``. A counter's value holds until its next sample (Chrome's counter semantics).

They become the rank's ``counters`` table (``docs/schema.md``): one row per sample, sorted
by time. Other counter events (another pid, named series) are not read; they stay counted
under ``other phases``. The Kineto reader touches this module in two places: each chunk
collects its samples with :func:`samples_of` (the C scanner leaves any event with an
``args[""]`` to msgspec), and each rank's table comes from :meth:`CounterSamples.table`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...model.schema import COUNTER_COLUMNS, categorical, empty_counters_table

__all__ = ["COUNTER_PROCESS", "CounterSamples", "samples_of"]

#: The string pid of a device's counter track ("GPU 0 Counters"); group 1: the device.
COUNTER_PROCESS = re.compile(r"GPU (\d{1,4}) Counters")

#: meta.skipped key: counter samples of a "GPU N Counters" track without a number to keep.
UNREADABLE = "counter samples without a value"


@dataclass
class CounterSamples:
    """The counter samples of (part of) a file, in file order: one entry per sample."""

    device: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    ts_us: list[float] = field(default_factory=list)
    value: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ts_us)

    def extend(self, other: CounterSamples) -> None:
        self.device += other.device
        self.name += other.name
        self.ts_us += other.ts_us
        self.value += other.value

    def table(self, base_time_ns: int, devices: Iterable[int] | None = None) -> pd.DataFrame:
        """The ``counters`` table: the samples (of ``devices``; None: all), sorted by time, then device and name."""
        if not len(self):
            return empty_counters_table()
        from .kineto.events import to_ns  # (the reader's one conversion of microseconds)

        device = np.asarray(self.device, dtype=np.int64)
        ts_ns = to_ns(np.asarray(self.ts_us, dtype=np.float64)) + int(base_time_ns)
        value = np.asarray(self.value, dtype=np.float64)
        keep = np.ones(len(device), dtype=bool) if devices is None else np.isin(device, list(devices))
        rows = np.flatnonzero(keep)
        names = [self.name[i] for i in rows.tolist()]
        name = categorical(names)
        order = np.lexsort((np.asarray(name.codes), device[rows], ts_ns[rows]))
        rows = rows[order]
        table: dict[str, Any] = {
            "ts_ns": ts_ns[rows],
            "device": device[rows].astype(np.int16),
            "name": name[order],
            "value": value[rows],
        }
        return pd.DataFrame(table, columns=[c.name for c in COUNTER_COLUMNS])


def samples_of(events: Sequence[Any], skipped: dict[str, int]) -> tuple[CounterSamples, int]:
    """The PM-sampling samples among a chunk's counter (``"C"``) events, and how many events
    they were (the others are left to the caller's counts); samples with no number in
    ``args[""]`` or no time are counted in ``skipped``."""
    out = CounterSamples()
    taken = 0
    bad = 0
    for e in events:
        pid = e.pid
        if not isinstance(pid, str):
            continue
        m = COUNTER_PROCESS.fullmatch(pid)
        if m is None:
            continue
        taken += 1
        v, ts = e.args.counter_value, e.ts
        if v != v or ts != ts:  # NaN: no value, or no time
            bad += 1
            continue
        out.device.append(int(m.group(1)))
        out.name.append(e.name)
        out.ts_us.append(float(ts))
        out.value.append(float(v))
    if bad:
        skipped[UNREADABLE] = skipped.get(UNREADABLE, 0) + bad
    return out, taken
