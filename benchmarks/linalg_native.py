"""expm, lstsq and the generalized eigh compiled natively, against their Python `perform` (FAST_RUN without the
native lowering: mode PY), scipy/numpy and JAX (when importable), one thread; then complex128 solve, eigh and
expm (the c/z LAPACK routines, docs/linalg.md "Complex matrices") against numpy/scipy and JAX.

Run: ``taskset -c 1 python benchmarks/linalg_native.py``; prints the median microseconds per call of 7 repeats.
"""

from __future__ import annotations

import os
import statistics
import timeit
from typing import Any, Callable, Optional

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402
import scipy.linalg as sl  # noqa: E402

import graphjit as gj  # noqa: E402
import graphjit.tensor as gt  # noqa: E402
from graphjit.tensor import linalg as la  # noqa: E402


def median_us(fn: Callable[[], Any]) -> float:
    """The median time of one call, in microseconds."""
    t = timeit.Timer(fn)
    number = max(1, int(0.05 / max(t.timeit(1), 1e-7)))
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def jax_versions() -> Optional[dict]:
    """JAX's expm and lstsq jitted (it has no generalized eigh), or None without JAX."""
    try:
        import jax
        import jax.numpy as jnp
        import jax.scipy.linalg as jsl
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return {"expm": jax.jit(jsl.expm), "lstsq": jax.jit(lambda a, b: jnp.linalg.lstsq(a, b)[0])}


def main() -> None:
    """One row per function and size."""
    jx = jax_versions()
    a, b, v = gt.dmatrix("a"), gt.dmatrix("b"), gt.dvector("v")
    rng = np.random.default_rng(0)
    graphs = [("expm", [a], la.expm(a), sl.expm, "expm"),
              ("lstsq", [a, v], la.lstsq(a, v)[0], lambda x, y: np.linalg.lstsq(x, y)[0], "lstsq"),
              ("eigh(a, b)", [a, b], la.eigvalsh(a, b), lambda x, y: sl.eigh(x, y, eigvals_only=True), "eigh")]
    print("| function | n | native | perform | scipy/numpy | JAX | perform / native |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, inputs, out, ref, key in graphs:
        native = gj.function(inputs, out, mode="FAST_RUN")
        assert native.native.fallback_nodes == []
        slow = gj.function(inputs, out, mode="PY")
        for n in (8, 64, 256):
            x = rng.normal(size=(n, n)) / np.sqrt(n)
            args = {"expm": [x], "lstsq": [rng.normal(size=(2 * n, n)), rng.normal(size=2 * n)],
                    "eigh": [x + x.T, x @ x.T + n * np.eye(n)]}[key]
            times = [median_us(lambda f=f: f(*args)) for f in (native, slow, ref)]
            jt = "-"
            if jx is not None and key in jx:
                jf = jx[key]
                jf(*args)
                jt = f"{median_us(lambda: np.asarray(jf(*args))):.1f}"
            print(f"| {name} | {n} | {times[0]:.1f} | {times[1]:.1f} | {times[2]:.1f} | {jt} | "
                  f"{times[1] / times[0]:.2f} |")


def complex_rows() -> None:
    """complex128 at n = 200: solve against a 200 x 4 right-hand side, eigh (values and vectors), expm."""
    try:
        import jax
        import jax.numpy as jnp
        import jax.scipy.linalg as jsl
        jax.config.update("jax_enable_x64", True)
        jx = {"solve": jax.jit(jnp.linalg.solve), "eigh": jax.jit(jnp.linalg.eigh), "expm": jax.jit(jsl.expm)}
    except ImportError:
        jx = {}
    rng = np.random.default_rng(1)
    n = 200
    g = (rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))) / np.sqrt(n)
    h = g + g.conj().T
    rhs = rng.normal(size=(n, 4)) + 1j * rng.normal(size=(n, 4))
    a, b = gt.zmatrix("a"), gt.zmatrix("b")
    rows = [("solve", [a, b], la.solve(a, b), np.linalg.solve, [g + 3 * np.eye(n), rhs]),
            ("eigh", [a], list(la.eigh(a)), np.linalg.eigh, [h]),
            ("expm", [a], la.expm(a), sl.expm, [g])]
    print()
    print("| complex128, n = 200 | native (us) | numpy/scipy (us) | JAX (us) | numpy / native | JAX / native |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, inputs, out, ref, args in rows:
        native = gj.function(inputs, out, mode="FAST_RUN")
        assert native.native.fallback_nodes == []
        t_native, t_ref = median_us(lambda: native(*args)), median_us(lambda: ref(*args))
        jt, jr = "-", "-"
        if name in jx:
            jf = jx[name]
            jax.block_until_ready(jf(*args))
            t_jax = median_us(lambda: jax.block_until_ready(jf(*args)))
            jt, jr = f"{t_jax:.0f}", f"{t_jax / t_native:.2f}"
        print(f"| {name} | {t_native:.0f} | {t_ref:.0f} | {jt} | {t_ref / t_native:.2f} | {jr} |")


if __name__ == "__main__":
    main()
    complex_rows()
