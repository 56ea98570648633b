"""The kernel bodies (see linalg_kernels.py): Cholesky, triangular and Cholesky solves, general /
symmetric / positive-definite solves, inverse, determinants, symmetric eigendecomposition, and the
inverse-from-factor L^-T diag(w) L^-1 of Cholesky's gradient."""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.loops.rows import advance, load_as, store_as

from graphjit.link.llvm.ops.linalg_complex import complex_det
from graphjit.link.llvm.ops.linalg_kernels import Kernel, a_layout, fail_if, kernel, pick
from graphjit.link.llvm.ops.linalg_small import (SMALL_CHOLESKY_MAX, SMALL_SOLVE_MAX, SMALL_TRSM_MAX, small_gesv_kernel,
                                                 small_potrf_kernel, small_trsm_kernel)

_MAT = [I8P, I64, I64]                     # pointer, row stride, column stride (bytes)


def potrf(module: ir.Module, dtype: str, lower: bool, nan: bool) -> ir.Function:
    """(a, ars, acs, out, n, scratch) -> info: out = cholesky(a) (lower or upper), the other triangle zero; the upper
    factor is read from a^T (the entry swaps the strides), conjugated when complex: U = L^H."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, out, n, scratch = args
        b = k.builder
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        if not k.complex:       # a small matrix: vector rows in a kernel (linalg_small.py), no ?potrf call
            with b.if_then(b.icmp_signed("<=", n, I64(SMALL_CHOLESKY_MAX))):
                small = small_potrf_kernel(k.module, dtype, not lower)
                fail_if(k, b.call(small, [a, ars, acs, out, n, scratch]), [(out, b.mul(n, n))], nan)
                b.ret(I32(0))
        k.copy(a, ars, acs, out, b.mul(n, k.isz), k.isz, n, n, conj=not lower)
        info = k.alloca(I32)
        k.call("potrf", [k.char("U" if lower else "L"), k.i32(n), out, k.i32(n), info])
        fail_if(k, b.load(info), [(out, b.mul(n, n))], nan)
        k.zero_triangle(out, n, upper=lower)
        b.ret(I32(0))
    return kernel(module, f"potrf.{'L' if lower else 'U'}{'.nan' if nan else ''}", dtype, _MAT + [I8P, I64, I8P],
                  build)


def trsm(module: ir.Module, dtype: str, lower: bool, calls: tuple[int, ...], unit: bool, check: bool,
         nan: bool) -> ir.Function:
    """(a, ars, acs, bp, brs, bcs, out, n, k, scratch) -> info: out (n x k, C order) = op_m(a)^-1 ... b for
    each op in calls (0: a, 1: a^T, 2: a^H, which is a^T for a real a), applied in order; check: a zero
    diagonal is info > 0."""
    complex_ = dtype.startswith("complex")
    calls = tuple(c if complex_ else min(c, 1) for c in calls)

    def build(kk: Kernel, args: list) -> None:
        a, ars, acs, bp, brs, bcs, out, n, k, scratch = args
        b = kk.builder
        with kk.early_return(b.or_(b.icmp_signed("<=", n, I64(0)), b.icmp_signed("<=", k, I64(0)))):
            pass
        if check:
            with kk.for_range(n, name="dg") as i:
                d = load_as(kk, advance(kk, advance(kk, a, i, ars), i, acs), dtype, dtype)
                with b.if_then(kk.is_zero(d), likely=False):
                    if nan:
                        kk.fill(out, b.mul(n, k), float("nan"))
                    b.ret(b.trunc(b.add(i, I64(1)), I32))
        if not complex_:        # a small system: vector rows in a kernel (linalg_small.py), no ?trsm call
            with b.if_then(b.icmp_signed("<=", n, I64(SMALL_TRSM_MAX))):
                src = [bp, brs, bcs]
                for op in calls:
                    strides = (acs, ars) if op else (ars, acs)
                    small = small_trsm_kernel(kk.module, dtype, lower != bool(op), unit, src[0] is bp)
                    b.call(small, [a, *strides, *src, out, n, k, scratch])
                    src = [out, b.mul(k, kk.isz), kk.isz]
                b.ret(I32(0))
        kk.copy(bp, brs, bcs, out, b.mul(k, kk.isz), kk.isz, n, k)
        ptr, lda, rm = a_layout(kk, a, ars, acs, n, scratch, row_major=2 in calls)
        # read column-major, the matrix is a^T when rm: its triangle flips, and op(a)^T needs 'N' for a^T
        uplo = pick(kk, rm, "U" if lower else "L", "L" if lower else "U")
        for op in calls:
            # solve X M = B (side R) for x^T op(a)^T = b^T: M = op(a)^T, i.e. a^T (0), a (1) or conj(a) (2,
            # from the row-major view a^T only: (a^T)^H)
            if op == 2:
                transa = kk.char("C")
            else:
                transa = pick(kk, rm if op == 0 else b.not_(rm), "N", "T")
            kk.call("trsm", [kk.char("R"), uplo, transa, kk.char("U" if unit else "N"), kk.i32(k), kk.i32(n),
                             kk.scalar(1.0), ptr, kk.i32(lda), out, kk.i32(k)])
        b.ret(I32(0))
    tag = "".join("NTC"[c] for c in calls)
    name = f"trsm.{'L' if lower else 'U'}.{tag}.{int(unit)}{int(check)}{'.nan' if nan else ''}"
    return kernel(module, name, dtype, _MAT * 2 + [I8P, I64, I64, I8P], build)


def _copy_folded(k: Kernel, a: ir.Value, ars: ir.Value, acs: ir.Value, dst: ir.Value, n: ir.Value,
                 lower: bool = False, hermitian: bool = False) -> None:
    """dst (C order) = the symmetric matrix of a's upper (lower) triangle; hermitian (complex): the mirrored
    half conjugated and the diagonal's imaginary part zero (scipy's 'her')."""
    b = k.builder
    with k.for_range(n, name="fr") as i:
        with k.for_range(n, name="fc") as j:
            lo, hi = b.select(b.icmp_signed("<", i, j), i, j), b.select(b.icmp_signed("<", i, j), j, i)
            lo, hi = (hi, lo) if lower else (lo, hi)
            v = load_as(k, advance(k, advance(k, a, lo, ars), hi, acs), k.dtype, k.dtype)
            if hermitian and k.complex:
                mirrored = b.icmp_signed("<" if lower else ">", i, j)
                v = b.select(mirrored, k.conj(v), v)
                v = b.select(b.icmp_signed("==", i, j), b.insert_value(v, ir.Constant(k.real_ty, 0.0), 1), v)
            store_as(k, k.at(dst, i, j, n), v, k.dtype)


def solve(module: ir.Module, dtype: str, assume: str, vector: bool, nan: bool, lower: bool = False
          ) -> ir.Function:
    """(a, ars, acs, bp, brs, bcs, out, n, k, sa, ipiv, sb) -> info: out = solve(a, b, assume_a, lower); a
    complex 'pos' copies a column-major (its Hermitian triangle as is), the others a^T (a row-major copy)."""
    complex_ = dtype.startswith("complex")
    assume = "sym" if assume == "her" and not complex_ else assume

    def build(kk: Kernel, args: list) -> None:
        a, ars, acs, bp, brs, bcs, out, n, k, sa, ipiv, sb = args
        b = kk.builder
        isz = kk.isz
        with kk.early_return(b.or_(b.icmp_signed("<=", n, I64(0)), b.icmp_signed("<=", k, I64(0)))):
            pass
        if assume == "gen" and not complex_:   # a small system: LU in a kernel (linalg_small.py), no LAPACK
            with b.if_then(b.icmp_signed("<=", n, I64(SMALL_SOLVE_MAX))):
                b.ret(b.call(small_gesv_kernel(kk.module, dtype, nan), [a, ars, acs, bp, brs, bcs, out, n, k, sa]))
        cm = complex_ and assume == "pos"
        if assume in ("sym", "her"):
            _copy_folded(kk, a, ars, acs, sa, n, lower, assume == "her")
        elif cm:
            kk.copy(a, ars, acs, sa, isz, b.mul(n, isz), n, n)         # column-major: a
        else:
            kk.copy(a, ars, acs, sa, b.mul(n, isz), isz, n, n)         # column-major: a^T
        info = kk.alloca(I32)
        # a's upper triangle (scipy's lower=False) is a^T's lower one
        uplo = ("L" if lower else "U") if cm else ("U" if lower else "L")
        if assume == "pos":
            kk.call("potrf", [kk.char(uplo), kk.i32(n), sa, kk.i32(n), info])
        else:
            kk.call("getrf", [kk.i32(n), kk.i32(n), sa, kk.i32(n), ipiv, info])
        fail_if(kk, b.load(info), [(out, b.mul(n, k))], nan)
        rhs = out if vector else sb
        if vector:
            kk.copy(bp, brs, bcs, out, isz, isz, n, k)
        else:                   # column-major n x k
            kk.copy(bp, brs, bcs, sb, isz, b.mul(n, isz), n, k)
        if assume == "pos":
            kk.call("potrs", [kk.char(uplo), kk.i32(n), kk.i32(k), sa, kk.i32(n), rhs, kk.i32(n), info])
        else:                   # sa holds a^T = P L U: solve (a^T)^T x = b
            kk.call("getrs", [kk.char("T"), kk.i32(n), kk.i32(k), sa, kk.i32(n), ipiv, rhs, kk.i32(n), info])
        if not vector:
            kk.copy(sb, isz, b.mul(n, isz), out, b.mul(k, isz), isz, n, k)
        b.ret(I32(0))
    return kernel(module, f"solve.{assume}.{int(vector)}{'.L' if lower else ''}{'.nan' if nan else ''}", dtype,
                  _MAT * 2 + [I8P, I64, I64, I8P, I8P, I8P], build)


def inv(module: ir.Module, dtype: str, nan: bool) -> ir.Function:
    """(a, ars, acs, out, n, ipiv, work, lwork) -> info: out = inv(a) (getri on a^T in place)."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, out, n, ipiv, work, lwork = args
        b = k.builder
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        k.copy(a, ars, acs, out, b.mul(n, k.isz), k.isz, n, n)
        info = k.alloca(I32)
        k.call("getrf", [k.i32(n), k.i32(n), out, k.i32(n), ipiv, info])
        fail_if(k, b.load(info), [(out, b.mul(n, n))], nan)
        k.call("getri", [k.i32(n), out, k.i32(n), ipiv, work, k.i32(lwork), info])
        fail_if(k, b.load(info), [(out, b.mul(n, n))], nan)
        b.ret(I32(0))
    return kernel(module, f"inv{'.nan' if nan else ''}", dtype, _MAT + [I8P, I64, I8P, I8P, I64], build)


