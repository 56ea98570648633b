"""Lowerings of the general advanced index: AdvancedSubtensor (a gather into a new array) and AdvancedIncSubtensor
(set: the last write wins; inc: repeated indices accumulate, numpy.add.at).

The index is resolved at run time into a *plan*: a byte offset into x (slice starts and integer entries), the
basic dimensions (slices, newaxis, the dimensions no entry names) with their lengths and strides, and the index
arrays broadcast together (a boolean mask becomes a 1-d array of byte offsets, counted first then filled: the
output length is data-dependent). The gather and the writes then loop over the broadcast shape, each step a
strided block of the basic dimensions. Every index is checked (IndexError as numpy) before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor, index_layout
from graphjit.tensor.subtensor import ArrayIndex, Slice

from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ops.indexing import IndexValue, _slice, _wrap_index, _write_target, index_value
from graphjit.link.llvm.ops.shape import (add_values, broadcast_view, copy_cast, load_value, offset_ptr,
                                          store_value, write_values)
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext


@dataclass
class _Array:
    """One index array of the broadcast: its struct, dtype and the x dimension it indexes (None: mask offsets)."""

    struct: ir.Value
    dtype: str
    ndim: int
    axis: int | None = None
    length: ir.Value | None = None      # x's length along axis
    stride: ir.Value | None = None      # x's byte stride along axis
    bstrides: list = field(default_factory=list)


@dataclass
class _Plan:
    """x[index] resolved: data offset, basic dimensions (before / after the broadcast ones), index arrays."""

    offset: ir.Value
    before: list        # (length, stride) of the basic dimensions placed before the broadcast ones
    after: list
    arrays: list
    bshape: list

    @property
    def shape(self) -> list:
        """The indexed part's shape: before + broadcast + after."""
        return [n for n, _ in self.before] + list(self.bshape) + [n for n, _ in self.after]

    @property
    def basic(self) -> list:
        """(length, stride) of every basic dimension, in output order."""
        return self.before + self.after


def _scalar(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], i: int) -> IndexValue:
    """The 0-d integer index input i (a folded constant specialised at compile time)."""
    var = node.inputs[i]
    data = getattr(var, "data", None)
    if data is not None and np.ndim(data) == 0:
        v = int(np.asarray(data))
        return IndexValue(I64(v - 2 ** 64 if v > 2 ** 63 - 1 else v), ir.Constant(ir.IntType(1), int(v > 2 ** 63 - 1)))
    return index_value(ctx, inputs[i], var.type.dtype)


def _mask_offsets(ctx: GraphContext, node: Apply, x: ir.Value, mask: ir.Value, ndim: int, dim: int,
                  tag: str) -> ir.Value:
    """A 1-d int64 array of the byte offsets in x of the mask's true elements (C order); IndexError on a
    mask whose shape is not x's along the dimensions it covers."""
    b = ctx.builder
    shape = ctx.shapes(mask, ndim)
    for j, m in enumerate(shape):
        n = ctx.shape(x, dim + j)
        ctx.raise_if(b.icmp_signed("!=", n, m), node, "IndexError",
                     f"boolean index did not match indexed array along axis {dim + j}; size of axis is %lld but "
                     "size of corresponding boolean axis is %lld", [n, m])
    count = ctx.alloca(I64, name=ctx.name(node, f"{tag}.count"))
    b.store(I64(0), count)
    with ctx.loop_nest(shape, name=f"{tag}c") as idx:
        hit = b.zext(b.icmp_unsigned("!=", b.load(ctx.element_ptr(mask, idx)), ir.Constant(ir.IntType(8), 0)), I64)
        b.store(b.add(b.load(count), hit), count)
    offsets = ctx.temp_array(node, "int64", [b.load(count)], tag)
    b.store(I64(0), count)
    strides = [ctx.stride(x, dim + j) for j in range(ndim)]
    with ctx.loop_nest(shape, name=f"{tag}f") as idx:
        with b.if_then(b.icmp_unsigned("!=", b.load(ctx.element_ptr(mask, idx)), ir.Constant(ir.IntType(8), 0))):
            pos = b.load(count)
            off = I64(0)
            for i, s in zip(idx, strides):
                off = b.add(off, b.mul(i, s))
            b.store(off, b.gep(ctx.data(offsets), [pos]))
            b.store(b.add(pos, I64(1)), count)
    return offsets


