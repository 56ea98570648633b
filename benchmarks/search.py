"""Searching and counting (searchsorted, nonzero, bincount, unique) against numpy and, where it compiles them
without a static output size, JAX (searchsorted only: its nonzero/bincount/unique need `size=` under jit).

Run: ``taskset -c 1 python benchmarks/search.py``; prints the median milliseconds of 7 calls and numpy / graphjit.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Optional

import numpy as np

import graphjit as gj
import graphjit.tensor as gt


def median_ms(fn: Callable[..., Any], *args: Any) -> float:
    """The median of 7 calls after one warm-up call, in milliseconds."""
    fn(*args)
    times = []
    for _ in range(7):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def jax_searchsorted() -> Optional[Callable[..., Any]]:
    """jax.jit(jnp.searchsorted) on the CPU, or None without JAX."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    fn = jax.jit(jnp.searchsorted)
    return lambda a, v: fn(a, v).block_until_ready()


def main() -> None:
    """Print one row per function and size."""
    x, v, i, w = gt.dvector("x"), gt.dvector("v"), gt.lvector("i"), gt.dvector("w")
    rng = np.random.default_rng(0)
    jax_ss = jax_searchsorted()
    print("| function | n | graphjit ms | numpy ms | numpy / graphjit | JAX ms |\n| --- | --- | --- | --- | --- | --- |")
    for n in (10 ** 4, 10 ** 6):
        data = rng.normal(size=n)
        sorted_data, ints = np.sort(data), rng.integers(0, 1000, n)
        rows = [("searchsorted(a, v)", [x, v], gt.searchsorted(x, v), np.searchsorted, (sorted_data, data), jax_ss),
                ("nonzero(x > 0)", [x], gt.nonzero(x > 0)[0], lambda a: np.nonzero(a > 0)[0], (data,), None),
                ("bincount(i)", [i], gt.bincount(i), np.bincount, (ints,), None),
                ("bincount(i, w)", [i, w], gt.bincount(i, w), np.bincount, (ints, data), None),
                ("unique(x)", [x], gt.unique(x), np.unique, (data,), None),
                ("unique(x, index, inverse, counts)", [x], list(gt.unique(x, True, True, True)),
                 lambda a: np.unique(a, True, True, True), (data,), None),
                ("unique(ints)", [i], gt.unique(i), np.unique, (ints,), None)]
        for label, inputs, out, ref, args, peer in rows:
            f = gj.function(inputs, out)
            ours, theirs = median_ms(f, *args), median_ms(ref, *args)
            jax_ms = f"{median_ms(peer, *args):.3f}" if peer is not None else "-"
            print(f"| `{label}` | {n:.0e} | {ours:.3f} | {theirs:.3f} | {theirs / ours:.2f} | {jax_ms} |")


if __name__ == "__main__":
    main()
