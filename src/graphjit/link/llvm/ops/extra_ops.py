"""Lowerings of Argmax/Argmin (first index on ties, the first NaN wins, as numpy), CumOp (cumsum/cumprod
in numpy's accumulator dtype, any axis; axis None scans the input in C order) and CumprodDiff (cumprod's
derivatives: a forward sweep, and for the transposed form a reverse one, no division).

Both walk an outer nest over the kept dimensions and an inner nest over the reduced/scanned ones (one axis,
or every axis for axis None), on byte pointers, so any layout (Fortran order, negative strides) works.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import compute_type
from graphjit.scalar import math as smath
from graphjit.tensor.extra_ops import CumprodDiff
from graphjit.tensor.extra_ops import Argmax, ArgReduce, CumOp

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.rows import advance, byte_ptr, load_as, nest, scatter_strides, store_as, strides_of
from graphjit.link.llvm.ir.arith import product
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext


def can_lower_real(node: Apply) -> bool:
    """Real dtypes other than float16 (complex and float16 keep perform)."""
    return all(np.dtype(v.type.dtype).kind in "biuf" and v.type.dtype != "float16"
               for v in node.inputs + node.outputs)


def _split(ndim: int, axis: int | None) -> tuple[list[int], list[int]]:
    """(kept dims, reduced dims) of an axis-or-None op."""
    inner = list(range(ndim)) if axis is None else [axis]
    return [d for d in range(ndim) if d not in inner], inner


def _better(ctx: LowerContext, dtype: str, v: ir.Value, best: ir.Value, want_max: bool) -> ir.Value:
    """i1: v replaces best (strictly better, or the first NaN)."""
    b = ctx.builder
    kind = np.dtype(dtype).kind
    if kind == "f":
        strict = b.fcmp_ordered(">" if want_max else "<", v, best)
        first_nan = b.and_(b.fcmp_unordered("uno", v, v), b.fcmp_ordered("ord", best, best))
        return b.or_(strict, first_nan)
    cmp = b.icmp_signed if kind == "i" else b.icmp_unsigned
    return cmp(">" if want_max else "<", v, best)


@lowerings.register(ArgReduce, applies=can_lower_real)
def lower_argreduce(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Argmax/Argmin: the int64 index (flat C-order index for axis None) of the first extreme element."""
    b = ctx.builder
    (x,) = inputs
    op, dtype, ndim = node.op, node.inputs[0].type.dtype, node.inputs[0].type.ndim
    kept, inner = _split(ndim, op.axis)
    n_red = product(ctx.builder, [ctx.shape(x, d) for d in inner])
    ctx.raise_if(b.icmp_signed("==", n_red, I64(0)), node, "ValueError",
                 f"{op}: attempt to take the index of an extreme of an empty sequence (%lld elements)", [n_red])
    out = ctx.allocate(node, 0, list(op._out_shape(ctx.shapes(x, ndim), I64(1))))
    so = scatter_strides(ctx, out, ndim, inner, op.keepdims)
    sx = strides_of(ctx, x, ndim)
    ty = compute_type(dtype)
    best, idx, count = ctx.alloca(ty, name="best"), ctx.alloca(I64, name="best_i"), ctx.alloca(I64, name="cnt")
    want_max = isinstance(op, Argmax)
    with nest(ctx, [ctx.shape(x, d) for d in kept], [byte_ptr(ctx, x), byte_ptr(ctx, out)],
              [[sx[d] for d in kept], [so[d] for d in kept]], name="ak") as (xp, op_ptr):
        b.store(load_as(ctx, xp, dtype, dtype), best)
        b.store(I64(0), idx)
        b.store(I64(0), count)
        with nest(ctx, [ctx.shape(x, d) for d in inner], [xp], [[sx[d] for d in inner]], name="ar") as (p,):
            v, cur, i = load_as(ctx, p, dtype, dtype), b.load(best), b.load(count)
            take = _better(ctx, dtype, v, cur, want_max)
            b.store(b.select(take, v, cur), best)
            b.store(b.select(take, i, b.load(idx)), idx)
            b.store(b.add(i, I64(1)), count)
        store_as(ctx, op_ptr, b.load(idx), "int64")
    return [out]


def _c_order_strides(ctx: LowerContext, x: ir.Value, ndim: int, dtype: str) -> list[ir.Value]:
    """Byte strides of a C-contiguous array of x's shape (where axis None writes x's elements)."""
    b = ctx.builder
    strides, step = [], I64(L.itemsize(dtype))
    for d in reversed(range(ndim)):
        strides.append(step)
        step = b.mul(step, ctx.shape(x, d))
    return strides[::-1]


