"""Basic indexing (numpy views): Subtensor, IncSubtensor; getitem, set_subtensor, inc_subtensor.

An index is held by an op as ``idx_list``, a tuple of static entries (its ``__props__``), one per position
of the index after the Ellipsis is expanded:

* a Python ``int`` (a constant integer index, negatives allowed);
* ``SCALAR`` (a ``ScalarIndex``): an integer index whose value is a node input (a 0-d integer tensor);
* a ``Slice(start, stop, step)`` whose bounds are None, constant ints or ``SCALAR`` (node inputs, in the
  order start, stop, step);
* ``None`` (numpy.newaxis);
* an ``ArrayIndex(ndim, mask)`` (advanced indexing only): an integer or boolean array, a node input;
* ``Ellipsis`` (advanced indexing only), kept where it stands for no dimension but separates advanced
  entries: numpy then puts the broadcast dimensions first.

The node inputs are the indexed tensor first (then, for writes, the value written), then one input per
symbolic entry in index order.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_inputs, as_tensor_variable, cast, constant, is_weak_scalar
from graphjit.tensor.slice_length import (INT64_MAX, INT64_MIN, Len, as_bound, as_length, length_variable,
                                          saturate_int64, slice_length)
from graphjit.tensor.type import TensorType
from graphjit.tensor.subtensor_grad import read_grad, read_rop, write_grads, write_rop
from graphjit.tensor.variable import TensorVariable


# ------------------------------------------------------------------------------------------------
# Index entries (static, hashable: they are op __props__)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalarIndex:
    """A symbolic integer index entry: its value is a node input (a 0-d integer tensor)."""

    def __str__(self) -> str:
        return "i"


SCALAR = ScalarIndex()
Bound = Union[None, int, ScalarIndex]


@dataclass(frozen=True)
class Slice:
    """A slice entry; each bound is None, a constant int or SCALAR (then a node input)."""

    start: Bound = None
    stop: Bound = None
    step: Bound = None

    def __str__(self) -> str:
        text = ["" if b is None else str(b) for b in (self.start, self.stop, self.step)]
        return f"{text[0]}:{text[1]}" + ("" if self.step is None else f":{text[2]}")

    @property
    def bounds(self) -> Tuple[Bound, Bound, Bound]:
        """(start, stop, step)."""
        return (self.start, self.stop, self.step)

    @property
    def n_inputs(self) -> int:
        """How many bounds are node inputs."""
        return sum(isinstance(b, ScalarIndex) for b in self.bounds)


FULL_SLICE = Slice()


@dataclass(frozen=True)
class ArrayIndex:
    """An advanced index entry: an integer array, or a boolean mask (mask=True), given as a node input."""

    ndim: int
    mask: bool = False

    def __str__(self) -> str:
        return f"{'bool' if self.mask else 'int'}[{self.ndim}d]"


Entry = Union[None, int, ScalarIndex, Slice, ArrayIndex]


def entry_inputs(entry: Entry) -> int:
    """The number of node inputs an entry takes."""
    if isinstance(entry, Slice):
        return entry.n_inputs
    return 1 if isinstance(entry, (ScalarIndex, ArrayIndex)) else 0


def entry_dims(entry: Entry) -> int:
    """The number of dimensions of the indexed tensor an entry consumes."""
    if entry is None or entry is Ellipsis:
        return 0
    if isinstance(entry, ArrayIndex) and entry.mask:
        return entry.ndim
    return 1


def index_str(idx_list: Sequence[Entry]) -> str:
    """The index as numpy-like text, e.g. '1:, ::-1, i'."""
    return ", ".join("None" if e is None else "..." if e is Ellipsis else str(e) for e in idx_list)


def validate_idx_list(idx_list: Sequence[Any], allow_arrays: bool) -> Tuple[Entry, ...]:
    """idx_list as a tuple of entries, with Python ints normalised; TypeError on anything else."""
    out: List[Entry] = []
    for e in idx_list:
        if isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)):
            out.append(int(e))
        elif isinstance(e, Slice):
            for b in e.bounds:
                if not (b is None or isinstance(b, ScalarIndex) or type(b) is int):
                    raise TypeError(f"slice bound {b!r} is not None, an int or SCALAR")
            out.append(e)
        elif e is None or isinstance(e, ScalarIndex) or (allow_arrays and (isinstance(e, ArrayIndex)
                                                                           or e is Ellipsis)):
            out.append(e)
        else:
            raise TypeError(f"invalid index entry {e!r}")
    return tuple(out)


def index_tuple(idx_list: Sequence[Entry], values: Sequence[Any], shape: Sequence[int] = ()) -> Tuple[Any, ...]:
    """The numpy index for idx_list given the values of the node's index inputs (x of shape `shape`)."""
    it = iter(values)

    def value(b: Any) -> Any:
        return int(next(it)) if isinstance(b, ScalarIndex) else b

    out: List[Any] = []
    dim = 0
    for e in idx_list:
        if isinstance(e, Slice):
            out.append(slice(value(e.start), value(e.stop), value(e.step)))
        elif isinstance(e, ArrayIndex):
            a = next(it)
            out.append(a if e.mask else checked_index_array(a, dim, shape))
        elif e is None or e is Ellipsis:
            out.append(e)
        else:
            out.append(checked_int_index(value(e), dim, shape))
        dim += entry_dims(e)
    return tuple(out)


