"""Lowerings of indexing: Subtensor (a view), IncSubtensor, AdvancedSubtensor1 and AdvancedIncSubtensor1.

Bounds are checked at run time (IndexError through ctx.raise_if, numpy's messages); slices follow Python's
``slice.indices`` rules, negative steps included.  The ops' ``lower`` methods are thin and import these lazily.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.advanced_subtensor import AdvancedIncSubtensor1, AdvancedSubtensor1
from graphjit.tensor.subtensor import IncSubtensor, Slice, Subtensor

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ops.gather_kernels import any_out_of_bounds, gather, scatter
from graphjit.link.llvm.ops.shape import add_values, broadcast_view, copy_cast, load_int, offset_ptr, write_values
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext

FALSE = ir.Constant(ir.IntType(1), 0)


# ---------------------------------------------------------------- basic indices

_INT64_MAX = I64(2 ** 63 - 1)


class IndexValue:
    """An integer index input as i64, and whether it is a uint64 value >= 2**63 (which i64 shows negative)."""

    def __init__(self, value: ir.Value, huge: ir.Value = FALSE):
        self.value, self.huge = value, huge

    def as_bound(self, b: ir.IRBuilder) -> ir.Value:
        """As a slice bound: a huge value saturates to 2**63 - 1 (the same slice)."""
        return self.value if self.huge is FALSE else b.select(self.huge, _INT64_MAX, self.value)


def index_value(ctx: LowerContext, arr: ir.Value, dtype: str, index: ir.Value | None = None) -> IndexValue:
    """Element [index] of an integer index array (or a 0-d index) as an IndexValue."""
    v = load_int(ctx, arr, dtype, index)
    if dtype != "uint64":
        return IndexValue(v)
    return IndexValue(v, ctx.builder.icmp_signed("<", v, I64(0)))


def _wrap_index(ctx: GraphContext, node: Apply, idx: IndexValue, n: ir.Value, axis: int) -> ir.Value:
    """idx with a negative value counted from the end; IndexError when out of [-n, n)."""
    b = ctx.builder
    wrapped = b.select(b.icmp_signed("<", idx.value, I64(0)), b.add(idx.value, n), idx.value)
    bad = b.icmp_unsigned(">=", wrapped, n)          # one test in the hot path: negative wraps to huge
    if idx.huge is not FALSE:
        bad = b.or_(bad, idx.huge)
    with b.if_then(bad, likely=False):
        if idx.huge is not FALSE:
            ctx.raise_if(idx.huge, node, "IndexError", f"index %llu is out of bounds for axis {axis} with size "
                         "%lld", [idx.value, n])
        ctx.raise_if(bad, node, "IndexError", f"index %lld is out of bounds for axis {axis} with size %lld",
                     [idx.value, n])
    return wrapped


def first_bad_index(ctx: GraphContext, node: Apply, ilist: ir.Value, dtype: str, n: ir.Value, axis: int) -> None:
    """IndexError as _wrap_index for the first out-of-bounds entry of the int vector ilist: a branch-free
    (vectorisable) pass finds whether there is one, a scalar pass only then words the error."""
    b = ctx.builder
    m = ctx.shape(ilist, 0)
    bad = any_out_of_bounds(ctx, ctx.data_bytes(ilist), ctx.stride(ilist, 0), m, n, dtype)
    with b.if_then(bad, likely=False):
        with ctx.for_range(m, name="which") as i:
            _wrap_index(ctx, node, index_value(ctx, ilist, dtype, i), n, axis)


def wrap_unchecked(b: ir.IRBuilder, v: ir.Value, n: ir.Value) -> ir.Value:
    """A checked index v counted from the end when negative."""
    return b.select(b.icmp_signed("<", v, I64(0)), b.add(v, n), v)


def _clamp(b: ir.IRBuilder, v: ir.Value, n: ir.Value, low: ir.Value, high: ir.Value) -> ir.Value:
    """Python's slice-bound rule: negative counts from the end, then clamp into [low, high]."""
    neg = b.icmp_signed("<", v, I64(0))
    from_end = b.add(v, n)
    lo_ok = b.select(b.icmp_signed("<", from_end, low), low, from_end)
    hi_ok = b.select(b.icmp_signed(">", v, high), high, v)
    return b.select(neg, lo_ok, hi_ok)


