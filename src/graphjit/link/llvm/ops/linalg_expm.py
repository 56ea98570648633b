"""The native matrix exponential (Expm): scaling and squaring with a [m/m] Pade approximant, m chosen as in
Al-Mohy & Higham, "A new scaling and squaring algorithm for the matrix exponential" (SIAM J. Matrix Anal.
Appl. 31(3), 2009), Algorithm 5.1, the algorithm of scipy.linalg.expm.

The kernel works in float64 (float32 inputs are widened, the result rounded back) on C-ordered copies: the
1-norms ||A^k||_1 are computed exactly from the powers the approximant needs anyway (A^8 and A^4 A^6 only
when the cheaper degrees are ruled out), and ||abs(A)^p||_1 of the backward-error estimate ell(A, m) by
p products of the all-ones row vector with abs(A).  dgemm forms the products (C = X Y in C order is
C^T = Y^T X^T column-major), dgesv the quotient q(A)^-1 p(A) (p and q commute, so the column-major view's
solve gives the C-order quotient).  A matrix with a non-finite entry gives NaN.

A complex matrix is computed the same way in complex128 (complex64 widened, the result rounded back): zgemm
and zgesv on the complex buffers, the norms (of |a_ij|) and abs(A) with its products in float64.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.linalg import Expm

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir import complex_math as cm
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.jit.lapack_library import routine
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import advance, load_as, store_as
from graphjit.link.llvm.ops.linalg import _check, _each, _float, _scratch, _square
from graphjit.link.llvm.ops.linalg_kernels import Kernel
from graphjit.link.llvm.registry import lowerings

# the largest 2^-s ||A|| bounds (theta_m, Table 3.1 of the paper) for which degree m meets double precision
THETA = {3: 1.495585217958292e-2, 5: 2.539398330063230e-1, 7: 9.504178996162932e-1, 9: 2.097847961257068,
         13: 4.25}
MATRICES = 10                      # A, A^2, A^4, A^6, A^8, U, V (then P), Q, a product buffer, abs(A)
VECTORS = 3
_CAP = 1100.0                      # more halvings than a finite float64 norm can need
_R = I64(8)                        # bytes of a float64 (norms, abs(A), the vectors)


def pade_coefficients(m: int) -> list[float]:
    """b_0..b_m of the [m/m] Pade approximant of exp: b_j = (2m - j)! m! / ((2m)! j! (m - j)!)."""
    f = math.factorial
    return [float(Fraction(f(2 * m - j) * f(m), f(2 * m) * f(j) * f(m - j))) for j in range(m + 1)]


def error_coefficient_inverse(m: int) -> float:
    """1 / |c_{2m+1}|, the leading coefficient of exp(x) - r_m(x): (2m)! (2m+1)! / (m!)^2."""
    f = math.factorial
    return float(Fraction(f(2 * m) * f(2 * m + 1), f(m) ** 2))


def workspace(n: ir.Value, b: ir.IRBuilder) -> ir.Value:
    """float64 elements of the kernel's workspace: MATRICES n x n matrices and VECTORS n-vectors."""
    return b.add(b.mul(I64(MATRICES), b.mul(n, n)), b.add(b.mul(I64(VECTORS), n), I64(1)))


