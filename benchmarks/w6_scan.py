"""W6: loops by scan. An RNN h_t = tanh(W h_{t-1} + x_t), H = 32, T = 1000, forward (every h_t) and forward plus
the BPTT gradient of sum(h) with respect to W; a scalar recurrence of the same form, H = 1, T = 20,000."""
from __future__ import annotations

from functools import cache, partial
from typing import Any, Callable

import numpy as np

import peers
from common import Case

H, T = 32, 1000
T1 = 20000


def np_rnn(W: np.ndarray, X: np.ndarray, h0: np.ndarray) -> np.ndarray:
    """Every state of the RNN, in a Python loop."""
    out, h = np.empty_like(X), h0
    for t in range(len(X)):
        h = np.tanh(W @ h + X[t])
        out[t] = h
    return out


def np_bptt(W: np.ndarray, X: np.ndarray, h0: np.ndarray) -> np.ndarray:
    """d sum(h) / dW by backpropagation through time."""
    hs = np_rnn(W, X, h0)
    g, dh = np.zeros_like(W), np.zeros_like(h0)
    for t in range(len(X) - 1, -1, -1):
        d = (1.0 + dh) * (1.0 - hs[t] ** 2)
        prev = hs[t - 1] if t else h0
        g += np.outer(d, prev)
        dh = W.T @ d
    return g


def np_scalar(w: np.ndarray, x: np.ndarray, s0: np.ndarray) -> np.ndarray:
    """The scalar recurrence s_t = tanh(w s_{t-1} + x_t), every state."""
    out, s, wv = np.empty_like(x), float(s0), float(w)
    for t in range(len(x)):
        s = np.tanh(wv * s + x[t])
        out[t] = s
    return out


@cache
def _numba_kernels() -> dict[str, Callable]:
    import math

    import numba

    @numba.njit
    def rnn(W, X, h0):
        out = np.empty_like(X)
        h = h0.copy()
        for t in range(X.shape[0]):
            for i in range(W.shape[0]):
                acc = X[t, i]
                for j in range(W.shape[1]):
                    acc += W[i, j] * h[j]
                out[t, i] = math.tanh(acc)
            h[:] = out[t]
        return out

    @numba.njit
    def bptt(W, X, h0):
        hs = rnn(W, X, h0)
        n = W.shape[0]
        g = np.zeros_like(W)
        dh = np.zeros(n)
        d = np.empty(n)
        for t in range(X.shape[0] - 1, -1, -1):
            for i in range(n):
                d[i] = (1.0 + dh[i]) * (1.0 - hs[t, i] ** 2)
            prev = hs[t - 1] if t > 0 else h0
            for i in range(n):
                for j in range(n):
                    g[i, j] += d[i] * prev[j]
            for j in range(n):
                acc = 0.0
                for i in range(n):
                    acc += W[i, j] * d[i]
                dh[j] = acc
        return g

    @numba.njit
    def scalar(w, x, s0):
        out = np.empty_like(x)
        s, wv = s0[()], w[()]
        for t in range(x.shape[0]):
            s = math.tanh(wv * s + x[t])
            out[t] = s
        return out

    return {"fwd": rnn, "bptt": bptt, "scalar": scalar}


def w6_numpy(kind: str, *args: np.ndarray) -> Callable[[], Any]:
    """A Python loop over numpy operations (BPTT written by hand)."""
    f = {"fwd": np_rnn, "bptt": np_bptt, "scalar": np_scalar}[kind]
    return lambda: f(*args)


def w6_numba(kind: str, *args: np.ndarray) -> Callable[[], Any]:
    """numba @njit loops (BPTT written by hand)."""
    f = _numba_kernels()[kind]
    return lambda: f(*args)


def w6_jax(kind: str, *args: np.ndarray) -> Callable[[], Any]:
    """jax.lax.scan under jit; the gradient by jax.grad."""
    j = peers.jax()
    jnp, lax = j.numpy, j.lax

    def run(W, X, h0):
        def step(h, x):
            h = jnp.tanh(W @ h + x) if kind != "scalar" else jnp.tanh(W * h + x)
            return h, h
        return lax.scan(step, h0, X)[1]

    body = j.grad(lambda W, X, h0: jnp.sum(run(W, X, h0))) if kind == "bptt" else run
    f = j.jit(body)
    dev = peers.jax_put(*args)
    return lambda: f(*dev).block_until_ready()


def w6_theano_like(name: str, kind: str, *args: np.ndarray) -> Callable[[], Any]:
    """graphjit or PyTensor: scan(tanh(dot(W, h) + x_t)); the gradient by grad (a backward scan)."""
    lib = peers.theano_like(name)
    T_ = lib.T
    if kind == "scalar":
        W, X, h0 = T_.dscalar("w"), T_.dvector("x"), T_.dscalar("s0")
        step = lambda x, h, w: T_.tanh(w * h + x)  # noqa: E731
    else:
        W, X, h0 = T_.dmatrix("W"), T_.dmatrix("X"), T_.dvector("h0")
        step = lambda x, h, w: T_.tanh(T_.dot(w, h) + x)  # noqa: E731
    hs, _ = lib.lib.scan(step, sequences=X, outputs_info=h0, non_sequences=W)
    out = lib.grad(hs.sum(), W) if kind == "bptt" else hs
    f = lib.function([W, X, h0], out)
    return lambda: f(*args)


BUILDERS: dict[str, Callable[..., Callable]] = {
    "numpy": w6_numpy,
    "numba": w6_numba,
    "pytensor": partial(w6_theano_like, "pytensor"),
    "pytensor-c": partial(w6_theano_like, "pytensor-c"),
    "jax": w6_jax,
    "graphjit": partial(w6_theano_like, "graphjit"),
}


def case_names() -> list[str]:
    """The names of the cases, without building their data."""
    return [f"rnn forward H={H} T={T}", f"rnn forward+BPTT H={H} T={T}", f"scalar H=1 T={T1}"]


def cases(quick: bool, impls: list[str]) -> list[Case]:
    """The three cases with the chosen implementations (per-step figures: median / T)."""
    rng = np.random.default_rng(6)
    W, X, h0 = rng.standard_normal((H, H)) / np.sqrt(H), rng.standard_normal((T, H)), np.zeros(H)
    w, x, s0 = np.array(0.5), rng.standard_normal(T1), np.array(0.0)
    data = {"fwd": (W, X, h0), "bptt": (W, X, h0), "scalar": (w, x, s0)}
    refs = {"fwd": np_rnn, "bptt": np_bptt, "scalar": np_scalar}
    out = []
    for kind, name in zip(("fwd", "bptt", "scalar"), case_names()):
        args = data[kind]
        builders = {k: partial(BUILDERS[k], kind, *args) for k in impls}
        out.append(Case("W6", name, partial(refs[kind], *args), builders, rtol=1e-6, atol=1e-8))
    return out
