"""Tracking down a NaN in training, then profiling the fixed function (docs/debugging.md).

A logistic regression standardises its inputs inside the graph, (x - mean) / std: a constant feature column
gives 0 / 0 = NaN, which flows into the cost, the gradient and the weights.  NanGuardMode names the node that
produced it (inside the fused loop) and the line that built it; the fix adds an epsilon.
Run: python examples/debugging_nan.py
"""

from __future__ import annotations

import numpy as np

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile import NanGuardError, NanGuardMode


def build(eps: float, mode: object, profile: bool = False) -> tuple:
    """The training function (cost; updates w) and its shared weights."""
    x, y = gt.dmatrix("x"), gt.dvector("y")
    w = gj.shared(np.zeros(3), name="w")
    centred = x - x.mean(axis=0)
    std = gt.sqrt((centred ** 2).mean(axis=0))
    xs = centred / (std + eps)                 # eps = 0: NaN for a constant column
    z = gt.dot(xs, w)
    cost = (gt.softplus(-z) * y + gt.softplus(z) * (1 - y)).mean()
    train = gj.function([x, y], cost, updates=[(w, w - 0.5 * gj.grad(cost, w))], mode=mode, profile=profile,
                        name="train")
    return train, w


def data() -> tuple:
    """A small data set whose last feature is constant."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 3))
    x[:, 2] = 1.0
    return x, (x @ np.array([1.0, -2.0, 0.0]) > 0).astype(float)


def main() -> str:
    """Find the NaN with NanGuardMode, then train the fixed version with profiling; returns the report."""
    x, y = data()
    train, _ = build(eps=0.0, mode=NanGuardMode())
    report = []
    try:
        train(x, y)
        report.append("no NaN found")
    except NanGuardError as e:
        report.append(str(e))
    fixed, w = build(eps=1e-8, mode="FAST_RUN", profile=True)
    for _ in range(20):
        cost = fixed(x, y)
    report.append(f"fixed: cost after 20 steps {float(cost):.4f}, finite weights: {bool(np.isfinite(w.get_value()).all())}")
    report.append(fixed.profile.summary_text(n_apply=5))
    return "\n".join(report)


if __name__ == "__main__":
    print(main())
