"""Reduction loop nests of fused groups: reduce(compute(operands)) over some axes into a fresh output.

The reduced axes innermost and every operand contiguous: one vectorised kernel call per output element
(several accumulators, as numpy's pairwise sum); the last axis kept (a column sum): a row-accumulating kernel
per input row; anything else: a strided nest that reads and writes the output in memory order, or reduces
each output element in a register when the accumulator has another dtype.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import cast_value, compute_type, zero_value
from graphjit.scalar import math as smath

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_VALUE
from graphjit.link.llvm.ir.context import LowerContext, branch, glue_function
from graphjit.link.llvm.ir.layouts import I8P, I64
from graphjit.link.llvm.loops.drivers import emit_driven_row_reduction
from graphjit.link.llvm.loops.nest import (Reduce, check_status, kernel_args, row_args, strided_operands,
                                           unit_rows, values_at, build_kernel, load_value, statically_broadcast,
                                           store_value, strided_nest)
from graphjit.link.llvm.loops.loop_shape import Operand, constant_trip, short_trip, all_full_contiguous, conjunction
from graphjit.link.llvm.ir.arith import product

from graphjit.link.llvm.ir.graph_context import GraphContext

FULL_REDUCTION_STREAMS = 4      # memory streams of a reduction over every axis (loops._reduction_body)


def emit_reduction(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable, red: Reduce,
                   out: ir.Value, shape: Sequence[ir.Value], node: Apply) -> None:
    """out = reduce(compute(operands)) over red.axes of shape (out: fresh, C-contiguous)."""
    b = gctx.builder
    operands, red, out, shape = _squeezed(gctx, operands, red, out, shape)
    ndim = len(shape)
    if red.extremum:
        msg = gctx.message(node, "ValueError", f"zero-size array to reduction operation "
                           f"{'max' if red.op is smath.maximum else 'min'} which has no identity (dimension %lld)")
        for a in red.axes:
            gctx.error_if(b.icmp_signed("==", shape[a], I64(0)), GJ_ERR_VALUE, msg=msg,
                          node=gctx.node_index(node), args=[I64(a)])

    def other_layouts() -> None:
        if ndim >= 2 and ndim - 1 not in red.axes and red.acc_dtype == red.out_dtype and gctx.compact:
            _driven_row_reduction(gctx, name, operands, compute, red, out, shape, node)
        elif ndim >= 2 and ndim - 1 not in red.axes and red.acc_dtype == red.out_dtype:
            _row_reduction(gctx, name, operands, compute, red, out, shape, node)
        else:
            _strided_reduction(gctx, operands, compute, red, out, shape)

    suffix = tuple(range(ndim - len(red.axes), ndim)) == tuple(red.axes)
    if not suffix or statically_broadcast(operands):      # the flat path could (almost) never run
        other_layouts()
        return
    branch(b, all_full_contiguous(gctx, operands, shape),
           lambda: _contiguous_reduction(gctx, name, operands, compute, red, out, shape, node), other_layouts)


def _squeezed(gctx: GraphContext, operands: Sequence[Operand], red: Reduce, out: ir.Value,
              shape: Sequence[ir.Value]) -> tuple:
    """(operands, red, out, shape) without the dimensions every array operand has statically of length 1 (views
    of the operands and of out): a column sum of (n, 1) operands (PyMC's x[:, None] terms) becomes a reduction
    of n contiguous elements, one kernel call, instead of n rows of one element.  Unchanged when nothing drops
    or when every reduced axis would."""
    ndim = len(shape)
    arrays = [o for o in operands if o.is_array]
    drop = [d for d in range(ndim)
            if arrays and all(len(o.static_shape) == ndim and o.static_shape[d] == 1 for o in arrays)]
    keep = [d for d in range(ndim) if d not in drop]
    if not drop or not any(a in keep for a in red.axes):
        return operands, red, out, shape
    squeezed = []
    for o in operands:
        if not o.is_array:
            squeezed.append(o)
            continue
        view = gctx.view(o.struct, o.dtype, [gctx.shape(o.struct, d) for d in keep],
                         [gctx.stride(o.struct, d) for d in keep], gctx.data(o.struct), name="squeezed")
        squeezed.append(Operand(o.dtype, tuple(o.static_shape[d] for d in keep), struct=view,
                                lengths=tuple(o.lengths[d] for d in keep) if o.lengths else None))
    kept_out = [d for d in range(ndim) if d not in red.axes]          # out's dimensions, in the loop's terms
    out_dims = [k for k, d in enumerate(kept_out) if d in keep]
    if len(out_dims) != len(kept_out):
        out = gctx.view(out, red.out_dtype, [gctx.shape(out, k) for k in out_dims],
                        [gctx.stride(out, k) for k in out_dims], gctx.data(out), name="squeezed.out")
    axes = tuple(keep.index(a) for a in red.axes if a in keep)
    return squeezed, dataclasses.replace(red, axes=axes), out, [shape[d] for d in keep]


def _accumulator(red: Reduce) -> Callable:
    """The accumulate function of a row-accumulating kernel: combine into the output row, in its dtype."""
    def accumulate(ctx: LowerContext, acc: ir.Value, value: ir.Value) -> ir.Value:
        return cast_value(ctx.builder, red.combine(ctx, acc, value), red.acc_dtype, red.out_dtype)

    accumulate.key = (red.op, red.acc_dtype, red.out_dtype)  # type: ignore[attr-defined]
    return accumulate


def _fill_identity(gctx: GraphContext, red: Reduce, out: ir.Value, n_kept: int) -> None:
    b = gctx.builder
    out_data = gctx.data(out)
    ident = cast_value(b, red.identity(), red.acc_dtype, red.out_dtype)
    with gctx.for_range(product(b, [gctx.shape(out, d) for d in range(n_kept)]), name="rinit") as i:
        store_value(b, b.gep(out_data, [i], inbounds=True), ident, red.out_dtype)


def _fill_helper(module: ir.Module, dtype: str) -> ir.Function:
    """``void glue.fill.<dtype>(T* data, i64 n, compute value)``: data[0:n] = value (one per dtype and module)."""
    def build(fn: ir.Function) -> None:
        data, n, value = fn.args
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        with ctx.for_range(n, name="i") as i:
            store_value(ctx.builder, ctx.builder.gep(data, [i], inbounds=True), value, dtype)
        ctx.builder.ret_void()

    fnty = ir.FunctionType(ir.VoidType(), [L.llvm_scalar_type(dtype).as_pointer(), I64, compute_type(dtype)])
    return glue_function(module, f"fill.{L.dtype_name(dtype)}", fnty, build)


def _driven_row_reduction(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable,
                          red: Reduce, out: ir.Value, shape: Sequence[ir.Value], node: Apply) -> None:
    """_row_reduction in a compact graph: the rows through the shared elementwise driver (loops/drivers.py)."""
    b = gctx.builder
    n_out = product(b, [gctx.shape(out, d) for d in range(len(shape) - len(red.axes))])
    b.call(_fill_helper(gctx.module, red.out_dtype),
           [gctx.data(out), n_out, cast_value(b, red.identity(), red.acc_dtype, red.out_dtype)])
    emit_driven_row_reduction(gctx, name, operands, compute, _accumulator(red), out, red.out_dtype, shape,
                              red.axes, node)


def _row_reduction(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable, red: Reduce,
                   out: ir.Value, shape: Sequence[ir.Value], node: Apply) -> None:
    """The last axis is kept (e.g. a column sum): out's row accumulates each input row in a vectorised kernel.

    The kernel stores combine(out[k], value) back into out's row (build_kernel's accumulate).  Operands must
    be unit-stride (or statically broadcast) along the last axis, else the strided nest runs.
    """
    b, inner, ndim = gctx.builder, len(shape) - 1, len(shape)
    per_row = [o.is_array and o.static_shape[inner] == 1 for o in operands]
    row_ops = [Operand(o.dtype, o.static_shape, scalar=zero_value(o.dtype)) if r else o
               for o, r in zip(operands, per_row)]

    accumulate = _accumulator(red)
    # a kept last axis of length 1 (the column reduction of an (n, 1) operand): no loop; a few: unrolled
    kernel = build_kernel(gctx, f"{name}.rowacc", row_ops, compute, red.out_dtype, None, accumulate,
                          trip=short_trip(shape[inner]))
    ok = conjunction(b, unit_rows(gctx, [o for o, r in zip(operands, per_row) if o.is_array and not r], shape))

    def rows() -> None:
        out_data = gctx.data(out)
        _fill_identity(gctx, red, out, ndim - len(red.axes))
        bases, strides = strided_operands(gctx, operands, ndim)
        kept = iter(range(ndim - len(red.axes)))
        out_strides = [I64(0) if d in red.axes else gctx.stride(out, next(kept)) for d in range(ndim)]
        bases.append(b.bitcast(out_data, I8P))
        strides.append(out_strides)
        with strided_nest(gctx, shape[:inner], bases, [st[:inner] for st in strides]) as ptrs:
            args = row_args(gctx, operands, per_row, ptrs, red.out_dtype)
            check_status(gctx, b.call(kernel, [I64(0), shape[inner]] + args), node, kernel)

    branch(b, ok, rows, lambda: _strided_reduction(gctx, operands, compute, red, out, shape))


def _contiguous_reduction(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable,
                          red: Reduce, out: ir.Value, shape: Sequence[ir.Value], node: Apply) -> None:
    """Reduced axes are the innermost ones: one kernel call per output element over a flat range."""
    b = gctx.builder
    n_kept = len(shape) - len(red.axes)
    outer, inner = product(b, shape[:n_kept]), product(b, shape[n_kept:])
    # a full reduction is one long range: FULL_REDUCTION_STREAMS memory streams (build_kernel's streams); a short
    # range of a constant length is unrolled (build_kernel's trip)
    kernel = build_kernel(gctx, f"{name}.reduce", operands, compute, red.acc_dtype, red,
                          streams=FULL_REDUCTION_STREAMS if n_kept == 0 else 1, trip=constant_trip(inner))
    acc = gctx.alloca(compute_type(red.acc_dtype), name=f"{name}.acc")
    out_data = gctx.data(out)
    args = kernel_args(gctx, operands)
    with gctx.for_range(outer, name="r") as r:
        start = b.mul(r, inner)
        status = b.call(kernel, [start, b.add(start, inner)] + args + [acc])
        check_status(gctx, status, node, kernel)
        value = cast_value(b, b.load(acc), red.acc_dtype, red.out_dtype)
        store_value(b, b.gep(out_data, [r], inbounds=True), value, red.out_dtype)


def _strided_reduction(gctx: GraphContext, operands: Sequence[Operand], compute: Callable, red: Reduce,
                       out: ir.Value, shape: Sequence[ir.Value]) -> None:
    """Any layout, any axes: initialise out with the identity, then read-modify-write it.

    That walks memory in order but keeps the running value in the output's dtype; when the accumulator is
    another dtype (an explicit acc_dtype), each output element is reduced in a register instead.
    """
    if red.acc_dtype != red.out_dtype:
        _register_reduction(gctx, operands, compute, red, out, shape)
        return
    b = gctx.builder
    ndim = len(shape)
    out_ndim = ndim - len(red.axes)
    out_data = gctx.data(out)
    ident = cast_value(b, red.identity(), red.acc_dtype, red.out_dtype)
    n_out = product(b, [gctx.shape(out, d) for d in range(out_ndim)])
    with gctx.for_range(n_out, name="init") as i:
        store_value(b, b.gep(out_data, [i], inbounds=True), ident, red.out_dtype)
    bases, strides = strided_operands(gctx, operands, ndim)
    bases.append(b.bitcast(out_data, I8P))
    kept = iter(range(out_ndim))
    strides.append([I64(0) if d in red.axes else gctx.stride(out, next(kept)) for d in range(ndim)])
    with strided_nest(gctx, shape, bases, strides) as ptrs:
        b = gctx.builder
        v = compute(gctx, values_at(gctx, operands, ptrs[:-1]))
        optr = b.bitcast(ptrs[-1], L.llvm_scalar_type(red.out_dtype).as_pointer())
        acc = cast_value(b, load_value(b, optr, red.out_dtype), red.out_dtype, red.acc_dtype)
        new = cast_value(b, red.combine(gctx, acc, v), red.acc_dtype, red.out_dtype)
        store_value(b, optr, new, red.out_dtype)


def _register_reduction(gctx: GraphContext, operands: Sequence[Operand], compute: Callable, red: Reduce,
                        out: ir.Value, shape: Sequence[ir.Value]) -> None:
    """Kept dims outside, reduced dims inside: the whole reduction of one output element in acc_dtype."""
    b = gctx.builder
    ndim = len(shape)
    kept = [d for d in range(ndim) if d not in red.axes]
    bases, strides = strided_operands(gctx, operands, ndim)
    bases.append(b.bitcast(gctx.data(out), I8P))
    strides.append([gctx.stride(out, k) for k in range(len(kept))])
    acc = gctx.alloca(compute_type(red.acc_dtype), name="racc")
    with strided_nest(gctx, [shape[d] for d in kept], bases,
                      [[st[d] for d in kept] for st in strides[:-1]] + [strides[-1]]) as ptrs:
        b = gctx.builder
        b.store(red.identity(), acc)
        with strided_nest(gctx, [shape[d] for d in red.axes], ptrs[:-1],
                          [[st[d] for d in red.axes] for st in strides[:-1]]) as inner:
            v = compute(gctx, values_at(gctx, operands, inner))
            b.store(red.combine(gctx, b.load(acc), v), acc)
        optr = b.bitcast(ptrs[-1], L.llvm_scalar_type(red.out_dtype).as_pointer())
        store_value(b, optr, cast_value(b, b.load(acc), red.acc_dtype, red.out_dtype), red.out_dtype)
