"""numpy's shape helpers of issue 35 (repeat with per-element counts, pad, diagonal/trace, reverse cumsum) under
FAST_RUN against numpy and JAX (jit, one thread; its column is skipped when JAX is not importable).

Run: ``taskset -c 1 python benchmarks/shape_helpers.py``; prints the median microseconds per call of 7 repeats.
"""

from __future__ import annotations

import os
import statistics
import sys
import timeit
from typing import Any, Callable, Optional

import numpy as np

import graphjit as gj
import graphjit.tensor as gt

sys.path.insert(0, os.path.dirname(__file__))
from peers import jax, jax_put  # noqa: E402


def median_us(fn: Callable[[], Any]) -> float:
    """The median time of one call over 7 repeats, in microseconds."""
    fn()
    number = max(1, int(0.05 / max(timeit.timeit(fn, number=1), 1e-7)))
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def jax_fn(build: Optional[Callable[..., Any]], args: list) -> Optional[Callable[[], Any]]:
    """A jitted JAX call of build on args placed on the device, or None without JAX."""
    if build is None:
        return None
    try:
        j = jax()
    except ImportError:
        return None
    f, put = j.jit(build), jax_put(*args)
    return lambda: f(*put).block_until_ready()


def main() -> None:
    """One row per case: graphjit, numpy, JAX and the ratio graphjit / numpy."""
    rng = np.random.default_rng(0)
    x, v, r, m = gt.dvector("x"), gt.dvector("v"), gt.lvector("r"), gt.dmatrix("m")
    big, counts = rng.normal(size=10 ** 6), rng.integers(0, 4, size=10 ** 6)
    mat = rng.normal(size=(1000, 1000))
    jnp = None
    try:
        jnp = jax().numpy
    except ImportError:
        pass
    cases = [
        ("repeat(x, counts), 1e6", [x, r], gt.repeat(x, r), [big, counts], lambda a, c: np.repeat(a, c),
         None),          # jnp.repeat needs a static total_repeat_length: no like-for-like column
        ("grad of repeat (segment sums), 1e6", [x, r], gj.grad((gt.repeat(x, r) * 2.0).sum(), x), [big, counts],
         lambda a, c: np.bincount(np.repeat(np.arange(len(c)), c), np.full(c.sum(), 2.0), len(c)), None),
        ("pad(m, 100, 'reflect'), 1000^2", [m], gt.pad(m, 100, "reflect"), [mat], lambda a: np.pad(a, 100, "reflect"),
         jnp and (lambda a: jnp.pad(a, 100, "reflect"))),
        ("pad(m, 100), 1000^2", [m], gt.pad(m, 100), [mat], lambda a: np.pad(a, 100),
         jnp and (lambda a: jnp.pad(a, 100))),
        ("trace(m, 3), 1000^2", [m], gt.trace(m, 3), [mat], lambda a: np.trace(a, 3),
         jnp and (lambda a: jnp.trace(a, 3))),
        ("cumsum(v, reverse=True), 1e6", [v], gt.cumsum(v, reverse=True), [big],
         lambda a: np.cumsum(a[::-1])[::-1], jnp and (lambda a: jnp.flip(jnp.cumsum(jnp.flip(a))))),
    ]
    print("| case | graphjit (us) | numpy (us) | JAX (us) | graphjit / numpy |\n| --- | --- | --- | --- | --- |")
    for label, inputs, out, args, ref, jx in cases:
        f = gj.function(inputs, out, mode="FAST_RUN")
        assert f.native.fallback_nodes == []
        got, want = f(*args), ref(*args)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        t_gj, t_np = median_us(lambda: f(*args)), median_us(lambda: ref(*args))
        jf = jax_fn(jx, args)
        t_jx = f"{median_us(jf):.0f}" if jf is not None else "-"
        print(f"| `{label}` | {t_gj:.0f} | {t_np:.0f} | {t_jx} | {t_gj / t_np:.2f} |")


if __name__ == "__main__":
    main()
