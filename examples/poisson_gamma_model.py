"""Poisson, Gamma and Beta log-densities written with gammaln/betaln/xlogy, fitted by gradient ascent.

The three log-densities are the textbook formulas; graphjit differentiates them (digamma appears in the
gradient of gammaln and betaln) and compiles value and gradient into one native function.

    python examples/poisson_gamma_model.py
"""

from __future__ import annotations

import argparse
from typing import Optional, Sequence

import numpy as np

import graphjit as gj
import graphjit.tensor as gt


def poisson_logpmf(k: gt.TensorVariable, rate: gt.TensorVariable) -> gt.TensorVariable:
    """log Poisson(k | rate) = k log(rate) - rate - log(k!)  (xlogy: 0 log 0 is 0)."""
    return gt.xlogy(k, rate) - rate - gt.gammaln(k + 1)


def gamma_logpdf(x: gt.TensorVariable, shape: gt.TensorVariable, rate: gt.TensorVariable) -> gt.TensorVariable:
    """log Gamma(x | shape, rate) = shape log(rate) - gammaln(shape) + (shape - 1) log(x) - rate x."""
    return gt.xlogy(shape, rate) - gt.gammaln(shape) + gt.xlogy(shape - 1, x) - rate * x


def beta_logpdf(p: gt.TensorVariable, a: gt.TensorVariable, b: gt.TensorVariable) -> gt.TensorVariable:
    """log Beta(p | a, b) = (a - 1) log(p) + (b - 1) log(1 - p) - betaln(a, b)."""
    return gt.xlogy(a - 1, p) + gt.xlog1py(b - 1, -p) - gt.betaln(a, b)


def fit(logdensity, data: np.ndarray, start: Sequence[float], steps: int, lr: float, mode: Optional[str]):
    """Maximise the mean log-density over log-parameters by gradient ascent; (parameters, final mean)."""
    x = gt.dvector("x")
    theta = gt.dvector("log_params")
    params = [gt.exp(theta[i]) for i in range(len(start))]
    objective = logdensity(x, *params).mean()
    step = gj.function([x, theta], [objective, gj.grad(objective, theta)], mode=mode)
    current = np.log(np.asarray(start, dtype=float))
    for _ in range(steps):
        value, slope = step(data, current)
        current = current + lr * slope
    return np.exp(current), float(step(data, current)[0])


def main(argv: Optional[Sequence[str]] = None) -> dict:
    """Fit each model to data drawn from known parameters; print and return the fits."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--mode", default=None, help="graphjit mode (default: FAST_RUN)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    counts = rng.poisson(3.5, 2000).astype(float)
    waits = rng.gamma(2.0, 1 / 1.5, 2000)            # shape 2, rate 1.5
    shares = rng.beta(2.0, 5.0, 2000)
    fits = {
        "poisson": (fit(poisson_logpmf, counts, [1.0], args.steps, 0.1, args.mode), [3.5]),
        "gamma": (fit(gamma_logpdf, waits, [1.0, 1.0], args.steps, 0.2, args.mode), [2.0, 1.5]),
        "beta": (fit(beta_logpdf, shares, [1.0, 1.0], args.steps, 0.2, args.mode), [2.0, 5.0]),
    }
    for name, ((params, mean), truth) in fits.items():
        print(f"{name:8s} fitted {np.round(params, 3)} (drawn with {truth}), mean log-density {mean:.4f}")
    return {name: params for name, ((params, _), _) in fits.items()}


if __name__ == "__main__":
    main()
