"""Two ranks on the gloo backend each profile a notebook cell with %%traceprofile.

Run as ``python traceprofile_gloo.py WORKDIR``: spawns 2 processes (world size 2, CPU),
each with its own IPython shell, in WORKDIR. Used by tests/test_magics_distributed.py.
"""

from __future__ import annotations

import os
import sys

import torch.distributed as dist
import torch.multiprocessing as mp

CELL = """\
%%traceprofile --repeat 2 --warmup 1 --name ddp -o run_trace --no-show
t = torch.ones(64) * (dist.get_rank() + 1)
dist.all_reduce(t)
total = float(t[0])
"""


def worker(rank: int, workdir: str) -> None:
    os.chdir(workdir)
    dist.init_process_group("gloo", init_method=f"file://{workdir}/rendezvous", rank=rank, world_size=2)
    try:
        from IPython.core.interactiveshell import InteractiveShell

        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "jupyter_traceview")
        ip.run_cell("import torch\nimport torch.distributed as dist")
        result = ip.run_cell(CELL)
        if not result.success:
            raise SystemExit(f"rank {rank}: the cell failed: {result.error_in_exec!r}")
        assert ip.user_ns["total"] == 3.0, ip.user_ns["total"]  # 1 + 2: the all_reduce ran
        trace = ip.user_ns["run_trace"]
        with open(f"rank{rank}.seen", "w") as fh:
            fh.write(",".join(str(r) for r in trace.ranks))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[1],), nprocs=2, join=True)
