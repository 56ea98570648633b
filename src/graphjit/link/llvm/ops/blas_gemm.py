"""Lowering of Gemm (``beta*z + alpha*dot(x, y)``): one ?gemm accumulating into the result.

The result is a fresh C-contiguous array holding z (broadcast), or, for an in-place Gemm whose buffer the
linker lets it overwrite (driver/inplace_outputs.py's emit_gemm_in_place), z's own buffer: ``emit_gemm_into``
then accumulates straight into it, no temporary product and no copy.  Operands BLAS does not take (layouts,
sizes, k = 0) go through a native loop.
"""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import compute_type
from graphjit.tensor.blas_gemm import Gemm

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ops.blas import Mat, call_gemm, blas_layout
from graphjit.link.llvm.loops.rows import advance, byte_ptr, const, load_as, store_as
from graphjit.link.llvm.ops.shape import copy_cast
from graphjit.link.llvm.registry import lowerings

_INT32_MAX = (1 << 31) - 1


def _matrix(ctx: LowerContext, arr: ir.Value, dtype: str) -> Mat:
    return Mat(byte_ptr(ctx, arr), ctx.shape(arr, 0), ctx.shape(arr, 1), ctx.stride(arr, 0), ctx.stride(arr, 1),
               dtype)


def _native(ctx: LowerContext, node: Apply, a: Mat, b_: Mat, c: Mat, alpha: ir.Value, beta: ir.Value) -> None:
    """C[i, j] = beta*C[i, j] + alpha*sum_p A[i, p]*B[p, j] by loops (layouts BLAS does not take)."""
    b, dt = ctx.builder, c.dtype
    acc = ctx.alloca(compute_type(dt), name=ctx.name(node, "gemm.acc"))
    with ctx.for_range(c.rows, name=ctx.name(node, "gemm.i")) as i:
        arow, crow = advance(ctx, a.ptr, i, a.rs), advance(ctx, c.ptr, i, c.rs)
        with ctx.for_range(c.cols, name=ctx.name(node, "gemm.j")) as j:
            b.store(const(dt, 0), acc)
            bcol = advance(ctx, b_.ptr, j, b_.cs)
            with ctx.for_range(a.cols, name=ctx.name(node, "gemm.p")) as p:
                av = load_as(ctx, advance(ctx, arow, p, a.cs), dt, dt)
                bv = load_as(ctx, advance(ctx, bcol, p, b_.rs), dt, dt)
                b.store(b.fadd(b.load(acc), b.fmul(av, bv)), acc)
            cp = advance(ctx, crow, j, c.cs)
            store_as(ctx, cp, b.fadd(b.fmul(beta, load_as(ctx, cp, dt, dt)), b.fmul(alpha, b.load(acc))), dt)


def _scalars(ctx: LowerContext, inputs: Sequence[ir.Value], dtype: str) -> tuple[ir.Value, ir.Value]:
    """(alpha, beta) loaded from their 0-d structs."""
    return (load_as(ctx, byte_ptr(ctx, inputs[1]), dtype, dtype), load_as(ctx, byte_ptr(ctx, inputs[4]), dtype, dtype))


def check_product(ctx: LowerContext, node: Apply, inputs: Sequence[ir.Value]) -> tuple[Mat, Mat]:
    """The operands as matrices; ValueError when x's columns are not y's rows."""
    dtype = node.outputs[0].type.dtype
    a, b_ = _matrix(ctx, inputs[2], dtype), _matrix(ctx, inputs[3], dtype)
    ctx.raise_if(ctx.builder.icmp_signed("!=", a.cols, b_.rows), node, "ValueError",
                 f"{node.op}: x is (%lld, %lld) but y has %lld rows (shapes not aligned)", [a.rows, a.cols, b_.rows])
    return a, b_


def emit_gemm_into(ctx: LowerContext, node: Apply, inputs: Sequence[ir.Value], out: ir.Value) -> None:
    """out (C-contiguous, the product's shape, holding z) = beta*out + alpha*dot(x, y); checks done."""
    b, dtype = ctx.builder, node.outputs[0].type.dtype
    a, b_ = _matrix(ctx, inputs[2], dtype), _matrix(ctx, inputs[3], dtype)
    alpha, beta = _scalars(ctx, inputs, dtype)
    c = _matrix(ctx, out, dtype)
    m, k, n = a.rows, a.cols, b_.cols
    la, lb = blas_layout(ctx, a), blas_layout(ctx, b_)
    ok = b.and_(b.icmp_signed(">", k, I64(0)), b.and_(b.or_(la[0], la[2]), b.or_(lb[0], lb[2])))
    for v in (m, n, k, la[1], la[3], lb[1], lb[3]):
        ok = b.and_(ok, b.icmp_signed("<=", v, I64(_INT32_MAX)))
    nonempty = b.and_(b.icmp_signed(">", m, I64(0)), b.icmp_signed(">", n, I64(0)))
    with b.if_then(nonempty, likely=True):
        with b.if_else(ok, likely=True) as (blas, loop):
            with blas:
                gemm = ctx.blas("dgemm" if dtype == "float64" else "sgemm")
                call_gemm(ctx, gemm, a, b_, c, m, n, k, la, lb, alpha, beta)
            with loop:
                _native(ctx, node, a, b_, c, alpha, beta)


@lowerings.register(Gemm)
def lower_gemm(ctx: LowerContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A fresh result holding z broadcast to the product's shape, then the product accumulated into it."""
    dtype = node.outputs[0].type.dtype
    a, b_ = check_product(ctx, node, inputs)
    z = inputs[0]
    check_target(ctx, node, z, a.rows, b_.cols)
    out = ctx.allocate(node, 0, [a.rows, b_.cols])
    copy_cast(ctx, node, z, dtype, out, dtype, [a.rows, b_.cols], "gemm.z")
    emit_gemm_into(ctx, node, inputs, out)
    return [out]


def check_target(ctx: LowerContext, node: Apply, z: ir.Value, m: ir.Value, n: ir.Value) -> None:
    """ValueError unless z broadcasts to the product's shape (m, n)."""
    b = ctx.builder
    zr, zc = ctx.shape(z, 0), ctx.shape(z, 1)
    bad = b.or_(b.and_(b.icmp_signed("!=", zr, m), b.icmp_signed("!=", zr, I64(1))),
                b.and_(b.icmp_signed("!=", zc, n), b.icmp_signed("!=", zc, I64(1))))
    ctx.raise_if(bad, node, "ValueError", f"{node.op}: z of shape (%lld, %lld) cannot hold dot(x, y) with "
                 "%lld rows (shapes not aligned)", [zr, zc, m])
