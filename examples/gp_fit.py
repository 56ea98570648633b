"""Fit a Gaussian process's hyperparameters by gradient descent on its negative log marginal likelihood, and
plot the fit (graphjit.tensor.linalg: cholesky, cho_solve, solve_triangular and their gradients).

    python examples/gp_fit.py                 # writes gp_fit.png (needs matplotlib; skipped without it)
    python examples/gp_fit.py --no-plot
"""

from __future__ import annotations

import argparse
import math
from typing import Optional, Sequence

import numpy as np

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor import linalg as la


def kernel(a: gt.TensorVariable, b: gt.TensorVariable, ell: gt.TensorVariable, sf2: gt.TensorVariable):
    """The RBF kernel sf2 exp(-(a_i - b_j)^2 / (2 ell^2)) of two 1-d point sets."""
    d = a.dimshuffle(0, "x") - b.dimshuffle("x", 0)
    return sf2 * gt.exp(-0.5 * d ** 2 / ell ** 2)


def build() -> tuple:
    """Compiled (nll, gradient) of the log hyperparameters, and the posterior mean and std on new points."""
    x, y, xs, theta = gt.dvector("x"), gt.dvector("y"), gt.dvector("xs"), gt.dvector("theta")
    ell, sf2, sn2 = gt.exp(theta[0]), gt.exp(2 * theta[1]), gt.exp(2 * theta[2])
    k = kernel(x, x, ell, sf2) + sn2 * gt.eye(x.shape[0])
    l = la.cholesky(k)
    alpha = la.cho_solve((l, True), y)
    nll = 0.5 * gt.dot(y, alpha) + gt.log(la.diagonal(l)).sum() + 0.5 * x.shape[0] * math.log(2 * math.pi)
    objective = gj.function([x, y, theta], [nll, gj.grad(nll, theta)])
    ks = kernel(x, xs, ell, sf2)
    v = la.solve_triangular(l, ks, lower=True)
    mean = gt.dot(ks.T, alpha)
    std = gt.sqrt(gt.maximum(sf2 - (v ** 2).sum(axis=0), 0) + sn2)
    predict = gj.function([x, y, xs, theta], [mean, std])
    return objective, predict


def fit(x: np.ndarray, y: np.ndarray, steps: int = 150, lr: float = 0.05) -> tuple[np.ndarray, list]:
    """Gradient descent (with Adam's scaling) on the log hyperparameters; returns them and the nll history."""
    objective, _ = build()
    theta = np.log([1.0, 1.0, 0.5])
    m, v, history = np.zeros(3), np.zeros(3), []
    for t in range(1, steps + 1):
        nll, g = objective(x, y, theta)
        history.append(float(nll))
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        theta = theta - lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return theta, history


def data(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Noisy samples of sin(3x) + x/2 on [-3, 3]."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, n))
    return x, np.sin(3 * x) + 0.5 * x + 0.2 * rng.standard_normal(n)


def plot(x: np.ndarray, y: np.ndarray, theta: np.ndarray, path: str) -> Optional[str]:
    """Write the data, the posterior mean and a 2-std band to path; None (and a message) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return None
    _, predict = build()
    grid = np.linspace(-3.5, 3.5, 300)
    mean, std = predict(x, y, grid, theta)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.fill_between(grid, mean - 2 * std, mean + 2 * std, alpha=0.25, label="mean +- 2 std")
    ax.plot(grid, mean, label="posterior mean")
    ax.plot(x, y, "k.", label="data")
    ell, sf, sn = np.exp(theta)
    ax.set_title(f"GP fit: ell={ell:.2f}, sf={sf:.2f}, sn={sn:.2f}")
    ax.legend(loc="upper left")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path


def main(argv: Optional[Sequence[str]] = None) -> tuple[np.ndarray, list]:
    """Fit, print the hyperparameters and the likelihood's progress, plot unless --no-plot."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--out", default="gp_fit.png")
    p.add_argument("--no-plot", action="store_true")
    args = p.parse_args(argv)
    x, y = data()
    theta, history = fit(x, y, args.steps)
    ell, sf, sn = np.exp(theta)
    print(f"nll {history[0]:.2f} -> {history[-1]:.2f}; ell {ell:.3f}, sf {sf:.3f}, sn {sn:.3f}")
    if not args.no_plot:
        written = plot(x, y, theta, args.out)
        if written:
            print(f"wrote {written}")
    return theta, history


if __name__ == "__main__":
    main()
