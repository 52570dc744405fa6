"""XLA's cost analysis of a JAX profile's programs: FLOPs and bytes per HLO op (docs/jax.md).

The reader of an XSpace (``loading/readers/xplane.py``) asks xprof's ``op_profile`` tool for
them (xprof computes them from the HLO the XSpace keeps, for the ops a device ran) and keeps
them in each device rank's ``RankMeta.extra[XLA_COST_KEY]``, one row per (program, HLO op):
:data:`XLA_COST_COLUMNS`. ``flops`` and ``bytes`` are per execution of the op (xprof's totals
over the profile divided by its ``occurrences``). The analyses read them back with
:func:`xla_cost`; a rank without them (a CPU profile, a trace JSON) has none.
"""

from __future__ import annotations

import pandas as pd

from .rank_data import RankMeta

__all__ = ["XLA_COST_COLUMNS", "XLA_COST_KEY", "xla_cost"]

#: Key of ``RankMeta.extra`` holding the rows (lists in the order of :data:`XLA_COST_COLUMNS`).
XLA_COST_KEY = "xla_cost"

#: The columns of a cost row: the program (``program_id``, as in ``jit_step(14)``), the HLO op's
#: name, xprof's category (``dot``, ``convolution``, ``loop fusion``, ...), the op's HLO text,
#: FLOPs and bytes per execution, executions in the profile.
XLA_COST_COLUMNS = ("program_id", "hlo_op", "category", "expression", "flops", "bytes", "occurrences")


def xla_cost(meta: RankMeta) -> pd.DataFrame | None:
    """The cost rows of a rank (columns :data:`XLA_COST_COLUMNS`), or None where it has none."""
    rows = meta.extra.get(XLA_COST_KEY)
    if not rows:
        return None
    frame = pd.DataFrame([list(r) for r in rows], columns=list(XLA_COST_COLUMNS))
    return frame.astype(
        {
            "program_id": "int64",
            "hlo_op": object,
            "category": object,
            "expression": object,
            "flops": "float64",
            "bytes": "float64",
            "occurrences": "int64",
        }
    )
