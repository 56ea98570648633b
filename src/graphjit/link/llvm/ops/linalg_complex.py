"""The kernels of the linear-algebra lowerings whose complex64/complex128 form is not the real one with c/z
routines (see linalg_kernels.py): the determinants (complex products, numpy's sign z/|z|), and the Hermitian
eigensolvers ?heevd / ?hegvd (real eigenvalues; a real workspace rwork besides work and iwork).

The Hermitian kernels copy a column-major as it is (not its transpose, which for a Hermitian a is conj(a)
and would conjugate the eigenvectors) and pass UPLO unchanged.
"""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir import complex_math as cm
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.loops.rows import store_as

from graphjit.link.llvm.ops.linalg_kernels import Kernel, kernel

_MAT = [I8P, I64, I64]


def complex_det(module: ir.Module, dtype: str, log: bool) -> ir.Function:
    """(a, ars, acs, n, sa, ipiv, out1, out2) -> 0: det(a) into out1, or sign (complex, |sign| = 1, 0 when
    singular) and log|det| (real) into out1, out2; ?getrf of a^T (same determinant)."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, n, sa, ipiv, out1, out2 = args
        b = k.builder
        rzero = ir.Constant(k.real_ty, 0.0)
        acc, logacc = k.alloca(k.ty), k.alloca(k.real_ty)
        b.store(k.const(1.0), acc)
        b.store(rzero, logacc)
        with b.if_then(b.icmp_signed(">", n, I64(0))):
            with k.lu_diagonal(a, ars, acs, n, sa, ipiv) as (u, swapped):
                if log:
                    size = cm.abs_(k, u)
                    re, im = cm.parts(b, u)
                    unit = cm.pack(b, b.fdiv(re, size), b.fdiv(im, size))
                    unit = b.select(b.fcmp_ordered("==", size, rzero), k.const(0.0), unit)
                    b.store(b.fadd(b.load(logacc), k.call_math("log", [size])), logacc)
                else:
                    unit = u
                prod = cm.mul(k, b.load(acc), unit)
                b.store(b.select(swapped, cm.neg(b, prod), prod), acc)
        store_as(k, out1, b.load(acc), dtype)
        if log:
            store_as(k, out2, b.load(logacc), k.real)
        b.ret(I32(0))
    return kernel(module, f"det.{int(log)}", dtype, _MAT + [I64, I8P, I8P, I8P, I8P], build)


def heevd(module: ir.Module, dtype: str, upper: bool) -> ir.Function:
    """(a, ars, acs, w, v, n, sa, work, lwork, iwork, liwork, rwork, lrwork) -> info: ?heevd, w ascending (real),
    v's columns the eigenvectors."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, w, v, n, sa, work, lwork, iwork, liwork, rwork, lrwork = args
        b = k.builder
        isz = k.isz
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        k.copy(a, ars, acs, sa, isz, b.mul(n, isz), n, n)             # column-major: a
        info = k.alloca(I32)
        k.call("heevd", [k.char("V"), k.char("U" if upper else "L"), k.i32(n), sa, k.i32(n), w, work,
                         k.i32(lwork), rwork, k.i32(lrwork), iwork, k.i32(liwork), info])
        with k.early_return(b.icmp_signed("!=", b.load(info), I32(0)), b.load(info)):
            pass
        k.copy(sa, isz, b.mul(n, isz), v, b.mul(n, isz), isz, n, n)    # column j of the result is vector j
        b.ret(I32(0))
    return kernel(module, f"heevd.{'U' if upper else 'L'}", dtype,
                  _MAT + [I8P, I8P, I64, I8P, I8P, I64, I8P, I64, I8P, I64], build)


def hegvd(module: ir.Module, dtype: str, upper: bool) -> ir.Function:
    """(a, ars, acs, bm, brs, bcs, w, v, n, sa, sb, work, lwork, iwork, liwork, rwork, lrwork) -> info: ?hegvd
    (itype 1) of a v = w b v; info > n: b's leading minor of order info - n is not positive definite."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, bm, brs, bcs, w, v, n, sa, sb, work, lwork, iwork, liwork, rwork, lrwork = args
        b = k.builder
        isz = k.isz
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        k.copy(a, ars, acs, sa, isz, b.mul(n, isz), n, n)             # column-major: a, b
        k.copy(bm, brs, bcs, sb, isz, b.mul(n, isz), n, n)
        info = k.alloca(I32)
        k.call("hegvd", [k.i32(1), k.char("V"), k.char("U" if upper else "L"), k.i32(n), sa, k.i32(n), sb,
                         k.i32(n), w, work, k.i32(lwork), rwork, k.i32(lrwork), iwork, k.i32(liwork), info])
        with k.early_return(b.icmp_signed("!=", b.load(info), I32(0)), b.load(info)):
            pass
        k.copy(sa, isz, b.mul(n, isz), v, b.mul(n, isz), isz, n, n)
        b.ret(I32(0))
    return kernel(module, f"hegvd.{'U' if upper else 'L'}", dtype,
                  _MAT * 2 + [I8P, I8P, I64, I8P, I8P, I8P, I64, I8P, I64, I8P, I64], build)