def _out_of_bounds(index: Any, dim: int, shape: Sequence[int]) -> IndexError:
    size = f" with size {shape[dim]}" if dim < len(shape) else ""
    return IndexError(f"index {index} is out of bounds for axis {dim}{size}")


def checked_int_index(v: int, dim: int, shape: Sequence[int] = ()) -> int:
    """v, or IndexError when it is outside int64 (numpy would raise OverflowError, or wrap a uint64)."""
    if not INT64_MIN <= v <= INT64_MAX:
        raise _out_of_bounds(v, dim, shape)
    return v


def checked_index_array(a: Any, dim: int, shape: Sequence[int] = ()) -> Any:
    """Integer index array a; IndexError for uint64 values >= 2**63 (numpy wraps them to negatives)."""
    if getattr(a, "dtype", None) == np.uint64 and a.size and a.max() > INT64_MAX:
        raise _out_of_bounds(a.max(), dim, shape)
    return a


def static_slice_length(entry: Slice, n: Optional[int]) -> Optional[int]:
    """The static length of a slice of a dimension of static length n (None if unknown)."""
    if entry.start is None and entry.stop is None and entry.step in (None, 1, -1):
        return n
    if n is None or any(isinstance(b, ScalarIndex) for b in entry.bounds) or entry.step == 0:
        return None
    return len(range(*slice(*entry.bounds).indices(n)))


def symbolic_slice_length(entry: Slice, n: Len, values: Iterator[Len]) -> Len:
    """The length of a slice of a dimension of length n; symbolic bounds are taken from values."""
    start, stop, step = (next(values) if isinstance(b, ScalarIndex) else b for b in entry.bounds)
    return slice_length(start, stop, step, n)


# ------------------------------------------------------------------------------------------------
# Checks shared by the indexing ops
# ------------------------------------------------------------------------------------------------

def as_index_scalar(op: Op, v: Any, position: int) -> TensorVariable:
    """v as a 0-d integer tensor index input; TypeError naming the op and the input otherwise."""
    v = as_tensor_variable(v)
    if v.ndim != 0 or np.dtype(v.dtype).kind not in "iu":
        raise TypeError(f"{op}: index input {position} must be a 0-d integer tensor, got {v.describe()}")
    return v


def check_index_static(op: Op, x: Variable, idx_list: Sequence[Entry]) -> None:
    """Build-time checks: rank, constant ints against static lengths, constant zero steps."""
    consumed = sum(entry_dims(e) for e in idx_list)
    if consumed > x.ndim:
        raise IndexError(f"{op}: too many indices for tensor: {x.describe()} is {x.ndim}-dimensional, "
                         f"but {consumed} were indexed")
    dim = 0
    for e in idx_list:
        if type(e) is int:
            n = x.type.shape[dim]
            if not INT64_MIN < e <= INT64_MAX or n is not None and not -n <= e < n:
                size = "" if n is None else f" with size {n}"
                raise IndexError(f"{op}: index {e} is out of bounds for axis {dim}{size} "
                                 f"(indexing {x.describe()})")
        elif isinstance(e, Slice) and e.step == 0:
            raise ValueError(f"{op}: slice step cannot be zero (indexing {x.describe()})")
        dim += entry_dims(e)


def reraise_index_error(op: Op, node: Apply, err: Exception) -> None:
    """Raise err's type again with the op and the indexed input named."""
    raise type(err)(f"{op}: {err} (indexing {node.inputs[0].describe()})") from None


