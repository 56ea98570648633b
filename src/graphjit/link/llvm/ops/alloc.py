"""Lowerings of the ops that build tensors from lengths or pieces: Alloc, ARange, Eye, MakeVector, Join, Split.

The ops' ``lower`` methods are thin and import these lazily; see docs/lowering.md for the contract.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import cast_value, compute_type
from graphjit.tensor.alloc import ARange, Alloc, Eye
from graphjit.tensor.join import Join, MakeVector, Split

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.nest import emit_elementwise, load_value, store_value
from graphjit.link.llvm.loops.loop_shape import Operand
from graphjit.link.llvm.ops.shape import copy_cast, input_int, load_int, offset_ptr
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext


# ---------------------------------------------------------------- Alloc

@lowerings.register(Alloc, complex=True)
def lower_alloc(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """value broadcast to the given lengths, in a new array (ValueError on negative or unbroadcastable)."""
    b = ctx.builder
    vvar, out_var = node.inputs[0], node.outputs[0]
    dtype, ndim, vnd = out_var.type.dtype, out_var.type.ndim, vvar.type.ndim
    shape = []
    for d in range(ndim):
        n = input_int(ctx, node, inputs, 1 + d)
        ctx.raise_if(b.icmp_signed("<", n, I64(0)), node, "ValueError",
                     "negative length %lld in dimension %lld", [n, I64(d)])
        shape.append(n)
    pad = ndim - vnd
    v = inputs[0]
    vshape, vstrides = [I64(1)] * pad, [I64(0)] * pad
    for d in range(vnd):
        n, want = ctx.shape(v, d), shape[pad + d]
        bad = b.and_(b.icmp_signed("!=", n, I64(1)), b.icmp_signed("!=", n, want))
        ctx.raise_if(bad, node, "ValueError", "cannot broadcast a value of length %lld to length %lld "
                     "in dimension %lld", [n, want, I64(pad + d)])
        vshape.append(n)
        vstrides.append(ctx.stride(v, d))
    out = ctx.allocate(node, 0, shape)
    if all(s == 1 for s in vvar.type.shape):
        op = Operand(dtype, (1,) * ndim, scalar=load_value(b, ctx.data(v), dtype))
    else:
        view = ctx.view(v, dtype, vshape, vstrides, ctx.data(v), name=ctx.name(node, "value"))
        op = Operand(dtype, (1,) * pad + tuple(vvar.type.shape), struct=view)
    emit_elementwise(ctx, ctx.name(node, "fill"), [op], _identity, out, dtype, shape, node, False)
    return [out]


def _identity(ctx: LowerContext, values: list) -> object:
    """The fill's scalar body: the value itself."""
    return values[0]


_identity.key = ("identity",)  # type: ignore[attr-defined]   # fills of one dtype share a kernel


# ---------------------------------------------------------------- ARange and Eye

def _as_float(b: ir.IRBuilder, v: ir.Value, dtype: str) -> ir.Value:
    """A compute value as a double."""
    return cast_value(b, v, dtype, "float64")


