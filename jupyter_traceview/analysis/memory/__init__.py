"""Memory: where allocator memory goes, when it peaks, and which operators hold it.

The model
---------
A trace recorded with ``profile_memory=True`` holds one record per allocator call in the
rank's ``memory`` table (``docs/schema.md``): an allocation (``bytes`` > 0) or a free
(``bytes`` < 0) of the block at ``addr`` on one device (``device_type``, ``device``: the
CUDA caching allocator of GPU 0, the CPU allocator, ...), with the allocator's totals after
the call (``total_allocated_bytes``, ``total_reserved_bytes``), and one record per failed
request (``[OutOfMemory]``). Every analysis here works per rank and per device:

* **Allocated** memory over time is the recorded ``Total Allocated`` series, a step
  function that changes at every record (no interpolation). It equals the bytes of the
  live allocations plus whatever was allocated before the profiler started: the tests
  check that the totals chain (each is the previous one plus the call's bytes) on real
  traces. A trace without totals (older PyTorch) gets them rebuilt from the bytes, from 0.
* **Reserved** memory is what the caching allocator holds from the device (allocated plus
  cached blocks); ``reserved - allocated`` is the cache, freed blocks kept for reuse.
  The CPU allocator reserves nothing (0).
* **Allocations are matched to their frees by address**: per device, a free of the block
  at ``addr`` closes the latest earlier allocation at that address. An allocation never
  freed in scope outlives the scope; a free without an allocation in scope releases
  memory allocated before it.
* **The operator of a record** is the innermost CPU operator (``cpu_op``) or
  ``record_function`` scope (``user_annotation``) enclosing it on its thread (the
  ``parent_eid`` chain; Python frames are skipped). A record outside any is attributed to
  ``(no operator)``.
* Iterations: a record belongs to the ProfilerStep containing it (the events' ``step``);
  ``-1`` means outside any step (or, for ``per="rank"``, the whole scope).

Scoping (``ranks``, ``iterations``, ``time_range``) narrows the records as
``Trace.select`` does; matching and holders then see only the records in scope.
"""

from ._records import (
    NO_OPERATOR,
    UNTRACKED,
    device_label,
    has_memory_records,
    memory_devices,
)
from .allocator import memory_allocator_stats, memory_oom_events
from .operators import memory_allocations, memory_by_operator
from .peaks import memory_peak_holders, memory_peaks
from .timeline import memory_timeline

__all__ = [
    "NO_OPERATOR",
    "UNTRACKED",
    "device_label",
    "has_memory_records",
    "memory_allocations",
    "memory_allocator_stats",
    "memory_by_operator",
    "memory_devices",
    "memory_oom_events",
    "memory_peak_holders",
    "memory_peaks",
    "memory_timeline",
]
