"""numpy's conveniences built from the library's ops (so each lowers natively and has the gradient of its parts):
diff, ediff1d, broadcast_arrays, broadcast_shape (checked at run time), max_and_argmax, divmod, and
get_vector_length for a vector's static length."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from graphjit.graph.basic import Constant, Variable
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.check_op import check_and_raise
from graphjit.tensor.extra_ops import argmax
from graphjit.tensor.join import concatenate
from graphjit.tensor.lengths import as_length, broadcast_shape_symbolic, static_axis, static_int
from graphjit.tensor.make_vector_op import MakeVector
from graphjit.tensor.math import eq, int_div, max as max_, mod, neq, or_, sub, switch
from graphjit.tensor.shape import broadcast_to, shape_padleft
from graphjit.tensor.shape_base import Shape
from graphjit.tensor.subtensor import getitem
from graphjit.tensor.variable import TensorVariable


def diff(x: Any, n: int = 1, axis: int = -1) -> TensorVariable:
    """numpy.diff: the n-th discrete difference along axis (x[1:] - x[:-1], n times; != for booleans)."""
    x = as_tensor_variable(x)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"diff's order n must be a non-negative int, got {n!r}")
    if x.ndim == 0:
        raise ValueError("diff needs a tensor of at least 1 dimension, got a 0-d one")
    head = (slice(None),) * static_axis(axis, x.ndim, x, "diff")
    for _ in range(n):
        later, earlier = getitem(x, head + (slice(1, None),)), getitem(x, head + (slice(None, -1),))
        x = neq(later, earlier) if x.dtype == "bool" else sub(later, earlier)
    return x


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> TensorVariable:
    """numpy.ediff1d: the differences of the flattened ary, with to_begin before and to_end after."""
    flat = as_tensor_variable(ary).flatten()
    parts = [diff(flat)]
    if to_begin is not None:
        parts.insert(0, as_tensor_variable(to_begin).flatten().astype(flat.dtype))
    if to_end is not None:
        parts.append(as_tensor_variable(to_end).flatten().astype(flat.dtype))
    return concatenate(parts) if len(parts) > 1 else parts[0]


def broadcast_arrays(*arrays: Any) -> List[TensorVariable]:
    """numpy.broadcast_arrays: each input broadcast to their common shape (a ValueError at run time when the
    shapes do not broadcast)."""
    xs = [as_tensor_variable(a) for a in arrays]
    ndim = max((x.ndim for x in xs), default=0)
    padded = [shape_padleft(x, ndim - x.ndim) if x.ndim < ndim else x for x in xs]
    shape = broadcast_shape_symbolic([tuple(p.shape[d] for d in range(ndim)) for p in padded],
                                     [p.type.shape for p in padded])
    return [broadcast_to(p, shape) for p in padded]


def broadcast_shape(*arrays: Any, arrays_are_shapes: bool = False) -> Tuple[TensorVariable, ...]:
    """PyTensor's broadcast_shape: the shape the arrays (or, with arrays_are_shapes, the shapes: tuples of ints
    and 0-d integer variables) broadcast to, as int64 0-d tensors; lengths that cannot broadcast raise a
    ValueError, when the graph is built if they are known, at run time otherwise."""
    if arrays_are_shapes:
        shapes = [tuple(as_length(s, "a shape's length") for s in a) for a in arrays]
        static = [tuple(static_int(s) for s in a) for a in shapes]
    else:
        xs = [as_tensor_variable(a) for a in arrays]
        shapes = [tuple(x.shape[d] for d in range(x.ndim)) for x in xs]
        static = [x.type.shape for x in xs]
    ndim = max((len(s) for s in shapes), default=0)
    one = constant(1, dtype="int64")
    shapes = [(one,) * (ndim - len(s)) + tuple(s) for s in shapes]
    static = [(1,) * (ndim - len(s)) + tuple(s) for s in static]
    return tuple(_broadcast_length([sh[d] for sh in shapes], [st[d] for st in static], d)
                 for d in range(ndim))


def _broadcast_length(lengths: List[Any], static: List[Optional[int]], dim: int) -> TensorVariable:
    """One dimension's broadcast length: the static lengths checked now, the symbolic ones at run time."""
    known = {s for s in static if s is not None and s != 1}
    if len(known) > 1:
        raise ValueError(f"broadcast_shape: lengths {sorted(known)} in dimension {dim} cannot be broadcast")
    symbolic = [v for v, s in zip(lengths, static) if s is None]
    if known:
        length = constant(known.pop(), dtype="int64")
    elif not symbolic:
        return constant(1, dtype="int64")
    else:
        length = symbolic[0]
        for v in symbolic[1:]:
            length = switch(eq(length, 1), v, length)
    conds = [or_(eq(v, 1), eq(v, length)) for v in symbolic if v is not length]
    return check_and_raise(length, conds, f"broadcast_shape: the lengths in dimension {dim} cannot be broadcast")


def max_and_argmax(x: Any, axis: Any = None, keepdims: bool = False) -> Tuple[TensorVariable, TensorVariable]:
    """(max, argmax) of x along axis (Theano's max_and_argmax; the first maximal index, as numpy)."""
    x = as_tensor_variable(x)
    return max_(x, axis=axis, keepdims=keepdims), argmax(x, axis=axis, keepdims=keepdims)


def divmod(x: Any, y: Any) -> Tuple[TensorVariable, TensorVariable]:  # noqa: A001 - numpy's name
    """numpy.divmod: (x // y, x % y), the remainder with the sign of y."""
    return int_div(x, y), mod(x, y)


def get_vector_length(v: Any) -> int:
    """The length of the 1-d v when it is known without running the graph (a static shape, a constant, a
    MakeVector, the shape of a tensor); ValueError otherwise."""
    v = as_tensor_variable(v)
    if v.ndim != 1:
        raise ValueError(f"get_vector_length needs a vector, got {v.describe()}")
    length = _known_length(v)
    if length is None:
        raise ValueError(f"the length of {v.describe()} is not known before the graph runs")
    return length


def _known_length(v: Variable) -> Optional[int]:
    if v.type.shape[0] is not None:
        return int(v.type.shape[0])
    if isinstance(v, Constant):
        return len(np.asarray(v.data))
    owner = v.owner
    if owner is not None and isinstance(owner.op, MakeVector):
        return len(owner.inputs)
    if owner is not None and isinstance(owner.op, Shape):
        return owner.inputs[0].ndim
    return None


__all__ = ["diff", "ediff1d", "broadcast_arrays", "broadcast_shape", "max_and_argmax", "divmod", "get_vector_length"]
