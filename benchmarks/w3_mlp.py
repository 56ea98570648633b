"""W3: one SGD training step of an MLP 784-256-10 (tanh, softmax cross-entropy), batch 256, f64 and f32."""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np

import peers
from common import Case, Impl

BATCH, N_IN, N_HID, N_OUT, LR = 256, 784, 256, 10, 0.01
Params = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def data(dtype: str) -> tuple[np.ndarray, np.ndarray, Params]:
    """Inputs X, one-hot targets Y and initial parameters (W1, b1, W2, b2), fixed seed."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((BATCH, N_IN)).astype(dtype)
    Y = np.eye(N_OUT, dtype=dtype)[rng.integers(0, N_OUT, BATCH)]
    W1 = (rng.standard_normal((N_IN, N_HID)) * 0.05).astype(dtype)
    W2 = (rng.standard_normal((N_HID, N_OUT)) * 0.05).astype(dtype)
    b1, b2 = np.zeros(N_HID, dtype), np.zeros(N_OUT, dtype)
    return X, Y, (W1, b1, W2, b2)


def numpy_step(X: np.ndarray, Y: np.ndarray, params: Params) -> np.ndarray:
    """Forward, hand-written backprop, SGD update of `params` in place; returns the loss before the update."""
    W1, b1, W2, b2 = params
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -(Y * logp).sum(axis=1).mean()
    dz = (np.exp(logp) - Y) / X.shape[0]
    dh = (dz @ W2.T) * (1 - h * h)
    grads = (X.T @ dh, dh.sum(axis=0), h.T @ dz, dz.sum(axis=0))
    for p, g in zip(params, grads):
        p -= LR * g
    return loss


def reference(X: np.ndarray, Y: np.ndarray, params: Params) -> tuple:
    """(loss, W1', b1', W2', b2') after one step from copies of `params`."""
    ps = tuple(p.copy() for p in params)
    return (numpy_step(X, Y, ps), *ps)


def w3_numpy(X: np.ndarray, Y: np.ndarray, params: Params) -> Impl:
    """numpy with hand-written backprop, updates in place."""
    ps = tuple(p.copy() for p in params)
    return Impl(lambda: numpy_step(X, Y, ps), lambda: ps)


def w3_jax(X: np.ndarray, Y: np.ndarray, params: Params) -> Impl:
    """JAX: jit of value_and_grad plus the update; new params returned and carried by the caller."""
    j = peers.jax()
    jnp = j.numpy

    def loss_fn(ps, x, y):
        W1, b1, W2, b2 = ps
        z = jnp.tanh(x @ W1 + b1) @ W2 + b2
        return -(y * j.nn.log_softmax(z, axis=1)).sum(axis=1).mean()

    @j.jit
    def step(ps, x, y):
        loss, grads = j.value_and_grad(loss_fn)(ps, x, y)
        return loss, tuple(p - LR * g for p, g in zip(ps, grads))

    x, y = peers.jax_put(X, Y)
    state = {"ps": tuple(peers.jax_put(*params))}

    def run() -> Any:
        loss, state["ps"] = step(state["ps"], x, y)
        return loss.block_until_ready()

    return Impl(run, lambda: state["ps"])


def w3_theano_like(name: str, X: np.ndarray, Y: np.ndarray, params: Params) -> Impl:
    """graphjit or PyTensor: shared parameters, gradients by grad(), SGD as function updates."""
    lib = peers.theano_like(name)
    T, dtype = lib.T, str(X.dtype)
    x, y = peers.symbol(lib, "matrix", "x", dtype), peers.symbol(lib, "matrix", "y", dtype)
    shared = [lib.shared(p.copy(), name=n) for p, n in zip(params, ("W1", "b1", "W2", "b2"))]
    W1, b1, W2, b2 = shared
    z = T.dot(T.tanh(T.dot(x, W1) + b1), W2) + b2
    z = z - z.max(axis=1, keepdims=True)
    logp = z - T.log(T.exp(z).sum(axis=1, keepdims=True))
    loss = -(y * logp).sum(axis=1).mean()
    lr = np.asarray(LR, dtype=dtype)
    updates = [(p, p - lr * g) for p, g in zip(shared, lib.grad(loss, shared))]
    f = lib.function([x, y], loss, updates=updates)
    return Impl(lambda: f(X, Y), lambda: tuple(p.get_value(borrow=True) for p in shared))


BUILDERS: dict[str, Callable[..., Impl]] = {
    "numpy": w3_numpy,
    "pytensor": partial(w3_theano_like, "pytensor"),
    "pytensor-c": partial(w3_theano_like, "pytensor-c"),
    "jax": w3_jax,
    "graphjit": partial(w3_theano_like, "graphjit"),
}
DTYPES = {"float64": (1e-6, 1e-9), "float32": (2e-3, 1e-5)}  # dtype: (rtol, atol)


def case_names() -> list[str]:
    """The names of the cases, without building their data."""
    return [f"mlp {dtype}" for dtype in DTYPES]


def cases(quick: bool, impls: list[str]) -> list[Case]:
    """One case per dtype, with the chosen implementations."""
    out = []
    for (dtype, tol), name in zip(DTYPES.items(), case_names()):
        X, Y, params = data(dtype)
        builders = {k: partial(BUILDERS[k], X, Y, params) for k in impls}
        out.append(Case("W3", name, partial(reference, X, Y, params), builders, *tol))
    return out
