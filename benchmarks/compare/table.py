"""tv.compare on recorded pairs: expected against measured, and ten reruns of one loop.

Records (with ``scripts/record_compare_pairs.py``, CPU torch) a base run, the three runs with
one injected change each and ``--reruns`` reruns of the base loop into ``--out``, then
prints, per pair, the cause and size written down before comparing, what ``tv.compare``
measured, the verdict, the sum check and the ``traceview compare`` exit status::

    nice -n -10 python benchmarks/compare/table.py --out /tmp/compare-pairs --reruns 10
    python benchmarks/compare/table.py --out tests/data/compare --no-record   # the test pairs

No test asserts these numbers (the tests use the recorded pairs of tests/data/compare/).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/compare-pairs"))
    p.add_argument("--reruns", type=int, default=10)
    p.add_argument("--no-record", action="store_true", help="compare what --out holds")
    p.add_argument("--max-load", type=float, default=None, help="passed to the recorder")
    args = p.parse_args()
    if not args.no_record:
        cmd = [sys.executable, str(ROOT / "scripts" / "record_compare_pairs.py"), "--out", str(args.out)]
        cmd += ["--reruns", str(args.reruns)]
        if args.max_load is not None:
            cmd += ["--max-load", str(args.max_load)]
        subprocess.run(cmd, check=True, capture_output=True)
    sys.path.insert(0, str(ROOT))
    import jupyter_traceview as tv
    from jupyter_traceview.cli import main as cli

    meta = json.loads((args.out / "labels.json").read_text())
    labels, loads = meta["labels"], meta.get("load_average", {})
    base = tv.load(args.out / "base", cache=False)
    head = [
        "pair",
        "expected cause",
        "top cause",
        "expected ms",
        "measured ms",
        "error %",
        "verdict",
        "sum ok",
        "exit",
        "load",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, label in labels.items():
        ref = label.get("base", "base")
        c = tv.compare(
            base if ref == "base" else tv.load(args.out / ref, cache=False), tv.load(args.out / name, cache=False)
        )
        top = c.causes.iloc[0] if len(c.causes) else None
        expected = label.get("measured_ns")
        got = float(top["delta_ns"]) if top is not None and top["cause"] == label.get("cause") else float("nan")
        err = f"{100 * (got - expected) / expected:+.1f}" if expected else ""
        sum_ok = abs(float(c.causes["delta_ns"].sum()) - c.delta_ns) <= 0.01 * max(abs(c.delta_ns), 1.0)
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            status = cli(["compare", str(args.out / ref), str(args.out / name), "--no-cache", "--json"])
        row = [
            name,
            str(label.get("cause", "-")),
            str(top["cause"]) if top is not None else "-",
            _ms(expected) if expected else "",
            _ms(got) if expected else "",
            err,
            f"{c.verdict} ({c.delta_pct:+.1f}%; expected {label['verdict']})",
            "yes" if sum_ok else "NO",
            str(status),
            f"{loads.get('base', '?')} / {loads.get(name, '?')}",
        ]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
