"""Gemv/Ger against the graphs they replace (FAST_RUN excluding the 'blas' rewrites) and numpy.

Run: ``python benchmarks/blas_vector.py``; prints microseconds per call (min of 7 repeats).
"""

from __future__ import annotations

import timeit
from typing import Any, Callable

import numpy as np

import graphjit as gj
import graphjit.tensor as gt


def per_call_us(fn: Callable[..., Any], *args: Any) -> float:
    """The best time of one call, in microseconds."""
    number = max(10, int(2e6 / (args[0].size + 10)))
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=7)) / number * 1e6


def main() -> None:
    """Print one row per graph and shape."""
    a, x, y = gt.dmatrix("A"), gt.dvector("x"), gt.dvector("y")
    new = gj.get_mode("FAST_RUN")
    old = new.excluding("blas")
    graphs = [("dot(A, x)", [a, x], gt.dot(a, x), lambda A, x: A @ x),
              ("dot(y, A)", [a, y], gt.dot(y, a), lambda A, y: y @ A),
              ("y + 0.5 * dot(A, x)", [a, x, y], y + 0.5 * gt.dot(a, x), lambda A, x, y: y + 0.5 * (A @ x)),
              ("A - 0.1 * outer(y, x)", [a, x, y], a - 0.1 * gt.outer(y, x),
               lambda A, x, y: A - 0.1 * np.outer(y, x))]
    rng = np.random.default_rng(0)
    print("| graph | shape | before | Gemv/Ger | numpy |\n| --- | --- | --- | --- | --- |")
    for m, n in [(8, 8), (32, 32), (100, 100), (1000, 1000), (4000, 500)]:
        values = {"A": rng.normal(size=(m, n)), "x": rng.normal(size=n), "y": rng.normal(size=m)}
        for label, inputs, out, ref in graphs:
            args = [values[v.name] for v in inputs]
            f_old, f_new = (gj.function(inputs, out, mode=mode) for mode in (old, new))
            times = [per_call_us(f, *args) for f in (f_old, f_new, ref)]
            print(f"| `{label}` | {m} x {n} | " + " | ".join(f"{t:.2f}" for t in times) + " |")


if __name__ == "__main__":
    main()