def det(module: ir.Module, dtype: str, log: bool) -> ir.Function:
    """(a, ars, acs, n, sa, ipiv, out1, out2) -> 0: det(a) into out1, or sign and log|det| into out1, out2."""
    if dtype.startswith("complex"):
        return complex_det(module, dtype, log)

    def build(k: Kernel, args: list) -> None:
        a, ars, acs, n, sa, ipiv, out1, out2 = args
        b = k.builder
        one, zero = ir.Constant(k.ty, 1.0), ir.Constant(k.ty, 0.0)
        acc, sign = k.alloca(k.ty), k.alloca(k.ty)
        b.store(zero if log else one, acc)
        b.store(one, sign)
        with b.if_then(b.icmp_signed(">", n, I64(0))):
            with k.lu_diagonal(a, ars, acs, n, sa, ipiv) as (u, swapped):
                flip = b.select(swapped, ir.Constant(k.ty, -1.0), one)
                if log:
                    neg = b.fcmp_ordered("<", u, zero)
                    s = b.select(b.fcmp_ordered("==", u, zero), zero, b.select(neg, ir.Constant(k.ty, -1.0), one))
                    b.store(b.fmul(b.fmul(b.load(sign), s), flip), sign)
                    b.store(b.fadd(b.load(acc), k.call_math("log", [k.call_intrinsic("fabs", [u])])), acc)
                else:
                    b.store(b.fmul(b.fmul(b.load(acc), u), flip), acc)
        if log:
            store_as(k, out1, b.load(sign), dtype)
            store_as(k, out2, b.load(acc), dtype)
        else:
            store_as(k, out1, b.load(acc), dtype)
        b.ret(I32(0))
    return kernel(module, f"det.{int(log)}", dtype, _MAT + [I64, I8P, I8P, I8P, I8P], build)


