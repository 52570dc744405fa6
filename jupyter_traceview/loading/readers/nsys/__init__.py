"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``).

The export is a database with one table per kind of record. This reader maps the CUDA and
NVTX tables onto the one trace schema (``docs/schema.md``); ``docs/nsys.md`` lists every
table and column used, and what is not read.

Ranks. Every (process, CUDA device) pair with GPU activity is one rank, numbered in the
order (device, pid): several GPUs driven by one process become one rank per device, and a
``torchrun`` job profiled as one report becomes one rank per worker. CPU-side events
(CUDA API calls, NVTX ranges) belong to threads; a thread goes to every rank whose device
ran work it launched (found by correlation id, per process), so a thread driving two GPUs
appears in both ranks. Threads that launched nothing go to the lowest rank of their
process; threads of processes without GPU activity go to the file's lowest rank. A file
without any GPU activity is one CPU-only rank.

Schemas. Column names moved across Nsight versions; every table is read through
``PRAGMA table_info`` and each field is taken from the first of its known column names
that exists (e.g. ``gridX``/``gridY``/``gridZ`` or a ``gridDim`` text column), with a
documented default when none does. Names are StringIds references or inline text.

Times. Export timestamps are ns since the session start; the session's UTC start
(``TARGET_INFO_SESSION_START_TIME.utcEpochNs``) is added to every time, so that ``ts_ns``
is ns since the Unix epoch as for PyTorch traces, and recorded as ``meta.base_time_ns``.

The modules, in reading order: :mod:`.database` (the export opened and checked, its tables
and columns), :mod:`.records` (each CUDA and NVTX table as event columns), :mod:`.file`
(:func:`parse_nsys`: the file's events and what the export says about itself) and
:mod:`.ranks` (the events split into ranks, and each rank's tables).
"""

from __future__ import annotations

from .file import parse_nsys

__all__ = ["parse_nsys"]
