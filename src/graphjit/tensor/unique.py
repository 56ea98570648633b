"""numpy.unique: the sorted distinct values (or slices along an axis) with their first indices, the inverse and the
counts. Every output but the inverse has a data-dependent length: the lowering sorts, counts, then allocates
(link/llvm/ops/unique.py)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import grad_undefined
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.lengths import static_axis
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


class Unique(Op):
    """numpy.unique(x, return_index, return_inverse, return_counts, axis) (equal_nan=True, sorted).

    Outputs: the unique values, then the requested int64 index, inverse and counts, in that order. With axis None
    the values are a vector and the inverse has x's shape (numpy 2); with an axis, the unique slices along it
    (sorted lexicographically; a slice holding a NaN equals no other) and a 1-d inverse.
    """

    __props__ = ("return_index", "return_inverse", "return_counts", "axis")

    def __init__(self, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
                 axis: Optional[int] = None):
        self.return_index = bool(return_index)
        self.return_inverse = bool(return_inverse)
        self.return_counts = bool(return_counts)
        self.axis = None if axis is None else int(axis)

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if self.axis is not None and not 0 <= self.axis < x.ndim:
            raise np.exceptions.AxisError(f"unique: axis {self.axis} is out of bounds for {x.describe()}")
        if self.axis is not None and x.ndim != 1:
            values = x.type.shape[:self.axis] + (None,) + x.type.shape[self.axis + 1:]
            inverse: Tuple[Optional[int], ...] = (x.type.shape[self.axis],)
        else:
            values, inverse = (None,), x.type.shape
        outs = [TensorType(x.dtype, values)()]
        if self.return_index:
            outs.append(TensorType("int64", (None,))())
        if self.return_inverse:
            outs.append(TensorType("int64", inverse)())
        if self.return_counts:
            outs.append(TensorType("int64", (None,))())
        return Apply(self, [x], outs)

    def slice_axis(self, node: Apply) -> Optional[int]:
        """The axis whose slices are compared, or None when elements are (axis None, or a vector)."""
        return None if node.inputs[0].ndim <= 1 else self.axis

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (x,) = inputs
        res = np.unique(x, self.return_index, self.return_inverse, self.return_counts, axis=self.axis)
        res = res if isinstance(res, tuple) else (res,)
        for cell, r, var in zip(out, res, node.outputs):
            cell[0] = np.asarray(r, dtype=var.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        raise NotImplementedError("unique's output lengths depend on the values")

    def grad(self, inputs: Sequence[Any], grads: Sequence[Any]) -> list:
        return [grad_undefined(self, 0, inputs[0], "unique is piecewise constant in its selection")]

    def R_op(self, inputs: list, eval_points: list) -> list:
        return [None] * (1 + self.return_index + self.return_inverse + self.return_counts)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: Optional[int] = None) -> Union[TensorVariable, Tuple[TensorVariable, ...]]:
    """numpy.unique: sorted unique values (slices with axis), with first indices, inverse and counts if asked."""
    ar = as_tensor_variable(ar)
    if axis is not None:
        axis = static_axis(axis, ar.ndim, ar, "unique")
    out = Unique(return_index, return_inverse, return_counts, axis)(ar)
    return tuple(out) if isinstance(out, list) else out


__all__ = ["Unique", "unique"]
