"""The native least-squares solve (Lstsq, numpy.linalg.lstsq) through LAPACK ?gelsd (the SVD-based driver numpy
calls): a workspace query sizes the work arrays, the factors and right-hand sides are copied column-major
into scratch, and the residuals' length (k when the rank is n < m, else 0) is known only after the call: the
entry allocates that output then, from the kernel's scratch sums.  A complex a goes through ``cgelsd``/``zgelsd``,
whose real workspace rwork the query sizes too; s, rcond and the residuals are real.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.linalg import Lstsq

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.loops.rows import advance, byte_ptr, load_as, nest, store_as
from graphjit.link.llvm.ops.linalg import _check, _float, _scratch
from graphjit.link.llvm.ops.linalg_kernels import Kernel, kernel
from graphjit.link.llvm.registry import lowerings


def _at_least_one(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", v, I64(1)), I64(1), v)


def _real_arg(k: Kernel, v: ir.Value | float) -> ir.Value:
    """A pointer to the real value v (rcond: real also for a complex kernel)."""
    slot = k.alloca(k.real_ty)
    k.builder.store(ir.Constant(k.real_ty, v) if isinstance(v, float) else v, slot)
    return slot


def query(module: ir.Module, dtype: str) -> ir.Function:
    """(m, n, nrhs, sizes) -> info: ?gelsd's workspace query; sizes[0] = lwork, sizes[1] = liwork, sizes[2] =
    lrwork (complex only; i64)."""
    def build(k: Kernel, args: list) -> None:
        m, n, nrhs, sizes = args
        b = k.builder
        work, iwork, info, rank = k.alloca(k.ty), k.alloca(I32), k.alloca(I32), k.alloca(I32)
        rwork = k.alloca(k.real_ty)
        dummy = k.alloca(k.ty)
        b.store(k.const(1.0), work)
        b.store(ir.Constant(k.real_ty, 1.0), rwork)
        b.store(I32(1), iwork)
        mx = _at_least_one(b, b.select(b.icmp_signed("<", m, n), n, m))
        tail = [rwork, iwork, info] if k.complex else [iwork, info]
        k.call("gelsd", [k.i32(m), k.i32(n), k.i32(nrhs), dummy, k.i32(_at_least_one(b, m)), dummy, k.i32(mx),
                         dummy, _real_arg(k, -1.0), rank, work, k.i32(-1), *tail])
        out = b.bitcast(sizes, I64.as_pointer())
        first = b.load(work)
        lwork = b.fptosi(b.extract_value(first, 0) if k.complex else first, I64)
        b.store(_at_least_one(b, lwork), out)
        b.store(_at_least_one(b, b.sext(b.load(iwork), I64)), b.gep(out, [I64(1)]))
        b.store(_at_least_one(b, b.fptosi(b.load(rwork), I64)), b.gep(out, [I64(2)]))
        b.ret(I32(0))
    return kernel(module, "lstsq.query", dtype, [I64, I64, I64, I8P], build)


def solve(module: ir.Module, dtype: str) -> ir.Function:
    """(a, ars, acs, bp, brs, bcs, m, n, nrhs, rcond, x, s, rank, res, sa, sb, work, lwork, iwork, rwork) -> info:
    x (n x nrhs, C order) = lstsq(a, b); res[j] = the squared residual of column j (rows n.. of gelsd's b),
    real."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, bp, brs, bcs, m, n, nrhs, rcond, x, s, rank, res, sa, sb, work, lwork, iwork, rwork = args
        b = k.builder
        isz = k.isz
        lda = _at_least_one(b, m)
        ldb = _at_least_one(b, b.select(b.icmp_signed("<", m, n), n, m))
        k.fill(sb, b.mul(ldb, nrhs), 0.0)
        k.copy(a, ars, acs, sa, isz, b.mul(lda, isz), m, n)           # column-major a
        k.copy(bp, brs, bcs, sb, isz, b.mul(ldb, isz), m, nrhs)       # column-major b, ldb rows
        info, rk = k.alloca(I32), k.alloca(I32)
        b.store(I32(0), info)
        b.store(I32(0), rk)
        empty = b.or_(b.icmp_signed("==", m, I64(0)), b.icmp_signed("==", n, I64(0)))
        with b.if_then(b.not_(empty)):
            tail = [rwork, iwork, info] if k.complex else [iwork, info]
            k.call("gelsd", [k.i32(m), k.i32(n), k.i32(nrhs), sa, k.i32(lda), sb, k.i32(ldb), s, _real_arg(k, rcond),
                             rk, work, k.i32(lwork), *tail])
        with k.early_return(b.icmp_signed("!=", b.load(info), I32(0)), b.load(info)):
            pass
        b.store(b.load(rk), b.bitcast(rank, I32.as_pointer()))
        k.copy(sb, isz, b.mul(ldb, isz), x, b.mul(nrhs, isz), isz, n, nrhs)    # empty a: b untouched, x = 0
        with k.for_range(nrhs, name="rj") as j:
            acc = k.alloca(k.real_ty)
            b.store(ir.Constant(k.real_ty, 0.0), acc)
            with k.for_range(m, start=n, name="ri") as i:
                v = load_as(k, advance(k, advance(k, sb, i, isz), j, b.mul(ldb, isz)), dtype, dtype)
                for part in ([b.extract_value(v, 0), b.extract_value(v, 1)] if k.complex else [v]):
                    b.store(b.fadd(b.load(acc), b.fmul(part, part)), acc)
            store_as(k, advance(k, res, j, k.rsz), b.load(acc), k.real)
        b.ret(I32(0))
    real = ir.DoubleType() if dtype in ("float64", "complex128") else ir.FloatType()
    args = [I8P, I64, I64] * 2 + [I64, I64, I64, real] + [I8P] * 6 + [I8P, I64, I8P, I8P]
    return kernel(module, "lstsq", dtype, args, build)


@lowerings.register(Lstsq, applies=_float, complex=True)
def lower_lstsq(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Query, ?gelsd, then the residuals (k of them when rank == n < m, as numpy; none otherwise)."""
    a, bb = inputs
    op, dtype = node.op, node.outputs[0].type.dtype
    real = node.outputs[3].type.dtype
    b = ctx.builder
    vector = node.inputs[1].ndim == 1
    m, n, mb = ctx.shape(a, 0), ctx.shape(a, 1), ctx.shape(bb, 0)
    ctx.raise_if(b.icmp_signed("!=", m, mb), node, "LinAlgError",
                 f"{op}: incompatible dimensions (a has %lld rows, b %lld)", [m, mb])
    nrhs = I64(1) if vector else ctx.shape(bb, 1)
    bst = [ctx.stride(bb, 0), I64(0)] if vector else [ctx.stride(bb, 0), ctx.stride(bb, 1)]
    ty = ir.DoubleType() if real == "float64" else ir.FloatType()
    if op.rcond is None:                     # numpy: eps * max(m, n)
        eps = ir.Constant(ty, float(np.finfo(real).eps))
        rcond = b.fmul(eps, b.sitofp(b.select(b.icmp_signed("<", m, n), n, m), ty))
    else:
        rcond = ir.Constant(ty, op.rcond)
    mn = b.select(b.icmp_signed("<", m, n), m, n)
    ldb = b.select(b.icmp_signed("<", m, n), n, m)
    x = ctx.allocate(node, 0, [n] if vector else [n, nrhs])
    s = ctx.allocate(node, 3, [mn])
    rank = ctx.allocate(node, 2, [])
    sizes = _scratch(ctx, node, "int64", [I64(3)], "sizes")
    b.call(query(ctx.module, dtype), [m, n, nrhs, sizes])
    sp = b.bitcast(sizes, I64.as_pointer())
    lwork, liwork = b.load(sp), b.load(b.gep(sp, [I64(1)]))
    work = _scratch(ctx, node, dtype, [lwork], "work")
    iwork = _scratch(ctx, node, "int32", [liwork], "iwork")
    complex_ = dtype.startswith("complex")
    rwork = _scratch(ctx, node, real, [b.load(b.gep(sp, [I64(2)]))], "rwork") if complex_ else ir.Constant(I8P, None)
    sa = _scratch(ctx, node, dtype, [m, n], "factor")
    sb = _scratch(ctx, node, dtype, [_at_least_one(b, ldb), nrhs], "rhs")
    res = _scratch(ctx, node, real, [nrhs], "residuals")
    info = b.call(solve(ctx.module, dtype), [byte_ptr(ctx, a), ctx.stride(a, 0), ctx.stride(a, 1),
                                             byte_ptr(ctx, bb), *bst, m, n, nrhs, rcond, byte_ptr(ctx, x),
                                             byte_ptr(ctx, s), byte_ptr(ctx, rank), res, sa, sb, work, lwork,
                                             iwork, rwork])
    _check(ctx, node, info, "SVD did not converge in Linear Least Squares (%lld)", False)
    full = b.sext(b.load(b.bitcast(byte_ptr(ctx, rank), I32.as_pointer())), I64)
    keep = b.and_(b.icmp_signed("==", full, n), b.icmp_signed(">", m, n))
    count = b.select(keep, nrhs, I64(0))
    out = ctx.allocate(node, 1, [count])
    isz = I64(np.dtype(real).itemsize)
    with nest(ctx, [count], [res, byte_ptr(ctx, out)], [[isz], [ctx.stride(out, 0)]], name="lr") as (pr, po):
        store_as(ctx, po, load_as(ctx, pr, real, real), real)
    return [x, out, rank, s]
