"""Joining and splitting tensors: MakeVector, Join (concatenate, stack), Split."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor.alloc import shaped_zeros
from graphjit.tensor.make_vector_op import MakeVector, make_vector
from graphjit.tensor.basic import Builders, as_tensor_variable, constant
from graphjit.tensor.shape import (static_axis, as_shape_vector, expand_dims, shape_i, shape_padleft,
                                   shape_sum, static_entries, vector_entry)
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

__all__ = ["MakeVector", "Join", "Split", "make_vector", "concatenate", "join", "stack", "split",
           "vstack", "hstack"]


# ------------------------------------------------------------------------------------------------
# Join
# ------------------------------------------------------------------------------------------------

def _join_static_shape(op: Any, tensors: Sequence[Variable], axis: int) -> List[Optional[int]]:
    shape: List[Optional[int]] = []
    for d in range(tensors[0].ndim):
        lengths = [t.type.shape[d] for t in tensors]
        if d == axis:
            shape.append(None if None in lengths else sum(lengths))
            continue
        known = {s for s in lengths if s is not None}
        if len(known) > 1:
            args = ", ".join(t.describe() for t in tensors)
            raise ValueError(f"{op}: all input dimensions except the join axis {axis} must match; "
                             f"dimension {d} has lengths {sorted(known)}: {args}")
        shape.append(known.pop() if known else None)
    return shape


class Join(Op):
    """numpy.concatenate along a static axis: equal ndim, other lengths equal, numpy's dtype upcast."""

    __props__ = ("axis",)

    def __init__(self, axis: int = 0):
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
            raise TypeError(f"Join: axis must be a static int, got {axis!r}")
        self.axis = int(axis)

    def make_node(self, *tensors: Any) -> Apply:
        if not tensors:
            raise ValueError(f"{self}: need at least one tensor to join")
        tensors = [as_tensor_variable(t) for t in tensors]
        ndim = tensors[0].ndim
        for t in tensors:
            if t.ndim != ndim:
                raise ValueError(f"{self}: all inputs must have the same number of dimensions: "
                                 f"{tensors[0].describe()} has {ndim}, {t.describe()} has {t.ndim}")
        if ndim == 0:
            raise ValueError(f"{self}: 0-d tensors cannot be joined ({tensors[0].describe()}); "
                             "use stack")
        axis = static_axis(self.axis, ndim, tensors[0], str(self))
        dtype = str(np.result_type(*[t.dtype for t in tensors]))
        shape = _join_static_shape(self, tensors, axis)
        return Apply(self, tensors, [TensorType(dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        axis = self.axis % node.inputs[0].ndim
        try:
            res = np.concatenate(inputs, axis=axis)
        except ValueError as e:
            shapes = ", ".join(str(np.shape(v)) for v in inputs)
            raise ValueError(f"{self}: cannot join arrays of shapes {shapes} along axis {axis}: "
                             f"{e}") from None
        out[0][0] = res.astype(node.outputs[0].type.dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        axis = self.axis % node.inputs[0].ndim
        static = node.outputs[0].type.shape
        out = []
        for d in range(len(shapes[0])):
            if static[d] is not None:
                out.append(constant(static[d], dtype="int64"))
            elif d == axis:
                out.append(shape_sum([s[d] for s in shapes]))
            else:
                out.append(shapes[0][d])
        return [tuple(out)]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """gz cut along the axis into pieces of the inputs' lengths."""
        axis = self.axis % inputs[0].ndim
        lengths = make_vector([shape_i(x, axis) for x in inputs], dtype="int64")
        pieces = Split(len(inputs), axis)(grads[0], lengths)
        return list(pieces) if isinstance(pieces, (list, tuple)) else [pieces]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangents joined the same way (zeros where an input has none)."""
        if all(v is None for v in eval_points):
            return [None]
        return [self(*[shaped_zeros(x) if v is None else v for x, v in zip(inputs, eval_points)])]


def concatenate(tensors: Sequence[Any], axis: int = 0) -> TensorVariable:
    """numpy.concatenate: tensors of equal ndim joined along axis."""
    tensors = [as_tensor_variable(t) for t in tensors]
    if not tensors:
        raise ValueError("concatenate: need at least one tensor")
    if tensors[0].ndim == 0:
        raise ValueError(f"concatenate: 0-d tensors cannot be joined ({tensors[0].describe()})")
    axis = static_axis(axis, tensors[0].ndim, tensors[0], "concatenate")
    return Join(axis)(*tensors)


def join(axis: int, *tensors: Any) -> TensorVariable:
    """Theano's join: tensors joined along axis (a copy-free pass-through for one tensor)."""
    if len(tensors) == 1:
        t = as_tensor_variable(tensors[0])
        static_axis(axis, t.ndim, t, "join")
        return t
    return concatenate(tensors, axis)


def stack(tensors: Sequence[Any], axis: int = 0) -> TensorVariable:
    """numpy.stack: tensors of equal shape joined along a new axis."""
    tensors = [as_tensor_variable(t) for t in tensors]
    if not tensors:
        raise ValueError("stack: need at least one tensor")
    ndim = tensors[0].ndim
    for t in tensors:
        if t.ndim != ndim:
            raise ValueError(f"stack: all inputs must have the same shape: {tensors[0].describe()} "
                             f"has {ndim} dimension(s), {t.describe()} has {t.ndim}")
    axis = static_axis(axis, ndim + 1, tensors[0], "stack")
    if ndim == 0:
        return make_vector(tensors)
    return Join(axis)(*[expand_dims(t, axis) for t in tensors])


def vstack(tensors: Sequence[Any]) -> TensorVariable:
    """numpy.vstack: tensors made at least 2-d, joined along axis 0."""
    tensors = [as_tensor_variable(t) for t in tensors]
    return concatenate([shape_padleft(t, max(2 - t.ndim, 0)) for t in tensors], 0)


def hstack(tensors: Sequence[Any]) -> TensorVariable:
    """numpy.hstack: tensors made at least 1-d, joined along axis 0 if 1-d, else axis 1."""
    tensors = [shape_padleft(t, max(1 - t.ndim, 0)) for t in map(as_tensor_variable, tensors)]
    return concatenate(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


# ------------------------------------------------------------------------------------------------
# Split
# ------------------------------------------------------------------------------------------------

class Split(Op):
    """x cut along a static axis into n_splits pieces of the given lengths (an int vector)."""

    __props__ = ("n_splits", "axis")

    def __init__(self, n_splits: int, axis: int = 0):
        if not isinstance(n_splits, (int, np.integer)) or n_splits < 1:
            raise ValueError(f"Split: n_splits must be a positive int, got {n_splits!r}")
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
            raise TypeError(f"Split: axis must be a static int, got {axis!r}")
        self.n_splits = int(n_splits)
        self.axis = int(axis)
        self.view_map = {i: [0] for i in range(self.n_splits)}

    def make_node(self, x: Any, splits: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.ndim == 0:
            raise ValueError(f"{self}: cannot split the 0-d tensor {x.describe()}")
        axis = static_axis(self.axis, x.ndim, x, str(self))
        splits = as_shape_vector(splits, f"the split sizes given to {self}")
        if splits.type.shape[0] not in (None, self.n_splits):
            raise ValueError(f"{self}: {splits.describe()} has {splits.type.shape[0]} entries, "
                             f"not {self.n_splits}")
        sizes = static_entries(splits) or [None] * self.n_splits
        if any(s is not None and s < 0 for s in sizes):
            raise ValueError(f"{self}: negative split size in {sizes} (input {x.describe()})")
        length = x.type.shape[axis]
        if length is not None and None not in sizes and sum(sizes) != length:
            raise ValueError(f"{self}: split sizes {sizes} sum to {sum(sizes)}, but dimension {axis} "
                             f"of {x.describe()} has length {length}")
        outs = []
        for s in sizes:
            shape = list(x.type.shape)
            shape[axis] = s
            outs.append(TensorType(x.dtype, shape)())
        return Apply(self, [x, splits], outs)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, splits = inputs
        axis = self.axis % x.ndim
        if len(splits) != self.n_splits:
            raise ValueError(f"{self}: got {len(splits)} split sizes, expected {self.n_splits}")
        if np.any(splits < 0) or int(np.sum(splits)) != x.shape[axis]:
            raise ValueError(f"{self}: split sizes {list(splits)} do not add up to the length "
                             f"{x.shape[axis]} of dimension {axis} (input shape {x.shape})")
        for cell, piece in zip(out, np.split(x, np.cumsum(splits)[:-1], axis=axis)):
            cell[0] = piece

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        x, splits = node.inputs
        axis = self.axis % x.ndim
        result = []
        for i, o in enumerate(node.outputs):
            s = o.type.shape[axis]
            length = constant(s, dtype="int64") if s is not None else vector_entry(splits, i)
            result.append(tuple(length if d == axis else shapes[0][d] for d in range(x.ndim)))
        return result

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True] * self.n_splits, [False] * self.n_splits]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The pieces' gradients joined back (zeros for unused pieces); sizes are disconnected."""
        return [Join(self.axis % inputs[0].ndim)(*grads), disconnected_type()]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangent split the same way."""
        if eval_points[0] is None:
            return [None] * self.n_splits
        pieces = self(eval_points[0], inputs[1])
        return list(pieces) if isinstance(pieces, (list, tuple)) else [pieces]


def split(x: Any, splits_size: Any, n_splits: Optional[int] = None, axis: int = 0
          ) -> List[TensorVariable]:
    """x cut along axis into pieces of lengths splits_size (ints, 0-d ints or an int vector)."""
    x = as_tensor_variable(x)
    splits = as_shape_vector(splits_size, "split's splits_size")
    known = splits.type.shape[0]
    if n_splits is None:
        if known is None:
            raise ValueError(f"split: the number of pieces of {splits.describe()} is not known "
                             "statically; pass n_splits")
        n_splits = known
    if x.ndim == 0:
        raise ValueError(f"split: cannot split the 0-d tensor {x.describe()}")
    axis = static_axis(axis, x.ndim, x, "split")
    out = Split(n_splits, axis)(x, splits)
    return out if isinstance(out, list) else [out]


Builders.stack = stack
