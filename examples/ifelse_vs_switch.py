"""ifelse versus switch: a lazy conditional computes one branch, an elementwise switch computes both.

Run: python examples/ifelse_vs_switch.py [rows] [repeats]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import graphjit as gj
import graphjit.tensor as gt
from graphjit.ifelse import ifelse


def build(mode: str) -> tuple:
    """The same choice between the means of two matrices, as a switch and as an ifelse."""
    a, b = gt.dscalars("a", "b")
    x, y = gt.dmatrices("x", "y")
    both = gt.switch(gt.lt(a, b), gt.mean(x), gt.mean(y))       # evaluates both means, then picks one
    lazy = ifelse(gt.lt(a, b), gt.mean(x), gt.mean(y))          # evaluates the mean it returns
    return (gj.function([a, b, x, y], both, mode=mode), gj.function([a, b, x, y], lazy, mode=mode))


def best_of(f, args: tuple, repeats: int) -> float:
    """The median time of one call, in seconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(rows: int = 10000, repeats: int = 20) -> None:
    """Print the median time per call of switch and ifelse in each mode."""
    x, y = np.ones((rows, 1000)), np.full((rows, 1000), 2.0)
    print(f"mean of a {rows} x 1000 matrix, chosen by a < b; median of {repeats} calls")
    for mode in ("PY", "FAST_RUN"):
        f_switch, f_lazy = build(mode)
        assert f_switch(0.0, 1.0, x, y) == f_lazy(0.0, 1.0, x, y) == 1.0
        assert f_switch(1.0, 0.0, x, y) == f_lazy(1.0, 0.0, x, y) == 2.0
        t_switch = best_of(f_switch, (0.0, 1.0, x, y), repeats)
        t_lazy = best_of(f_lazy, (0.0, 1.0, x, y), repeats)
        print(f"{mode:9s} switch {t_switch * 1e3:8.3f} ms   ifelse {t_lazy * 1e3:8.3f} ms   "
              f"ratio {t_switch / t_lazy:4.2f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
