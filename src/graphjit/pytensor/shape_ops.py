"""Shapes, views and indexing: DimShuffle, Reshape, Join/Split/MakeVector, Alloc, the Subtensor family."""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np
import pytensor.tensor.basic as ptb
import pytensor.tensor.subtensor as pst
from pytensor.graph.basic import Constant
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape
from pytensor.tensor.type_other import MakeSlice

import graphjit.tensor as gt
from graphjit.pytensor.registry import register


def constant_int(var: Any, what: str) -> int:
    """The Python int a PyTensor input holds (an axis); graphjit takes axes as Python ints."""
    if not isinstance(var, Constant):
        raise NotImplementedError(f"a symbolic {what} (graphjit takes it as a constant)")
    return int(np.asarray(var.data))


@register(DimShuffle)
def dimshuffle(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Transposition, broadcastable dims added or dropped (a dropped dim PyTensor knows is 1 is stated)."""
    x = values[0]
    dropped = [d for d in range(op.input_ndim) if d not in op.new_order]
    if any(x.type.shape[d] != 1 for d in dropped):
        x = gt.specify_shape(x, [1 if d in dropped else None for d in range(op.input_ndim)])
    return x.dimshuffle(*op.new_order)


@register(Reshape)
def reshape(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Reshape to a shape vector of ``op.ndim`` entries."""
    return gt.reshape(values[0], values[1], ndim=op.ndim)


@register(Shape)
def shape(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """The shape vector."""
    return gt.shape(values[0])


@register(Shape_i)
def shape_i(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """One entry of the shape."""
    return gt.shape_i(values[0], op.i)


@register(SpecifyShape)
def specify_shape(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A checked static shape (the entries PyTensor leaves symbolic are left unchecked by graphjit too)."""
    dims = [None if v is None else (int(np.asarray(s.data)) if isinstance(s, Constant) else None)
            for s, v in zip(node.inputs[1:], values[1:])]
    if any(d is None and v is not None for d, v in zip(dims, values[1:])):
        raise NotImplementedError("SpecifyShape with a symbolic length")
    return gt.specify_shape(values[0], dims)


@register(ptb.Join)
def join(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Concatenation along a constant axis."""
    return gt.join(constant_int(node.inputs[0], "Join axis"), *values[1:])


@register(ptb.Split)
def split(op: Any, node: Any, values: Sequence[Any]) -> List[Any]:
    """Split into ``op.len_splits`` pieces of the given sizes along a constant axis."""
    return gt.split(values[0], values[2], op.len_splits, axis=constant_int(node.inputs[1], "Split axis"))


@register(ptb.MakeVector)
def make_vector(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A vector of 0-d values."""
    return gt.make_vector(list(values), dtype=op.dtype)


@register(ptb.Alloc)
def alloc(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A value broadcast to a shape."""
    return gt.alloc(values[0], *values[1:])


@register(ptb.AllocEmpty)
def alloc_empty(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Uninitialised memory in PyTensor: zeros here (graphjit never hands out uninitialised memory)."""
    return gt.alloc(gt.constant(np.zeros((), dtype=op.dtype), dtype=op.dtype), *values)


@register(ptb.ARange)
def arange(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """numpy.arange(start, stop, step)."""
    return gt.arange(values[0], values[1], values[2], dtype=op.dtype)


@register(ptb.TensorFromScalar, ptb.ScalarFromTensor)
def scalar_tensor(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """PyTensor's scalars are graphjit's 0-d tensors already."""
    return values[0]


@register(ptb.ExtractDiag)
def extract_diag(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A diagonal of two axes."""
    return gt.diagonal(values[0], op.offset, op.axis1, op.axis2)


@register(ptb.Eye)
def eye(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """eye(n, m, k)."""
    return gt.eye(values[0], values[1], values[2], dtype=op.dtype)


@register(MakeSlice)
def make_slice(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A slice of graphjit values, consumed by the indexing ops."""
    return slice(*values)


def _index_tuple(op: Any, index_inputs: Sequence[Any], index_values: Sequence[Any]) -> tuple:
    """The index tuple of a basic (Inc)Subtensor, in graphjit values."""
    mapping = dict(zip(index_inputs, index_values))
    index = []
    for entry in pst.indices_from_subtensor(list(index_inputs), op.idx_list):
        if isinstance(entry, slice):
            index.append(slice(*(None if v is None else _value(v, mapping)
                                 for v in (entry.start, entry.stop, entry.step))))
        else:
            index.append(_value(entry, mapping))
    return tuple(index)


def _value(var: Any, mapping: dict) -> Any:
    if var in mapping:
        return mapping[var]
    return gt.constant(np.asarray(var.data, dtype=var.type.dtype), dtype=var.type.dtype)


@register(pst.Subtensor)
def subtensor(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """x[integers and slices]."""
    return values[0][_index_tuple(op, node.inputs[1:], values[1:])]


@register(pst.IncSubtensor)
def inc_subtensor(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """x with x[index] set to or incremented by y."""
    view = values[0][_index_tuple(op, node.inputs[2:], values[2:])]
    return (gt.set_subtensor if op.set_instead_of_inc else gt.inc_subtensor)(view, values[1])


@register(pst.AdvancedSubtensor1, pst.AdvancedSubtensor)
def advanced_subtensor(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """x[integer arrays, booleans, slices, None]."""
    return values[0][tuple(values[1:])]


@register(pst.AdvancedIncSubtensor1, pst.AdvancedIncSubtensor)
def advanced_inc_subtensor(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """x with x[advanced index] set to or incremented by y (duplicates accumulate unless PyTensor ignores them)."""
    x, y, index = values[0], values[1], tuple(values[2:])
    if op.set_instead_of_inc:
        return gt.set_subtensor(x[index], y)
    if getattr(op, "ignore_duplicates", False):
        return gt.set_subtensor(x[index], x[index] + y)
    return gt.inc_subtensor(x[index], y)
