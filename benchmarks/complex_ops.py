"""complex128 graphs (natively compiled, docs/dtypes.md "Complex numbers") against numpy, and JAX when installed.

Run: ``taskset -c 1 python benchmarks/complex_ops.py``; prints milliseconds per call (median of 15) and numpy / graphjit.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

import graphjit as gj
import graphjit.tensor as gt

try:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
except ImportError:         # JAX is optional: its column is left out
    jax = None


def median_ms(fn: Callable[..., Any], *args: Any) -> float:
    """The median time of one call, in milliseconds."""
    fn(*args)
    times = []
    for _ in range(15):
        t = time.perf_counter()
        out = fn(*args)
        if hasattr(out, "block_until_ready"):
            out.block_until_ready()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def main() -> None:
    """One row per graph."""
    rng = np.random.default_rng(0)
    n = 10 ** 6
    v = rng.normal(size=n) + 1j * rng.normal(size=n)
    w = rng.normal(size=n) + 1j * rng.normal(size=n)
    m = rng.normal(size=(300, 300)) + 1j * rng.normal(size=(300, 300))
    x, y, a = gt.zvector("x"), gt.zvector("y"), gt.zmatrix("a")
    # each reference takes the array module first: numpy, or jax.numpy under jax.jit
    graphs = [("x * y + x", [x, y], x * y + x, lambda xp, p, q: p * q + p, (v, w)),
              ("x / y", [x, y], x / y, lambda xp, p, q: p / q, (v, w)),
              ("abs(x)", [x], abs(x), lambda xp, p: xp.abs(p), (v,)),
              ("exp(x)", [x], gt.exp(x), lambda xp, p: xp.exp(p), (v,)),
              ("sum(x)", [x], x.sum(), lambda xp, p: p.sum(), (v,)),
              ("dot(a, a) 300", [a], gt.dot(a, a), lambda xp, p: p @ p, (m,))]
    head = "| graph | graphjit ms | numpy ms | numpy / graphjit |" + (" jax ms |" if jax else "")
    print(head + "\n|" + " --- |" * (head.count("|") - 1))
    for label, inputs, out, ref, args in graphs:
        f = gj.function(inputs, out)
        ours, theirs = median_ms(f, *args), median_ms(lambda *t: ref(np, *t), *args)
        row = f"| `{label}` | {ours:.2f} | {theirs:.2f} | {theirs / ours:.2f} |"
        if jax:
            jitted = jax.jit(lambda *t, _r=ref: _r(jnp, *t))
            row += f" {median_ms(jitted, *[jnp.asarray(t) for t in args]):.2f} |"
        print(row)


if __name__ == "__main__":
    main()