def eigh_workspace(n: int | None = None) -> tuple:
    """?syevd's (lwork, liwork) for eigenvectors: 1 + 6n + 2n^2 and 3 + 5n."""
    return (lambda v: 1 + 6 * v + 2 * v * v), (lambda v: 3 + 5 * v)


def eigh(module: ir.Module, dtype: str, upper: bool) -> ir.Function:
    """(a, ars, acs, w, v, n, sa, work, lwork, iwork, liwork) -> info: w ascending, v's columns the vectors."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, w, v, n, sa, work, lwork, iwork, liwork = args
        b = k.builder
        isz = k.isz
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        k.copy(a, ars, acs, sa, b.mul(n, isz), isz, n, n)             # column-major: a^T
        info = k.alloca(I32)
        k.call("syevd", [k.char("V"), k.char("L" if upper else "U"), k.i32(n), sa, k.i32(n), w, work,
                         k.i32(lwork), iwork, k.i32(liwork), info])
        with k.early_return(b.icmp_signed("!=", b.load(info), I32(0)), b.load(info)):
            pass
        k.copy(sa, isz, b.mul(n, isz), v, b.mul(n, isz), isz, n, n)    # column j of the result is vector j
        b.ret(I32(0))
    return kernel(module, f"eigh.{'U' if upper else 'L'}", dtype, _MAT + [I8P, I8P, I64, I8P, I8P, I64, I8P, I64],
                  build)


def eigh_general(module: ir.Module, dtype: str, upper: bool) -> ir.Function:
    """(a, ars, acs, bm, brs, bcs, w, v, n, sa, sb, work, lwork, iwork, liwork) -> info: ?sygvd (itype 1) of
    a v = w b v; info > n: b's leading minor of order info - n is not positive definite."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, bm, brs, bcs, w, v, n, sa, sb, work, lwork, iwork, liwork = args
        b = k.builder
        isz = k.isz
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        k.copy(a, ars, acs, sa, b.mul(n, isz), isz, n, n)             # column-major: a^T (same triangle flip)
        k.copy(bm, brs, bcs, sb, b.mul(n, isz), isz, n, n)
        info = k.alloca(I32)
        k.call("sygvd", [k.i32(1), k.char("V"), k.char("L" if upper else "U"), k.i32(n), sa, k.i32(n), sb,
                         k.i32(n), w, work, k.i32(lwork), iwork, k.i32(liwork), info])
        with k.early_return(b.icmp_signed("!=", b.load(info), I32(0)), b.load(info)):
            pass
        k.copy(sa, isz, b.mul(n, isz), v, b.mul(n, isz), isz, n, n)    # column j of the result is vector j
        b.ret(I32(0))
    return kernel(module, f"eigh_general.{'U' if upper else 'L'}", dtype,
                  _MAT * 2 + [I8P, I8P, I64, I8P, I8P, I8P, I64, I8P, I64], build)


