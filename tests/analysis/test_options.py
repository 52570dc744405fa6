"""A bad option raises OptionError (what was given, what is accepted), never a bare ValueError."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import jupyter_traceview as tv

ANALYSIS = Path(__file__).resolve().parents[2] / "jupyter_traceview" / "analysis"
#: ValueErrors that are not about an option: a file write_counters_trace reads is not a trace,
#: two of its inputs would be written to one output.
NOT_OPTIONS = {("counter_trace.py", "traceEvents is not an array"), ("counter_trace.py", "two source files")}


def test_no_bare_value_error_in_the_analyses() -> None:
    found = []
    for path in sorted(ANALYSIS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Raise)
                and isinstance(node.exc, ast.Call)
                and getattr(node.exc.func, "id", None) == "ValueError"
            ):
                text = ast.unparse(node.exc)
                if not any(path.name == f and s in text for f, s in NOT_OPTIONS):
                    found.append(f"{path.relative_to(ANALYSIS)}:{node.lineno}")
    assert found == [], f"raise OptionError for a bad option (OptionError.invalid for a choice): {found}"


@pytest.mark.parametrize(
    ("fn", "kwargs"),
    [
        (tv.kernel_breakdown, {"by": "kernl"}),
        (tv.kernel_launch_stats, {"per": "rnk"}),
        (tv.stragglers, {"by": "rnk"}),
        (tv.critical_path, {"view": "pth"}),
        (tv.queue_length, {"per": "strem"}),
        (tv.memory_bandwidth, {"per": "knd"}),
        (tv.user_annotation_breakdown, {"kind": "gp"}),
    ],
)
def test_a_misspelt_choice_names_the_close_match(dlrm: tv.Trace, fn: object, kwargs: dict) -> None:
    ((option, got),) = kwargs.items()
    with pytest.raises(tv.OptionError, match=f"{option}='{got}' is not accepted; use one of .*did you mean"):
        fn(dlrm, **kwargs)  # type: ignore[operator]