class _Expm:
    """The IR of one kernel: buffers, products, norms, the degree choice, the approximant, the squarings.

    Elements are float64 or complex128 (the kernel's dtype, ``E``); norms, coefficients, abs(A) (stored real in
    its slot) and the vectors of the norm estimate are float64."""

    def __init__(self, k: Kernel, n: ir.Value, work: ir.Value, ipiv: ir.Value) -> None:
        self.k, self.b, self.n, self.ipiv = k, k.builder, n, ipiv
        self.E = k.dtype
        nn = self.b.mul(n, n)
        self.a, self.a2, self.a4, self.a6, self.a8, self.u, self.v, self.q, self.t, self.abs_a = (
            advance(k, work, self.b.mul(I64(i), nn), k.isz) for i in range(MATRICES))
        self.vec = advance(k, work, self.b.mul(I64(MATRICES), nn), k.isz)
        self.vec2 = advance(k, self.vec, n, _R)
        self.sums = advance(k, self.vec2, n, _R)
        self.powers = k.alloca(I64)          # how many times the chain in vec has been multiplied by abs(A)
        self.norm = self.const(0.0)          # ||A||_1, set once A is copied in

    def const(self, x: float) -> ir.Value:
        """A float64 constant."""
        return ir.Constant(self.k.real_ty, x)

    def elem(self, base: ir.Value, i: ir.Value, j: ir.Value) -> ir.Value:
        return self.k.at(base, i, j, self.n)

    def load(self, ptr: ir.Value) -> ir.Value:
        """An element (float64 or complex128)."""
        return load_as(self.k, ptr, self.E, self.E)

    def rload(self, ptr: ir.Value) -> ir.Value:
        """A float64."""
        return load_as(self.k, ptr, "float64", "float64")

    def rstore(self, ptr: ir.Value, v: ir.Value) -> None:
        store_as(self.k, ptr, v, "float64")

    def rvec(self, base: ir.Value, j: ir.Value) -> ir.Value:
        """Byte pointer of entry j of a float64 vector (or of the real abs(A), row-major with n columns)."""
        return advance(self.k, base, j, _R)

    def magnitude(self, v: ir.Value) -> ir.Value:
        """|v| as float64."""
        return cm.abs_(self.k, v) if self.k.complex else self.k.call_intrinsic("fabs", [v])

    def gemm(self, c: ir.Value, x: ir.Value, y: ir.Value) -> None:
        """c = x @ y (C order)."""
        k, n = self.k, self.n
        k.call("gemm", [k.char("N"), k.char("N"), k.i32(n), k.i32(n), k.i32(n), k.scalar(1.0), y, k.i32(n), x,
                        k.i32(n), k.scalar(0.0), c, k.i32(n)])

    def combo(self, dst: ir.Value, terms: Sequence[tuple], diag: float = 0.0, base: ir.Value | None = None,
              absolute: bool = False) -> None:
        """dst = base + sum(coef * src) + diag * I elementwise (coef a float or a double value); absolute:
        |sum|, stored as float64 (abs(A))."""
        b, k = self.b, self.k
        cx = k.complex
        with k.for_range(self.n, name="cr") as i:
            with k.for_range(self.n, name="cc") as j:
                acc = self.load(self.elem(base, i, j)) if base is not None else k.const(0.0)
                parts = [b.extract_value(acc, 0), b.extract_value(acc, 1)] if cx else [acc]
                for coef, src in terms:
                    c = self.const(coef) if isinstance(coef, float) else coef
                    v = self.load(self.elem(src, i, j))
                    vs = [b.extract_value(v, 0), b.extract_value(v, 1)] if cx else [v]
                    parts = [b.fadd(p, b.fmul(c, q)) for p, q in zip(parts, vs)]
                if diag:
                    parts[0] = b.fadd(parts[0], b.select(b.icmp_signed("==", i, j), self.const(diag),
                                                         self.const(0.0)))
                acc = cm.pack(b, *parts) if cx else parts[0]
                if absolute:
                    self.rstore(self.rvec(dst, b.add(b.mul(i, self.n), j)), self.magnitude(acc))
                else:
                    store_as(k, self.elem(dst, i, j), acc, self.E)

    def norm1(self, x: ir.Value) -> ir.Value:
        """max_j sum_i |x[i, j]| (column sums accumulated row by row: contiguous, vectorised)."""
        b, k = self.b, self.k
        self.rfill(self.sums, 0.0)
        with k.for_range(self.n, name="ni") as i:
            with k.for_range(self.n, name="nj") as j:
                slot = self.rvec(self.sums, j)
                v = self.magnitude(self.load(self.elem(x, i, j)))
                self.rstore(slot, b.fadd(self.rload(slot), v))
        return self.largest(self.sums)

    def rfill(self, vec: ir.Value, value: float) -> None:
        with self.k.for_range(self.n, name="rf") as j:
            self.rstore(self.rvec(vec, j), self.const(value))

    def largest(self, vec: ir.Value) -> ir.Value:
        """The largest of n non-negative values (NaN if one is)."""
        b, k = self.b, self.k
        best = k.alloca(k.real_ty)
        b.store(self.const(0.0), best)
        with k.for_range(self.n, name="lg") as j:
            s = self.rload(self.rvec(vec, j))
            b.store(b.select(b.fcmp_unordered(">", s, b.load(best)), s, b.load(best)), best)
        return b.load(best)

    def root_norm(self, x: ir.Value, p: int) -> ir.Value:
        """||x||_1^(1/p)."""
        return self.k.call_math("pow", [self.norm1(x), self.const(1.0 / p)])

    def restart_chain(self) -> None:
        """vec = the all-ones row vector, no product taken yet."""
        self.rfill(self.vec, 1.0)
        self.b.store(I64(0), self.powers)

    def ell(self, m: int, c: ir.Value) -> ir.Value:
        """ell(c A, m) = max(ceil(log2(alpha / u) / 2m), 0), alpha = |c_2m+1| ||abs(cA)^(2m+1)||_1 / ||cA||_1;
        the norm of the non-negative power is that of the row vector 1^T abs(cA)^(2m+1), continued from the
        products already taken (the unscaled degrees 3 to 9 share one chain)."""
        b, k, n = self.b, self.k, self.n
        dgemv = routine(k.module, "dgemv")
        with k.for_range(I64(2 * m + 1), start=b.load(self.powers), name="ep"):
            # vec^T abs(A) in C order is abs(A)'s column-major view times vec
            args = [k.char("N"), k.i32(n), k.i32(n), self.slot(c), self.abs_a, k.i32(n), self.vec, k.i32(1),
                    self.slot(self.const(0.0)), self.vec2, k.i32(1)]
            b.call(dgemv, [b.bitcast(x, I8P) for x in args])
            with k.for_range(n, name="ec") as j:
                self.rstore(self.rvec(self.vec, j), self.rload(self.rvec(self.vec2, j)))
        b.store(b.select(b.icmp_signed("<", b.load(self.powers), I64(2 * m + 1)), I64(2 * m + 1),
                         b.load(self.powers)), self.powers)
        alpha = b.fdiv(self.largest(self.vec), b.fmul(b.fmul(c, self.norm), self.const(error_coefficient_inverse(m))))
        steps = k.call_math("ceil", [b.fdiv(b.fadd(k.call_math("log2", [alpha]), self.const(53.0)),
                                             self.const(2.0 * m))])
        return self.clamp(steps)

    def slot(self, v: ir.Value) -> ir.Value:
        """A double* holding v."""
        p = self.k.alloca(self.k.real_ty)
        self.b.store(v, p)
        return p

    def clamp(self, x: ir.Value) -> ir.Value:
        """x as i64, NaN / negative -> 0, beyond _CAP (inf) -> _CAP."""
        b = self.b
        x = b.select(b.fcmp_ordered(">", x, self.const(0.0)), x, self.const(0.0))
        x = b.select(b.fcmp_ordered("<", x, self.const(_CAP)), x, self.const(_CAP))
        return b.fptosi(x, I64)

    def approximant(self, m: int) -> None:
        """U (odd part) and V (even part) of the degree-m approximant from the (scaled) powers."""
        c = pade_coefficients(m)
        if m == 13:
            self.combo(self.t, [(c[13], self.a6), (c[11], self.a4), (c[9], self.a2)])
            self.gemm(self.q, self.a6, self.t)
            self.combo(self.q, [(c[7], self.a6), (c[5], self.a4), (c[3], self.a2)], c[1], base=self.q)
            self.gemm(self.u, self.a, self.q)
            self.combo(self.t, [(c[12], self.a6), (c[10], self.a4), (c[8], self.a2)])
            self.gemm(self.v, self.a6, self.t)
            self.combo(self.v, [(c[6], self.a6), (c[4], self.a4), (c[2], self.a2)], c[0], base=self.v)
            return
        powers = [self.a2, self.a4, self.a6, self.a8][:m // 2]
        self.combo(self.t, [(c[2 * i + 3], p) for i, p in enumerate(powers)], c[1])
        self.gemm(self.u, self.a, self.t)
        self.combo(self.v, [(c[2 * i + 2], p) for i, p in enumerate(powers)], c[0])


def expm_kernel(module: ir.Module, in_dtype: str) -> ir.Function:
    """(a, ars, acs, out, n, work, ipiv) -> info: out (C order, in_dtype) = expm(a), computed in float64 (or
    complex128 for a complex a: zgemm, zgesv)."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, out, n, work, ipiv = args
        b = k.builder
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        e = _Expm(k, n, work, ipiv)
        with k.for_range(n, name="ir") as i:
            with k.for_range(n, name="ic") as j:
                v = load_as(k, advance(k, advance(k, a, i, ars), j, acs), in_dtype, e.E)
                store_as(k, e.elem(e.a, i, j), v, e.E)
        norm = e.norm = e.norm1(e.a)
        finite = b.fcmp_ordered("<", k.call_intrinsic("fabs", [norm]), e.const(math.inf))
        with k.early_return(b.not_(finite)):
            k.fill(e.a, b.mul(n, n), math.nan)
            _store_out(k, e, e.a, out, in_dtype)
        s = _choose(k, e)
        e.combo(e.q, [(-1.0, e.u)], base=e.v)                     # q(A) = V - U, p(A) = V + U
        e.combo(e.v, [(1.0, e.u)], base=e.v)
        info = k.alloca(I32)
        k.call("gesv", [k.i32(n), k.i32(n), e.q, k.i32(n), ipiv, e.v, k.i32(n), info])
        with k.early_return(b.icmp_signed("!=", b.load(info), I32(0)), b.load(info)):
            pass
        with k.for_range(s, name="sq"):                          # r(A)^(2^s)
            e.gemm(e.t, e.v, e.v)
            e.combo(e.v, [(1.0, e.t)])
        _store_out(k, e, e.v, out, in_dtype)
        b.ret(I32(0))
    fnty = ir.FunctionType(I32, [I8P, I64, I64, I8P, I64, I8P, I8P])
    fn, new = kernel_function(module, f"linalg.expm.{in_dtype}", fnty)   # its loops get the full pipeline
    if new:
        inside = "complex128" if in_dtype.startswith("complex") else "float64"
        build(Kernel(fn, inside), list(fn.args))                  # float64 / complex128 inside
    return fn


def _store_out(k: Kernel, e: _Expm, src: ir.Value, out: ir.Value, dtype: str) -> None:
    """out (C order, dtype) = src rounded to dtype."""
    b = k.builder
    size = I64(np.dtype(dtype).itemsize)
    with k.for_range(e.n, name="or") as i:
        with k.for_range(e.n, name="oc") as j:
            v = e.load(e.elem(src, i, j))
            if dtype == "float32":
                v = b.fptrunc(v, ir.FloatType())
            elif dtype == "complex64":
                v = cm.pack(b, *(b.fptrunc(b.extract_value(v, p), ir.FloatType()) for p in (0, 1)))
            store_as(k, advance(k, out, b.add(b.mul(i, e.n), j), size), v, dtype)


def _choose(k: Kernel, e: _Expm) -> ir.Value:
    """Algorithm 5.1's choice of the degree m and the scaling s; leaves U and V of the scaled matrix; returns s."""
    b = k.builder
    one = e.const(1.0)
    chosen, s_slot, d8, eta3 = k.alloca(I64), k.alloca(I64), k.alloca(k.real_ty), k.alloca(k.real_ty)
    b.store(I64(0), chosen)
    b.store(I64(0), s_slot)
    e.combo(e.abs_a, [(1.0, e.a)], absolute=True)
    e.restart_chain()
    e.gemm(e.a2, e.a, e.a)
    e.gemm(e.a4, e.a2, e.a2)
    e.gemm(e.a6, e.a4, e.a2)
    d6 = e.root_norm(e.a6, 6)
    eta1 = _max(b, e.root_norm(e.a4, 4), d6)

    def pick(m: int, eta: ir.Value) -> None:
        with b.if_then(b.icmp_signed("==", b.load(chosen), I64(0))):
            with b.if_then(b.fcmp_ordered("<=", eta, e.const(THETA[m]))):
                with b.if_then(b.icmp_signed("==", e.ell(m, one), I64(0))):
                    b.store(I64(m), chosen)

    pick(3, eta1)
    pick(5, eta1)
    undecided = lambda: b.if_then(b.icmp_signed("==", b.load(chosen), I64(0)))  # noqa: E731
    with undecided():
        e.gemm(e.a8, e.a4, e.a4)
        b.store(e.root_norm(e.a8, 8), d8)
        b.store(_max(b, d6, b.load(d8)), eta3)
    pick(7, b.load(eta3))
    pick(9, b.load(eta3))
    with undecided():
        e.gemm(e.t, e.a4, e.a6)
        eta5 = _min(b, b.load(eta3), _max(b, b.load(d8), e.root_norm(e.t, 10)))
        s = e.clamp(k.call_math("ceil", [k.call_math("log2", [b.fdiv(eta5, e.const(THETA[13]))])]))
        scale = lambda s_: k.call_math("exp2", [b.fneg(b.sitofp(s_, k.real_ty))])  # noqa: E731
        e.restart_chain()
        s = b.add(s, e.ell(13, scale(s)))
        b.store(s, s_slot)
        c = scale(s)
        c2 = b.fmul(c, c)
        c4 = b.fmul(c2, c2)
        for buf, f in ((e.a, c), (e.a2, c2), (e.a4, c4), (e.a6, b.fmul(c4, c2))):
            e.combo(buf, [(f, buf)])
        b.store(I64(13), chosen)
    for m in (3, 5, 7, 9, 13):
        with b.if_then(b.icmp_signed("==", b.load(chosen), I64(m))):
            e.approximant(m)
    return b.load(s_slot)


def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.fcmp_unordered(">", x, y), x, y)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.fcmp_unordered("<", x, y), x, y)


@lowerings.register(Expm, applies=_float, complex=True)
def lower_expm(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """One kernel call per matrix of the batch, a float64 (complex128) workspace of 10 n^2 + 3n + 1 elements."""
    (a,) = inputs
    nd, dtype = node.inputs[0].ndim, node.outputs[0].type.dtype
    b = ctx.builder
    n = _square(ctx, node, a, nd)
    batch = [ctx.shape(a, d) for d in range(nd - 2)]
    out = ctx.allocate(node, 0, batch + [n, n])
    inside = "complex128" if dtype.startswith("complex") else "float64"
    work = _scratch(ctx, node, inside, [workspace(n, b)], "work")
    ipiv = _scratch(ctx, node, "int32", [n], "ipiv")
    fn = expm_kernel(ctx.module, dtype)
    with _each(ctx, batch, [(a, nd, 2), (out, nd, 2)]) as (pa, po):
        info = b.call(fn, [pa, ctx.stride(a, nd - 2), ctx.stride(a, nd - 1), po, n, work, ipiv])
        _check(ctx, node, info, "the Pade denominator is singular (%lld)", False)
    return [out]
