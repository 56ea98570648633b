"""A general solve of a small system emitted inline (no LAPACK call): LU with partial (row) pivoting, as ?gesv
computes it, on a C-ordered copy of a and the right-hand sides in the output.

For an n x n system with n <= SMALL_SOLVE_MAX the calls into ?getrf/?getrs cost more than the arithmetic (a
3 x 3 batch of 1e5: ~240 ns per system through LAPACK, benchmarks/vectorize.py); the loops here have trip
counts of n and run straight through. A pivot that is exactly zero is LAPACK's info > 0 (singular).
"""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import load_as, store_as

from graphjit.link.llvm.ops.linalg_kernels import Kernel

SMALL_SOLVE_MAX = 8


def small_gesv_kernel(module: ir.Module, dtype: str, nan: bool) -> ir.Function:
    """``i32 linalg.small_gesv.<dtype>[.nan](a, ars, acs, bp, brs, bcs, out, n, k, sa)``: a (any strides) copied
    into the scratch sa, b into out, then small_gesv; a function of the kernels module (the O3 pipeline,
    whatever the glue calling it gets)."""
    name = f"linalg.small_gesv.{dtype}{'.nan' if nan else ''}"
    mat = [I8P, I64, I64]
    fn, new = kernel_function(module, name, ir.FunctionType(I32, mat * 2 + [I8P, I64, I64, I8P]))
    if new:
        kk = Kernel(fn, dtype)
        a, ars, acs, bp, brs, bcs, out, n, k, sa = fn.args
        b, isz = kk.builder, kk.isz
        kk.copy(a, ars, acs, sa, b.mul(n, isz), isz, n, n)
        kk.copy(bp, brs, bcs, out, b.mul(k, isz), isz, n, k)
        small_gesv(kk, sa, out, n, k, nan)
    return fn


def small_gesv(kk: Kernel, sa: ir.Value, out: ir.Value, n: ir.Value, k: ir.Value, nan: bool) -> None:
    """Emit: solve sa x = out in place (sa: n x n C order, destroyed; out: n x k C order) and return 0, or
    return the 1-based column of the first zero pivot (out filled with NaN when nan)."""
    b, dt = kk.builder, kk.dtype
    zero = ir.Constant(kk.ty, 0.0)
    get = lambda base, i, j, cols: load_as(kk, kk.at(base, i, j, cols), dt, dt)  # noqa: E731
    put = lambda base, i, j, cols, v: store_as(kk, kk.at(base, i, j, cols), v, dt)  # noqa: E731
    best, where = kk.alloca(kk.ty), kk.alloca(I64)
    with kk.for_range(n, name="lu.c", unroll=False) as c:
        b.store(ir.Constant(kk.ty, -1.0), best)
        b.store(c, where)
        with kk.for_range(n, start=c, name="lu.p", unroll=False) as r:
            v = kk.call_intrinsic("fabs", [get(sa, r, c, n)])
            with b.if_then(b.fcmp_ordered(">", v, b.load(best))):
                b.store(v, best)
                b.store(r, where)
        p = b.load(where)
        pivot = get(sa, p, c, n)
        with kk.early_return(b.fcmp_ordered("==", pivot, zero), b.trunc(b.add(c, I64(1)), I32)):
            if nan:
                kk.fill(out, b.mul(n, k), float("nan"))
        with b.if_then(b.icmp_signed("!=", p, c)):
            _swap_rows(kk, sa, c, p, n)
            _swap_rows(kk, out, c, p, k)
        with kk.for_range(n, start=b.add(c, I64(1)), name="lu.r", unroll=False) as r:
            factor = b.fdiv(get(sa, r, c, n), pivot)
            with kk.for_range(n, start=b.add(c, I64(1)), name="lu.j", unroll=False) as j:
                put(sa, r, j, n, b.fsub(get(sa, r, j, n), b.fmul(factor, get(sa, c, j, n))))
            with kk.for_range(k, name="lu.b", unroll=False) as j:
                put(out, r, j, k, b.fsub(get(out, r, j, k), b.fmul(factor, get(out, c, j, k))))
    with kk.for_range(n, name="bs.i", unroll=False) as t:
        i = b.sub(b.sub(n, I64(1)), t)
        diag = get(sa, i, i, n)
        with kk.for_range(k, name="bs.j", unroll=False) as j:
            acc = kk.alloca(kk.ty)
            b.store(get(out, i, j, k), acc)
            with kk.for_range(n, start=b.add(i, I64(1)), name="bs.m", unroll=False) as m:
                b.store(b.fsub(b.load(acc), b.fmul(get(sa, i, m, n), get(out, m, j, k))), acc)
            put(out, i, j, k, b.fdiv(b.load(acc), diag))
    b.ret(I32(0))


def _swap_rows(kk: Kernel, base: ir.Value, r1: ir.Value, r2: ir.Value, cols: ir.Value) -> None:
    dt = kk.dtype
    with kk.for_range(cols, name="sw", unroll=False) as j:
        p1, p2 = kk.at(base, r1, j, cols), kk.at(base, r2, j, cols)
        v1, v2 = load_as(kk, p1, dt, dt), load_as(kk, p2, dt, dt)
        store_as(kk, p1, v2, dt)
        store_as(kk, p2, v1, dt)
