"""Shape ops: symbolic shape arithmetic, Reshape, transpose/squeeze/expand_dims (Shape, Shape_i and SpecifyShape
live in shape_base.py and are re-exported here)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.graph.utils import MethodNotDefined
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.shape_base import Shape, Shape_i, SpecifyShape, shape, shape_i, specify_shape
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


def broadcast_shape_symbolic(shapes: Sequence[Tuple[Any, ...]],
                             static: Sequence[Tuple[Optional[int], ...]], ints: bool = False) -> Tuple[Any, ...]:
    """The broadcast of equal-rank symbolic shapes, using static lengths where known.

    ints: a statically known length is a Python int rather than a new constant (what an infer_shape may return:
    ShapeFeature makes its own shared constants, and keeps the static lengths of the node's outputs anyway).
    """
    out: list = []
    for d in range(len(static[0]) if static else 0):
        known = [s[d] for s in static if s[d] is not None and s[d] != 1]
        if known:
            out.append(int(known[0]) if ints else constant(known[0], dtype="int64"))
            continue
        candidates = [sh[d] for sh, st in zip(shapes, static) if st[d] != 1]
        if not candidates:
            out.append(1 if ints else constant(1, dtype="int64"))
            continue
        length = candidates[0]
        for k, c in enumerate(candidates[1:], 1):
            if any(c is prev for prev in candidates[:k]):
                continue            # the same length variable again (x + x, f(x) * x...): nothing to choose
            # numpy's rule: a length of 1 yields to the other (maximum would be wrong for 0)
            length = switch(eq(length, 1), c, length)
        out.append(length)
    return tuple(out)


# ------------------------------------------------------------------------------------------------
# Shape arithmetic: lengths as int64 0-d tensors, folded to constants whenever they are known
# ------------------------------------------------------------------------------------------------

def static_int(v: Any) -> Optional[int]:
    """The value of v if it is a Python/numpy int or a constant integer tensor with one element."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, Constant):
        data = np.asarray(v.data)
        if data.size == 1 and data.dtype.kind in "iu":
            return int(data.reshape(()))
    return None


def as_length(v: Any, what: str = "a length") -> TensorVariable:
    """v (a Python int or a 0-d integer variable, tensor or scalar) as an int64 0-d tensor."""
    value = static_int(v)
    if isinstance(v, (int, np.integer)) and value is not None:
        return constant(value, dtype="int64")
    if not isinstance(v, Variable):
        raise TypeError(f"{what} must be an int or a 0-d integer variable, got {v!r}")
    t = as_tensor_variable(v)
    if t.ndim != 0 or t.type.numpy_dtype.kind not in "iu":
        raise TypeError(f"{what} must be an int or a 0-d integer variable, got {v.describe()}")
    if value is not None:
        return constant(value, dtype="int64")
    return cast(t, "int64")


def shape_prod(lengths: Sequence[Any]) -> TensorVariable:
    """The product of int64 0-d lengths (a constant when all are known)."""
    known, symbolic = 1, []
    for s in lengths:
        value = static_int(s)
        if value is None:
            symbolic.append(s)
        else:
            known *= value
    if known == 0 or not symbolic:
        return constant(known, dtype="int64")
    out = symbolic[0]
    for s in symbolic[1:]:
        out = mul(out, s)
    return out if known == 1 else mul(out, constant(known, dtype="int64"))


def shape_sum(lengths: Sequence[Any]) -> TensorVariable:
    """The sum of int64 0-d lengths (a constant when all are known)."""
    known, symbolic = 0, []
    for s in lengths:
        value = static_int(s)
        if value is None:
            symbolic.append(s)
        else:
            known += value
    if not symbolic:
        return constant(known, dtype="int64")
    out = symbolic[0]
    for s in symbolic[1:]:
        out = add(out, s)
    return out if known == 0 else add(out, constant(known, dtype="int64"))


def static_entries(v: Variable) -> List[Optional[int]]:
    """The statically known entries of an integer vector (None where unknown)."""
    n = v.type.shape[0]
    if isinstance(v, Constant):
        return [int(e) for e in np.asarray(v.data)]
    if n is None:
        return []
    owner = v.owner
    if owner is not None:
        if isinstance(owner.op, MakeVector):
            return [static_int(i) for i in owner.inputs]
        if isinstance(owner.op, Shape):
            return list(owner.inputs[0].type.shape)
    return [None] * n


def vector_entry(v: Variable, i: int) -> TensorVariable:
    """Entry i of an integer vector as an int64 0-d tensor, without indexing when avoidable."""
    known = static_entries(v)
    if i < len(known) and known[i] is not None:
        return constant(known[i], dtype="int64")
    owner = v.owner
    if owner is not None and isinstance(owner.op, MakeVector):
        return as_length(owner.inputs[i])
    if owner is not None and isinstance(owner.op, Shape):
        return shape_i(owner.inputs[0], i)
    try:
        return as_length(v[i])
    except ImportError:  # indexing (tensor/subtensor.py) is not available
        raise MethodNotDefined(f"entry {i} of {v.describe()} needs tensor indexing") from None


def as_shape_vector(shape: Any, what: str = "shape") -> TensorVariable:
    """A shape given as an int, a tuple of ints and 0-d int variables, or an int vector: an int64 vector."""
    if isinstance(shape, (int, np.integer)) or (isinstance(shape, Variable)
                                                and getattr(shape.type, "ndim", 0) == 0):
        shape = (shape,)
    if isinstance(shape, (tuple, list)):
        if all(static_int(s) is not None and not isinstance(s, Variable) for s in shape):
            return constant(np.array([int(s) for s in shape], dtype="int64"), dtype="int64")
        return make_vector([as_length(s, f"each entry of {what}") for s in shape], dtype="int64")
    if isinstance(shape, np.ndarray):
        if shape.ndim != 1 or shape.dtype.kind not in "iu":
            raise TypeError(f"{what} must be a 1-d integer array, got dtype {shape.dtype} ndim {shape.ndim}")
        return constant(shape.astype("int64"), dtype="int64")
    if not isinstance(shape, Variable):
        raise TypeError(f"{what} must be an int, a tuple or an int vector, got {shape!r}")
    v = as_tensor_variable(shape)
    if v.ndim != 1 or v.type.numpy_dtype.kind not in "iu":
        raise TypeError(f"{what} must be a 1-d integer tensor, got {shape.describe()}")
    return v if v.dtype == "int64" else cast(v, "int64")


def static_axis(axis: Any, ndim: int, x: Variable, fn: str) -> int:
    """axis checked against ndim (a static int, negative counts from the end) and made non-negative."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"{fn}: axis must be a static int, got {axis!r} (input {x.describe()})")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{fn}: axis {axis} is out of bounds for {ndim} dimension(s) "
                                      f"(input {x.describe()})")
    return int(axis) % ndim


# ------------------------------------------------------------------------------------------------
# Reshape
# ------------------------------------------------------------------------------------------------

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


# Imported once this module's names exist: these modules import it (directly or through another).
from graphjit.tensor.alloc import alloc  # noqa: E402
from graphjit.tensor.elemwise import DimShuffle  # noqa: E402
from graphjit.tensor.join import MakeVector, make_vector  # noqa: E402
from graphjit.tensor.math import add, eq, int_div, maximum, mul, switch  # noqa: E402