def as_update_value(op: Op, x: Variable, y: Any, target_shape: Sequence[Optional[int]],
                    set_instead_of_inc: bool) -> TensorVariable:
    """y as a tensor that can be written (set: any cast, inc: same-kind cast) into x[idx]."""
    y = as_tensor_inputs(x, y)[1] if is_weak_scalar(y) else as_tensor_variable(y)
    if y.ndim > len(target_shape):
        raise TypeError(f"{op}: the value {y.describe()} has more dimensions than the indexed part "
                        f"of {x.describe()} ({len(target_shape)})")
    if y.dtype != x.dtype:
        rule = "unsafe" if set_instead_of_inc else "same_kind"
        if not np.can_cast(y.dtype, x.dtype, rule):
            raise TypeError(f"{op}: cannot add {y.describe()} into {x.describe()} "
                            f"(casting {y.dtype} to {x.dtype} is not same-kind)")
        y = cast(y, x.dtype)
    for ylen, tlen in zip(reversed(y.type.shape), reversed(tuple(target_shape))):
        if ylen is not None and tlen is not None and ylen not in (1, tlen):
            raise ValueError(f"{op}: cannot broadcast {y.describe()} to the indexed shape "
                             f"{tuple(target_shape)} of {x.describe()}")
    return y


def shape_output(node: Apply, lengths: Sequence[Len]) -> Tuple[Variable, ...]:
    """Symbolic output lengths, using the output's static lengths where known."""
    static = node.outputs[0].type.shape
    return tuple(length_variable(s if s is not None else v) for s, v in zip(static, lengths))


# ------------------------------------------------------------------------------------------------
# Subtensor / IncSubtensor
# ------------------------------------------------------------------------------------------------

class Subtensor(Op):
    """x[index] for a basic index (ints, slices, newaxis): a view of x, numpy semantics."""

    __props__ = ("idx_list",)
    view_map = {0: [0]}

    def __init__(self, idx_list: Sequence[Entry]):
        self.idx_list = validate_idx_list(idx_list, allow_arrays=False)

    def __str__(self) -> str:
        return f"Subtensor{{{index_str(self.idx_list)}}}"

    def make_node(self, x: Any, *index_inputs: Any) -> Apply:
        x = as_tensor_variable(x)
        wanted = sum(entry_inputs(e) for e in self.idx_list)
        if len(index_inputs) != wanted:
            raise TypeError(f"{self}: expected {wanted} index input(s), got {len(index_inputs)}")
        idx = [as_index_scalar(self, v, k) for k, v in enumerate(index_inputs)]
        check_index_static(self, x, self.idx_list)
        return Apply(self, [x, *idx], [TensorType(x.dtype, self.static_shape(x.type.shape))()])

    def static_shape(self, xshape: Sequence[Optional[int]]) -> Tuple[Optional[int], ...]:
        """The output's static shape for an input of static shape xshape."""
        out: List[Optional[int]] = []
        dim = 0
        for e in self.idx_list:
            if e is None:
                out.append(1)
                continue
            if isinstance(e, Slice):
                out.append(static_slice_length(e, xshape[dim]))
            dim += 1
        return tuple(out) + tuple(xshape[dim:])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, *values = inputs
        try:
            # the trailing Ellipsis makes an all-integer index give a 0-d view, not a numpy scalar
            out[0][0] = x[index_tuple(self.idx_list, values, x.shape) + (Ellipsis,)]
        except (IndexError, ValueError) as err:
            reraise_index_error(self, node, err)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        xshape = [as_length(s) for s in shapes[0]]
        values = iter([as_bound(v) for v in node.inputs[1:]])
        out: List[Len] = []
        dim = 0
        for e in self.idx_list:
            if e is None:
                out.append(1)
                continue
            if isinstance(e, Slice):
                out.append(symbolic_slice_length(e, xshape[dim], values))
            elif isinstance(e, ScalarIndex):
                next(values)
            dim += 1
        return [shape_output(node, out + xshape[dim:])]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True]] + [[False]] * (len(node.inputs) - 1)

    def grad(self, inputs: Sequence[Variable], grads: Sequence[Variable]) -> List[Variable]:
        return read_grad(IncSubtensor(self.idx_list), inputs, grads[0])

    def R_op(self, inputs: list, eval_points: list) -> list:
        return read_rop(self, inputs, eval_points)

    def incsubtensor_op(self, set_instead_of_inc: bool, inplace: bool = False) -> "IncSubtensor":
        """The op writing into the same index."""
        return IncSubtensor(self.idx_list, set_instead_of_inc, inplace)


