"""Symbolic length arithmetic: shape entries as Python ints or int64 0-d tensors, broadcast shapes, shape vectors
(the shape ops, Alloc and the gradients build on it; shape.py re-exports it). Installs Elemwise.infer_shape."""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.make_vector_op import MakeVector, make_vector
from graphjit.tensor.math import add, eq, mul, switch
from graphjit.tensor.shape_base import Shape, shape_i
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


def _split_static(lengths: Sequence[Any]) -> tuple[list, list]:
    """(the statically known lengths as ints, the symbolic ones)."""
    known, symbolic = [], []
    for s in lengths:
        value = static_int(s)
        (symbolic if value is None else known).append(s if value is None else value)
    return known, symbolic


def _fold(symbolic: list, op: Any, known: int, identity: int) -> TensorVariable:
    out = symbolic[0]
    for s in symbolic[1:]:
        out = op(out, s)
    return out if known == identity else op(out, constant(known, dtype="int64"))


def shape_prod(lengths: Sequence[Any]) -> TensorVariable:
    """The product of int64 0-d lengths (a constant when all are known)."""
    known, symbolic = _split_static(lengths)
    product = math.prod(known)
    if product == 0 or not symbolic:
        return constant(product, dtype="int64")
    return _fold(symbolic, mul, product, 1)


def shape_sum(lengths: Sequence[Any]) -> TensorVariable:
    """The sum of int64 0-d lengths (a constant when all are known)."""
    known, symbolic = _split_static(lengths)
    total = sum(known)
    if not symbolic:
        return constant(total, dtype="int64")
    return _fold(symbolic, add, total, 0)


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
    return as_length(v[i])        # indexing is installed on every tensor by tensor/operators.py


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


def elemwise_infer_shape(op: Elemwise, fgraph: Any, node: Apply, shapes: list) -> list:
    """Elemwise.infer_shape: the inputs' shapes broadcast (installed on Elemwise below)."""
    return [broadcast_shape_symbolic(shapes, [i.type.shape for i in node.inputs], ints=True)]


Elemwise.infer_shape = elemwise_infer_shape
