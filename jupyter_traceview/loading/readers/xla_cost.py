"""XLA's cost analysis from xprof's ``op_profile`` tool (docs/jax.md; kept per rank as
:mod:`jupyter_traceview.model.xla_cost` describes).

xprof's ``op_profile`` (``xprof.convert.raw_to_tool_data``, ``group_by="program"``) is a tree:
the programs (``jit_step(14)``), their categories (``dot``, ``loop fusion``, ...), and under
them the HLO ops that ran, each with its ``xla`` block (``programId``, ``category``, the
op's HLO ``expression``) and its ``metrics``: ``rawFlops`` and ``rawBytesAccessedArray``
(its first entry: all the bytes the op reads and writes) summed over its ``occurrences``.
A profile without device ops (JAX on CPU: ``deviceType`` ``CPU_ONLY``) has no ops in it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["cost_rows"]


def _ops(node: Any) -> list[dict[str, Any]]:
    """The HLO op nodes under ``node`` (the first node with an ``xla`` block on each path)."""
    out: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if not isinstance(n, dict):
            continue
        xla = n.get("xla")
        if isinstance(xla, dict) and str(xla.get("programId", "0")) not in ("", "0") and n.get("name"):
            out.append(n)
            continue
        children = n.get("children")
        if isinstance(children, list):
            stack.extend(reversed(children))
    return out


def cost_rows(op_profile: Any) -> list[list[Any]]:
    """One row per (program, HLO op) of a decoded ``op_profile`` document, in the columns of
    :data:`~jupyter_traceview.model.xla_cost.XLA_COST_COLUMNS` (FLOPs and bytes per
    execution); an op seen twice (under two categories) is counted once per occurrence."""
    root = op_profile.get("byProgram") if isinstance(op_profile, dict) else None
    rows: dict[tuple[int, str], list[Any]] = {}
    for n in _ops(root):
        xla, metrics = n["xla"], n.get("metrics") or {}
        try:
            program = int(xla["programId"])
            times = int(metrics.get("occurrences") or 0)
            flops = float(metrics.get("rawFlops") or 0.0)
            accessed = metrics.get("rawBytesAccessedArray") or [0.0]
            nbytes = float(accessed[0] if isinstance(accessed, list) and accessed else 0.0)
        except (TypeError, ValueError, KeyError):
            continue
        if times <= 0:
            continue
        key = (program, str(n["name"]))
        row = rows.get(key)
        if row is None:
            rows[key] = [
                program,
                key[1],
                str(xla.get("category") or ""),
                str(xla.get("expression") or ""),
                flops,
                nbytes,
                times,
            ]
        else:  # the same op again: add its executions
            row[4] += flops
            row[5] += nbytes
            row[6] += times
    out = []
    for row in rows.values():
        row[4] /= row[6]
        row[5] /= row[6]
        out.append(row)
    return out
