"""CheckAndRaise: a value passed through once run-time conditions hold (the helpers' checks of lengths and
arguments that only the data can decide: broadcast_shape, pad, geomspace)."""

from __future__ import annotations

from typing import Any, Sequence

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.variable import TensorVariable

# the exceptions a native entry can raise (link/llvm/ir/graph_context.py's codes), by name
EXCEPTIONS = {"ValueError": ValueError, "IndexError": IndexError, "ZeroDivisionError": ZeroDivisionError}


class CheckAndRaise(Op):
    """x unchanged when every 0-d condition is true; exc(msg) at run time otherwise (a view of x)."""

    __props__ = ("exc", "msg")
    view_map = {0: [0]}

    def __init__(self, exc: str = "ValueError", msg: str = "check failed"):
        if exc not in EXCEPTIONS:
            raise ValueError(f"CheckAndRaise: exc must be one of {sorted(EXCEPTIONS)}, got {exc!r}")
        self.exc, self.msg = exc, str(msg)

    def __str__(self) -> str:
        return f"CheckAndRaise{{{self.exc}}}"

    def make_node(self, x: Any, *conds: Any) -> Apply:
        x = as_tensor_variable(x)
        checked = []
        for c in conds:
            c = as_tensor_variable(c)
            if c.ndim != 0:
                raise TypeError(f"{self}: conditions must be 0-d, got {c.describe()}")
            checked.append(c if c.dtype == "bool" else cast(c, "bool"))
        return Apply(self, [x, *checked], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        if not all(bool(c) for c in inputs[1:]):
            raise EXCEPTIONS[self.exc](self.msg)
        out[0][0] = inputs[0]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def connection_pattern(self, node: Apply) -> list:
        return [[True]] + [[False]] * (len(node.inputs) - 1)

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The gradient passes through to x; the conditions are disconnected."""
        return [grads[0]] + [disconnected_type() for _ in inputs[1:]]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangent of x."""
        return [eval_points[0]]


def check_and_raise(x: Any, conds: Sequence[Any], msg: str, exc: str = "ValueError") -> TensorVariable:
    """x, after checking at run time that every condition in conds holds (exc(msg) otherwise)."""
    return CheckAndRaise(exc, msg)(x, *conds) if conds else as_tensor_variable(x)


__all__ = ["CheckAndRaise", "check_and_raise"]