@lowerings.register(CumOp, applies=can_lower_real)
def lower_cumop(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """cumsum/cumprod along axis (sequential, as numpy), in the output's dtype."""
    b = ctx.builder
    (x,) = inputs
    op, in_dtype, ndim = node.op, node.inputs[0].type.dtype, node.inputs[0].type.ndim
    dtype = node.outputs[0].type.dtype
    kept, inner = _split(ndim, op.axis)
    if op.axis is None:
        out = ctx.allocate(node, 0, [ctx.field(x, "nitems") if ndim else I64(1)])
        so = _c_order_strides(ctx, x, ndim, dtype)
    else:
        out = ctx.allocate(node, 0, ctx.shapes(x, ndim))
        so = strides_of(ctx, out, ndim)
    sx = strides_of(ctx, x, ndim)
    ty = compute_type(dtype)
    is_float = np.dtype(dtype).kind == "f"
    is_add = op.mode == smath.add
    ident = ir.Constant(ty, (-0.0 if is_add else 1.0) if is_float else int(not is_add))
    acc = ctx.alloca(ty, name=ctx.name(node, "acc"))
    with nest(ctx, [ctx.shape(x, d) for d in kept], [byte_ptr(ctx, x), byte_ptr(ctx, out)],
              [[sx[d] for d in kept], [so[d] for d in kept]], name="ck") as (xp, op_ptr):
        b.store(ident, acc)
        with nest(ctx, [ctx.shape(x, d) for d in inner], [xp, op_ptr],
                  [[sx[d] for d in inner], [so[d] for d in inner]], name="cs") as (p, q):
            v = load_as(ctx, p, in_dtype, dtype)
            if is_float:
                new = b.fadd(b.load(acc), v) if is_add else b.fmul(b.load(acc), v)
            else:
                new = b.add(b.load(acc), v) if is_add else b.mul(b.load(acc), v)
            b.store(new, acc)
            store_as(ctx, q, new, dtype)
    return [out]


@lowerings.register(CumprodDiff, applies=can_lower_real)
def lower_cumprod_diff(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """CumprodDiff: JVP d_i = x_i d_{i-1} + v_i y_{i-1}; VJP y_{k-1} R_k, R_k = v_k + x_{k+1} R_{k+1}."""
    b = ctx.builder
    x, v = inputs
    op, ndim, dtype = node.op, node.inputs[0].type.ndim, node.outputs[0].type.dtype
    xd, vd = node.inputs[0].type.dtype, node.inputs[1].type.dtype
    for d in range(ndim):
        ctx.raise_if(b.icmp_signed("!=", ctx.shape(x, d), ctx.shape(v, d)), node, "ValueError",
                     f"{op}: x and v shapes differ in dimension {d} (%lld and %lld)",
                     [ctx.shape(x, d), ctx.shape(v, d)])
    out = ctx.allocate(node, 0, ctx.shapes(x, ndim))
    sx, sv, so = strides_of(ctx, x, ndim), strides_of(ctx, v, ndim), strides_of(ctx, out, ndim)
    kept, ax, n = [d for d in range(ndim) if d != op.axis], op.axis, ctx.shape(x, op.axis)
    ty = compute_type(dtype)
    zero, one = ir.Constant(ty, 0.0), ir.Constant(ty, 1.0)
    prod, acc, prev = (ctx.alloca(ty, name=ctx.name(node, s)) for s in ("prod", "acc", "prev"))
    with nest(ctx, [ctx.shape(x, d) for d in kept], [byte_ptr(ctx, x), byte_ptr(ctx, v), byte_ptr(ctx, out)],
              [[sx[d] for d in kept], [sv[d] for d in kept], [so[d] for d in kept]], name="pk") as (xp, vp, op_):
        b.store(one, prod)
        b.store(zero, acc)
        with nest(ctx, [n], [xp, vp, op_], [[sx[ax]], [sv[ax]], [so[ax]]], name="pf") as (p, q, r):
            xi, y_prev = load_as(ctx, p, xd, dtype), b.load(prod)
            if op.transpose:        # the exclusive products y_{k-1}, scaled by R_k in the reverse sweep
                store_as(ctx, r, y_prev, dtype)
            else:
                d = b.fadd(b.fmul(b.load(acc), xi), b.fmul(load_as(ctx, q, vd, dtype), y_prev))
                b.store(d, acc)
                store_as(ctx, r, d, dtype)
            b.store(b.fmul(y_prev, xi), prod)
        if op.transpose:
            _reverse_sweep(ctx, (xp, vp, op_), (sx[ax], sv[ax], so[ax]), n, (xd, vd, dtype), (acc, prev))
    return [out]


def _reverse_sweep(ctx: LowerContext, ptrs: tuple, strides: tuple, n: ir.Value, dtypes: tuple,
                   slots: tuple) -> None:
    """From the end of the axis: R = R * x_{k+1} + v_k, out_k *= R (the pointers walk backwards)."""
    b = ctx.builder
    xd, vd, dtype = dtypes
    acc, prev = slots
    b.store(ir.Constant(compute_type(dtype), 1.0), prev)
    last = b.sub(n, I64(1))
    starts = [advance(ctx, p, last, s) for p, s in zip(ptrs, strides)]
    with nest(ctx, [n], starts, [[b.sub(I64(0), s)] for s in strides], name="pr") as (p, q, r):
        rk = b.fadd(b.fmul(b.load(acc), b.load(prev)), load_as(ctx, q, vd, dtype))
        b.store(rk, acc)
        b.store(load_as(ctx, p, xd, dtype), prev)
        store_as(ctx, r, b.fmul(load_as(ctx, r, dtype, dtype), rk), dtype)