def _broadcast(ctx: GraphContext, node: Apply, arrays: list) -> list:
    """The broadcast shape of the index arrays (IndexError as numpy when they do not broadcast); sets bstrides."""
    b = ctx.builder
    nd = max((a.ndim for a in arrays), default=0)
    bshape = [I64(1)] * nd
    for a in arrays:
        pad = nd - a.ndim
        for d in range(a.ndim):
            n, cur = ctx.shape(a.struct, d), bshape[pad + d]
            if not (isinstance(cur, ir.Constant) and cur.constant == 1):
                bad = b.and_(b.icmp_signed("!=", n, cur), b.and_(b.icmp_signed("!=", n, I64(1)),
                                                                  b.icmp_signed("!=", cur, I64(1))))
                ctx.raise_if(bad, node, "IndexError", "shape mismatch: indexing arrays could not be broadcast "
                             "together (lengths %lld and %lld in dimension %lld)", [cur, n, I64(pad + d)])
                n = b.select(b.icmp_signed("==", cur, I64(1)), n, cur)
            bshape[pad + d] = n
    for a in arrays:
        pad = nd - a.ndim
        a.bstrides = [None] * pad + [b.select(b.icmp_signed("==", ctx.shape(a.struct, d), I64(1)), I64(0),
                                              ctx.stride(a.struct, d)) for d in range(a.ndim)]
    return bshape


def _resolve(ctx: GraphContext, node: Apply, x: ir.Value, ndim: int, inputs: Sequence[ir.Value],
             first: int) -> _Plan:
    """The plan of x[idx_list] (index inputs from inputs[first]); checks slices, integers, masks, broadcast."""
    b = ctx.builder
    before, advanced, after = index_layout(node.op.idx_list, ndim)
    offset = I64(0)

    def basic(item: Any) -> tuple:
        nonlocal offset
        entry, k, dim = item
        if entry is None:
            return I64(1), I64(0)
        n, s = ctx.shape(x, dim), ctx.stride(x, dim)
        bounds = iter([_scalar(ctx, node, inputs, first + k + j) for j in range(entry.n_inputs)])
        start, length, step = _slice(ctx, node, entry, n, bounds)
        start = b.select(b.icmp_signed("==", length, I64(0)), I64(0), start)
        offset = b.add(offset, b.mul(start, s))
        return length, b.mul(s, step)

    plan_before, plan_after = [basic(it) for it in before], [basic(it) for it in after]
    arrays = []
    for entry, k, dim in advanced:
        if isinstance(entry, ArrayIndex) and entry.mask:
            offsets = _mask_offsets(ctx, node, x, inputs[first + k], entry.ndim, dim, f"mask{k}")
            arrays.append(_Array(offsets, "int64", 1))
        elif isinstance(entry, ArrayIndex):
            arrays.append(_Array(inputs[first + k], node.inputs[first + k].type.dtype, entry.ndim, dim,
                                 ctx.shape(x, dim), ctx.stride(x, dim)))
        else:
            idx = IndexValue(I64(entry)) if isinstance(entry, int) else _scalar(ctx, node, inputs, first + k)
            offset = b.add(offset, b.mul(_wrap_index(ctx, node, idx, ctx.shape(x, dim), dim), ctx.stride(x, dim)))
    return _Plan(offset, plan_before, plan_after, arrays, _broadcast(ctx, node, arrays))


def _element_offset(ctx: GraphContext, node: Apply, plan: _Plan, bidx: Sequence[ir.Value], check: bool) -> ir.Value:
    """The byte offset in x of the basic block at broadcast index bidx (IndexError out of bounds if check)."""
    b = ctx.builder
    nd = len(bidx)
    off = plan.offset
    for a in plan.arrays:
        pos = I64(0)
        for d in range(nd - a.ndim, nd):
            pos = b.add(pos, b.mul(bidx[d], a.bstrides[d]))
        ptr = offset_ptr(ctx, ctx.data(a.struct), pos)
        if a.axis is None:
            off = b.add(off, b.load(ptr))
            continue
        v = _load(ctx, ptr, a.dtype)
        if check:
            huge = b.icmp_signed("<", v, I64(0)) if a.dtype == "uint64" else ir.Constant(ir.IntType(1), 0)
            idx = _wrap_index(ctx, node, IndexValue(v, huge), a.length, a.axis)
        else:
            idx = b.select(b.icmp_signed("<", v, I64(0)), b.add(v, a.length), v)
        off = b.add(off, b.mul(idx, a.stride))
    return off


