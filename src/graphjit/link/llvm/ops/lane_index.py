"""Lowerings of LaneGather (take along an axis) and LaneScatter (zeros, then add along an axis): the gradients
of the sorting ops. Both check the operands' other lengths (ValueError) and every index (IndexError)."""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.lane_index import LaneGather, LaneScatter

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.rows import advance, byte_ptr, const, load_as, nest, store_as, strides_of
from graphjit.link.llvm.ops.extra_ops import can_lower_real
from graphjit.link.llvm.registry import lowerings


def _check_lengths(ctx: GraphContext, node: Apply, a: ir.Value, idx: ir.Value, axis: int, ndim: int,
                   including_axis: bool = False) -> None:
    b = ctx.builder
    for d in range(ndim):
        if d != axis or including_axis:
            la, li = ctx.shape(a, d), ctx.shape(idx, d)
            ctx.raise_if(b.icmp_signed("!=", la, li), node, "ValueError",
                         f"{node.op}: operand lengths differ in dimension {d} (%lld and %lld)", [la, li])


def _checked_index(ctx: GraphContext, node: Apply, p: ir.Value, bound: ir.Value) -> ir.Value:
    b = ctx.builder
    j = load_as(ctx, p, "int64", "int64")
    bad = b.icmp_unsigned(">=", j, bound)
    ctx.raise_if(bad, node, "IndexError", f"{node.op}: index %lld is out of bounds for size %lld", [j, bound])
    return j


@lowerings.register(LaneGather, applies=can_lower_real)
def lower_lane_gather(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """out[..., i, ...] = x[..., idx[..., i, ...], ...]."""
    x, idx = inputs
    ndim, axis, dtype = node.inputs[0].type.ndim, node.op.axis, node.outputs[0].type.dtype
    _check_lengths(ctx, node, x, idx, axis, ndim)
    out = ctx.allocate(node, 0, ctx.shapes(idx, ndim))
    sx, si, so = strides_of(ctx, x, ndim), strides_of(ctx, idx, ndim), strides_of(ctx, out, ndim)
    bound = ctx.shape(x, axis)
    sx_pinned = [I64(0) if d == axis else s for d, s in enumerate(sx)]
    with nest(ctx, ctx.shapes(idx, ndim), [byte_ptr(ctx, x), byte_ptr(ctx, idx), byte_ptr(ctx, out)],
              [sx_pinned, si, so], name="lg") as (xp, ip, op):
        j = _checked_index(ctx, node, ip, bound)
        store_as(ctx, op, load_as(ctx, advance(ctx, xp, j, sx[axis]), dtype, dtype), dtype)
    return [out]


def _can_scatter(node: Apply) -> bool:
    """Real dtypes but bool (whose sum numpy.add.at computes as a logical or)."""
    return can_lower_real(node) and node.outputs[0].type.dtype != "bool"


@lowerings.register(LaneScatter, applies=_can_scatter)
def lower_lane_scatter(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """out = zeros (axis length n); out[..., idx[..., i, ...], ...] += g[..., i, ...]."""
    b = ctx.builder
    g, idx, n = inputs
    ndim, axis, dtype = node.inputs[0].type.ndim, node.op.axis, node.outputs[0].type.dtype
    _check_lengths(ctx, node, g, idx, axis, ndim, including_axis=True)
    length = load_as(ctx, byte_ptr(ctx, n), node.inputs[2].type.dtype, "int64")
    ctx.raise_if(b.icmp_signed("<", length, I64(0)), node, "ValueError", f"{node.op}: negative length %lld",
                 [length])
    shape = [length if d == axis else s for d, s in enumerate(ctx.shapes(g, ndim))]
    out = ctx.allocate(node, 0, shape)
    so = strides_of(ctx, out, ndim)
    with nest(ctx, shape, [byte_ptr(ctx, out)], [so], name="lz") as (op,):
        store_as(ctx, op, const(dtype, 0), dtype)
    sg, si = strides_of(ctx, g, ndim), strides_of(ctx, idx, ndim)
    so_pinned = [I64(0) if d == axis else s for d, s in enumerate(so)]
    with nest(ctx, ctx.shapes(g, ndim), [byte_ptr(ctx, g), byte_ptr(ctx, idx), byte_ptr(ctx, out)],
              [sg, si, so_pinned], name="ls") as (gp, ip, op):
        j = _checked_index(ctx, node, ip, length)
        target = advance(ctx, op, j, so[axis])
        old, v = load_as(ctx, target, dtype, dtype), load_as(ctx, gp, dtype, dtype)
        store_as(ctx, target, b.fadd(old, v) if dtype.startswith("float") else b.add(old, v), dtype)
    return [out]

