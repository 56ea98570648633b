"""Train a 64-hidden-10 MLP on scikit-learn's 8x8 digits with graphjit: grad, shared variables, updates.

    pip install -e .[examples]
    python examples/mlp_digits.py --epochs 40 --out mlp_digits_loss.png

The data ships with scikit-learn (no download). The training step is one compiled function: the
forward pass, the gradients from graphjit.grad and the momentum-SGD updates of the shared
parameters, run under the default mode (FAST_RUN) unless --mode says otherwise.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import graphjit as gj
import graphjit.tensor as gt


def load_data(seed: int = 0, subset: Optional[int] = None, dtype: str = "float32"
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits scaled to [0, 1], split 75/25 (stratified): x_train, y_train, x_test, y_test."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    if subset is not None:
        x, y = x[:subset], y[:subset]
    x = (x / 16.0).astype(dtype)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y.astype("int64"), test_size=0.25, random_state=seed,
                                              stratify=y)
    return x_tr, y_tr, x_te, y_te


def init_params(n_in: int, n_hidden: int, n_out: int, dtype: str, seed: int) -> List[Any]:
    """Shared weights (Glorot-uniform) and zero biases of the two layers."""
    rng = np.random.default_rng(seed)

    def glorot(fan_in: int, fan_out: int) -> np.ndarray:
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-bound, bound, size=(fan_in, fan_out)).astype(dtype)

    return [gj.shared(glorot(n_in, n_hidden), name="W1"), gj.shared(np.zeros(n_hidden, dtype), name="b1"),
            gj.shared(glorot(n_hidden, n_out), name="W2"), gj.shared(np.zeros(n_out, dtype), name="b2")]


def build_functions(params: Sequence[Any], activation: str, lr: float, momentum: float,
                    weight_decay: float, dtype: str, mode: Optional[str]
                    ) -> Tuple[Callable[..., Any], Callable[..., Any]]:
    """(train(x, y) -> mean loss, updating the parameters; predict(x) -> labels)."""
    x = gt.TensorType(dtype, (None, None))("x")
    y = gt.lvector("y")
    w1, b1, w2, b2 = params
    act = {"tanh": gt.tanh, "relu": gt.relu}[activation]
    logits = gt.dot(act(gt.dot(x, w1) + b1), w2) + b2
    loss = gt.crossentropy_softmax(logits, y).mean()
    cost = loss + weight_decay * ((w1 ** 2).sum() + (w2 ** 2).sum())
    grads = gj.grad(cost, list(params))
    updates = []
    for p, g in zip(params, grads):
        velocity = gj.shared(np.zeros(p.get_value().shape, dtype), name=f"v_{p.name}")
        new_v = momentum * velocity - lr * g
        updates += [(velocity, new_v.astype(dtype)), (p, (p + new_v).astype(dtype))]
    train = gj.function([x, y], loss, updates=updates, mode=mode, name="train_step")
    predict = gj.function([x], gt.argmax(logits, axis=1), mode=mode, name="predict")
    return train, predict


def _progress(n: int, enabled: bool) -> Any:
    """A tqdm bar over n epochs, or a plain fallback when tqdm is missing."""
    try:
        from tqdm import trange
        return trange(n, desc="epochs", disable=not enabled)
    except ImportError:
        return range(n)


def train(args: argparse.Namespace) -> Dict[str, Any]:
    """Train the MLP; returns losses per epoch, test accuracies, seconds per epoch, compile time."""
    x_tr, y_tr, x_te, y_te = load_data(args.seed, args.subset, args.dtype)
    params = init_params(x_tr.shape[1], args.hidden, 10, args.dtype, args.seed)
    start = time.perf_counter()
    train_step, predict = build_functions(params, args.activation, args.lr, args.momentum,
                                          args.weight_decay, args.dtype, args.mode)
    history: Dict[str, Any] = {"loss": [], "accuracy": [], "epoch_seconds": [],
                               "compile_seconds": time.perf_counter() - start}
    rng = np.random.default_rng(args.seed)
    bar = _progress(args.epochs, args.progress)
    for epoch in bar:
        t0 = time.perf_counter()
        order = rng.permutation(len(x_tr))
        losses = [float(train_step(x_tr[idx], y_tr[idx]))
                  for idx in np.array_split(order, max(len(order) // args.batch_size, 1))]
        history["epoch_seconds"].append(time.perf_counter() - t0)
        history["loss"].append(float(np.mean(losses)))
        history["accuracy"].append(float(np.mean(predict(x_te) == y_te)))
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{history['loss'][-1]:.4f}", acc=f"{history['accuracy'][-1]:.3f}")
        elif args.progress:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {history['loss'][-1]:.4f}, "
                  f"test accuracy {history['accuracy'][-1]:.3f}")
    return history


def save_loss_curve(history: Dict[str, Any], path: str) -> None:
    """Training loss and test accuracy per epoch, as a PNG (matplotlib's Agg backend)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    epochs = np.arange(1, len(history["loss"]) + 1)
    ax.plot(epochs, history["loss"], label="training loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("mean cross-entropy")
    ax2 = ax.twinx()
    ax2.plot(epochs, history["accuracy"], color="tab:orange", label="test accuracy")
    ax2.set_ylabel("test accuracy")
    fig.legend(loc="center", bbox_to_anchor=(0.55, 0.55))
    ax.set_title("MLP 64-hidden-10 on sklearn digits (graphjit)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Command-line options (see --help)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--activation", choices=["tanh", "relu"], default="tanh")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--mode", default=None, help="graphjit mode (default: FAST_RUN)")
    p.add_argument("--subset", type=int, default=None, help="use only the first N samples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="mlp_digits_loss.png", help="where to save the loss curve (PNG)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Train, report accuracy and time per epoch, save the loss curve."""
    args = parse_args(argv)
    history = train(args)
    per_epoch = float(np.median(history["epoch_seconds"]))
    print(f"final training loss {history['loss'][-1]:.4f}; test accuracy {history['accuracy'][-1]:.4f}")
    print(f"time per epoch {per_epoch * 1e3:.1f} ms (median of {len(history['epoch_seconds'])}); "
          f"graph build + compile {history['compile_seconds']:.2f} s; mode {args.mode or 'FAST_RUN'}")
    if args.out:
        save_loss_curve(history, args.out)
        print(f"loss curve saved to {args.out}")
    return history


if __name__ == "__main__":
    main()
