"""W2: call overhead, `x + y` on float64 arrays of size 1 (each library's fast path from Python); and on float64
scalars, given as 0-d arrays and as Python floats (a sampler's or an optimiser's scalar arguments)."""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

import peers
from common import Case, Impl


def _bare(f: Callable, x: object, y: object, block: bool = False) -> Impl:
    """Time the bare statement `f(x, y)` (JAX: and wait for it), as the anchors of DESIGN.md were measured."""
    stmt = "f(x, y).block_until_ready()" if block else "f(x, y)"
    run = (lambda: f(x, y).block_until_ready()) if block else (lambda: f(x, y))
    return Impl(run, stmt=(stmt, {"f": f, "x": x, "y": y}))


def w2_numpy(x: np.ndarray, y: np.ndarray) -> Impl:
    """numpy.add, a fresh output each call."""
    return _bare(np.add, x, y)


def w2_numba(x: np.ndarray, y: np.ndarray) -> Impl:
    """numba @njit through its dispatcher."""
    import numba

    @numba.njit
    def add(a, b):
        return a + b

    add(x, y)
    return _bare(add, x, y)


def w2_jax(x: np.ndarray, y: np.ndarray) -> Impl:
    """JAX jit, inputs already on the device, block_until_ready."""
    j = peers.jax()
    f = j.jit(lambda a, b: a + b)
    a, b = peers.jax_put(x, y)
    return _bare(f, a, b, block=True)


def w2_theano_like(name: str, x: object, y: object) -> Impl:
    """graphjit (full input checking) or PyTensor (trust_input=True, its fastest path, except for Python floats,
    which it must convert); vectors for arrays of size 1, scalars for 0-d arrays and Python floats."""
    lib = peers.theano_like(name)
    kind = "vector" if np.ndim(x) else "scalar"
    a, b = peers.symbol(lib, kind, "x"), peers.symbol(lib, kind, "y")
    trust = name != "graphjit" and isinstance(x, np.ndarray)
    f = lib.function([a, b], a + b, **({"trust_input": True} if trust else {}))
    return _bare(f, x, y)


BUILDERS: dict[str, Callable[..., Callable]] = {
    "numpy": w2_numpy,
    "numba": w2_numba,
    "pytensor": partial(w2_theano_like, "pytensor"),
    "pytensor-c": partial(w2_theano_like, "pytensor-c"),
    "jax": w2_jax,
    "graphjit": partial(w2_theano_like, "graphjit"),
}


def case_names() -> list[str]:
    """The names of the cases, without building their data."""
    return ["x+y size 1", "x+y 0-d arrays", "x+y Python floats"]


def cases(quick: bool, impls: list[str]) -> list[Case]:
    """Size-1 vectors, 0-d arrays, Python floats."""
    out = []
    for name, (x, y) in zip(case_names(), [(np.array([1.5]), np.array([2.25])), (np.array(1.5), np.array(2.25)),
                                           (1.5, 2.25)]):
        builders = {k: partial(BUILDERS[k], x, y) for k in impls}
        out.append(Case("W2", name, partial(np.add, x, y), builders))
    return out
