"""Advanced indexing (integer arrays, boolean masks): AdvancedSubtensor1/AdvancedSubtensor and their writes.

Results are new arrays (numpy copies on advanced indexing). Writes follow numpy: ``set`` with a repeated
index keeps the last value written; ``inc`` with a repeated index accumulates every increment
(``numpy.add.at`` semantics, unlike ``x[idx] += y`` in numpy, which applies only one).

Gradients: the gradient of x[idx] adds the output gradient into zeros at idx (accumulating on repeats);
a set's gradient with respect to y does not zero the writes that a repeated index overwrote.

Placement of the broadcast index dimensions is numpy's: where the advanced entries (arrays, masks and, when
there is an array, integers) sit next to each other in the index, the broadcast dimensions replace them in
place; otherwise they come first.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.op import Op
from graphjit.tensor import math as gm
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.elemwise import broadcast_static_shape, normalize_axis
from graphjit.tensor.shape_base import shape_i
from graphjit.tensor.slice_length import Len, length_eq, length_where, as_bound, as_length
from graphjit.tensor.subtensor import (FULL_SLICE, AdvancedIndexing, ArrayIndex, Entry, Slice,
                                       as_index_scalar, getitem, as_update_value,
                                       check_index_static, entry_dims, entry_inputs, index_str,
                                       checked_index_array, index_tuple, reraise_index_error, shape_output,
                                       static_slice_length, symbolic_slice_length, validate_idx_list)
from graphjit.tensor.subtensor_grad import read_grad, read_rop, write_grads, write_rop
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

# An entry at its place: (entry, position of its first index input, first dimension of x it consumes)
Item = Tuple[Entry, int, int]


def _check_constant_array(op: Op, x: Variable, entry: ArrayIndex, v: Variable, dim: int) -> None:
    """Build-time bounds (integer arrays) and shape (masks) checks of a constant index array."""
    if not isinstance(v, Constant):
        return
    data = np.asarray(v.data)
    if entry.mask:
        for j, m in enumerate(data.shape):
            n = x.type.shape[dim + j]
            if n is not None and n != m:
                raise IndexError(f"{op}: boolean index did not match indexed tensor along axis {dim + j}; "
                                 f"size of axis is {n} but size of corresponding boolean axis is {m} "
                                 f"(indexing {x.describe()})")
        return
    n = x.type.shape[dim]
    if n is None or data.size == 0:
        return
    bad = data[(data >= n) | (data < -n)]
    if bad.size:
        raise IndexError(f"{op}: index {bad.flat[0]} is out of bounds for axis {dim} with size {n} "
                         f"(indexing {x.describe()})")


def _as_index_array(op: Op, entry: ArrayIndex, v: Any, position: int) -> TensorVariable:
    v = as_tensor_variable(v)
    kind = np.dtype(v.dtype).kind
    if v.ndim != entry.ndim or (kind == "b") != entry.mask or kind not in "iub":
        want = f"a {entry.ndim}-d {'boolean' if entry.mask else 'integer'} tensor"
        raise TypeError(f"{op}: index input {position} must be {want}, got {v.describe()}")
    return v


# ------------------------------------------------------------------------------------------------
# AdvancedSubtensor1: x[int vector] along axis 0
# ------------------------------------------------------------------------------------------------

class AdvancedSubtensor1(Op):
    """x[ilist] for an integer vector ilist indexing axis 0 (negatives wrap): a new array."""

    __props__ = ()

    def make_node(self, x: Any, ilist: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.ndim == 0:
            raise IndexError(f"{self}: too many indices for tensor: {x.describe()} is 0-dimensional, "
                             "but 1 were indexed")
        ilist = _as_index_array(self, ArrayIndex(1), ilist, 0)
        _check_constant_array(self, x, ArrayIndex(1), ilist, 0)
        shape = (ilist.type.shape[0],) + x.type.shape[1:]
        return Apply(self, [x, ilist], [TensorType(x.dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, ilist = inputs
        try:
            out[0][0] = x[checked_index_array(ilist, 0, x.shape)]
        except IndexError as err:
            reraise_index_error(self, node, err)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        lengths = [as_length(shapes[1][0])] + [as_length(s) for s in shapes[0][1:]]
        return [shape_output(node, lengths)]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [False]]

    def grad(self, inputs: Sequence[Variable], grads: Sequence[Variable]) -> List[Variable]:
        return read_grad(AdvancedIncSubtensor1(), inputs, grads[0])

    def R_op(self, inputs: list, eval_points: list) -> list:
        return read_rop(self, inputs, eval_points)

    def incsubtensor_op(self, set_instead_of_inc: bool, inplace: bool = False) -> "AdvancedIncSubtensor1":
        """The op writing into the same index."""
        return AdvancedIncSubtensor1(set_instead_of_inc, inplace)


advanced_subtensor1 = AdvancedSubtensor1()


class AdvancedIncSubtensor1(Op):
    """x with x[ilist] set to y or increased by y (repeated indices accumulate, numpy.add.at)."""

    __props__ = ("set_instead_of_inc", "inplace")

    def __init__(self, set_instead_of_inc: bool = False, inplace: bool = False):
        self.set_instead_of_inc = bool(set_instead_of_inc)
        self.inplace = bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        name = "AdvancedSetSubtensor1" if self.set_instead_of_inc else "AdvancedIncSubtensor1"
        return f"{name}{{inplace}}" if self.inplace else name

    def make_node(self, x: Any, y: Any, ilist: Any) -> Apply:
        read = advanced_subtensor1.make_node(x, ilist)
        x = read.inputs[0]
        y = as_update_value(self, x, y, read.outputs[0].type.shape, self.set_instead_of_inc)
        return Apply(self, [x, y, read.inputs[1]], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, y, ilist = inputs
        out[0][0] = _write(self, node, x, y, ilist)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(shapes[0])]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [True], [False]]

    def inplace_version(self) -> "AdvancedIncSubtensor1":
        """The same write, overwriting x."""
        return AdvancedIncSubtensor1(self.set_instead_of_inc, True)

    def grad(self, inputs: Sequence[Variable], grads: Sequence[Variable]) -> List[Variable]:
        return write_grads(self, advanced_subtensor1, AdvancedIncSubtensor1(True), inputs, grads[0])

    def R_op(self, inputs: list, eval_points: list) -> list:
        return write_rop(AdvancedIncSubtensor1(self.set_instead_of_inc), inputs, eval_points)


def _write(op: Any, node: Apply, x: np.ndarray, y: np.ndarray, index: Any) -> np.ndarray:
    """x (or a copy of it) with y set at, or added at (numpy.add.at), index."""
    target = x if op.inplace else x.copy()
    try:
        if isinstance(index, np.ndarray):
            index = checked_index_array(index, 0, x.shape)
        if op.set_instead_of_inc:
            target[index] = y
        else:
            np.add.at(target, index, y)
    except (IndexError, ValueError) as err:
        reraise_index_error(op, node, err)
    return target


# ------------------------------------------------------------------------------------------------
# AdvancedSubtensor: any mix of arrays, masks, ints, slices and newaxis
# ------------------------------------------------------------------------------------------------

def index_layout(idx_list: Sequence[Entry], ndim: int) -> Tuple[List[Item], List[Item], List[Item]]:
    """(basic entries before the broadcast dims, advanced entries, basic entries after)."""
    before: List[Item] = []
    advanced: List[Item] = []
    after: List[Item] = []
    positions: List[int] = []
    k = dim = 0
    for pos, e in enumerate(idx_list):
        item = (e, k, dim)
        if e is Ellipsis:
            continue  # no dimension, but it breaks the adjacency of advanced entries
        if e is None or isinstance(e, Slice):
            (after if advanced else before).append(item)
        else:
            advanced.append(item)
            positions.append(pos)
        k += entry_inputs(e)
        dim += entry_dims(e)
    after.extend((FULL_SLICE, k, d) for d in range(dim, ndim))
    if positions and positions[-1] - positions[0] + 1 != len(positions):
        return [], advanced, before + after  # not adjacent: broadcast dims first
    return before, advanced, after


def _static_basic(item: Item, xshape: Sequence[Optional[int]]) -> Optional[int]:
    entry, _, dim = item
    return 1 if entry is None else static_slice_length(entry, xshape[dim])


def _static_advanced(item: Item, inputs: Sequence[Variable]) -> Tuple[Optional[int], ...]:
    entry, k, _ = item
    if not isinstance(entry, ArrayIndex):
        return ()
    v = inputs[k]
    if entry.mask:
        return (int(np.count_nonzero(v.data)) if isinstance(v, Constant) else None,)
    return v.type.shape


def _broadcast_static(op: Op, shapes: List[Tuple[Optional[int], ...]]) -> Tuple[Optional[int], ...]:
    nd = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (nd - len(s)) + tuple(s) for s in shapes]
    try:
        return broadcast_static_shape(padded) if padded else ()
    except ValueError:
        raise IndexError(f"{op}: shape mismatch: indexing arrays could not be broadcast together "
                         f"with static shapes {shapes}") from None


def _broadcast_length(a: Len, b: Len) -> Len:
    """The broadcast of two lengths assumed compatible."""
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1 or isinstance(a, int) and isinstance(b, int):
        return a
    return length_where(length_eq(a, 1), b, a)


def _symbolic_broadcast(shapes: List[List[Len]]) -> List[Len]:
    nd = max((len(s) for s in shapes), default=0)
    out: List[Len] = [1] * nd
    for s in shapes:
        padded = [1] * (nd - len(s)) + list(s)
        out = [_broadcast_length(a, b) for a, b in zip(out, padded)]
    return out


class AdvancedSubtensor(Op):
    """x[index] for an index holding integer arrays or boolean masks (with ints, slices, newaxis): a copy."""

    __props__ = ("idx_list",)

    def __init__(self, idx_list: Sequence[Entry]):
        self.idx_list = validate_idx_list(idx_list, allow_arrays=True)

    def __str__(self) -> str:
        return f"AdvancedSubtensor{{{index_str(self.idx_list)}}}"

    def make_node(self, x: Any, *index_inputs: Any) -> Apply:
        x = as_tensor_variable(x)
        wanted = sum(entry_inputs(e) for e in self.idx_list)
        if len(index_inputs) != wanted:
            raise TypeError(f"{self}: expected {wanted} index input(s), got {len(index_inputs)}")
        check_index_static(self, x, self.idx_list)
        inputs: List[Variable] = []
        dim = 0
        for e in self.idx_list:
            for _ in range(entry_inputs(e)):
                v = index_inputs[len(inputs)]
                if isinstance(e, ArrayIndex):
                    v = _as_index_array(self, e, v, len(inputs))
                    _check_constant_array(self, x, e, v, dim)
                else:
                    v = as_index_scalar(self, v, len(inputs))
                inputs.append(v)
            dim += entry_dims(e)
        shape = self.static_shape(x.type.shape, inputs)
        return Apply(self, [x, *inputs], [TensorType(x.dtype, shape)()])

    def static_shape(self, xshape: Sequence[Optional[int]], inputs: Sequence[Variable]
                     ) -> Tuple[Optional[int], ...]:
        """The output's static shape for an input of static shape xshape and these index inputs."""
        before, advanced, after = index_layout(self.idx_list, len(xshape))
        middle = _broadcast_static(self, [_static_advanced(it, inputs) for it in advanced])
        return (tuple(_static_basic(it, xshape) for it in before) + middle
                + tuple(_static_basic(it, xshape) for it in after))

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, *values = inputs
        try:
            result = x[index_tuple(self.idx_list, values, x.shape)]
        except (IndexError, ValueError) as err:
            reraise_index_error(self, node, err)
        out[0][0] = result.copy() if np.may_share_memory(result, x) else result

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        xshape = [as_length(s) for s in shapes[0]]
        values = [as_bound(v) if v.ndim == 0 else v for v in node.inputs[1:]]

        def basic(item: Item) -> Len:
            entry, k, dim = item
            return 1 if entry is None else symbolic_slice_length(entry, xshape[dim], iter(values[k:]))

        def advanced(item: Item) -> List[Len]:
            entry, k, _ = item
            if not isinstance(entry, ArrayIndex):
                return []
            if entry.mask:
                return [gm.sum(cast(node.inputs[1 + k], "int64"))]
            return [as_length(s) for s in shapes[1 + k]]

        before, adv, after = index_layout(self.idx_list, len(xshape))
        middle = _symbolic_broadcast([advanced(it) for it in adv])
        return [shape_output(node, [basic(it) for it in before] + middle + [basic(it) for it in after])]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True]] + [[False]] * (len(node.inputs) - 1)

    def grad(self, inputs: Sequence[Variable], grads: Sequence[Variable]) -> List[Variable]:
        return read_grad(AdvancedIncSubtensor(self.idx_list), inputs, grads[0])

    def R_op(self, inputs: list, eval_points: list) -> list:
        return read_rop(self, inputs, eval_points)

    def incsubtensor_op(self, set_instead_of_inc: bool, inplace: bool = False) -> "AdvancedIncSubtensor":
        """The op writing into the same index."""
        return AdvancedIncSubtensor(self.idx_list, set_instead_of_inc, inplace)


