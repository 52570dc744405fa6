"""Sample traces shipped with the package: real traces recorded by others (see NOTICE.md)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["sample_path"]


def sample_path(name: str = "dlrm_8rank_v100") -> Path:
    """Folder of a sample trace shipped with the package (real traces; see samples/NOTICE.md).

    ``dlrm_8rank_v100``: one DLRM training step on 8 V100 GPUs with NCCL, 8 rank files.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> path = tv.sample_path()
    >>> path.name
    'dlrm_8rank_v100'
    >>> tv.load(path).ranks
    (0, 1, 2, 3, 4, 5, 6, 7)
    """
    root = Path(__file__).parent
    p = root / name
    if not p.is_dir():
        available = sorted(c.name for c in root.iterdir() if c.is_dir())
        raise ValueError(f"no sample named {name!r}; available: {', '.join(available)}")
    return p