class IncSubtensor(Op):
    """x with x[index] set to y (set_instead_of_inc) or increased by y; y broadcasts to x[index].

    A new array unless inplace (then x's buffer is overwritten and returned: destroy_map).
    """

    __props__ = ("idx_list", "set_instead_of_inc", "inplace")

    def __init__(self, idx_list: Sequence[Entry], set_instead_of_inc: bool = False, inplace: bool = False):
        self.idx_list = validate_idx_list(idx_list, allow_arrays=False)
        self.set_instead_of_inc = bool(set_instead_of_inc)
        self.inplace = bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        name = "SetSubtensor" if self.set_instead_of_inc else "IncSubtensor"
        return f"{name}{{{index_str(self.idx_list)}{', inplace' if self.inplace else ''}}}"

    def make_node(self, x: Any, y: Any, *index_inputs: Any) -> Apply:
        x = as_tensor_variable(x)
        read = Subtensor(self.idx_list).make_node(x, *index_inputs)
        y = as_update_value(self, x, y, read.outputs[0].type.shape, self.set_instead_of_inc)
        return Apply(self, [x, y, *read.inputs[1:]], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, y, *values = inputs
        target = x if self.inplace else x.copy()
        try:
            index = index_tuple(self.idx_list, values, x.shape) + (Ellipsis,)
            if self.set_instead_of_inc:
                target[index] = y
            else:
                target[index] += y
        except (IndexError, ValueError) as err:
            reraise_index_error(self, node, err)
        out[0][0] = target

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(shapes[0])]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [True]] + [[False]] * (len(node.inputs) - 2)

    def grad(self, inputs: Sequence[Variable], grads: Sequence[Variable]) -> List[Variable]:
        read, zero = Subtensor(self.idx_list), IncSubtensor(self.idx_list, True)
        return write_grads(self, read, zero, inputs, grads[0])

    def R_op(self, inputs: list, eval_points: list) -> list:
        return write_rop(IncSubtensor(self.idx_list, self.set_instead_of_inc), inputs, eval_points)


# ------------------------------------------------------------------------------------------------
# getitem: a Python index -> entries and inputs -> the right op
# ------------------------------------------------------------------------------------------------

_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
              "boolean arrays are valid indices")


def _convert_bound(b: Any) -> Tuple[Bound, List[Variable]]:
    if b is None:
        return None, []
    if isinstance(b, Variable):
        v = as_tensor_variable(b)
        if v.ndim == 0 and np.dtype(v.dtype).kind in "iu":
            if isinstance(v, Constant):
                return saturate_int64(int(np.asarray(v.data))), []
            return SCALAR, [v]
    elif not isinstance(b, (bool, np.bool_)):
        try:
            return saturate_int64(operator.index(b)), []  # ints, numpy integers, 0-d integer arrays
        except TypeError:
            pass
    raise TypeError(f"slice indices must be integers, 0-d integer tensors or None, got {b!r}")


def _convert_array(a: np.ndarray) -> Tuple[Entry, List[Variable]]:
    if a.dtype.kind == "b":
        return ArrayIndex(a.ndim, True), [constant(a)]
    if a.dtype.kind in "iu" or (a.size == 0 and a.dtype.kind == "f"):
        if a.ndim == 0:
            return int(a), []
        return ArrayIndex(a.ndim), [constant(a.astype("int64"))]
    raise IndexError(f"{_BAD_INDEX}; got an array of dtype {a.dtype}")


def _convert_variable(v: Variable) -> Tuple[Entry, List[Variable]]:
    v = as_tensor_variable(v)
    kind = np.dtype(v.dtype).kind
    if kind in "iu" and v.ndim == 0:
        return (int(np.asarray(v.data)), []) if isinstance(v, Constant) else (SCALAR, [v])
    if kind in "iub":
        return ArrayIndex(v.ndim, kind == "b"), [v]
    raise IndexError(f"arrays used as indices must be of integer (or boolean) type, got {v.describe()}")


