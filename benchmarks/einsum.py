"""einsum("bij,bjk->bik") against numpy.einsum, numpy.matmul (a BLAS gemm per batch) and JAX, one thread.

Run: ``taskset -c 1 python benchmarks/einsum.py [--batch 64 --n 128 --repeat 15 --clock wall|cpu]``; prints the median time
per call and its ratio to numpy.matmul's (the issue's target: graphjit's einsum within 1.1x of it).  The script
re-executes itself in run.py's `1 thread` environment (BLAS and XLA at one thread, OPENBLAS_CORETYPE unset)
before numpy is imported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import timeit
from pathlib import Path
from typing import Any, Callable, Dict

HERE = Path(__file__).resolve().parent
_CHILD = "GRAPHJIT_EINSUM_BENCH_CHILD"

if __name__ == "__main__" and not os.environ.get(_CHILD):
    sys.path[:0] = [str(HERE)]
    import run  # noqa: E402  (its thread settings; it imports numpy, so this process only re-executes)
    env = run.bench_env("1 thread")
    env[_CHILD] = "1"
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

import numpy as np  # noqa: E402

import graphjit as gj  # noqa: E402
import graphjit.tensor as gt  # noqa: E402

SUBSCRIPTS = "bij,bjk->bik"


def median_ms(fn: Callable[[], Any], repeat: int, timer: Callable[[], float]) -> float:
    """The median over repeats of one call's time (each repeat long enough to be timed), in ms."""
    fn()
    number = max(1, int(0.05 / max(min(timeit.repeat(fn, number=1, repeat=3)), 1e-6)))
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat, timer=timer)) / number * 1e3


def implementations(a: np.ndarray, b: np.ndarray) -> Dict[str, Callable[[], Any]]:
    """name -> a call computing the batched product of a and b."""
    x, y = gt.dtensor3("x"), gt.dtensor3("y")
    f = gj.function([x, y], gt.einsum(SUBSCRIPTS, x, y), mode="FAST_RUN")
    assert f.native.fallback_nodes == [], f.native.fallback_nodes
    g = gj.function([x, y], gt.matmul(x, y), mode="FAST_RUN")
    impls = {"numpy.matmul": lambda: np.matmul(a, b),
             "graphjit einsum": lambda: f(a, b),
             "graphjit matmul": lambda: g(a, b),
             "numpy.einsum": lambda: np.einsum(SUBSCRIPTS, a, b),
             "numpy.einsum(optimize=True)": lambda: np.einsum(SUBSCRIPTS, a, b, optimize=True)}
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        ja, jb = jax.device_put(a), jax.device_put(b)
        jf = jax.jit(lambda p, q: jnp.einsum(SUBSCRIPTS, p, q))
        impls["jax.jit(einsum)"] = lambda: jf(ja, jb).block_until_ready()
    except ImportError:
        pass
    return impls


def main() -> None:
    """Print one row per implementation: median ms and the ratio to numpy.matmul."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the process's CPU time, which a busy machine inflates far less")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a = rng.normal(size=(args.batch, args.n, args.n))
    b = rng.normal(size=(args.batch, args.n, args.n))
    want = np.matmul(a, b)
    impls = implementations(a, b)
    for name, fn in impls.items():
        if not np.allclose(np.asarray(fn()), want):
            raise AssertionError(f"{name} disagrees with numpy.matmul")
    print(f"einsum({SUBSCRIPTS!r}) at {args.batch} x {args.n} x {args.n} float64, one thread "
          f"(affinity {sorted(os.sched_getaffinity(0))}, {args.clock} clock, load {os.getloadavg()[0]:.1f})\n")
    print("| implementation | median ms | / numpy.matmul |\n| --- | --- | --- |")
    base = None
    for name, fn in impls.items():
        t = median_ms(fn, args.repeat, time.process_time if args.clock == "cpu" else time.perf_counter)
        base = t if base is None else base
        print(f"| {name} | {t:.3f} | {t / base:.3f} |")


if __name__ == "__main__":
    main()