def _slice(ctx: GraphContext, node: Apply, entry: Any, n: ir.Value, values: Iterator) -> tuple:
    """(start, length, step) of a Slice entry on a dimension of length n (ValueError on a zero step)."""
    b = ctx.builder
    start, stop, step = (next(values).as_bound(b) if not (e is None or isinstance(e, int)) else e
                         for e in entry.bounds)
    step = I64(1) if step is None else I64(step) if isinstance(step, int) else step
    if not isinstance(step, ir.Constant):
        ctx.raise_if(b.icmp_signed("==", step, I64(0)), node, "ValueError", "slice step cannot be zero")
    pos = b.icmp_signed(">", step, I64(0))
    low = b.select(pos, I64(0), I64(-1))
    high = b.select(pos, n, b.sub(n, I64(1)))
    start = b.select(pos, I64(0), b.sub(n, I64(1))) if start is None else \
        _clamp(b, I64(start) if isinstance(start, int) else start, n, low, high)
    stop = b.select(pos, n, I64(-1)) if stop is None else \
        _clamp(b, I64(stop) if isinstance(stop, int) else stop, n, low, high)
    span = b.select(pos, b.sub(stop, start), b.sub(start, stop))
    # |step| as unsigned (right for step = -2**63), and (span - 1) / |step| + 1: no overflow for huge steps
    mag = b.select(pos, step, b.neg(step))
    length = b.add(b.udiv(b.sub(span, I64(1)), mag), I64(1))
    length = b.select(b.icmp_signed(">", span, I64(0)), length, I64(0))
    return start, length, step


def subtensor_view(ctx: GraphContext, node: Apply, x: ir.Value, ndim: int, dtype: str, idx_list: Sequence[Any],
                   index_values: Sequence[ir.Value]) -> tuple:
    """(view, shape) of x[idx_list] given the symbolic index entries' i64 values."""
    b = ctx.builder
    values = iter(index_values)
    offset, shape, strides, dim = I64(0), [], [], 0
    for e in idx_list:
        if e is None:
            shape.append(I64(1))
            strides.append(I64(0))
            continue
        n, s = ctx.shape(x, dim), ctx.stride(x, dim)
        if isinstance(e, Slice):
            start, length, step = _slice(ctx, node, e, n, values)
            start = b.select(b.icmp_signed("==", length, I64(0)), I64(0), start)
            offset = b.add(offset, b.mul(start, s))
            shape.append(length)
            strides.append(b.mul(s, step))
        else:
            idx = IndexValue(I64(e)) if isinstance(e, int) else next(values)
            offset = b.add(offset, b.mul(_wrap_index(ctx, node, idx, n, dim), s))
        dim += 1
    for d in range(dim, ndim):
        shape.append(ctx.shape(x, d))
        strides.append(ctx.stride(x, d))
    data = offset_ptr(ctx, ctx.data(x), offset)
    return ctx.view(x, dtype, shape, strides, data, name=ctx.name(node, "sub")), shape


def _index_values(ctx: LowerContext, node: Apply, inputs: Sequence[ir.Value], first: int) -> list[IndexValue]:
    out = []
    for i in range(first, len(inputs)):
        var = node.inputs[i]
        data = getattr(var, "data", None)
        if data is not None and np.ndim(data) == 0:   # a constant (e.g. after constant folding)
            v = int(np.asarray(data))
            out.append(IndexValue(I64(v - 2 ** 64 if v > 2 ** 63 - 1 else v),
                                  ir.Constant(ir.IntType(1), int(v > 2 ** 63 - 1))))
        else:
            out.append(index_value(ctx, inputs[i], var.type.dtype))
    return out