class AdvancedIncSubtensor(Op):
    """x with x[index] set to y or increased by y (advanced index; repeated indices accumulate on inc)."""

    __props__ = ("idx_list", "set_instead_of_inc", "inplace")

    def __init__(self, idx_list: Sequence[Entry], set_instead_of_inc: bool = False, inplace: bool = False):
        self.idx_list = validate_idx_list(idx_list, allow_arrays=True)
        self.set_instead_of_inc = bool(set_instead_of_inc)
        self.inplace = bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        name = "AdvancedSetSubtensor" if self.set_instead_of_inc else "AdvancedIncSubtensor"
        return f"{name}{{{index_str(self.idx_list)}{', inplace' if self.inplace else ''}}}"

    def make_node(self, x: Any, y: Any, *index_inputs: Any) -> Apply:
        read = AdvancedSubtensor(self.idx_list).make_node(x, *index_inputs)
        x = read.inputs[0]
        y = as_update_value(self, x, y, read.outputs[0].type.shape, self.set_instead_of_inc)
        return Apply(self, [x, y, *read.inputs[1:]], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, y, *values = inputs
        try:
            index = index_tuple(self.idx_list, values, x.shape)
        except IndexError as err:
            reraise_index_error(self, node, err)
        out[0][0] = _write(self, node, x, y, index)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(shapes[0])]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [True]] + [[False]] * (len(node.inputs) - 2)

    def inplace_version(self) -> "AdvancedIncSubtensor":
        """The same write, overwriting x."""
        return AdvancedIncSubtensor(self.idx_list, self.set_instead_of_inc, True)

    def grad(self, inputs: Sequence[Variable], grads: Sequence[Variable]) -> List[Variable]:
        read, zero = AdvancedSubtensor(self.idx_list), AdvancedIncSubtensor(self.idx_list, True)
        return write_grads(self, read, zero, inputs, grads[0])

    def R_op(self, inputs: list, eval_points: list) -> list:
        return write_rop(AdvancedIncSubtensor(self.idx_list, self.set_instead_of_inc), inputs, eval_points)


