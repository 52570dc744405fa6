"""The Kineto reader: PyTorch profiler JSON traces to rank tables.

Shaped like Perfetto's JSON importer, a tokenizer then a parser, each module one step:

* :mod:`.events`: what an event is (msgspec structs, phases, kind codes, limits);
* :mod:`.decode`: bytes to decoded events (typed, chunked, or event by event where values
  are odd), and the errors for what is not a trace;
* :mod:`.header`: the top-level fields (rank, time base, device properties);
* :mod:`.parts`: decoded events to one part's columns, sharing the file's reader state;
* :mod:`.native`: the same columns written by the C scanner (``_kscan.c``), without a Python
  object per event;
* :mod:`.columns`: a file's parts merged into its columns;
* :mod:`.tables`: a file's columns split by rank, sorted, with the derived columns and the
  ``gpu_args``, ``comms``, ``memory`` and ``op_args`` tables;
* :mod:`.whole`: :func:`parse_kineto`, a document read whole: the reference;
* :mod:`.cutting` and :mod:`.pieces`: a big file cut into byte ranges and read piece by
  piece, in this process, streamed as it is inflated, or by worker processes;
* :mod:`.batch`: the tables of several small one-rank files built together.

Every way of reading gives the tables :func:`parse_kineto` gives (the tests compare them).
The names below are what the loader uses; the modules' other names are for one another.
"""

from __future__ import annotations

from .batch import Pending
from .batch import full as batch_full
from .batch import tables as batch_tables
from .cutting import Cutter, Plan, SplitFailed, base_agrees, bytes_source, open_source, plan
from .header import read_header
from .native import AVAILABLE as NATIVE_AVAILABLE
from .native import shared_scratch
from .pieces import finish, parse_in_pieces, parse_piece, parse_streamed
from .whole import parse_kineto

__all__ = [
    "NATIVE_AVAILABLE",
    "Cutter",
    "Pending",
    "Plan",
    "SplitFailed",
    "base_agrees",
    "batch_full",
    "batch_tables",
    "bytes_source",
    "finish",
    "open_source",
    "parse_in_pieces",
    "parse_kineto",
    "parse_piece",
    "parse_streamed",
    "plan",
    "read_header",
    "shared_scratch",
]
