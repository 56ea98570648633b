"""Apply a compiled graphjit Function to a chunked dask array on a local cluster of worker processes.

The Function pickles as its rewritten graph; each worker rebuilds it once (from the object cache when warm)
and calls it on every block. Run: ``python examples/dask_blocks.py`` (needs ``pip install -e .[dask]``).
"""

from __future__ import annotations

import numpy as np

import graphjit as gj
import graphjit.tensor as gt


def build_function() -> gj.compile.compiled_function.Function:
    """W1's fused expression on matrices: exp(-x*x)*sin(y) + x*y/(1+y*y)."""
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    return gj.function([x, y], gt.exp(-x * x) * gt.sin(y) + x * y / (1 + y * y))


def main(shape: tuple[int, int] = (400, 300), chunks: tuple[int, int] = (100, 150), timeout: float = 120.0) -> float:
    """Compute on a 2-process LocalCluster, check against numpy; returns the max abs error."""
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    f = build_function()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster, timeout=timeout) as client:
        xa, ya = da.from_array(a, chunks=chunks), da.from_array(b, chunks=chunks)
        result = da.map_blocks(f, xa, ya, dtype=np.float64).compute(scheduler=client)
    want = np.exp(-a * a) * np.sin(b) + a * b / (1 + b * b)
    err = float(np.max(np.abs(result - want)))
    if err > 1e-12:
        raise AssertionError(f"dask result differs from numpy by {err}")
    return err


if __name__ == "__main__":
    print(f"dask map_blocks over 2 worker processes: max abs error {main():.2e}")
