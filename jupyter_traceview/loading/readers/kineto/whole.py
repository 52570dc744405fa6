"""Reading a Kineto document whole, in this process: :func:`parse_kineto`.

The reference every other way of reading (in pieces, streamed, in worker processes, by the C
scanner, in batches) gives the same tables as. Handles ``baseTimeNanoseconds``, 2021-era
capitalised categories, ROCm/HIP traces (string stream ids on runtime events), MTIA device
events, ``B``/``E`` begin/end pairs and traces with no GPU events.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ....model.frames import paused_gc
from ....model.rank_data import RankData
from .columns import merge_parts
from .decode import Chunk, decode, not_utf8
from .header import read_header
from .parts import FileState, decoded_part, pair_begin_end
from .tables import split_and_finish

__all__ = ["parse_kineto"]


def parse_kineto(
    path: Path,
    data: bytes,
    *,
    name_rank: int | None = None,
    bad_events: str = "raise",
    pid_map: Mapping[int | str, int] | None = None,
) -> list[RankData]:
    """Parse one Kineto JSON document into one RankData per rank it holds.

    Raises :class:`NotATraceError` for JSON that is not a trace and
    :class:`TraceFormatError` for a broken one.
    """
    # Decoding creates millions of small objects that are freed together at the end:
    # the cyclic GC's repeated scans would only slow this down (2x measured).
    with paused_gc():
        doc, chunks = decode(path, data)
        header = read_header(path, doc, name_rank, bad_events)
        state = FileState(base_time_ns=header.base_time_ns)
        try:
            parts = [decoded_part(chunk, state) for chunk in chunks]
        except UnicodeDecodeError:  # raw text in args (the decoder leaves it unchecked)
            raise not_utf8(path, data) from None
        if state.begin_end:
            parts.append(decoded_part(Chunk(-1, pair_begin_end(state.begin_end, state.skipped), []), state))
        del data, chunks
        state.raise_or_count(path, bad_events)
        columns = merge_parts(parts, state)
        del parts
        return split_and_finish(path, columns, header, pid_map)