def _load(ctx: GraphContext, ptr: ir.Value, dtype: str) -> ir.Value:
    """An integer index element as i64 (sign- or zero-extended as its dtype)."""
    b = ctx.builder
    v = b.load(ptr)
    if v.type.width == 64:
        return v
    return b.zext(v, I64) if np.dtype(dtype).kind == "u" else b.sext(v, I64)


def _block(ctx: GraphContext, node: Apply, arr: ir.Value, dtype: str, offset: ir.Value, dims: list,
           tag: str) -> ir.Value:
    """A view of arr's memory at offset bytes with the given (length, stride) dimensions."""
    data = offset_ptr(ctx, ctx.data(arr), offset)
    return ctx.view(arr, dtype, [n for n, _ in dims], [s for _, s in dims], data, name=ctx.name(node, tag))


def _out_offset(ctx: GraphContext, arr: ir.Value, first: int, bidx: Sequence[ir.Value]) -> ir.Value:
    """The byte offset of broadcast index bidx in arr, whose broadcast dimensions start at first."""
    b = ctx.builder
    off = I64(0)
    for d, i in enumerate(bidx):
        off = b.add(off, b.mul(i, ctx.stride(arr, first + d)))
    return off


@lowerings.register(AdvancedSubtensor)
def lower_advanced_subtensor(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x[advanced index]: a new array; IndexError as numpy on a bad index."""
    b = ctx.builder
    xvar = node.inputs[0]
    dtype, x = xvar.type.dtype, inputs[0]
    plan = _resolve(ctx, node, x, xvar.type.ndim, inputs, 1)
    shape = plan.shape
    out = ctx.allocate(node, 0, shape)
    nb, nB = len(plan.before), len(plan.bshape)
    out_basic = [(n, ctx.stride(out, d)) for d, n in enumerate(shape) if not nb <= d < nb + nB]
    with ctx.loop_nest(plan.bshape, name="gather") as bidx:
        src_off = _element_offset(ctx, node, plan, bidx, check=True)
        dst_off = _out_offset(ctx, out, nb, bidx)
        if not plan.basic:
            src = offset_ptr(ctx, ctx.data(x), src_off)
            b.store(b.load(src), offset_ptr(ctx, ctx.data(out), dst_off))
        else:
            src = _block(ctx, node, x, dtype, src_off, plan.basic, "src")
            dst = _block(ctx, node, out, dtype, dst_off, out_basic, "dst")
            copy_cast(ctx, node, src, dtype, dst, dtype, [n for n, _ in plan.basic], "block")
    return [out]


@lowerings.register(AdvancedIncSubtensor)
def lower_advanced_inc_subtensor(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x with x[advanced index] set to / increased by y (broadcast); inc accumulates on repeated indices."""
    b = ctx.builder
    xvar, yvar = node.inputs[:2]
    dtype, ydtype = xvar.type.dtype, yvar.type.dtype
    target, result = _write_target(ctx, node, inputs)      # x itself when inplace: nothing written yet
    plan = _resolve(ctx, node, target, xvar.type.ndim, inputs, 2)
    shape = plan.shape
    src = broadcast_view(ctx, node, inputs[1], ydtype, yvar.type.ndim, shape)
    with ctx.loop_nest(plan.bshape, name="check") as bidx:    # every index before the first write
        _element_offset(ctx, node, plan, bidx, check=True)
    combine = None if node.op.set_instead_of_inc else add_values
    nb, nB = len(plan.before), len(plan.bshape)
    src_basic = [(n, ctx.stride(src, d)) for d, n in enumerate(shape) if not nb <= d < nb + nB]
    with ctx.loop_nest(plan.bshape, name="scatter") as bidx:
        dst_off = _element_offset(ctx, node, plan, bidx, check=False)
        src_off = _out_offset(ctx, src, nb, bidx)
        if not plan.basic:
            dptr = offset_ptr(ctx, ctx.data(target), dst_off)
            v = cast_value(b, load_value(b, offset_ptr(ctx, ctx.data(src), src_off), ydtype), ydtype, dtype)
            if combine is not None:
                v = combine(b, load_value(b, dptr, dtype), v, dtype)
            store_value(b, dptr, v, dtype)
        else:
            dst = _block(ctx, node, target, dtype, dst_off, plan.basic, "dst")
            row = _block(ctx, node, src, ydtype, src_off, src_basic, "yblock")
            write_values(ctx, dst, dtype, [n for n, _ in plan.basic], row, ydtype, combine)
    return [result]


__all__ = ["lower_advanced_subtensor", "lower_advanced_inc_subtensor"]
