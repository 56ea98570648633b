"""Random draws compiled natively (docs/random.md "How draws compile") against numpy's Generator, JAX and PyTensor.

Two graphs: dropout on a 1000 x 1000 float32 activation (a uniform mask draw, compare, multiply, scale) and 1e6
normal draws.  Every peer column is optional (left out when its package does not import: PyTensor lives in its
own venv, without JAX), graphjit's too.  Run: ``taskset -c 1 python benchmarks/random_draws.py`` (with
``PYTHONPATH=src``); prints milliseconds per call (median of 15 interleaved rounds) and numpy / graphjit.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

import numpy as np

try:
    import graphjit as gj
    import graphjit.tensor as gt
    from graphjit.tensor.random import RandomStream
except ImportError:         # each column is optional
    gj = None
try:
    import jax
    import jax.numpy as jnp
except ImportError:
    jax = None
try:
    import pytensor
    import pytensor.tensor as pt
except ImportError:
    pytensor = None

KEEP = 0.8
SHAPE = (1000, 1000)
N_NORMAL = 10 ** 6


def interleaved_ms(calls: dict[str, Callable[[], Any]], rounds: int = 15) -> dict[str, float]:
    """The median time of one call of each, in milliseconds, the calls taking turns (a busy machine's load
    then weighs on every column alike)."""
    times: dict[str, list] = {name: [] for name in calls}
    for fn in calls.values():
        fn()
    for _ in range(rounds):
        for name, fn in calls.items():
            t = time.perf_counter()
            out = fn()
            if hasattr(out, "block_until_ready"):
                out.block_until_ready()
            times[name].append(time.perf_counter() - t)
    return {name: float(np.median(ts)) * 1e3 for name, ts in times.items()}


def numpy_calls(x: np.ndarray) -> dict[str, Callable[[], Any]]:
    """numpy's Generator, written as people write it."""
    rng = np.random.default_rng(0)
    return {"dropout": lambda: x * (rng.random(x.shape, dtype=np.float32) < KEEP) / np.float32(KEEP),
            "normal 1e6": lambda: rng.normal(0.0, 1.0, N_NORMAL)}


def graphjit_calls(x: np.ndarray) -> Optional[dict[str, Callable[[], Any]]]:
    """FAST_RUN functions whose draws advance their shared generators."""
    if gj is None:
        return None
    srng = RandomStream(0)
    a = gt.fmatrix("a")
    # numpy's float32 draw (Generator.random(dtype=float32)) where RandomStream has it, else uniform's double one
    draw = (srng.random(size=SHAPE, dtype="float32") if hasattr(srng, "random")
            else srng.uniform(0.0, 1.0, size=SHAPE, dtype="float32"))
    mask = gt.lt(draw, KEEP)
    dropout = gj.function([a], a * mask / np.float32(KEEP))
    normal = gj.function([], srng.normal(0.0, 1.0, size=(N_NORMAL,)))
    return {"dropout": lambda: dropout(x), "normal 1e6": normal}


def jax_calls(x: np.ndarray) -> Optional[dict[str, Callable[[], Any]]]:
    """jax.random with a key split per call (threefry), under jax.jit."""
    if jax is None:
        return None
    state = {"key": jax.random.PRNGKey(0)}

    @jax.jit
    def dropout(key: Any, a: Any) -> Any:
        return a * (jax.random.uniform(key, a.shape, dtype=jnp.float32) < KEEP) / KEEP

    @jax.jit
    def normal(key: Any) -> Any:
        return jax.random.normal(key, (N_NORMAL,))

    def fresh() -> Any:
        state["key"], sub = jax.random.split(state["key"])
        return sub
    xa = jnp.asarray(x)
    return {"dropout": lambda: dropout(fresh(), xa), "normal 1e6": lambda: normal(fresh())}


def pytensor_calls(x: np.ndarray) -> Optional[dict[str, Callable[[], Any]]]:
    """PyTensor's RandomStream, its default mode (C backend)."""
    if pytensor is None:
        return None
    srng = pt.random.utils.RandomStream(0)
    a = pt.fmatrix("a")
    mask = pt.lt(srng.uniform(0.0, 1.0, size=SHAPE).astype("float32"), KEEP)
    dropout = pytensor.function([a], a * mask / np.float32(KEEP))
    normal = pytensor.function([], srng.normal(0.0, 1.0, size=(N_NORMAL,)))
    return {"dropout": lambda: dropout(x), "normal 1e6": normal}


def main() -> None:
    """One row per graph; a column per installed peer."""
    x = np.random.default_rng(1).normal(size=SHAPE).astype(np.float32)
    columns = [(name, make(x)) for name, make in (("graphjit", graphjit_calls), ("numpy", numpy_calls),
                                                  ("jax", jax_calls), ("pytensor", pytensor_calls))]
    columns = [(name, calls) for name, calls in columns if calls is not None]
    ratio = any(name == "graphjit" for name, _ in columns)
    head = "| graph |" + "".join(f" {name} ms |" for name, _ in columns) + (" numpy / graphjit |" if ratio else "")
    print(head + "\n|" + " --- |" * (head.count("|") - 1))
    for graph in ("dropout", "normal 1e6"):
        times = interleaved_ms({name: calls[graph] for name, calls in columns})
        row = f"| {graph} |" + "".join(f" {t:.2f} |" for t in times.values())
        if ratio:
            row += f" {times['numpy'] / times['graphjit']:.2f} |"
        print(row)


if __name__ == "__main__":
    main()
