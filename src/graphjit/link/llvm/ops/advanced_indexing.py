"""Lowerings of the general advanced index: AdvancedSubtensor (a gather into a new array) and AdvancedIncSubtensor
(set: the last write wins; inc: repeated indices accumulate, numpy.add.at).

The index is resolved at run time into a *plan*: a byte offset into x (slice starts and integer entries), the
basic dimensions (slices, newaxis, the dimensions no entry names) with their lengths and strides, and the index
arrays broadcast together (a boolean mask becomes a 1-d array of byte offsets, counted first then filled: the
output length is data-dependent). Every index is checked (IndexError as numpy) before anything is written; the
gather or the writes then run in one kernel (advanced_kernels.py) over the indexed shape in C order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor, index_layout
from graphjit.tensor.subtensor import ArrayIndex

from graphjit.link.llvm.ir.context import TRUE
from graphjit.link.llvm.ir.layouts import I8P, I64
from graphjit.link.llvm.ops.advanced_kernels import LoopLayout, index_loop, mask_row_count, mask_row_fill
from graphjit.link.llvm.ops.gather_kernels import any_out_of_bounds, load_index
from graphjit.link.llvm.ops.indexing import IndexValue, _slice, _wrap_index, _write_target, index_value
from graphjit.link.llvm.ops.shape import broadcast_view
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
    """A 1-d int64 array of the byte offsets in x of the mask's true elements (C order), counted first, then
    allocated and filled; IndexError on a mask whose shape is not x's along the dimensions it covers."""
    b = ctx.builder
    shape = ctx.shapes(mask, ndim)
    for j, m in enumerate(shape):
        n = ctx.shape(x, dim + j)
        ctx.raise_if(b.icmp_signed("!=", n, m), node, "IndexError",
                     f"boolean index did not match indexed array along axis {dim + j}; size of axis is %lld but "
                     "size of corresponding boolean axis is %lld", [n, m])
    if ndim == 0:                           # x[True] / x[False]: one offset (0) or none
        hit = b.zext(b.icmp_unsigned("!=", b.load(ctx.data(mask)), ir.Constant(ir.IntType(8), 0)), I64)
        offsets = ctx.temp_array(node, "int64", [hit], tag)
        with b.if_then(b.icmp_signed(">", hit, I64(0))):
            b.store(I64(0), ctx.data(offsets))
        return offsets
    count = ctx.alloca(I64, name=ctx.name(node, f"{tag}.count"))
    b.store(I64(0), count)
    rows, last = shape[:-1], shape[-1]
    mstride, xstep = ctx.stride(mask, ndim - 1), ctx.stride(x, dim + ndim - 1)
    with ctx.loop_nest(rows, name=f"{tag}c") as idx:     # rows in the glue, each row in a kernel
        row = b.bitcast(ctx.element_ptr(mask, idx + [I64(0)]), I8P)
        b.store(b.add(b.load(count), mask_row_count(ctx, row, mstride, last)), count)
    offsets = ctx.temp_array(node, "int64", [b.load(count)], tag)
    b.store(I64(0), count)
    with ctx.loop_nest(rows, name=f"{tag}f") as idx:
        row = b.bitcast(ctx.element_ptr(mask, idx + [I64(0)]), I8P)
        base = I64(0)
        for j, i in enumerate(idx):
            base = b.add(base, b.mul(i, ctx.stride(x, dim + j)))
        at = b.load(count)
        written = mask_row_fill(ctx, row, mstride, last, b.gep(ctx.data(offsets), [at]), base, xstep)
        b.store(b.add(at, written), count)
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