def _convert_item(item: Any) -> Tuple[Entry, List[Variable]]:
    """One position of a Python index as an entry and its node inputs."""
    if item is None:
        return None, []
    if isinstance(item, slice):
        bounds, inputs = zip(*(_convert_bound(b) for b in (item.start, item.stop, item.step)))
        return Slice(*bounds), [v for vs in inputs for v in vs]
    if isinstance(item, Variable):
        return _convert_variable(item)
    if type(item) is int:
        return item, []
    if isinstance(item, (bool, np.generic, np.ndarray)):
        return _convert_array(np.asarray(item))
    if isinstance(item, (list, tuple)):
        try:
            a = np.asarray(item)
        except ValueError:
            raise IndexError(f"{_BAD_INDEX}; got the ragged sequence {item!r}") from None
        if a.dtype == object:
            return _convert_variable(as_tensor_variable(item))
        return _convert_array(a)
    raise IndexError(f"{_BAD_INDEX}; got {type(item).__name__} {item!r}")


def normalize_index(x: Variable, index: Any) -> Tuple[Tuple[Entry, ...], List[Variable]]:
    """A Python index as entries (Ellipsis expanded into full slices) and node inputs."""
    items = index if isinstance(index, tuple) else (index,)
    entries: List[Entry] = []
    inputs: List[Variable] = []
    ellipsis_at: Optional[int] = None
    for item in items:
        if item is Ellipsis:
            if ellipsis_at is not None:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis_at = len(entries)
            continue
        entry, ins = _convert_item(item)
        entries.append(entry)
        inputs.extend(ins)
    consumed = sum(entry_dims(e) for e in entries)
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor: {x.describe()} is {x.ndim}-dimensional, "
                         f"but {consumed} were indexed")
    if ellipsis_at is not None:
        fill = [FULL_SLICE] * (x.ndim - consumed)
        entries[ellipsis_at:ellipsis_at] = fill or ([Ellipsis] if _separates(entries, ellipsis_at) else [])
    return tuple(entries), inputs


def _separates(entries: Sequence[Entry], at: int) -> bool:
    """Whether position at lies between two advanced entries (ints count when there is an array)."""
    if not any(isinstance(e, ArrayIndex) for e in entries):
        return False

    def advanced(e: Entry) -> bool:
        return isinstance(e, (ArrayIndex, ScalarIndex)) or type(e) is int

    return any(map(advanced, entries[:at])) and any(map(advanced, entries[at:]))


class AdvancedIndexing:
    """getitem's advanced indexing (array indices), set by advanced_subtensor.py, which builds on this module and
    indexes with getitem in turn (tensor/__init__.py loads it)."""

    getitem: Callable[[TensorVariable, Tuple[Entry, ...], Sequence[Variable]], TensorVariable]


def getitem(x: Any, index: Any) -> TensorVariable:
    """x[index] with numpy semantics: basic indices give a Subtensor (a view), arrays advanced indexing."""
    x = as_tensor_variable(x)
    entries, inputs = normalize_index(x, index)
    if any(isinstance(e, ArrayIndex) for e in entries):
        return AdvancedIndexing.getitem(x, entries, inputs)
    return Subtensor(entries)(x, *inputs)


# ------------------------------------------------------------------------------------------------
# Writes
# ------------------------------------------------------------------------------------------------

def _write(x_indexed: Any, y: Any, set_instead_of_inc: bool, inplace: bool, name: str) -> TensorVariable:
    node = getattr(x_indexed, "owner", None)
    make_op = getattr(node.op, "incsubtensor_op", None) if node is not None else None
    if make_op is None:
        what = x_indexed.describe() if isinstance(x_indexed, Variable) else repr(x_indexed)
        raise TypeError(f"{name}: the first argument must be an indexed tensor such as x[1:, i], "
                        f"got {what}")
    x, *index_inputs = node.inputs
    return make_op(set_instead_of_inc, inplace)(x, y, *index_inputs)


def set_subtensor(x_indexed: Any, y: Any, inplace: bool = False) -> TensorVariable:
    """x with x[idx] replaced by y (broadcast), given x_indexed = x[idx]; repeats: the last write wins."""
    return _write(x_indexed, y, True, inplace, "set_subtensor")


def inc_subtensor(x_indexed: Any, y: Any, inplace: bool = False) -> TensorVariable:
    """x with y (broadcast) added to x[idx], given x_indexed = x[idx]; repeated indices accumulate."""
    return _write(x_indexed, y, False, inplace, "inc_subtensor")


__all__ = ["Subtensor", "IncSubtensor", "getitem", "set_subtensor", "inc_subtensor"]