def chol_inv_diag(module: ir.Module, dtype: str) -> ir.Function:
    """(l, lrs, lcs, w, ws, out, n, sa) -> info: out = L^-T diag(w) L^-1 (one ?trtri, one or two ?lauum)."""
    def build(k: Kernel, args: list) -> None:
        l, lrs, lcs, w, ws, out, n, sa = args
        b = k.builder
        zero = ir.Constant(k.ty, 0.0)
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        k.copy(l, lrs, lcs, out, b.mul(n, k.isz), k.isz, n, n)       # column-major: L^T (upper)
        info = k.alloca(I32)
        k.call("trtri", [k.char("U"), k.char("N"), k.i32(n), out, k.i32(n), info])   # row-major: M = L^-1
        with k.early_return(b.icmp_signed("!=", b.load(info), I32(0)), b.load(info)):
            pass
        negative = k.alloca(ir.IntType(1))
        b.store(ir.IntType(1)(0), negative)
        with k.for_range(n, name="wn") as i:
            wi = load_as(k, advance(k, w, i, ws), dtype, dtype)
            b.store(b.or_(b.load(negative), b.fcmp_ordered("<", wi, zero)), negative)
        has_neg = b.load(negative)
        with b.if_then(has_neg, likely=False):
            k.copy(out, b.mul(n, k.isz), k.isz, sa, b.mul(n, k.isz), k.isz, n, n)
        with k.for_range(n, name="ws") as i:       # rows of M scaled by sqrt(w+) (and of the copy by sqrt(w-))
            wi = load_as(k, advance(k, w, i, ws), dtype, dtype)
            pos = k.call_math("sqrt", [b.select(b.fcmp_ordered(">", wi, zero), wi, zero)])
            neg = k.call_math("sqrt", [b.select(b.fcmp_ordered("<", wi, zero), b.fneg(wi), zero)])
            with k.for_range(b.add(i, I64(1)), name="wc") as j:
                p = k.at(out, i, j, n)
                store_as(k, p, b.fmul(load_as(k, p, dtype, dtype), pos), dtype)
                with b.if_then(has_neg):
                    q = k.at(sa, i, j, n)
                    store_as(k, q, b.fmul(load_as(k, q, dtype, dtype), neg), dtype)
        k.call("lauum", [k.char("U"), k.i32(n), out, k.i32(n), info])     # M^T M into the lower triangle
        with b.if_then(has_neg, likely=False):
            k.call("lauum", [k.char("U"), k.i32(n), sa, k.i32(n), info])
            with k.for_range(n, name="sr") as i:
                with k.for_range(b.add(i, I64(1)), name="sc") as j:
                    p = k.at(out, i, j, n)
                    d = b.fsub(load_as(k, p, dtype, dtype), load_as(k, k.at(sa, i, j, n), dtype, dtype))
                    store_as(k, p, d, dtype)
        with k.for_range(n, name="yr") as i:       # mirror the lower triangle
            with k.for_range(i, name="yc") as j:
                store_as(k, k.at(out, j, i, n), load_as(k, k.at(out, i, j, n), dtype, dtype), dtype)
        b.ret(I32(0))
    return kernel(module, "cholinv", dtype, _MAT + [I8P, I64, I8P, I64, I8P], build)


