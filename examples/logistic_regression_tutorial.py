"""Theano's tutorial logistic regression, written as the tutorial writes it (only the import renamed).

    python examples/logistic_regression_tutorial.py [--steps 10000] [--mode FAST_RUN|FAST_COMPILE|PY]

The probability is the hand-written ``1 / (1 + exp(-dot(x, w) - b))`` and the cross-entropy uses
``log(p_1)`` and ``log(1 - p_1)``. With standard-normal weights over 784 features, |dot(x, w)|
reaches about 90, where ``1 - p_1`` rounds to 0: computed as written, the first step gives NaN
weights. The stabilize rewrites (docs/rewrites.md) turn ``p_1`` into ``sigmoid(z)``, the logs into
softplus and the gradient's ``1 - p_1`` into ``sigmoid(-z)``, in every mode; ``gj.dprint(train)``
shows the rewritten graph. The model fits the 400 random labels exactly (100% training accuracy).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Dict, Optional, Sequence

import numpy as np

import graphjit as gj
import graphjit.tensor as T


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Train; print the cost every 1000 steps and the accuracy; return the history."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10000)
    p.add_argument("--mode", default=None, help="graphjit mode (default: FAST_RUN)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    say = (lambda *a: None) if args.quiet else print

    rng = np.random.default_rng(args.seed)
    N, feats = 400, 784
    D = (rng.standard_normal((N, feats)), rng.integers(0, 2, size=N).astype("float64"))

    x = T.dmatrix("x")
    y = T.dvector("y")
    w = gj.shared(rng.standard_normal(feats), name="w")
    b = gj.shared(0.0, name="b")

    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))        # probability that target = 1
    prediction = p_1 > 0.5
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = gj.grad(cost, [w, b])

    train = gj.function([x, y], [prediction, xent], updates=[(w, w - 0.1 * gw), (b, b - 0.1 * gb)],
                        mode=args.mode)
    predict = gj.function([x], prediction, mode=args.mode)

    costs, start = [], time.perf_counter()
    for i in range(args.steps):
        _, err = train(D[0], D[1])
        costs.append(float(err.mean()))
        if not np.isfinite(costs[-1]) or not np.all(np.isfinite(w.get_value(borrow=True))):
            say(f"step {i}: non-finite cost or weights")
            break
        if i % 1000 == 0 or i == args.steps - 1:
            say(f"step {i:5d}: cross-entropy {costs[-1]:.6f}")
    per_step = (time.perf_counter() - start) / max(len(costs), 1)
    accuracy = float(np.mean(predict(D[0]) == D[1]))
    say(f"training accuracy {accuracy:.4f}; {per_step * 1e6:.0f} us per step; mode {args.mode or 'FAST_RUN'}")
    return {"cost": costs, "accuracy": accuracy, "w": w.get_value(), "b": float(b.get_value())}


if __name__ == "__main__":
    main()