@lowerings.register(Subtensor, complex=True)
def lower_subtensor(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x[ints, slices, newaxis]: a view with shifted data and scaled strides; IndexError out of bounds."""
    x = node.inputs[0]
    view, _ = subtensor_view(ctx, node, inputs[0], x.type.ndim, x.type.dtype, node.op.idx_list,
                             _index_values(ctx, node, inputs, 1))
    return [view]


def _write_target(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> tuple:
    """(the array written: x itself when inplace, else a fresh copy; the value to return)."""
    x = node.inputs[0]
    if node.op.inplace:
        return inputs[0], inputs[0]
    shape = ctx.shapes(inputs[0], x.type.ndim)
    out = ctx.allocate(node, 0, shape)
    copy_cast(ctx, node, inputs[0], x.type.dtype, out, x.type.dtype, shape, "copy")
    return out, out


@lowerings.register(IncSubtensor, complex=True)
def lower_inc_subtensor(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x with x[index] set to / increased by y (broadcast); writes into x only when inplace."""
    x, y = node.inputs[:2]
    dtype = x.type.dtype
    index_values = _index_values(ctx, node, inputs, 2)
    target, result = _write_target(ctx, node, inputs)
    view, shape = subtensor_view(ctx, node, target, x.type.ndim, dtype, node.op.idx_list, index_values)
    src = broadcast_view(ctx, node, inputs[1], y.type.dtype, y.type.ndim, shape)
    write_values(ctx, view, dtype, shape, src, y.type.dtype, None if node.op.set_instead_of_inc else add_values)
    return [result]


# ---------------------------------------------------------------- int vector on axis 0

def _row(ctx: GraphContext, node: Apply, arr: ir.Value, dtype: str, ndim: int, i: ir.Value, stride0: ir.Value,
         what: str) -> ir.Value:
    """A view of arr[i] (the ndim-1 trailing dimensions), stride0 being the step of axis 0."""
    shape = [ctx.shape(arr, d) for d in range(1, ndim)]
    strides = [ctx.stride(arr, d) for d in range(1, ndim)]
    data = offset_ptr(ctx, ctx.data(arr), ctx.builder.mul(i, stride0))
    return ctx.view(arr, dtype, shape, strides, data, name=ctx.name(node, what))


@lowerings.register(AdvancedSubtensor1)
def lower_advanced_subtensor1(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x[ilist] along axis 0 (negatives wrap; IndexError out of bounds): a new array."""
    b = ctx.builder
    x, ilist = inputs
    xvar, ivar = node.inputs
    ndim, dtype, idtype = xvar.type.ndim, xvar.type.dtype, ivar.type.dtype
    n, m = ctx.shape(x, 0), ctx.shape(ilist, 0)
    first_bad_index(ctx, node, ilist, idtype, n, 0)
    out = ctx.allocate(node, 0, [m] + [ctx.shape(x, d) for d in range(1, ndim)])
    xs0, os0 = ctx.stride(x, 0), ctx.stride(out, 0)
    if ndim == 1:
        gather(ctx, ctx.data_bytes(x), xs0, ctx.data_bytes(ilist), ctx.stride(ilist, 0), ctx.data(out), m, n,
               dtype, idtype)
        return [out]
    with ctx.for_range(m, name="take") as i:
        idx = wrap_unchecked(b, load_int(ctx, ilist, idtype, i), n)
        src = _row(ctx, node, x, dtype, ndim, idx, xs0, "src")
        dst = _row(ctx, node, out, dtype, ndim, i, os0, "dst")
        copy_cast(ctx, node, src, dtype, dst, dtype, ctx.shapes(src, ndim - 1), "row")
    return [out]


@lowerings.register(AdvancedIncSubtensor1)
def lower_advanced_inc_subtensor1(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x with x[ilist] set to / increased by y; repeated indices accumulate (numpy.add.at)."""
    b = ctx.builder
    xvar, yvar, ivar = node.inputs
    ndim, dtype, ydtype = xvar.type.ndim, xvar.type.dtype, yvar.type.dtype
    ilist = inputs[2]
    m, n = ctx.shape(ilist, 0), ctx.shape(inputs[0], 0)
    inplace_1d = ndim == 1 and node.op.inplace
    if ndim > 1 or inplace_1d:               # every index first: nothing written into x on an error
        first_bad_index(ctx, node, ilist, ivar.type.dtype, n, 0)
    target, result = _write_target(ctx, node, inputs)
    shape = [m] + [ctx.shape(target, d) for d in range(1, ndim)]
    src = broadcast_view(ctx, node, inputs[1], ydtype, yvar.type.ndim, shape)
    combine = None if node.op.set_instead_of_inc else add_values
    ts0, ys0 = ctx.stride(target, 0), ctx.stride(src, 0)
    if ndim == 1:                           # into a copy: checked as it goes (one pass over the indices)
        bad = scatter(ctx, ctx.data_bytes(target), ts0, ctx.data_bytes(ilist), ctx.stride(ilist, 0),
                      ctx.data_bytes(src), ys0, m, n, dtype, ydtype, ivar.type.dtype, combine, not inplace_1d)
        if not inplace_1d:
            with b.if_then(b.icmp_signed(">=", bad, I64(0)), likely=False):
                _wrap_index(ctx, node, index_value(ctx, ilist, ivar.type.dtype, bad), n, 0)
        return [result]
    with ctx.for_range(m, name="put") as i:
        idx = wrap_unchecked(b, load_int(ctx, ilist, ivar.type.dtype, i), n)
        dst = _row(ctx, node, target, dtype, ndim, idx, ts0, "dst")
        row = _row(ctx, node, src, ydtype, ndim, i, ys0, "yrow")
        write_values(ctx, dst, dtype, shape[1:], row, ydtype, combine)
    return [result]


__all__ = ["subtensor_view", "lower_subtensor", "lower_inc_subtensor", "lower_advanced_subtensor1",
           "lower_advanced_inc_subtensor1", "L"]