def _check_arrays(ctx: GraphContext, node: Apply, plan: _Plan) -> None:
    """IndexError (numpy's words) for an integer index out of bounds: every element of every index array is
    tested (a kernel per row), unless the broadcast shape is empty (numpy then reads no index)."""
    b = ctx.builder
    nonempty = TRUE
    for n in plan.bshape:
        nonempty = b.and_(nonempty, b.icmp_signed(">", n, I64(0)))
    with b.if_then(nonempty):
        for a in plan.arrays:
            if a.axis is None:
                continue
            if a.ndim == 0:
                _wrap_index(ctx, node, index_value(ctx, a.struct, a.dtype), a.length, a.axis)
                continue
            shape = ctx.shapes(a.struct, a.ndim)
            bad = ctx.alloca(ir.IntType(1), name=ctx.name(node, "bad"))
            b.store(ir.Constant(ir.IntType(1), 0), bad)
            with ctx.loop_nest(shape[:-1], name="rows") as idx:
                row = b.bitcast(ctx.element_ptr(a.struct, idx + [I64(0)]), I8P)
                found = any_out_of_bounds(ctx, row, ctx.stride(a.struct, a.ndim - 1), shape[-1], a.length, a.dtype)
                b.store(b.or_(b.load(bad), found), bad)
            with b.if_then(b.load(bad), likely=False):          # word the error of the first one
                with ctx.loop_nest(shape, name="which") as idx:
                    v = load_index(b, ctx.element_ptr(a.struct, idx), a.dtype)
                    huge = b.icmp_signed("<", v, I64(0)) if a.dtype == "uint64" else ir.Constant(ir.IntType(1), 0)
                    _wrap_index(ctx, node, IndexValue(v, huge), a.length, a.axis)


def _run(ctx: GraphContext, plan: _Plan, kind: str, dtype: str, dense_dtype: str, indexed: ir.Value,
         dense: ir.Value, dense_strides: Sequence[ir.Value]) -> None:
    """The plan's index loop (advanced_kernels.index_loop) between indexed (x) and dense (out, or y broadcast)."""
    params = ([plan.offset] + [n for n, _ in plan.before] + [s for _, s in plan.before] + list(plan.bshape)
              + [n for n, _ in plan.after] + [s for _, s in plan.after] + list(dense_strides))
    for a in plan.arrays:
        params += a.bstrides[len(a.bstrides) - a.ndim:]
        if a.axis is not None:
            params += [a.length, a.stride]
    layout = LoopLayout(kind, dtype, dense_dtype, len(plan.before), len(plan.bshape), len(plan.after),
                        tuple((a.dtype, a.ndim, a.axis is None) for a in plan.arrays))
    index_loop(ctx, layout, ctx.data_bytes(indexed), ctx.data_bytes(dense),
               [ctx.data_bytes(a.struct) for a in plan.arrays], params)


@lowerings.register(AdvancedSubtensor)
def lower_advanced_subtensor(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x[advanced index]: a new array; IndexError as numpy on a bad index."""
    xvar = node.inputs[0]
    plan = _resolve(ctx, node, inputs[0], xvar.type.ndim, inputs, 1)
    _check_arrays(ctx, node, plan)
    shape = plan.shape
    out = ctx.allocate(node, 0, shape)
    _run(ctx, plan, "read", xvar.type.dtype, xvar.type.dtype, inputs[0], out,
         [ctx.stride(out, d) for d in range(len(shape))])
    return [out]


@lowerings.register(AdvancedIncSubtensor)
def lower_advanced_inc_subtensor(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x with x[advanced index] set to / increased by y (broadcast); inc accumulates on repeated indices."""
    xvar, yvar = node.inputs[:2]
    target, result = _write_target(ctx, node, inputs)      # x itself when inplace: nothing written yet
    plan = _resolve(ctx, node, target, xvar.type.ndim, inputs, 2)
    _check_arrays(ctx, node, plan)                          # every index before the first write
    shape = plan.shape
    src = broadcast_view(ctx, node, inputs[1], yvar.type.dtype, yvar.type.ndim, shape)
    kind = "set" if node.op.set_instead_of_inc else "inc"
    _run(ctx, plan, kind, xvar.type.dtype, yvar.type.dtype, target, src,
         [ctx.stride(src, d) for d in range(len(shape))])
    return [result]


__all__ = ["lower_advanced_subtensor", "lower_advanced_inc_subtensor"]
