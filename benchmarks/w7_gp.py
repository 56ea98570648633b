"""W7: a Gaussian process's negative log marginal likelihood and its gradient with respect to the three log
hyperparameters (length scale, signal and noise standard deviations); RBF kernel on 2-d inputs, float64,
n = 200 and n = 1000.

    K = sf^2 exp(-|x_i - x_j|^2 / (2 ell^2)) + sn^2 I,  L = cholesky(K),  alpha = K^-1 y
    nll = y . alpha / 2 + sum(log diag L) + n log(2 pi) / 2

Every implementation computes the same function from (X, y, theta) in each call: JAX (value_and_grad, jit),
PyTensor and graphjit (grad of the same graph), numpy/scipy with the gradient written by hand
(K^-1 from the factor: grad_k = tr((K^-1 - alpha alpha^T) dK/dtheta_k) / 2).
"""
from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable

import numpy as np

import peers
from common import Case

SIZES = (200, 1000)
THETA = np.log([0.7, 1.3, 0.3])        # length scale, signal std, noise std


def data(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, theta): n points in the unit square, a smooth function plus noise, the log hyperparameters."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (n, 2))
    y = np.sin(2 * x[:, 0]) * np.cos(x[:, 1]) + 0.3 * rng.standard_normal(n)
    return x, y, THETA.copy()


def nll_numpy(x: np.ndarray, y: np.ndarray, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """numpy/scipy: value and hand-written gradient (the reference)."""
    from scipy.linalg import cho_factor, cho_solve
    ell, sf2, sn2 = math.exp(theta[0]), math.exp(2 * theta[1]), math.exp(2 * theta[2])
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    kr = sf2 * np.exp(-0.5 * d2 / ell ** 2)
    k = kr + sn2 * np.eye(len(y))
    c = cho_factor(k, lower=True, check_finite=False)
    alpha = cho_solve(c, y, check_finite=False)
    nll = 0.5 * y @ alpha + np.log(np.diag(c[0])).sum() + 0.5 * len(y) * math.log(2 * math.pi)
    w = cho_solve(c, np.eye(len(y)), check_finite=False) - np.outer(alpha, alpha)
    grad = 0.5 * np.array([(w * kr * d2).sum() / ell ** 2, 2 * (w * kr).sum(), 2 * sn2 * np.trace(w)])
    return nll, grad


def w7_numpy(x: np.ndarray, y: np.ndarray, theta: np.ndarray) -> Callable[[], Any]:
    """numpy/scipy with the gradient by hand."""
    return lambda: nll_numpy(x, y, theta)


def w7_jax(x: np.ndarray, y: np.ndarray, theta: np.ndarray) -> Callable[[], Any]:
    """JAX: jit(value_and_grad) of the same function (jax.scipy.linalg cholesky / cho_solve)."""
    j = peers.jax()
    jnp, jsl = j.numpy, j.scipy.linalg

    def nll(t, xx, yy):
        ell, sf2, sn2 = jnp.exp(t[0]), jnp.exp(2 * t[1]), jnp.exp(2 * t[2])
        d2 = ((xx[:, None, :] - xx[None, :, :]) ** 2).sum(-1)
        k = sf2 * jnp.exp(-0.5 * d2 / ell ** 2) + sn2 * jnp.eye(yy.shape[0])
        c = jsl.cholesky(k, lower=True)
        alpha = jsl.cho_solve((c, True), yy)
        return 0.5 * yy @ alpha + jnp.log(jnp.diag(c)).sum() + 0.5 * yy.shape[0] * math.log(2 * math.pi)

    f = j.jit(j.value_and_grad(nll))
    t, xx, yy = peers.jax_put(theta, x, y)

    def run():
        v, g = f(t, xx, yy)
        return v.block_until_ready(), g.block_until_ready()
    return run


def _graph(lib: peers.TheanoLike, la: Any, xs: Any, ys: Any, ts: Any, n_eye: Any) -> tuple:
    T = lib.T
    ell, sf2, sn2 = T.exp(ts[0]), T.exp(2 * ts[1]), T.exp(2 * ts[2])
    d2 = ((xs.dimshuffle(0, "x", 1) - xs.dimshuffle("x", 0, 1)) ** 2).sum(axis=-1)
    k = sf2 * T.exp(-0.5 * d2 / ell ** 2) + sn2 * n_eye
    c = la.cholesky(k, lower=True)
    alpha = la.cho_solve((c, True), ys)
    diag = la.diagonal(c) if hasattr(la, "diagonal") else T.diagonal(c)
    nll = 0.5 * T.dot(ys, alpha) + T.log(diag).sum() + 0.5 * ys.shape[0] * math.log(2 * math.pi)
    return nll, lib.grad(nll, ts)


def w7_theano_like(name: str, x: np.ndarray, y: np.ndarray, theta: np.ndarray) -> Callable[[], Any]:
    """graphjit or PyTensor: grad of the same graph (cholesky, cho_solve, log of the diagonal)."""
    lib = peers.theano_like(name)
    if name == "graphjit":
        from graphjit.tensor import linalg as la
    else:
        import pytensor.tensor.linalg as la
    xs, ys, ts = peers.symbol(lib, "matrix", "X"), peers.symbol(lib, "vector", "y"), peers.symbol(lib, "vector", "t")
    n_eye = lib.T.eye(xs.shape[0])
    nll, g = _graph(lib, la, xs, ys, ts, n_eye)
    f = lib.function([xs, ys, ts], [nll, g])
    return lambda: f(x, y, theta)


BUILDERS: dict[str, Callable[..., Callable]] = {
    "numpy": w7_numpy,
    "pytensor": partial(w7_theano_like, "pytensor"),
    "pytensor-c": partial(w7_theano_like, "pytensor-c"),
    "jax": w7_jax,
    "graphjit": partial(w7_theano_like, "graphjit"),
}


def case_names() -> list[str]:
    """The names of the cases, without building their data."""
    return [f"gp nll+grad n={n}" for n in SIZES]


def cases(quick: bool, impls: list[str]) -> list[Case]:
    """Value and gradient at n = 200 and n = 1000."""
    out = []
    for n, name in zip(SIZES, case_names()):
        x, y, theta = data(n)
        builders = {k: partial(BUILDERS[k], x, y, theta) for k in impls}
        out.append(Case("W7", name, partial(nll_numpy, x, y, theta), builders, rtol=1e-7, atol=1e-8))
    return out
