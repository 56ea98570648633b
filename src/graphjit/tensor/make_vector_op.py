"""MakeVector: a vector from 0-d tensors (the shape vectors the shape ops build; join.py re-exports it)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.filled import zeros_like
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


class MakeVector(Op):
    """A vector of dtype from 0-d tensors (safely cast to dtype)."""

    __props__ = ("dtype",)

    def __init__(self, dtype: str = "int64"):
        self.dtype = str(np.dtype(dtype))

    def make_node(self, *inputs: Any) -> Apply:
        converted = []
        for i, inp in enumerate(inputs):
            t = as_tensor_variable(inp)
            if t.ndim != 0:
                raise TypeError(f"{self}: input {i} must be 0-d, got {t.describe()}")
            if t.dtype != self.dtype:
                if not (np.can_cast(t.dtype, self.dtype, "safe") or _fits(t, self.dtype)):
                    raise TypeError(f"{self}: input {i} {t.describe()} cannot be cast safely "
                                    f"to {self.dtype}")
                t = cast(t, self.dtype)
            converted.append(t)
        return Apply(self, converted, [TensorType(self.dtype, (len(converted),))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = np.array([np.asarray(v).reshape(()) for v in inputs], dtype=self.dtype).reshape(
            (len(inputs),))

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [(constant(len(node.inputs), dtype="int64"),)]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Entry i of gz for input i."""
        return [grads[0][i] for i in range(len(inputs))]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The vector of the tangents (zeros where an input has none)."""
        if all(v is None for v in eval_points):
            return [None]
        return [self(*[zeros_like(x) if v is None else v for x, v in zip(inputs, eval_points)])]


def _fits(t: Variable, dtype: str) -> bool:
    """True if t is a constant whose value dtype holds exactly."""
    if not isinstance(t, Constant):
        return False
    data = np.asarray(t.data)
    with np.errstate(all="ignore"):
        return bool(np.all(data.astype(dtype).astype(data.dtype) == data))


def make_vector(values: Sequence[Any], dtype: Optional[str] = None) -> TensorVariable:
    """A vector of 0-d tensors (dtype: their numpy result type; int64 when empty)."""
    values = [as_tensor_variable(v) for v in values]
    if dtype is None:
        dtype = str(np.result_type(*[v.dtype for v in values])) if values else "int64"
    return MakeVector(dtype)(*values)
