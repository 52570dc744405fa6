"""Record a large CPU PyTorch trace with Python stacks, for the first-call benchmarks.

A diffusion-style inference loop: a small UNet (convolutions, group norms, a self-attention
block at the bottom, skip connections) run for several denoising steps under
``torch.profiler`` with ``record_shapes=True, with_stack=True``, so the trace holds CPU
operators with their input shapes and the Python frames (``python_function``) above them::

    python scripts/record_stack_trace.py OUT.pt.trace.json.gz [--events 200000]

The number of denoising steps is chosen so that the trace has about ``--events`` events.
The file is not committed (it is several MB); ``benchmarks/bench_first_call.py`` writes it
on demand into ``benchmarks/.data/``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import tempfile
from pathlib import Path


def _model():  # type: ignore[no-untyped-def]
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.norm1 = nn.GroupNorm(4, cin)
            self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
            self.norm2 = nn.GroupNorm(4, cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()
            self.temb = nn.Linear(32, cout)

        def forward(self, x, t):  # type: ignore[no-untyped-def]
            h = self.conv1(torch.nn.functional.silu(self.norm1(x)))
            h = h + self.temb(t)[:, :, None, None]
            h = self.conv2(torch.nn.functional.silu(self.norm2(h)))
            return h + self.skip(x)

    class Attention(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.norm = nn.GroupNorm(4, c)
            self.qkv = nn.Linear(c, 3 * c)
            self.out = nn.Linear(c, c)

        def forward(self, x):  # type: ignore[no-untyped-def]
            b, c, hh, ww = x.shape
            h = self.norm(x).flatten(2).transpose(1, 2)
            q, k, v = self.qkv(h).chunk(3, dim=-1)
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            return x + self.out(a).transpose(1, 2).reshape(b, c, hh, ww)

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.time = nn.Sequential(nn.Linear(1, 32), nn.SiLU(), nn.Linear(32, 32))
            self.inp = nn.Conv2d(3, 16, 3, padding=1)
            self.down1 = Block(16, 16)
            self.down2 = Block(16, 32)
            self.mid = Block(32, 32)
            self.attn = Attention(32)
            self.up2 = Block(64, 16)
            self.up1 = Block(32, 16)
            self.outp = nn.Conv2d(16, 3, 3, padding=1)

        def forward(self, x, t):  # type: ignore[no-untyped-def]
            te = self.time(t)
            h0 = self.inp(x)
            h1 = self.down1(h0, te)
            h2 = self.down2(torch.nn.functional.avg_pool2d(h1, 2), te)
            m = self.attn(self.mid(h2, te))
            u2 = self.up2(torch.cat([m, h2], 1), te)
            u1 = self.up1(torch.cat([torch.nn.functional.interpolate(u2, scale_factor=2), h1], 1), te)
            return self.outp(u1)

    return UNet().eval()


def _sample(model, steps: int) -> None:  # type: ignore[no-untyped-def]
    import torch

    x = torch.randn(1, 3, 16, 16)
    for i in range(steps):
        t = torch.full((1, 1), 1.0 - i / steps)
        eps = model(x, t)
        x = x - 0.1 * eps
        x = x.clamp(-3, 3)


def record(out: Path, *, events: int = 200_000, seed: int = 0) -> Path:
    """Record the trace into ``out`` (gzipped JSON) and return ``out``."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    model = _model()
    with torch.inference_mode():
        _sample(model, 2)  # warm up
        with tempfile.TemporaryDirectory() as tmp:
            probe = Path(tmp) / "probe.json"
            with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
                _sample(model, 2)
            prof.export_chrome_trace(str(probe))
            per_step = max(1, len(json.loads(probe.read_text())["traceEvents"]) // 2)
            steps = max(1, round(events / per_step))
            raw = Path(tmp) / "trace.json"
            with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
                for _ in range(steps):
                    with torch.profiler.record_function("denoise_step"):
                        _sample(model, 1)
                    prof.step()
            prof.export_chrome_trace(str(raw))
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp_out = out.with_name(out.name + ".part")
            with raw.open("rb") as src, gzip.open(tmp_out, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst)
            tmp_out.replace(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    path = record(args.out, events=args.events)
    with gzip.open(path, "rb") as f:
        n = len(json.load(f)["traceEvents"])
    print(f"{path}: {n} events, {path.stat().st_size / 1e6:.1f} MB gzipped")


if __name__ == "__main__":
    main()
