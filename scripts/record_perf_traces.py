"""Record the small CPU traces with shapes that the operator performance model is tested on.

    pip install torch==2.13.0   # CPU build
    python scripts/record_perf_traces.py [OUT_DIR]   # default: tests/data/perfmodel_cpu

Three tiny models, one profiled training step each (``record_shapes=True``), written as
gzipped Kineto JSON: an MLP (linear/addmm, relu, cross-entropy, Adam), a CNN (conv2d with
stride/padding/groups/dilation, batch norm, a transposed convolution) and a small
transformer block (embedding, layer norm, causal and non-causal scaled-dot-product
attention, GELU, softmax). The figures the tests expect are worked out from the shapes
in the tests themselves, not from these traces' numbers.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from torch.profiler import ProfilerActivity, profile


class _Block(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim, bias=False)
        self.heads = heads
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.ln(self.emb(tokens))
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a2 = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        x = x + self.out((a + a2).transpose(1, 2).reshape(b, s, d))
        return F.log_softmax(self.head(F.gelu(x)), dim=-1)


def _mlp() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return model, torch.randn(16, 64), torch.randint(0, 10, (16,))


def _cnn() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=1, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=2, dilation=2, groups=2, bias=False),
        nn.ConvTranspose2d(16, 4, 2, stride=2),
        nn.Flatten(),
        nn.Linear(4 * 16 * 16, 10),
    )
    return model, torch.randn(2, 3, 16, 16), torch.randint(0, 10, (2,))


def _transformer() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    tokens = torch.randint(0, 100, (2, 12))
    return _Block(), tokens, torch.randint(0, 100, (2 * 12,))


def record(out_dir: Path) -> list[Path]:
    torch.manual_seed(0)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for label, make in (("mlp", _mlp), ("cnn", _cnn), ("transformer", _transformer)):
        model, x, y = make()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step(
            model: nn.Module = model, x: torch.Tensor = x, y: torch.Tensor = y, opt: torch.optim.Optimizer = opt
        ) -> None:
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y)
            loss.backward()
            opt.step()

        step()  # warm up (Adam state)
        with (
            profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof,
            torch.profiler.record_function("ProfilerStep#1"),
        ):
            step()
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(raw))
            target = out_dir / f"{label}_cpu.json.gz"
            with raw.open("rb") as src, gzip.open(target, "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
        written.append(target)
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "tests/data/perfmodel_cpu"
    for p in record(out):
        print(p, p.stat().st_size, "bytes")
