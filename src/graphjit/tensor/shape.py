"""Shape ops: Reshape, transpose/squeeze/expand_dims, broadcast_to (Shape, Shape_i and SpecifyShape live in
shape_base.py, the symbolic length arithmetic in lengths.py; both are re-exported here)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.alloc import alloc
from graphjit.tensor.elemwise import DimShuffle
from graphjit.tensor.lengths import (as_length, as_shape_vector, broadcast_shape_symbolic, shape_prod,  # noqa: F401
                                     shape_sum, static_axis, static_entries, static_int, vector_entry)
from graphjit.tensor.math import eq, int_div, maximum, switch
from graphjit.tensor.shape_base import Shape, Shape_i, SpecifyShape, shape, shape_i, specify_shape
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


def _reshape_static(x: Variable, entries: Sequence[Optional[int]], ndim: int, op: Any
                    ) -> Tuple[Optional[int], ...]:
    """The static output shape of reshaping x into entries; ValueError when it cannot work."""
    entries = list(entries) if len(entries) == ndim else [None] * ndim
    for e in entries:
        if e is not None and e < -1:
            raise ValueError(f"{op}: negative length {e} in the new shape {tuple(entries)} "
                             f"(input {x.describe()})")
    if entries.count(-1) > 1:
        raise ValueError(f"{op}: can only specify one unknown (-1) length, got {tuple(entries)}")
    sizes = x.type.shape
    size = None if any(s is None for s in sizes) else int(np.prod(sizes, dtype="int64"))
    out = [None if e == -1 else e for e in entries]
    if size is not None and all(e is not None for e in entries):
        rest = int(np.prod([e for e in entries if e != -1], dtype="int64"))
        if -1 in entries and rest != 0 and size % rest == 0:
            out[entries.index(-1)] = size // rest
        elif -1 in entries or rest != size:
            new = tuple("newaxis" if e == -1 else e for e in entries)
            raise ValueError(f"{op}: cannot reshape array of size {size} into shape {new} "
                             f"(input {x.describe()})")
    return tuple(out)


class Reshape(Op):
    """x with a new shape (an int64 vector of ndim entries; one may be -1), numpy.reshape semantics."""

    __props__ = ("ndim",)
    view_map = {0: [0]}

    def __init__(self, ndim: int):
        self.ndim = int(ndim)
        if self.ndim < 0:
            raise ValueError(f"Reshape: ndim must be >= 0, got {ndim}")

    def make_node(self, x: Any, shp: Any) -> Apply:
        x = as_tensor_variable(x)
        shp = as_shape_vector(shp, f"the shape given to {self}")
        if shp.type.shape[0] is not None and shp.type.shape[0] != self.ndim:
            raise ValueError(f"{self}: the new shape {shp.describe()} has {shp.type.shape[0]} "
                             f"entries, not {self.ndim}")
        static = _reshape_static(x, static_entries(shp), self.ndim, self)
        return Apply(self, [x, shp], [TensorType(x.dtype, static)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, shp = inputs
        if len(shp) != self.ndim:
            raise ValueError(f"{self}: the new shape {tuple(shp)} has {len(shp)} entries, "
                             f"not {self.ndim}")
        try:
            out[0][0] = np.reshape(x, tuple(int(s) for s in shp))
        except ValueError as e:
            raise ValueError(f"{self}: {e}") from None

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        x, shp = node.inputs
        static = node.outputs[0].type.shape
        if all(s is not None for s in static):
            return [tuple(constant(s, dtype="int64") for s in static)]
        entries = [vector_entry(shp, i) for i in range(self.ndim)]
        # A symbolic entry may be -1 at run time: it then takes the length the others leave.
        sure = [static_int(e) is not None and static_int(e) >= 0 for e in entries]
        one = constant(1, dtype="int64")
        others = shape_prod([e if ok else switch(eq(e, -1), one, e) for e, ok in zip(entries, sure)])
        missing = int_div(shape_prod(shapes[0]), maximum(others, one))
        out = []
        for s, e, ok in zip(static, entries, sure):
            if s is not None:
                out.append(constant(s, dtype="int64"))
            elif ok:
                out.append(e)
            elif static_int(e) == -1:
                out.append(missing)
            else:
                out.append(switch(eq(e, -1), missing, e))
        return [tuple(out)]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [False]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """gz reshaped back to x's shape; the shape input is disconnected (it sets only the shape)."""
        x = inputs[0]
        return [Reshape(x.ndim)(grads[0], shape(x)), disconnected_type()]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangent reshaped the same way."""
        return [None if eval_points[0] is None else self(eval_points[0], inputs[1])]


def reshape(x: Any, shape: Any, ndim: Optional[int] = None) -> TensorVariable:
    """x with a new shape (ints and 0-d int variables, or an int vector; one entry may be -1)."""
    x = as_tensor_variable(x)
    shp = as_shape_vector(shape, "reshape's shape")
    if ndim is None:
        ndim = shp.type.shape[0]
        if ndim is None:
            raise ValueError(f"reshape: the length of the shape vector {shp.describe()} is not known "
                             "statically; pass ndim")
    return Reshape(ndim)(x, shp)


def flatten(x: Any, ndim: int = 1) -> TensorVariable:
    """x with its first ndim-1 dimensions kept and the others collapsed into one."""
    x = as_tensor_variable(x)
    if not isinstance(ndim, (int, np.integer)) or not 1 <= ndim <= max(x.ndim, 1):
        raise ValueError(f"flatten: ndim must be an int in [1, {max(x.ndim, 1)}], got {ndim!r} "
                         f"(input {x.describe()})")
    kept = [shape_i(x, d) for d in range(ndim - 1)]
    collapsed = shape_prod([shape_i(x, d) for d in range(ndim - 1, x.ndim)])
    return reshape(x, kept + [collapsed], ndim=ndim)


# ------------------------------------------------------------------------------------------------
# Dimension shuffles: transpose, squeeze, expand_dims, padding
# ------------------------------------------------------------------------------------------------

def transpose(x: Any, axes: Optional[Sequence[int]] = None) -> TensorVariable:
    """x with its dimensions permuted (reversed when axes is None), numpy.transpose semantics."""
    x = as_tensor_variable(x)
    if axes is None:
        axes = tuple(range(x.ndim))[::-1]
    axes = tuple(static_axis(a, x.ndim, x, "transpose") for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {axes} are not a permutation of the {x.ndim} dimension(s) "
                         f"of {x.describe()}")
    if axes == tuple(range(x.ndim)):
        return x
    return DimShuffle(x.ndim, axes)(x)


def squeeze(x: Any, axis: Any = None) -> TensorVariable:
    """x without length-1 dimensions.

    With axis=None only the dimensions statically known to have length 1 are removed (a dimension of
    unknown length is kept even if it has length 1 at run time). An explicit axis of unknown static
    length is asserted to be 1 at run time (SpecifyShape: a ValueError if it is not), like numpy.
    """
    x = as_tensor_variable(x)
    if axis is None:
        axes = [d for d, s in enumerate(x.type.shape) if s == 1]
    else:
        axes = [static_axis(a, x.ndim, x, "squeeze")
                for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
        if len(set(axes)) != len(axes):
            raise ValueError(f"squeeze: repeated axis in {axis} (input {x.describe()})")
    for d in axes:
        if x.type.shape[d] not in (1, None):
            raise ValueError(f"squeeze: cannot squeeze out dimension {d} of {x.describe()}: "
                             f"its length is {x.type.shape[d]}, not 1")
    if not axes:
        return x
    if any(x.type.shape[d] is None for d in axes):
        x = specify_shape(x, tuple(1 if d in axes else s for d, s in enumerate(x.type.shape)))
    return DimShuffle(x.ndim, [d for d in range(x.ndim) if d not in axes])(x)


def expand_dims(x: Any, axis: Any) -> TensorVariable:
    """x with length-1 dimensions inserted at axis (an int or a tuple), numpy.expand_dims semantics."""
    x = as_tensor_variable(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = x.ndim + len(axes)
    new = {static_axis(a, out_ndim, x, "expand_dims") for a in axes}
    if len(new) != len(axes):
        raise ValueError(f"expand_dims: repeated axis in {axis} (input {x.describe()})")
    dims = iter(range(x.ndim))
    return DimShuffle(x.ndim, ["x" if d in new else next(dims) for d in range(out_ndim)])(x)


def shape_padleft(x: Any, n_ones: int = 1) -> TensorVariable:
    """x with n_ones length-1 dimensions added on the left."""
    x = as_tensor_variable(x)
    return expand_dims(x, tuple(range(n_ones))) if n_ones else x


def shape_padright(x: Any, n_ones: int = 1) -> TensorVariable:
    """x with n_ones length-1 dimensions added on the right."""
    x = as_tensor_variable(x)
    return expand_dims(x, tuple(range(x.ndim, x.ndim + n_ones))) if n_ones else x


def shape_padaxis(x: Any, axis: int) -> TensorVariable:
    """x with one length-1 dimension inserted at axis."""
    return expand_dims(x, axis)


def broadcast_to(x: Any, shape: Any) -> TensorVariable:
    """x broadcast to shape (numpy.broadcast_to values; the result is a new array)."""
    return alloc(x, shape)


__all__ = ["Shape", "Shape_i", "SpecifyShape", "Reshape", "shape", "shape_i", "specify_shape",
           "reshape", "flatten", "transpose", "squeeze", "expand_dims", "shape_padleft",
           "shape_padright", "shape_padaxis", "broadcast_to"]