@lowerings.register(ARange)
def lower_arange(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy.arange: length ceil((stop - start) / step); values start + i * (second - start) in dtype."""
    b = ctx.builder
    dts = [v.type.dtype for v in node.inputs]
    vals = [load_value(b, ctx.data(p), dt) for p, dt in zip(inputs, dts)]
    start, stop, step = vals
    common = str(np.result_type(*dts))
    calc = common if np.dtype(common).kind == "f" else "float64"
    c = [cast_value(b, v, dt, common) for v, dt in zip(vals, dts)]
    if np.dtype(common).kind == "f":
        zero_step = b.fcmp_ordered("==", c[2], ir.Constant(c[2].type, 0.0))
        span = b.fsub(c[1], c[0])
    else:
        zero_step = b.icmp_signed("==", c[2], ir.Constant(c[2].type, 0))
        span = b.sub(c[1], c[0])
    ctx.raise_if(zero_step, node, "ZeroDivisionError", "arange: step is 0")
    quot = b.fdiv(cast_value(b, span, common, calc), cast_value(b, c[2], common, calc))
    quot = _as_float(b, quot, calc)
    ctx.raise_if(b.fcmp_unordered("uno", quot, quot), node, "ValueError", "arange: cannot compute length")
    ctx.raise_if(b.fcmp_ordered(">", quot, ir.Constant(quot.type, 2.0 ** 62)), node, "ValueError",
                 "arange: maximum allowed size exceeded")
    length = b.fptosi(ctx.call_math("ceil", [b.call(_fmax(ctx), [quot, ir.Constant(quot.type, 0.0)])]), I64)
    out_dtype = node.outputs[0].type.dtype
    out = ctx.allocate(node, 0, [length])
    first = cast_value(b, c[0], common, out_dtype)
    second = c[0]
    second = b.fadd(second, c[2]) if np.dtype(common).kind == "f" else b.add(second, c[2])
    second = cast_value(b, second, common, out_dtype)
    kind = np.dtype(out_dtype).kind
    delta = (b.fsub(second, first) if kind == "f" else b.sub(second, first)) if kind != "b" else None
    data = ctx.data(out)
    with ctx.for_range(length, name="ar") as i:
        if kind == "f":
            v = b.fadd(first, b.fmul(b.sitofp(i, first.type), delta))
        elif kind == "b":
            v = b.select(b.icmp_signed("==", i, I64(0)), first, second)
        else:
            v = b.add(first, b.mul(b.trunc(i, first.type) if first.type.width < 64 else i, delta))
        store_value(b, b.gep(data, [i], inbounds=True), v, out_dtype)
    return [out]


def _fmax(ctx: LowerContext) -> ir.Function:
    return ctx.declare("llvm.maxnum.f64", ir.FunctionType(ir.DoubleType(), [ir.DoubleType()] * 2))


@lowerings.register(Eye)
def lower_eye(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy.eye(n, m, k): zeros with ones on diagonal k (ValueError on a negative n or m)."""
    b = ctx.builder
    n, m, k = (input_int(ctx, node, inputs, i) for i in range(3))
    bad = b.or_(b.icmp_signed("<", n, I64(0)), b.icmp_signed("<", m, I64(0)))
    ctx.raise_if(bad, node, "ValueError", "negative dimensions n=%lld, m=%lld", [n, m])
    dtype = node.outputs[0].type.dtype
    out = ctx.allocate(node, 0, [n, m])
    data = ctx.data(out)
    ty = L.llvm_scalar_type(dtype)
    zero = ir.Constant(ty, 0.0 if L.is_float(dtype) else 0)
    one = ir.Constant(ty, 1.0 if L.is_float(dtype) else 1)
    with ctx.for_range(b.mul(n, m), name="eye0") as i:
        b.store(zero, b.gep(data, [i], inbounds=True))
    with ctx.for_range(n, name="eye1") as i:
        j = b.add(i, k)
        inside = b.and_(b.icmp_signed(">=", j, I64(0)), b.icmp_signed("<", j, m))
        with b.if_then(inside):
            b.store(one, b.gep(data, [b.add(b.mul(i, m), j)], inbounds=True))
    return [out]


# ---------------------------------------------------------------- MakeVector

@lowerings.register(MakeVector)
def lower_make_vector(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A vector of the 0-d inputs (already of the output's dtype)."""
    b = ctx.builder
    dtype = node.outputs[0].type.dtype
    out = ctx.allocate(node, 0, [I64(len(inputs))])
    data = ctx.data(out)
    for i, (p, var) in enumerate(zip(inputs, node.inputs)):
        v = load_value(b, ctx.data(p), var.type.dtype)
        store_value(b, b.gep(data, [I64(i)], inbounds=True), cast_value(b, v, var.type.dtype, dtype), dtype)
    return [out]


# ---------------------------------------------------------------- Join and Split

@lowerings.register(Join, complex=True)
def lower_join(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy.concatenate along a static axis (ValueError when the other lengths differ)."""
    b = ctx.builder
    ndim = node.inputs[0].type.ndim
    axis = node.op.axis % ndim
    dtype = node.outputs[0].type.dtype
    first = ctx.shapes(inputs[0], ndim)
    total = I64(0)
    for j, p in enumerate(inputs):
        for d in range(ndim):
            if d == axis:
                continue
            n = ctx.shape(p, d)
            ctx.raise_if(b.icmp_signed("!=", n, first[d]), node, "ValueError",
                         f"all input dimensions except the join axis {axis} must match: input %lld has "
                         "length %lld, not %lld, in dimension " + str(d), [I64(j), n, first[d]])
        total = b.add(total, ctx.shape(p, axis))
    shape = [total if d == axis else first[d] for d in range(ndim)]
    out = ctx.allocate(node, 0, shape)
    strides = [ctx.stride(out, d) for d in range(ndim)]
    offset = I64(0)
    for j, (p, var) in enumerate(zip(inputs, node.inputs)):
        piece = ctx.shapes(p, ndim)
        dst = ctx.view(out, dtype, piece, strides, offset_ptr(ctx, ctx.data(out), b.mul(offset, strides[axis])),
                       name=ctx.name(node, f"piece{j}"))
        copy_cast(ctx, node, p, var.type.dtype, dst, dtype, piece, f"join{j}")
        offset = b.add(offset, piece[axis])
    return [out]


@lowerings.register(Split)
def lower_split(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Views of x cut along a static axis (ValueError when the sizes do not add up to its length)."""
    b = ctx.builder
    x, splits = inputs
    xvar, svar = node.inputs
    ndim, dtype = xvar.type.ndim, xvar.type.dtype
    axis = node.op.axis % ndim
    n_splits = node.op.n_splits
    got = ctx.shape(splits, 0)
    ctx.raise_if(b.icmp_signed("!=", got, I64(n_splits)), node, "ValueError",
                 f"got %lld split sizes, expected {n_splits}", [got])
    sizes = [load_int(ctx, splits, svar.type.dtype, I64(i)) for i in range(n_splits)]
    total, negative = I64(0), ir.Constant(ir.IntType(1), 0)
    for s in sizes:
        total = b.add(total, s)
        negative = b.or_(negative, b.icmp_signed("<", s, I64(0)))
    length = ctx.shape(x, axis)
    ctx.raise_if(b.or_(negative, b.icmp_signed("!=", total, length)), node, "ValueError",
                 f"split sizes add up to %lld (or one is negative), not to the length %lld of dimension {axis}",
                 [total, length])
    shape, strides = ctx.shapes(x, ndim), [ctx.stride(x, d) for d in range(ndim)]
    outs, offset = [], I64(0)
    for i, s in enumerate(sizes):
        data = offset_ptr(ctx, ctx.data(x), b.mul(offset, strides[axis]))
        piece = [s if d == axis else shape[d] for d in range(ndim)]
        outs.append(ctx.view(x, dtype, piece, strides, data, name=ctx.name(node, f"split{i}")))
        offset = b.add(offset, s)
    return outs


__all__ = ["lower_alloc", "lower_arange", "lower_eye", "lower_make_vector", "lower_join", "lower_split",
           "compute_type"]
