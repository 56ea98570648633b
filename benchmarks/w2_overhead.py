"""W2: call overhead, `x + y` on float64 arrays of size 1 (each library's fast path from Python)."""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

import peers
from common import Case


def w2_numpy(x: np.ndarray, y: np.ndarray) -> Callable[[], np.ndarray]:
    """numpy.add, a fresh output each call."""
    add = np.add
    return lambda: add(x, y)


def w2_numba(x: np.ndarray, y: np.ndarray) -> Callable[[], np.ndarray]:
    """numba @njit through its dispatcher."""
    import numba

    @numba.njit
    def add(a, b):
        return a + b

    add(x, y)
    return lambda: add(x, y)


def w2_jax(x: np.ndarray, y: np.ndarray) -> Callable:
    """JAX jit, inputs already on the device, block_until_ready."""
    j = peers.jax()
    f = j.jit(lambda a, b: a + b)
    a, b = peers.jax_put(x, y)
    return lambda: f(a, b).block_until_ready()


def w2_theano_like(name: str, x: np.ndarray, y: np.ndarray) -> Callable[[], np.ndarray]:
    """graphjit (full input checking) or PyTensor (trust_input=True, its fastest path)."""
    lib = peers.theano_like(name)
    a, b = peers.symbol(lib, "vector", "x"), peers.symbol(lib, "vector", "y")
    f = lib.function([a, b], a + b, **({} if name == "graphjit" else {"trust_input": True}))
    return lambda: f(x, y)


def cases(quick: bool) -> list[Case]:
    """A single case: size-1 vectors."""
    x, y = np.array([1.5]), np.array([2.25])
    impls = {
        "numpy": partial(w2_numpy, x, y),
        "numba": partial(w2_numba, x, y),
        "pytensor": partial(w2_theano_like, "pytensor", x, y),
        "pytensor-c": partial(w2_theano_like, "pytensor-c", x, y),
        "jax": partial(w2_jax, x, y),
        "graphjit": partial(w2_theano_like, "graphjit", x, y),
    }
    return [Case("W2", "x+y size 1", lambda: x + y, impls)]