def advanced_getitem(x: TensorVariable, entries: Tuple[Entry, ...], inputs: Sequence[Variable]
                     ) -> TensorVariable:
    """x[index] for normalised entries holding an array: AdvancedSubtensor1 when it is x[int vector]."""
    if entries[0] == ArrayIndex(1) and all(e == FULL_SLICE for e in entries[1:]):
        return advanced_subtensor1(x, inputs[0])
    return AdvancedSubtensor(entries)(x, *inputs)


TAKE_MODES = ("raise", "clip", "wrap")


def _moded_indices(indices: TensorVariable, n: TensorVariable, mode: str) -> TensorVariable:
    """numpy.take's 'clip' (into [0, n-1]) or 'wrap' (modulo n) of integer indices, as int64 (in range unless
    the axis is empty, where the read raises IndexError as numpy's)."""
    if np.dtype(indices.dtype).kind == "u":        # clipped/wrapped in uint64: no wrap through int64
        indices = cast(indices, "uint64")
        if mode == "clip":
            return cast(gm.minimum(indices, cast(gm.maximum(n - 1, 0), "uint64")), "int64")
        return cast(gm.mod(indices, cast(gm.maximum(n, 1), "uint64")), "int64")
    if mode == "clip":
        return cast(gm.minimum(gm.maximum(indices, 0), n - 1), "int64")
    return cast(gm.mod(indices, gm.maximum(n, 1)), "int64")


