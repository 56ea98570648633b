"""W4: row-wise logsumexp and softmax of a 2000x2000 float64 matrix, and the full sum of 1e7 float64."""
from __future__ import annotations

import math
from functools import cache, partial
from typing import Any, Callable

import numpy as np

import peers
from common import Case

ROWS = COLS = 2000
SUM_N = 10**7


def np_logsumexp(x: np.ndarray) -> np.ndarray:
    """Row-wise logsumexp, max-shifted, in numpy."""
    m = x.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]


def np_softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise softmax, max-shifted, in numpy."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@cache
def _numba_kernels() -> dict[str, Callable]:
    import numba

    @numba.njit
    def logsumexp(x):
        out = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            m = x[i].max()
            s = 0.0
            for j in range(x.shape[1]):
                s += math.exp(x[i, j] - m)
            out[i] = m + math.log(s)
        return out

    @numba.njit
    def softmax(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            m = x[i].max()
            s = 0.0
            for j in range(x.shape[1]):
                out[i, j] = math.exp(x[i, j] - m)
                s += out[i, j]
            out[i] /= s
        return out

    @numba.njit
    def total(x):
        return x.sum()

    return {"logsumexp": logsumexp, "softmax": softmax, "sum": total}


def w4_numpy(op: str, x: np.ndarray) -> Callable[[], Any]:
    """numpy: max, subtract, exp, sum, log (or divide) as separate passes."""
    f = {"logsumexp": np_logsumexp, "softmax": np_softmax, "sum": np.sum}[op]
    return lambda: f(x)


def w4_numba(op: str, x: np.ndarray) -> Callable[[], Any]:
    """numba @njit loops, one row at a time (x.sum() for the full sum)."""
    f = _numba_kernels()[op]
    return lambda: f(x)


def w4_jax(op: str, x: np.ndarray) -> Callable[[], Any]:
    """JAX jit of jax.nn.logsumexp / jax.nn.softmax / jnp.sum."""
    j = peers.jax()
    body = {
        "logsumexp": lambda a: j.nn.logsumexp(a, axis=1),
        "softmax": lambda a: j.nn.softmax(a, axis=1),
        "sum": lambda a: j.numpy.sum(a),
    }[op]
    f = j.jit(body)
    (a,) = peers.jax_put(x)
    return lambda: f(a).block_until_ready()


def _theano_expr(lib: peers.TheanoLike, op: str, x: Any) -> Any:
    T = lib.T
    if op == "sum":
        return x.sum()
    if op == "logsumexp":
        return T.logsumexp(x, axis=1)
    softmax = getattr(T, "softmax", None) or T.special.softmax
    return softmax(x, axis=1)


def w4_theano_like(name: str, op: str, x: np.ndarray) -> Callable[[], Any]:
    """graphjit or PyTensor: logsumexp(x, axis=1), softmax(x, axis=1), x.sum()."""
    lib = peers.theano_like(name)
    v = peers.symbol(lib, "vector" if x.ndim == 1 else "matrix", "x")
    f = lib.function([v], _theano_expr(lib, op, v))
    return lambda: f(x)


BUILDERS: dict[str, Callable[..., Callable]] = {
    "numpy": w4_numpy,
    "numba": w4_numba,
    "pytensor": partial(w4_theano_like, "pytensor"),
    "pytensor-c": partial(w4_theano_like, "pytensor-c"),
    "jax": w4_jax,
    "graphjit": partial(w4_theano_like, "graphjit"),
}
OPS = {"logsumexp": np_logsumexp, "softmax": np_softmax, "sum": np.sum}


def case_names() -> list[str]:
    """The names of the cases, without building their data."""
    return [f"{op} {ROWS}x{COLS}" for op in ("logsumexp", "softmax")] + [f"sum 1e{round(math.log10(SUM_N))}"]


def cases(quick: bool, impls: list[str]) -> list[Case]:
    """logsumexp and softmax on a 2000x2000 matrix, sum of 1e7, with the chosen implementations."""
    rng = np.random.default_rng(4)
    mat, vec = rng.standard_normal((ROWS, COLS)), rng.standard_normal(SUM_N)
    out = []
    for (op, ref), name in zip(OPS.items(), case_names()):
        x = vec if op == "sum" else mat
        builders = {k: partial(BUILDERS[k], op, x) for k in impls}
        out.append(Case("W4", name, partial(ref, x), builders))
    return out