def lu_factor(module: ir.Module, dtype: str) -> ir.Function:
    """(a, ars, acs, lu, piv, n, sa) -> info: scipy's lu_factor (column-major factors of a itself, read back
    into the row-major lu; piv 0-based)."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, lu, piv, n, sa = args
        b = k.builder
        isz = k.isz
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        k.copy(a, ars, acs, sa, isz, b.mul(n, isz), n, n)             # column-major: a
        info = k.alloca(I32)
        k.call("getrf", [k.i32(n), k.i32(n), sa, k.i32(n), piv, info])
        k.copy(sa, isz, b.mul(n, isz), lu, b.mul(n, isz), isz, n, n)
        p = b.bitcast(piv, I32.as_pointer())
        with k.for_range(n, name="pv") as i:
            slot = b.gep(p, [i])
            b.store(b.sub(b.load(slot), I32(1)), slot)
        b.ret(I32(0))                                  # a singular U is a result here, as scipy's (a warning)
    return kernel(module, "lu_factor", dtype, _MAT + [I8P, I8P, I64, I8P], build)


def lu_solve(module: ir.Module, dtype: str, trans: int, vector: bool) -> ir.Function:
    """(lu, lrs, lcs, piv, ps, bp, brs, bcs, out, n, k, sa, ipiv, sb) -> 0: scipy's lu_solve (trans 0, 1 or
    2: a^H, which is a^T for a real a)."""
    trans = trans if dtype.startswith("complex") else min(trans, 1)
    def build(kk: Kernel, args: list) -> None:
        lu, lrs, lcs, piv, ps, bp, brs, bcs, out, n, k, sa, ipiv, sb = args
        b = kk.builder
        isz = kk.isz
        with kk.early_return(b.or_(b.icmp_signed("<=", n, I64(0)), b.icmp_signed("<=", k, I64(0)))):
            pass
        kk.copy(lu, lrs, lcs, sa, isz, b.mul(n, isz), n, n)           # column-major: the factors
        dst = b.bitcast(ipiv, I32.as_pointer())
        with kk.for_range(n, name="pv") as i:
            v = b.load(b.bitcast(advance(kk, piv, i, ps), I32.as_pointer()))
            b.store(b.add(v, I32(1)), b.gep(dst, [i]))
        rhs = out if vector else sb
        if vector:
            kk.copy(bp, brs, bcs, out, isz, isz, n, k)
        else:
            kk.copy(bp, brs, bcs, sb, isz, b.mul(n, isz), n, k)
        info = kk.alloca(I32)
        kk.call("getrs", [kk.char("NTC"[trans]), kk.i32(n), kk.i32(k), sa, kk.i32(n), ipiv, rhs,
                          kk.i32(n), info])
        if not vector:
            kk.copy(sb, isz, b.mul(n, isz), out, b.mul(k, isz), isz, n, k)
        b.ret(I32(0))
    return kernel(module, f"lu_solve.{trans}.{int(vector)}", dtype,
                  _MAT + [I8P, I64] + _MAT + [I8P, I64, I64, I8P, I8P, I8P], build)


def svd(module: ir.Module, dtype: str, jobz: str) -> ir.Function:
    """(a, ars, acs, s, u, vh, m, n, sa, work, lwork, iwork, rwork) -> info: ?gesdd of a^T (a's row-major copy
    read column-major), whose U^T is a's Vh and whose V^T (V^H when complex: a^T = U' S V'^H makes a's U
    conj(V')) is a's U: both land row-major in place; rwork: the complex driver's real workspace."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, s, u, vh, m, n, sa, work, lwork, iwork, rwork = args
        b = k.builder
        isz = k.isz
        one = lambda v: b.select(b.icmp_signed("<", v, I64(1)), I64(1), v)  # noqa: E731
        mn = b.select(b.icmp_signed("<", m, n), m, n)
        with k.early_return(b.icmp_signed("<=", mn, I64(0))):
            if jobz == "A":                        # numpy: the identity for the factor that is not empty
                for ptr, d in ((u, m), (vh, n)):
                    k.fill(ptr, b.mul(d, d), 0.0)
                    with k.for_range(d, name="id") as i:
                        store_as(k, k.at(ptr, i, i, d), k.const(1.0), dtype)
        k.copy(a, ars, acs, sa, b.mul(n, isz), isz, m, n)             # column-major: a^T, n x m
        info = k.alloca(I32)
        if jobz == "N":
            ldu, ldvt = I64(1), I64(1)
        elif jobz == "S":
            ldu, ldvt = one(n), one(mn)
        else:
            ldu, ldvt = one(n), one(m)
        tail = [rwork, iwork, info] if k.complex else [iwork, info]
        k.call("gesdd", [k.char(jobz), k.i32(n), k.i32(m), sa, k.i32(one(n)), s, vh, k.i32(ldu), u,
                         k.i32(ldvt), work, k.i32(lwork), *tail])
        b.ret(b.load(info))
    return kernel(module, f"svd.{jobz}", dtype, _MAT + [I8P, I8P, I8P, I64, I64, I8P, I8P, I64, I8P, I8P], build)


def qr(module: ir.Module, dtype: str, mode: str) -> ir.Function:
    """(a, ars, acs, q, r, m, n, sa, tau, work, lwork) -> info: ?geqrf of a (copied column-major), R read back
    with its lower part zero, Q formed by ?orgqr (m x k, or m x m for 'complete'); 'r' forms no Q."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, q, r, m, n, sa, tau, work, lwork = args
        b = k.builder
        isz = k.isz
        one = lambda v: b.select(b.icmp_signed("<", v, I64(1)), I64(1), v)  # noqa: E731
        mn = b.select(b.icmp_signed("<", m, n), m, n)
        rows = m if mode == "complete" else mn
        with k.early_return(b.icmp_signed("<=", mn, I64(0))):
            if mode == "complete":               # numpy: Q is the identity, R (m x 0 or 0 x n) is empty
                k.fill(q, b.mul(m, m), 0.0)
                with k.for_range(m, name="id") as i:
                    store_as(k, k.at(q, i, i, m), k.const(1.0), dtype)
        k.copy(a, ars, acs, sa, isz, b.mul(m, isz), m, n)             # column-major a, lda = m
        info = k.alloca(I32)
        k.call("geqrf", [k.i32(m), k.i32(n), sa, k.i32(one(m)), tau, work, k.i32(lwork), info])
        with k.for_range(rows, name="ri") as i:
            with k.for_range(n, name="rj") as j:
                above = b.icmp_signed("<=", i, j)
                v = load_as(k, advance(k, advance(k, sa, i, isz), j, b.mul(m, isz)), dtype, dtype)
                store_as(k, k.at(r, i, j, n), b.select(above, v, k.const(0.0)), dtype)
        if mode != "r":
            cols = m if mode == "complete" else mn
            k.call("orgqr", [k.i32(m), k.i32(cols), k.i32(mn), sa, k.i32(one(m)), tau, work, k.i32(lwork), info])
            k.copy(sa, isz, b.mul(m, isz), q, b.mul(cols, isz), isz, m, cols)
        b.ret(b.load(info))
    return kernel(module, f"qr.{mode}", dtype, _MAT + [I8P, I8P, I64, I64, I8P, I8P, I8P, I64], build)


def lu(module: ir.Module, dtype: str, permute_l: bool) -> ir.Function:
    """(a, ars, acs, p, l, u, m, n, sa, ipiv, perm) -> 0: scipy's lu of an m x n a, a = P L U (P m x m, L m x k,
    U k x n), from ?getrf of a (column-major); permute_l: P L into l (p unused)."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, p, l, u, m, n, sa, ipiv, perm = args
        b = k.builder
        isz = k.isz
        zero, one = k.const(0.0), k.const(1.0)
        mn = b.select(b.icmp_signed("<", m, n), m, n)
        pm = b.bitcast(perm, I32.as_pointer())
        with k.for_range(m, name="pi") as i:
            b.store(b.trunc(i, I32), b.gep(pm, [i]))
        with b.if_then(b.icmp_signed(">", mn, I64(0))):
            k.copy(a, ars, acs, sa, isz, b.mul(m, isz), m, n)              # column-major a, lda = m
            info = k.alloca(I32)
            k.call("getrf", [k.i32(m), k.i32(n), sa, k.i32(m), ipiv, info])
            pv = b.bitcast(ipiv, I32.as_pointer())
            with k.for_range(mn, name="ps") as i:          # the row interchanges, in order
                j = b.sext(b.sub(b.load(b.gep(pv, [i])), I32(1)), I64)
                a_slot, b_slot = b.gep(pm, [i]), b.gep(pm, [j])
                x, y = b.load(a_slot), b.load(b_slot)
                b.store(y, a_slot)
                b.store(x, b_slot)
        factor = lambda i, j: load_as(k, advance(k, advance(k, sa, i, isz), j, b.mul(m, isz)), dtype, dtype)  # noqa
        with k.for_range(m, name="li") as i:               # row i of L U is row perm[i] of a
            row = b.sext(b.load(b.gep(pm, [i])), I64) if permute_l else i
            with k.for_range(mn, name="lj") as j:
                below, diag = b.icmp_signed(">", i, j), b.icmp_signed("==", i, j)
                v = b.select(below, factor(i, j), b.select(diag, one, zero))
                store_as(k, k.at(l, row, j, mn), v, dtype)
        with k.for_range(mn, name="ui") as i:
            with k.for_range(n, name="uj") as j:
                above = b.icmp_signed("<=", i, j)
                store_as(k, k.at(u, i, j, n), b.select(above, factor(i, j), zero), dtype)
        if not permute_l:                                  # P is real (scipy's dtype for a complex a)
            with k.for_range(b.mul(m, m), name="pz") as i:
                store_as(k, advance(k, p, i, k.rsz), ir.Constant(k.real_ty, 0.0), k.real)
            with k.for_range(m, name="pp") as i:           # P[perm[i], i] = 1
                row = b.sext(b.load(b.gep(pm, [i])), I64)
                store_as(k, advance(k, p, b.add(b.mul(row, m), i), k.rsz), ir.Constant(k.real_ty, 1.0), k.real)
        b.ret(I32(0))
    return kernel(module, f"lu.{int(permute_l)}", dtype, _MAT + [I8P, I8P, I8P, I64, I64, I8P, I8P, I8P], build)
