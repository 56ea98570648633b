"""The W9 graph family: a seeded random DAG of N elementwise, reduction and dot operations over a 50 x 40 matrix.

`spec(n, seed)` draws the DAG once, as plain data; `evaluate(spec, ns)` builds it with any array namespace:
numpy (the reference), jax.numpy, or graphjit.tensor / pytensor.tensor on symbolic inputs. Every operation keeps
values in [-1, 1] (inputs in [-1, 1], the dot's matrix scaled by 1/40), so a graph of any size stays finite.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

ROWS, COLS = 50, 40
UNARY = ("tanh", "sin", "cos", "sigmoid", "neg", "abs", "square")
BINARY = ("mul", "maximum", "minimum", "avg", "half_diff")
REDUCE = ("max", "min", "mean")
COST = {"avg": 2, "half_diff": 2}      # operations a step makes (default 1): add/sub, then the scale
WINDOW = 40                             # the second input comes from the last WINDOW nodes (layered models)
P_UNUSED = 0.6                          # chance an input is a node nobody uses yet (keeps the outputs few)


class Step(NamedTuple):
    """One node: its operation, the ids of its inputs (0 is x), an axis for reductions."""

    op: str
    args: tuple[int, ...]
    axis: int | None = None


def spec(n: int, seed: int = 0) -> list[Step]:
    """A random DAG of n operations (elementwise unary/binary, reductions with keepdims, dot with W)."""
    rng = np.random.default_rng(seed)
    shapes: list[tuple[int, int]] = [(ROWS, COLS)]
    unused: set[int] = {0}
    steps: list[Step] = []
    ops = 0

    def pick(fits: Callable[[tuple[int, int]], bool]) -> int | None:
        pool = [i for i in unused if fits(shapes[i])] if rng.random() < P_UNUSED else []
        if not pool:
            lo = max(0, len(shapes) - WINDOW)
            pool = [i for i in range(lo, len(shapes)) if fits(shapes[i])]
        return int(pool[rng.integers(len(pool))]) if pool else None

    while ops < n:
        kind = rng.choice(("unary", "binary", "reduce", "dot"), p=(0.4, 0.35, 0.15, 0.1))
        if kind == "dot":
            a = pick(lambda s: s[1] == COLS)
            step, shape = (Step("dot", (a,)), (shapes[a][0], COLS)) if a is not None else (None, None)
        elif kind == "reduce":
            a = pick(lambda s: s != (1, 1))
            axis = int(rng.choice([k for k in (0, 1) if shapes[a][k] > 1]))
            shape = (1, shapes[a][1]) if axis == 0 else (shapes[a][0], 1)
            step = Step(str(rng.choice(REDUCE)), (a,), axis)
        elif kind == "binary":
            a = pick(lambda s: True)
            b = pick(lambda s: True)
            shape = (max(shapes[a][0], shapes[b][0]), max(shapes[a][1], shapes[b][1]))
            step = Step(str(rng.choice(BINARY)), (a, b))
        else:
            step = None
        if step is None:
            a = pick(lambda s: True)
            step, shape = Step(str(rng.choice(UNARY)), (a,)), shapes[a]
        steps.append(step)
        shapes.append(shape)
        unused.difference_update(step.args)
        unused.add(len(shapes) - 1)
        ops += COST.get(step.op, 1)
    return steps


def outputs_of(steps: list[Step]) -> list[int]:
    """The ids of the nodes nobody uses (the graph's outputs), in order."""
    used = {a for s in steps for a in s.args}
    return [i for i in range(1, len(steps) + 1) if i not in used]


def evaluate(steps: list[Step], ns: Any, x: Any, w: Any) -> list[Any]:
    """The outputs of the DAG built with array namespace ns (numpy, jax.numpy, graphjit.tensor, pytensor.tensor)."""
    sigmoid = getattr(ns, "sigmoid", None) or (lambda v: 1 / (1 + ns.exp(-v)))
    unary = {"tanh": ns.tanh, "sin": ns.sin, "cos": ns.cos, "sigmoid": sigmoid, "neg": lambda v: -v,
             "abs": abs, "square": lambda v: v * v}
    binary = {"mul": lambda a, b: a * b, "maximum": ns.maximum, "minimum": ns.minimum,
              "avg": lambda a, b: (a + b) * 0.5, "half_diff": lambda a, b: (a - b) * 0.5}
    values = [x]
    for s in steps:
        args = [values[i] for i in s.args]
        if s.op == "dot":
            out = ns.dot(args[0], w)
        elif s.op in REDUCE:
            out = getattr(args[0], s.op)(axis=s.axis, keepdims=True)
        elif s.op in binary:
            out = binary[s.op](*args)
        else:
            out = unary[s.op](*args)
        values.append(out)
    return [values[i] for i in outputs_of(steps)]


def data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """x (50 x 40, in [-1, 1]) and W (40 x 40, in [-1/40, 1/40]), float64."""
    rng = np.random.default_rng(seed + 1)
    return rng.uniform(-1, 1, (ROWS, COLS)), rng.uniform(-1, 1, (COLS, COLS)) / COLS


def reference(steps: list[Step], x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    """The outputs computed by numpy."""
    return evaluate(steps, np, x, w)
