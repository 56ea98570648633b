"""W8: a sampler's inner loop, the eight-schools log-density and its gradient in one call, on a length-10 vector.

Non-centred eight schools: theta = (mu, log_tau, eta[8]); mu ~ N(0, 5), tau = exp(log_tau) ~ half-Cauchy(0, 5)
(with the Jacobian log_tau), eta ~ N(0, 1), y_j ~ N(mu + tau eta_j, sigma_j) with the known sigmas (constant
terms dropped).  A NUTS sampler evaluates this at every leapfrog step: ~100 flops, so the time is call overhead.
Every implementation returns (value, gradient) from one call; the numba function written by hand is the floor.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np

import peers
from common import Case, Impl

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
N = 10
THETA = np.array([1.5, 0.7, -0.3, 0.9, 0.1, -1.2, 0.4, 0.0, 1.1, -0.6])


def reference(theta: np.ndarray = THETA) -> tuple[np.ndarray, np.ndarray]:
    """(log density, gradient) in numpy, the gradient written by hand."""
    mu, log_tau, eta = theta[0], theta[1], theta[2:]
    tau = np.exp(log_tau)
    r = (Y - (mu + tau * eta)) / SIGMA
    value = -0.5 * (mu / 5) ** 2 - np.log1p((tau / 5) ** 2) + log_tau - 0.5 * eta @ eta - 0.5 * r @ r
    rs = r / SIGMA
    grad = np.empty(N)
    grad[0] = -mu / 25 + rs.sum()
    grad[1] = -2 * (tau / 5) ** 2 / (1 + (tau / 5) ** 2) + 1 + tau * (rs @ eta)
    grad[2:] = -eta + tau * rs
    return np.asarray(value), grad


def model(T: Any, theta: Any) -> Any:
    """The log density in a Theano-style tensor module T (graphjit.tensor, pytensor.tensor)."""
    mu, log_tau, eta = theta[0], theta[1], theta[2:]
    tau = T.exp(log_tau)
    lp = -0.5 * (mu / 5.0) ** 2 - T.log1p((tau / 5.0) ** 2) + log_tau
    lp = lp - 0.5 * T.sum(eta ** 2)
    return lp - 0.5 * T.sum(((Y - (mu + tau * eta)) / SIGMA) ** 2)


def _bare(f: Callable, theta: Any, block: bool = False) -> Impl:
    stmt = "jax.block_until_ready(f(x))" if block else "f(x)"
    env: dict[str, Any] = {"f": f, "x": theta}
    if block:
        env["jax"] = peers.jax()
        return Impl(lambda: env["jax"].block_until_ready(f(theta)), stmt=(stmt, env))
    return Impl(lambda: f(theta), stmt=(stmt, env))


def w8_theano_like(name: str) -> Impl:
    """graphjit (every input checked) or PyTensor (trust_input=True); theta declared with static length 10."""
    lib = peers.theano_like(name)
    if name == "graphjit":
        theta = lib.T.TensorType("float64", (N,))("theta")
        kw: dict[str, Any] = {}
    else:
        theta = lib.T.tensor("theta", dtype="float64", shape=(N,))
        kw = {"trust_input": True}
    lp = model(lib.T, theta)
    f = lib.function([theta], [lp, lib.grad(lp, theta)], **kw)
    return _bare(f, THETA.copy())


def w8_jax() -> Impl:
    """JAX jit(value_and_grad), theta already on the device."""
    j = peers.jax()
    jnp = j.numpy
    y, s = jnp.asarray(Y), jnp.asarray(SIGMA)

    def logp(theta):
        mu, log_tau, eta = theta[0], theta[1], theta[2:]
        tau = jnp.exp(log_tau)
        r = (y - (mu + tau * eta)) / s
        return -0.5 * (mu / 5) ** 2 - jnp.log1p((tau / 5) ** 2) + log_tau - 0.5 * eta @ eta - 0.5 * r @ r

    f = j.jit(j.value_and_grad(logp))
    (x,) = peers.jax_put(THETA)
    return _bare(f, x, block=True)


def w8_numba() -> Impl:
    """The floor: numba @njit of the value and the gradient written by hand (one loop), through its dispatcher."""
    import numba

    @numba.njit(fastmath=False)
    def value_and_grad(theta, y, sigma):
        mu, log_tau = theta[0], theta[1]
        tau = np.exp(log_tau)
        q = (tau / 5.0) ** 2
        grad = np.empty(theta.shape[0])
        value = -0.5 * (mu / 5.0) ** 2 - np.log1p(q) + log_tau
        g_mu, g_lt = -mu / 25.0, -2.0 * q / (1.0 + q) + 1.0
        for j in range(y.shape[0]):
            eta = theta[2 + j]
            r = (y[j] - (mu + tau * eta)) / sigma[j]
            rs = r / sigma[j]
            value -= 0.5 * (eta * eta + r * r)
            g_mu += rs
            g_lt += tau * rs * eta
            grad[2 + j] = -eta + tau * rs
        grad[0], grad[1] = g_mu, g_lt
        return value, grad

    theta = THETA.copy()
    value_and_grad(theta, Y, SIGMA)
    env = {"f": value_and_grad, "x": theta, "y": Y, "s": SIGMA}
    return Impl(lambda: value_and_grad(theta, Y, SIGMA), stmt=("f(x, y, s)", env))


BUILDERS: dict[str, Callable[[], Impl]] = {
    "numba": w8_numba,
    "pytensor": partial(w8_theano_like, "pytensor"),
    "pytensor-c": partial(w8_theano_like, "pytensor-c"),
    "jax": w8_jax,
    "graphjit": partial(w8_theano_like, "graphjit"),
}


def case_names() -> list[str]:
    """The names of the cases, without building their data."""
    return ["eight schools value+grad"]


def cases(quick: bool, impls: list[str]) -> list[Case]:
    """One case: (value, gradient) at a fixed theta."""
    return [Case("W8", case_names()[0], reference, {k: BUILDERS[k] for k in impls}, rtol=1e-9, atol=1e-12)]
