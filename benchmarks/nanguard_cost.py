"""NanGuardMode's cost against FAST_RUN on a 1e6-element chain of eight elementwise ops (one fused loop).

Run: ``python benchmarks/nanguard_cost.py [n]``; prints the median milliseconds per call of each mode (15
interleaved repeats of 5 calls) and their ratio.  NanGuardMode checks every intermediate of the fused loop
(link/llvm/ir/callbacks.py).
"""

from __future__ import annotations

import statistics
import sys
import timeit
from typing import Any, Callable

import numpy as np

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile import NanGuardMode


def chain(x: Any) -> Any:
    """Eight elementwise ops, every value finite on inputs in [0.1, 1]."""
    y = gt.exp(x) * 0.5
    y = gt.log(y + 1.0)
    y = gt.tanh(y) - x
    return gt.sqrt(y * y + 1.0) / (x + 2.0)


def medians_ms(fns: list[Callable[..., Any]], arg: np.ndarray, number: int = 5, repeat: int = 15) -> list[float]:
    """The median time of one call of each fn, in milliseconds, over repeats interleaved (a busy machine slows
    both alike)."""
    samples: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn(arg)
    for _ in range(repeat):
        for fn, out in zip(fns, samples):
            out.append(timeit.timeit(lambda: fn(arg), number=number) / number * 1e3)
    return [statistics.median(s) for s in samples]


def main() -> None:
    """Print both medians and the ratio."""
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    x = gt.dvector("x")
    out = chain(x)
    arg = np.random.default_rng(0).uniform(0.1, 1.0, n)
    fast = gj.function([x], out, mode="FAST_RUN")
    guard = gj.function([x], out, mode=NanGuardMode())
    np.testing.assert_allclose(guard(arg), fast(arg))
    t_fast, t_guard = medians_ms([fast, guard], arg)
    print(f"n={n}  FAST_RUN {t_fast:.3f} ms  NanGuardMode {t_guard:.3f} ms  ratio {t_guard / t_fast:.2f}")


if __name__ == "__main__":
    main()
