"""Record the small CPU JAX profiles in ``tests/data/jax/`` (see its README).

A few jitted training steps of a small MLP (SGD on a random regression problem), each
inside ``jax.profiler.StepTraceAnnotation``, recorded with ``jax.profiler.trace(...,
create_perfetto_trace=True)``. jax.profiler writes ``plugins/profile/<run>/`` holding
``<host>.xplane.pb`` (the binary XSpace, read through xprof), ``<host>.trace.json.gz`` and
``perfetto_trace.json.gz``, all kept; the run folder and host name are renamed to stable
names. Run: ``python scripts/record_jax.py [DEST]`` (default ``tests/data/jax``).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any


def _model() -> tuple[Any, Any, Any, Any]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    # The data from numpy, not jax.random: the XSpace keeps the HLO of every program the
    # process compiled, and jax.random's would be most of the file.
    rng = np.random.default_rng(0)
    params = {
        "w1": jnp.asarray(rng.normal(size=(32, 64)) * 0.1, dtype=jnp.float32),
        "b1": jnp.zeros(64, dtype=jnp.float32),
        "w2": jnp.asarray(rng.normal(size=(64, 1)) * 0.1, dtype=jnp.float32),
        "b2": jnp.zeros(1, dtype=jnp.float32),
    }
    x = jnp.asarray(rng.normal(size=(128, 32)), dtype=jnp.float32)
    y = jnp.asarray(rng.normal(size=(128, 1)), dtype=jnp.float32)

    def loss(p: Any, x: Any, y: Any) -> Any:
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    @jax.jit
    def step(p: Any, x: Any, y: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), value

    params, value = step(params, x, y)  # compiled before the profile starts
    value.block_until_ready()
    return step, params, x, y


def _train(model: tuple[Any, Any, Any, Any], steps: int) -> None:
    import jax

    step, params, x, y = model
    for i in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            params, value = step(params, x, y)
            value.block_until_ready()


def record(dest: Path, name: str = "mlp_train", steps: int = 4) -> Path:
    """Record one run into ``dest/name`` (replaced), and return that folder."""
    import jax

    out = dest / name
    with tempfile.TemporaryDirectory() as tmp:
        model = _model()
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 0  # Python frames: 100,000s of events for four steps
        with jax.profiler.trace(tmp, create_perfetto_trace=True, profiler_options=options):
            _train(model, steps)
        runs = sorted(Path(tmp).glob("plugins/profile/*"))
        if len(runs) != 1:
            raise SystemExit(f"expected one profile run under {tmp}, found {runs}")
        if out.exists():
            shutil.rmtree(out)
        run = out / "plugins" / "profile" / "run"
        run.mkdir(parents=True)
        for f in runs[0].iterdir():
            target = f.name if f.name.startswith("perfetto") else "host" + f.name[f.name.index(".") :]
            shutil.copy(f, run / target)
    print(f"jax {jax.__version__}: wrote {sorted(str(p.relative_to(dest)) for p in out.rglob('*') if p.is_file())}")
    return out


if __name__ == "__main__":
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/data/jax"))
