"""A vectorized 3 x 3 solve over 1e5 systems: graphjit's ``vectorize(Solve, "(m,m),(m)->(m)")`` (FAST_RUN, where a
rewrite hands the batch to the native Solve; and the generic Blockwise loop nest around the inline core, the
rewrite excluded) against numpy's batched ``np.linalg.solve`` and ``jax.vmap(jnp.linalg.solve)`` when JAX is
installed. One thread (set before numpy loads; run it under ``taskset -c 1``).

Run: ``taskset -c 1 python benchmarks/vectorize.py``; prints milliseconds per call (median of 7 repeats) and the
ratio to numpy.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import statistics  # noqa: E402
import timeit  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

import graphjit as gj  # noqa: E402
import graphjit.tensor as gt  # noqa: E402
from graphjit.tensor import linalg as la  # noqa: E402

BATCH, N = 100_000, 3


def median_ms(fn: Callable[[], Any], number: int = 5) -> float:
    """The median time of one call over 7 repeats, in milliseconds."""
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e3


def jax_solve(a: np.ndarray, b: np.ndarray) -> Callable[[], Any] | None:
    """jax.vmap(jnp.linalg.solve), jit-compiled, float64; None when JAX is not importable."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    fn = jax.jit(jax.vmap(jax.numpy.linalg.solve))
    ja, jb = jax.device_put(a), jax.device_put(b)
    return lambda: fn(ja, jb).block_until_ready()


def main() -> None:
    """Print one row per implementation."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (BATCH, N, N)) + N * np.eye(N)
    b = rng.uniform(-1, 1, (BATCH, N))
    sa, sb = gt.dtensor3("a"), gt.dmatrix("b")
    x = gt.vectorize(la.Solve("gen", b_ndim=1), "(m,m),(m)->(m)")(sa, sb)
    want = np.linalg.solve(a, b[..., None])[..., 0]
    rows = [("numpy np.linalg.solve (batched)", lambda: np.linalg.solve(a, b[..., None]))]
    for label, mode in [("graphjit vectorize (FAST_RUN)", "FAST_RUN"),
                        ("graphjit Blockwise loop (no unwrap)",
                         gj.get_mode("FAST_RUN").excluding("local_blockwise_unwrap"))]:
        f = gj.function([sa, sb], x, mode=mode)
        np.testing.assert_allclose(f(a, b), want, rtol=1e-10)
        rows.append((label, lambda f=f: f(a, b)))
    jx = jax_solve(a, b)
    if jx is not None:
        rows.append(("jax.vmap(jnp.linalg.solve) (jit)", jx))
    times = [(label, median_ms(fn)) for label, fn in rows]
    base = times[0][1]
    print(f"3 x 3 solve, {BATCH} systems, float64, one thread\n")
    print("| implementation | ms per call | vs numpy |\n| --- | --- | --- |")
    for label, t in times:
        print(f"| {label} | {t:.2f} | {t / base:.2f}x |")


if __name__ == "__main__":
    main()
