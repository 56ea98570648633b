"""Multinomial logistic regression on scikit-learn's digits: the smallest graphjit training loop.

    pip install -e .[examples]
    python examples/logistic_regression.py
"""

from __future__ import annotations

import argparse
import time
from typing import Optional, Sequence

import numpy as np

import graphjit as gj
import graphjit.tensor as gt


def main(argv: Optional[Sequence[str]] = None) -> float:
    """Train with full-batch gradient descent; print the loss, test accuracy and time per step."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--mode", default=None, help="graphjit mode (default: FAST_RUN)")
    args = p.parse_args(argv)

    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x_all, y_all = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x_all / 16.0, y_all.astype("int64"), test_size=0.25,
                                              random_state=0, stratify=y_all)

    x, y = gt.dmatrix("x"), gt.lvector("y")
    w = gj.shared(np.zeros((64, 10)), name="w")
    b = gj.shared(np.zeros(10), name="b")
    logits = gt.dot(x, w) + b
    loss = gt.crossentropy_softmax(logits, y).mean()
    gw, gb = gj.grad(loss, [w, b])
    step = gj.function([x, y], loss, updates=[(w, w - args.lr * gw), (b, b - args.lr * gb)],
                       mode=args.mode)
    predict = gj.function([x], gt.argmax(logits, axis=1), mode=args.mode)

    start = time.perf_counter()
    for i in range(args.steps):
        value = step(x_tr, y_tr)
        if i % 50 == 0 or i == args.steps - 1:
            print(f"step {i:4d}: loss {float(value):.4f}")
    per_step = (time.perf_counter() - start) / args.steps
    accuracy = float(np.mean(predict(x_te) == y_te))
    print(f"test accuracy {accuracy:.4f}; {per_step * 1e3:.2f} ms per full-batch step "
          f"({len(x_tr)} samples); mode {args.mode or 'FAST_RUN'}")
    return accuracy


if __name__ == "__main__":
    main()
