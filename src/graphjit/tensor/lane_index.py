"""Gather and scatter-add along one axis by an index array of the same rank (the gradients of sort and topk).

LaneGather(axis)(x, idx)[..., i, ...] = x[..., idx[..., i, ...], ...] (numpy.take_along_axis);
LaneScatter(axis)(g, idx, n) is zeros with the axis of length n and g added at idx (numpy.add.at along the axis).
The other dimensions of the operands must be equal; indices must be in [0, length).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.type import TensorType


def _check_operands(op: Op, a: np.ndarray, idx: np.ndarray, bound: int) -> None:
    """ValueError if the non-axis lengths differ, IndexError if an index is outside [0, bound)."""
    ax = op.axis
    if a.shape[:ax] + a.shape[ax + 1:] != idx.shape[:ax] + idx.shape[ax + 1:]:
        raise ValueError(f"{op}: shapes {a.shape} and {idx.shape} differ outside axis {ax}")
    if idx.size and (idx.min() < 0 or idx.max() >= bound):
        raise IndexError(f"{op}: an index is out of bounds for axis {ax} with size {bound}")


class LaneGather(Op):
    """numpy.take_along_axis(x, idx, axis) for a non-negative axis and in-range indices."""

    __props__ = ("axis",)

    def __init__(self, axis: int):
        self.axis = int(axis)

    def make_node(self, x: Any, idx: Any) -> Apply:
        x, idx = as_tensor_variable(x), as_tensor_variable(idx)
        if x.ndim != idx.ndim or not 0 <= self.axis < x.ndim or idx.dtype != "int64":
            raise TypeError(f"{self}: needs x and an int64 idx of the same rank, axis in range "
                            f"(got {x.describe()}, {idx.describe()})")
        shape = tuple(i if d == self.axis else (s if s is not None else i)
                      for d, (s, i) in enumerate(zip(x.type.shape, idx.type.shape)))
        return Apply(self, [x, idx], [TensorType(x.dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, idx = inputs
        _check_operands(self, x, idx, x.shape[self.axis])
        out[0][0] = np.take_along_axis(x, idx, self.axis)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[1]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The gradient scattered back to where it was gathered from."""
        x, idx = inputs
        return [LaneScatter(self.axis)(grads[0], idx, x.shape[self.axis]), disconnected_type()]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """Linear in x."""
        return [None if eval_points[0] is None else self(eval_points[0], inputs[1])]

    def connection_pattern(self, node: Apply) -> list:
        return [[True], [False]]


class LaneScatter(Op):
    """zeros with the axis of length n, then g added at idx along the axis (repeated indices accumulate)."""

    __props__ = ("axis",)

    def __init__(self, axis: int):
        self.axis = int(axis)

    def make_node(self, g: Any, idx: Any, n: Any) -> Apply:
        g, idx, n = as_tensor_variable(g), as_tensor_variable(idx), as_tensor_variable(n, dtype="int64")
        if g.ndim != idx.ndim or not 0 <= self.axis < g.ndim or idx.dtype != "int64" or n.ndim != 0:
            raise TypeError(f"{self}: needs g and an int64 idx of the same rank, a 0-d length, axis in range "
                            f"(got {g.describe()}, {idx.describe()}, {n.describe()})")
        shape = tuple(None if d == self.axis else s for d, s in enumerate(g.type.shape))
        return Apply(self, [g, idx, n], [TensorType(g.dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        g, idx, n = inputs
        n = int(n)
        if n < 0:
            raise ValueError(f"{self}: negative length {n}")
        _check_operands(self, g, idx, n)
        if g.shape != idx.shape:
            raise ValueError(f"{self}: g {g.shape} and idx {idx.shape} differ")
        res = np.zeros(g.shape[:self.axis] + (n,) + g.shape[self.axis + 1:], dtype=g.dtype)
        grids = list(np.indices(g.shape, sparse=True))
        grids[self.axis] = idx
        np.add.at(res, tuple(grids), g)
        out[0][0] = res

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(node.inputs[2] if d == self.axis else s for d, s in enumerate(shapes[0]))]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Gathering the output gradient back is the transpose of the scatter."""
        return [LaneGather(self.axis)(grads[0], inputs[1]), disconnected_type(), disconnected_type()]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """Linear in g."""
        return [None if eval_points[0] is None else self(eval_points[0], inputs[1], inputs[2])]

    def connection_pattern(self, node: Apply) -> list:
        return [[True], [False], [False]]
