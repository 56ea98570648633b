"""sort and argsort of 1e6 float64 (random uniform, already sorted, 16 distinct values, and as 1000 rows of 1000 and
20000 rows of 50 sorted along the rows): graphjit against numpy and JAX.

Run on one core: ``taskset -c 1 python benchmarks/sort.py [--repeat 9] [--clock wall|cpu]``. Prints the median
milliseconds per call of each implementation and its ratio to numpy's (numpy's default kind, vectorised on
AVX-512/AVX2 hosts); JAX's column is left out when it is not importable. Results are checked against numpy
before timing. ``--clock cpu`` times each call in the process's CPU time, which a loaded machine inflates less
(say so when quoting).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any, Callable, Dict, Optional

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

import graphjit as gj  # noqa: E402
import graphjit.tensor as gt  # noqa: E402

N = 1_000_000


CLOCK = time.perf_counter


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    """Median time of one call in milliseconds (CLOCK), after two warm-up calls."""
    fn()
    fn()
    times = []
    for _ in range(repeat):
        start = CLOCK()
        fn()
        times.append(CLOCK() - start)
    return statistics.median(times) * 1e3


def jax_functions() -> Optional[Dict[str, Callable[[Any], Any]]]:
    """JAX's jitted sort and argsort, or None without JAX."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return {"sort": jax.jit(jnp.sort), "argsort": jax.jit(jnp.argsort), "put": jax.device_put}


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    repeat = args.repeat
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    x, m = gt.dvector("x"), gt.dmatrix("m")
    ours = {ndim: {"sort": gj.function([v], gt.sort(v)), "argsort": gj.function([v], gt.argsort(v))}
            for ndim, v in ((1, x), (2, m))}
    refs = {"sort": np.sort, "argsort": np.argsort}
    jx = jax_functions()
    rng = np.random.default_rng(0)
    inputs = {"uniform": rng.random(N), "sorted": np.sort(rng.random(N)),
              "16 values": rng.integers(0, 16, N).astype("float64"),
              "rows 1000 x 1000": rng.random((1000, 1000)), "rows 20000 x 50": rng.standard_normal((20000, 50))}
    head = "| op | input | numpy ms | graphjit ms | graphjit / numpy |"
    head += " jax ms | jax / numpy |" if jx else ""
    print(f"n = {N} float64, one call, median of {repeat} ({args.clock} clock)\n\n{head}")
    print("|" + " --- |" * (head.count("|") - 1))
    for label, a in inputs.items():
        for op in ("sort", "argsort"):
            got = ours[a.ndim][op](a)
            want = refs[op](a) if op == "sort" else np.argsort(a, kind="stable")
            assert np.array_equal(got, want), f"{op} {label}: graphjit differs from numpy"
            t_np = median_ms(lambda: refs[op](a), repeat)
            t_gj = median_ms(lambda: ours[a.ndim][op](a), repeat)
            row = f"| {op} | {label} | {t_np:.2f} | {t_gj:.2f} | {t_gj / t_np:.2f} |"
            if jx:
                dev = jx["put"](a)
                t_jx = median_ms(lambda: jx[op](dev).block_until_ready(), repeat)
                row += f" {t_jx:.2f} | {t_jx / t_np:.2f} |"
            print(row)


if __name__ == "__main__":
    main()
