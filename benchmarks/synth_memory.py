"""A synthetic one-rank trace with many ``[memory]`` records, for timing the memory analyses.

    python benchmarks/synth_memory.py OUT_DIR --records 1000000 [--steps 20]

ProfilerStep iterations of nested CPU operators (``aten::linear`` > ``aten::addmm`` >
``aten::empty`` ...); every innermost operator allocates a block on CUDA:0 (sometimes
also on the CPU) and frees it later (temporaries inside the operator, activations at the
end of the step, a few never), with the allocator's running totals, as PyTorch records
them with ``profile_memory=True``. Deterministic (seeded).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

OUTER = ["aten::linear", "aten::layer_norm", "aten::gelu", "aten::softmax", "aten::dropout"]
INNER = ["aten::addmm", "aten::empty", "aten::native_layer_norm", "aten::mul", "aten::empty_like"]


def build(records: int, steps: int, seed: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    events: list[dict[str, object]] = []
    per_step = max(records // steps, 4)
    t = 0.0
    allocated = {(1, 0): 0, (0, -1): 0}
    reserved = {(1, 0): 0, (0, -1): 0}
    next_addr = 1 << 20
    leaked = 0
    made = 0
    for s in range(steps):
        step_start = t
        live_step: list[tuple[int, int, int, int]] = []  # (device_type, device, addr, bytes)
        step_events: list[dict[str, object]] = []
        while made < (s + 1) * per_step and made < records:
            i = int(rng.integers(len(OUTER)))
            o_ts = t
            t += 1.0
            step_events.append({"ph": "X", "cat": "cpu_op", "name": INNER[i], "pid": 1, "tid": 1, "ts": t, "dur": 3.0})
            dt, dev = (0, -1) if rng.random() < 0.1 else (1, 0)
            nbytes = int(rng.integers(1, 64)) * 512
            addr = next_addr
            next_addr += nbytes
            allocated[(dt, dev)] += nbytes
            reserved[(dt, dev)] = max(reserved[(dt, dev)], allocated[(dt, dev)]) if dt == 1 else 0
            step_events.append(_mem(t + 1.0, nbytes, addr, dt, dev, allocated, reserved))
            made += 1
            if rng.random() < 0.5 and made < records:  # a temporary, freed inside the operator
                allocated[(dt, dev)] -= nbytes
                step_events.append(_mem(t + 2.0, -nbytes, addr, dt, dev, allocated, reserved))
                made += 1
            elif rng.random() < 0.02:
                leaked += nbytes
            else:
                live_step.append((dt, dev, addr, nbytes))
            t += 4.0
            step_events.append(
                {"ph": "X", "cat": "cpu_op", "name": OUTER[i], "pid": 1, "tid": 1, "ts": o_ts, "dur": t - o_ts}
            )
            t += 1.0
        for dt, dev, addr, nbytes in live_step:  # activations freed at the end of the step
            if made >= records:
                break
            allocated[(dt, dev)] -= nbytes
            step_events.append(_mem(t, -nbytes, addr, dt, dev, allocated, reserved))
            made += 1
            t += 0.5
        t += 1.0
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{s}",
                "pid": 1,
                "tid": 1,
                "ts": step_start,
                "dur": t - step_start,
            }
        )
        events.extend(step_events)
        t += 2.0
    return events


def _mem(ts: float, nbytes: int, addr: int, dt: int, dev: int, allocated: dict, reserved: dict) -> dict[str, object]:
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "args": {
            "Total Reserved": reserved[(dt, dev)],
            "Total Allocated": allocated[(dt, dev)],
            "Bytes": nbytes,
            "Addr": addr,
            "Device Id": dev,
            "Device Type": dt,
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    t0 = time.perf_counter()
    events = build(a.records, a.steps, a.seed)
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000}],
        "traceEvents": events,
    }
    a.out_dir.mkdir(parents=True, exist_ok=True)
    out = a.out_dir / "rank-0.pt.trace.json"
    out.write_text(json.dumps(doc))
    n = sum(1 for e in events if e["name"] == "[memory]")
    print(f"wrote {n} memory records, {len(events)} events to {out} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
