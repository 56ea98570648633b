"""W1: the fused elementwise expression exp(-x*x)*sin(y) + x*y/(1+z*z), float64, sizes 1e3, 1e5, 1e7."""
from __future__ import annotations

import math
from functools import cache, partial
from typing import Callable

import numpy as np

import peers
from common import Case

SIZES = (10**3, 10**5, 10**7)
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def data(n: int) -> Arrays:
    """Three float64 vectors of length n, fixed seed."""
    rng = np.random.default_rng(1)
    return tuple(rng.standard_normal(n) for _ in range(3))


def reference(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The expression in plain numpy (also the numpy implementation)."""
    return np.exp(-x * x) * np.sin(y) + x * y / (1 + z * z)


def w1_numpy(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable[[], np.ndarray]:
    """numpy: one temporary per operation."""
    return lambda: reference(x, y, z)


def w1_numexpr(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable[[], np.ndarray]:
    """numexpr: blocked, multithreaded evaluation of the string expression."""
    import numexpr as ne

    expr = "exp(-x*x)*sin(y) + x*y/(1+z*z)"
    ne.evaluate(expr, local_dict={"x": x, "y": y, "z": z})
    return lambda: ne.evaluate(expr, local_dict={"x": x, "y": y, "z": z})


@cache
def _njit_loop(parallel: bool) -> Callable:
    import numba

    @numba.njit(fastmath=False, parallel=parallel)
    def kernel(x, y, z):
        out = np.empty_like(x)
        for i in numba.prange(x.shape[0]):
            out[i] = math.exp(-x[i] * x[i]) * math.sin(y[i]) + x[i] * y[i] / (1.0 + z[i] * z[i])
        return out

    return kernel


def w1_numba_njit(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable[[], np.ndarray]:
    """numba @njit explicit loop (serial)."""
    kernel = _njit_loop(parallel=False)
    return lambda: kernel(x, y, z)


def w1_numba_parallel(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable[[], np.ndarray]:
    """numba @njit(parallel=True) with prange."""
    kernel = _njit_loop(parallel=True)
    return lambda: kernel(x, y, z)


def w1_numba_vectorize(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable[[], np.ndarray]:
    """numba @vectorize: a compiled ufunc."""
    ufunc = _vectorized()
    return lambda: ufunc(x, y, z)


@cache
def _vectorized() -> Callable:
    import numba

    @numba.vectorize(["float64(float64, float64, float64)"])
    def ufunc(a, b, c):
        return math.exp(-a * a) * math.sin(b) + a * b / (1.0 + c * c)

    return ufunc


def w1_jax(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable:
    """JAX jit on CPU, inputs already on the device, block_until_ready."""
    j = peers.jax()
    jnp = j.numpy
    f = j.jit(lambda a, b, c: jnp.exp(-a * a) * jnp.sin(b) + a * b / (1 + c * c))
    xs = peers.jax_put(x, y, z)
    return lambda: f(*xs).block_until_ready()


def w1_theano_like(name: str, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable[[], np.ndarray]:
    """graphjit or PyTensor (by name): the same Theano-style graph, compiled by the library."""
    lib = peers.theano_like(name)
    T = lib.T
    a, b, c = (peers.symbol(lib, "vector", s) for s in "xyz")
    f = lib.function([a, b, c], T.exp(-a * a) * T.sin(b) + a * b / (1 + c * c))
    return lambda: f(x, y, z)


BUILDERS: dict[str, Callable[..., Callable]] = {
    "numpy": w1_numpy,
    "numexpr": w1_numexpr,
    "numba-njit": w1_numba_njit,
    "numba-vectorize": w1_numba_vectorize,
    "numba-parallel": w1_numba_parallel,
    "pytensor": partial(w1_theano_like, "pytensor"),
    "pytensor-c": partial(w1_theano_like, "pytensor-c"),
    "jax": w1_jax,
    "graphjit": partial(w1_theano_like, "graphjit"),
}


def case_names() -> list[str]:
    """The names of the cases, without building their data."""
    return [f"n=1e{round(math.log10(n))}" for n in SIZES]


def cases(quick: bool, impls: list[str]) -> list[Case]:
    """One case per size, with the chosen implementations."""
    out = []
    for n, name in zip(SIZES, case_names()):
        arrays = data(n)
        builders = {k: partial(BUILDERS[k], *arrays) for k in impls}
        out.append(Case("W1", name, partial(reference, *arrays), builders))
    return out
