"""numpy.repeat with per-element counts: Repeat (each slice i of x along axis repeated repeats[i] times, the
output length the counts' sum, computed by the entry before it allocates) and its adjoint RepeatSum (the sums of
the gradient over each slice's copies)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Constant
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.math import eq, mul, sum as tsum, switch
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


def check_counts(op: Op, n: int, repeats: np.ndarray) -> None:
    """numpy's checks of per-element counts for an axis of length n (ValueError)."""
    if len(repeats) not in (1, n):
        raise ValueError(f"{op}: operands could not be broadcast together: {len(repeats)} repeats for an axis "
                         f"of length {n}")
    if (repeats < 0).any():
        raise ValueError(f"{op}: repeats may not contain negative values")
    total = int(repeats.astype(object).sum()) * (n if len(repeats) == 1 else 1)
    if total >= 2 ** 63:
        raise ValueError(f"{op}: the output length overflows ({total} elements along the axis)")


def as_counts(repeats: Any) -> TensorVariable:
    """repeats as an int64 vector (TypeError for other dtypes or ranks)."""
    r = as_tensor_variable(repeats)
    if r.ndim != 1 or r.type.numpy_dtype.kind not in "iu":
        raise TypeError(f"repeat: per-element repeats must be a 1-d integer array, got {r.describe()}")
    return r if r.dtype == "int64" else cast(r, "int64")


class Repeat(Op):
    """numpy.repeat(x, repeats, axis) for an int64 vector of counts (length x.shape[axis], or 1 for all)."""

    __props__ = ("axis",)

    def __init__(self, axis: int):
        self.axis = int(axis)

    def make_node(self, x: Any, repeats: Any) -> Apply:
        x, r = as_tensor_variable(x), as_counts(repeats)
        if not 0 <= self.axis < x.ndim:
            raise np.exceptions.AxisError(f"{self}: axis {self.axis} is out of bounds for {x.describe()}")
        length = None
        if isinstance(r, Constant):
            counts = np.asarray(r.data)
            n = x.type.shape[self.axis]
            check_counts(self, len(counts) if n is None else n, counts)
            length = int(counts.sum()) if len(counts) == n or (len(counts) != 1 and n is None) else None
            if len(counts) == 1 and n is not None:
                length = int(counts[0]) * n
        shape = tuple(length if d == self.axis else s for d, s in enumerate(x.type.shape))
        return Apply(self, [x, r], [TensorType(x.dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, r = inputs
        check_counts(self, x.shape[self.axis], r)
        out[0][0] = np.repeat(x, r, axis=self.axis)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        r, n = node.inputs[1], shapes[0][self.axis]
        total = mul(tsum(r), switch(eq(r.shape[0], 1), n, 1))      # one count serves every slice
        return [tuple(total if d == self.axis else s for d, s in enumerate(shapes[0]))]

    def connection_pattern(self, node: Apply) -> list:
        return [[True], [False]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The output gradient summed over each slice's copies (RepeatSum)."""
        x, r = inputs
        return [RepeatSum(self.axis)(x, r, grads[0]), disconnected_type()]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """Linear in x: the tangent repeated."""
        return [None if eval_points[0] is None else self(eval_points[0], inputs[1])]


class RepeatSum(Op):
    """The adjoint of Repeat: out (x's shape) holds, for each i along axis, the sum of g over i's copies."""

    __props__ = ("axis",)

    def __init__(self, axis: int):
        self.axis = int(axis)

    def make_node(self, x: Any, repeats: Any, g: Any) -> Apply:
        x, r, g = as_tensor_variable(x), as_counts(repeats), as_tensor_variable(g)
        if g.ndim != x.ndim or not 0 <= self.axis < x.ndim:
            raise ValueError(f"{self}: needs x and g of one rank, got {x.describe()} and {g.describe()}")
        return Apply(self, [x, r, g], [TensorType(g.dtype, x.type.shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, r, g = inputs
        n = x.shape[self.axis]
        check_counts(self, n, r)
        counts = np.broadcast_to(r, (n,))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype("int64")
        moved = np.moveaxis(g, self.axis, 0)
        if moved.shape[0] != counts.sum():
            raise ValueError(f"{self}: the gradient has {moved.shape[0]} slices for {counts.sum()} copies")
        sums = np.zeros((n,) + moved.shape[1:], dtype=g.dtype)
        for i, (s, c) in enumerate(zip(starts, counts)):
            sums[i] = moved[s:s + c].sum(axis=0)
        out[0][0] = np.ascontiguousarray(np.moveaxis(sums, 0, self.axis))

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def connection_pattern(self, node: Apply) -> list:
        return [[False], [False], [True]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Linear in g: the transpose is Repeat."""
        x, r, _ = inputs
        return [disconnected_type(), disconnected_type(), Repeat(self.axis)(grads[0], r)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """Linear in g."""
        v = eval_points[2]
        return [None if v is None else self(inputs[0], inputs[1], v)]


__all__ = ["Repeat", "RepeatSum"]
