"""Conversions between ScalarType variables and 0-d tensors: TensorFromScalar, ScalarFromTensor."""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.op import Op
from graphjit.scalar.basic import ScalarType, as_scalar, get_scalar_type
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

__all__ = ["TensorFromScalar", "ScalarFromTensor", "tensor_from_scalar", "scalar_from_tensor"]


class TensorFromScalar(Op):
    """A ScalarType value as a 0-d tensor of the same dtype."""

    __props__ = ()

    def make_node(self, s: Any) -> Apply:
        if isinstance(s, Variable) and not isinstance(s.type, ScalarType):
            raise TypeError(f"{self}: expected a scalar (ScalarType) variable, got {s.describe()}")
        s = as_scalar(s)
        return Apply(self, [s], [TensorType(s.type.dtype, ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: List[list]) -> None:
        out[0][0] = np.asarray(inputs[0], dtype=node.outputs[0].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [()]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The 0-d gradient back as a scalar."""
        return [scalar_from_tensor(grads[0])]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The scalar tangent as a 0-d tensor."""
        return [None if eval_points[0] is None else tensor_from_scalar(eval_points[0])]


class ScalarFromTensor(Op):
    """A 0-d tensor as a ScalarType value of the same dtype."""

    __props__ = ()

    def make_node(self, t: Any) -> Apply:
        t = as_tensor_variable(t)
        if t.ndim != 0:
            raise TypeError(f"{self}: expected a 0-d tensor, got {t.describe()}")
        return Apply(self, [t], [get_scalar_type(t.dtype)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: List[list]) -> None:
        (t,) = inputs
        if np.shape(t) != ():
            raise ValueError(f"{self}: expected a 0-d array, got shape {np.shape(t)}")
        out[0][0] = np.asarray(t, dtype=node.outputs[0].type.dtype)[()]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [()]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The scalar gradient back as a 0-d tensor."""
        return [tensor_from_scalar(grads[0])]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The 0-d tangent as a scalar."""
        return [None if eval_points[0] is None else scalar_from_tensor(eval_points[0])]


_tensor_from_scalar = TensorFromScalar()
_scalar_from_tensor = ScalarFromTensor()


def tensor_from_scalar(s: Any) -> TensorVariable:
    """A scalar variable (or Python number) as a 0-d tensor."""
    return _tensor_from_scalar(s)


def scalar_from_tensor(t: Any) -> Variable:
    """A 0-d tensor as a scalar (ScalarType) variable."""
    return _scalar_from_tensor(t)
