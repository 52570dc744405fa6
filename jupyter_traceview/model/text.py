"""Text columns without fixed-width arrays.

numpy's ``astype(str)`` (and ``np.array(list_of_str)``) makes a ``<U`` array: every element
as wide as the longest, so one 50 MB event name among 1,000 rows asks for 200 GB. The
package converts values to text only through :func:`as_text`, which keeps Python strings
in object arrays (numpy) or gives pandas' own string dtype (pandas, as its ``astype(str)``
does); ``tests/test_no_fixed_width_text.py`` keeps the other spellings out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["NAME_SEARCH_CHARS", "as_text", "searched", "starts_with"]

#: Characters of a name that patterns (classification, families, the findings' rules) search:
#: the first 64 Ki. Real names stay under a few thousand; a hostile 50 MB name would cost
#: seconds per pattern. docs/semantics.md ("Names").
NAME_SEARCH_CHARS = 1 << 16

#: ``str`` of each element, into an object array of the same shape.
_STR = np.frompyfunc(str, 1, 1)
#: pandas' string dtype, as ``astype(str)`` gives it on a Series or an Index.
_PANDAS_STR = "str"


def as_text(values: Any) -> Any:
    """Each value as a Python ``str`` (``str(v)``), never in a fixed-width ``<U`` array.

    A Series or an Index gives the same kind with pandas' string dtype (exactly what
    pandas' ``astype(str)`` gives); an array, list or tuple
    gives an object array of the same shape (strings already ``str`` are kept, not copied).
    """
    if isinstance(values, pd.Series | pd.Index):
        return values.astype(_PANDAS_STR)
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.dtype.kind == "U":
        arr = arr.astype(object)
    out = _STR(arr)
    return out if isinstance(out, np.ndarray) else np.array([out], dtype=object).reshape(())


def starts_with(values: np.ndarray | pd.Index, prefix: str) -> np.ndarray:
    """Whether each text of ``values`` starts with ``prefix`` (bool array; for object
    arrays, where ``np.char`` would first copy them into a fixed-width array)."""
    texts = as_text(np.asarray(values, dtype=object))
    return np.fromiter((t.startswith(prefix) for t in texts.ravel().tolist()), dtype=bool, count=texts.size)


def searched(name: str) -> str:
    """The part of ``name`` that patterns search: its first :data:`NAME_SEARCH_CHARS` characters."""
    return name if len(name) <= NAME_SEARCH_CHARS else name[:NAME_SEARCH_CHARS]
