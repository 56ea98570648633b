"""Gather ``x[idx]`` and scatter-add ``inc_subtensor(z[idx], v)``: 1e6 random indices into a 1e6 float64 vector,
alone and fused with the elementwise work around them, against numpy (and JAX when importable).

Run on one thread: ``taskset -c 1 python benchmarks/indexing.py [n]``; prints the median milliseconds of CPU time
per call (7 repeats; the process's CPU time, every thread of it, so that other work sharing the core does not
count) and numpy / graphjit (above 1: graphjit is faster). numpy's scatter-add is ``np.add.at`` on a copy
(the semantics of inc_subtensor); ``np.bincount`` (an idiom for a 1-d float scatter-add) is shown beside it.
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from typing import Any, Callable

import numpy as np

import graphjit as gj
import graphjit.tensor as gt


def median_ms(fn: Callable[[], Any]) -> float:
    """The median time of one call, in milliseconds (7 repeats of a number of calls taking ~0.2 s)."""
    fn()
    number = max(1, int(0.2 / max(timeit.timeit(fn, number=1, timer=time.process_time), 1e-6)))
    return statistics.median(timeit.repeat(fn, number=number, repeat=7, timer=time.process_time)) / number * 1e3


def _add_at(z: np.ndarray, idx: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = z.copy()
    np.add.at(out, idx, v)
    return out


def _jax_impls(values: dict) -> dict:
    """The JAX versions (jit, float64), or {} when JAX is not importable."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)
    dev = {k: jax.device_put(v) for k, v in values.items()}
    fns = {"x[idx]": lambda x, idx: x[idx],
           "exp(x[idx]) * 2 + 1": lambda x, idx: jnp.exp(x[idx]) * 2 + 1,
           "inc_subtensor(z[idx], v)": lambda z, idx, v: z.at[idx].add(v),
           "inc_subtensor(z[idx], v * w)": lambda z, idx, v, w: z.at[idx].add(v * w)}
    args = {"x[idx]": ("x", "idx"), "exp(x[idx]) * 2 + 1": ("x", "idx"),
            "inc_subtensor(z[idx], v)": ("z", "idx", "v"), "inc_subtensor(z[idx], v * w)": ("z", "idx", "v", "w")}
    out = {}
    for name, fn in fns.items():
        jitted, a = jax.jit(fn), [dev[k] for k in args[name]]
        out[name] = lambda jitted=jitted, a=a: jitted(*a).block_until_ready()
    return out


def main(n: int = 1_000_000) -> None:
    """Print one row per graph."""
    rng = np.random.default_rng(0)
    values = {"x": rng.normal(size=n), "z": rng.normal(size=n), "v": rng.normal(size=n), "w": rng.normal(size=n),
              "idx": rng.integers(0, n, size=n)}
    x, z, v, w, idx = gt.dvector("x"), gt.dvector("z"), gt.dvector("v"), gt.dvector("w"), gt.lvector("idx")
    graphs = [
        ("x[idx]", [x, idx], x[idx], lambda x, idx: x[idx], None),
        ("exp(x[idx]) * 2 + 1", [x, idx], gt.exp(x[idx]) * 2 + 1, lambda x, idx: np.exp(x[idx]) * 2 + 1, None),
        ("inc_subtensor(z[idx], v)", [z, idx, v], gt.inc_subtensor(z[idx], v), _add_at,
         lambda z, idx, v: z + np.bincount(idx, v, minlength=n)),
        ("inc_subtensor(z[idx], v * w)", [z, idx, v, w], gt.inc_subtensor(z[idx], v * w),
         lambda z, idx, v, w: _add_at(z, idx, v * w), lambda z, idx, v, w: z + np.bincount(idx, v * w, minlength=n)),
    ]
    jax_fns = _jax_impls(values)
    head = "| graph | graphjit ms | numpy ms | numpy / graphjit | np.bincount ms |"
    print(head + (" JAX ms |" if jax_fns else "") + "\n|" + " --- |" * (5 + bool(jax_fns)))
    for name, inputs, out, ref, alt in graphs:
        args = [values[i.name] for i in inputs]
        f = gj.function(inputs, out, mode="FAST_RUN")
        assert f.native.fallback_nodes == []
        np.testing.assert_allclose(f(*args), ref(*args), rtol=1e-12)
        t_gj, t_np = median_ms(lambda: f(*args)), median_ms(lambda: ref(*args))
        t_alt = f"{median_ms(lambda: alt(*args)):.2f}" if alt is not None else "-"
        row = f"| `{name}` | {t_gj:.2f} | {t_np:.2f} | {t_np / t_gj:.2f} | {t_alt} |"
        if jax_fns:
            row += f" {median_ms(jax_fns[name]):.2f} |"
        print(row)


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000)