def take(x: Any, indices: Any, axis: Optional[int] = None, mode: str = "raise") -> TensorVariable:
    """numpy.take(x, indices, axis, mode): x's elements at indices along axis (flat if None); mode 'raise'
    (IndexError out of bounds), 'clip' (clipped into range) or 'wrap' (modulo the length)."""
    if mode not in TAKE_MODES:
        raise ValueError(f"take: mode must be one of {TAKE_MODES}, got {mode!r}")
    x = as_tensor_variable(x)
    if axis is None:
        if x.ndim != 1:
            x = x.flatten()
        axis = 0
    (axis,) = normalize_axis(axis, x.ndim)
    if isinstance(indices, Variable):
        indices = as_tensor_variable(indices)
        if indices.dtype == "bool":
            indices = cast(indices, "int64")
    else:
        arr = np.asarray(indices)
        if arr.dtype.kind == "b" or (arr.size == 0 and arr.dtype.kind == "f"):
            arr = arr.astype("int64")
        indices = arr if arr.ndim else (int(arr) if arr.dtype.kind in "iu" else arr)
    if mode != "raise":
        indices = as_tensor_variable(indices)
        if np.dtype(indices.dtype).kind not in "iu":
            raise TypeError(f"take: indices must be integers, got {indices.describe()}")
        indices = _moded_indices(indices, shape_i(x, axis), mode)
    return getitem(x, (slice(None),) * axis + (indices,))


AdvancedIndexing.getitem = advanced_getitem

__all__ = ["AdvancedSubtensor1", "AdvancedIncSubtensor1", "AdvancedSubtensor", "AdvancedIncSubtensor",
           "advanced_subtensor1", "take"]
