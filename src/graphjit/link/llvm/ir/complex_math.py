"""Complex arithmetic in IR on values ``{T re, T im}`` (complex64: T float, complex128: T double), as numpy computes it.

The value type is the memory layout (ir/layouts.py): a literal struct, aligned as numpy's arrays are (to the
component); loops load and store its two parts (loops/nest.py load_value), so a fused body computes on plain
floats and LLVM vectorises it as interleaved pairs. Arithmetic follows numpy's loops: the product and square
with numpy's FMAs, Smith's quotient with numpy's branches, ``abs`` through ``hypot``, numpy 2's ``sign``
(z/|z|). The transcendental functions are glibc's C99 complex functions (``cexp``, ``clog``, ``csqrt``,
``csin``, ..., ``cpow``), the ones numpy's own loops call on this platform, so results are numpy's bit for bit;
they are called with the x86-64 C ABI of ``_Complex`` (double: two doubles in, ``{double, double}`` out;
float: one ``<2 x float>``), hence only on x86-64 Linux (``HAS_C_COMPLEX``), elsewhere those ops take the
perform fallback.
"""
from __future__ import annotations

import platform
import sys
from typing import Sequence

from llvmlite import ir

from graphjit.link.llvm.ir.context import LowerContext

HAS_C_COMPLEX = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def parts(b: ir.IRBuilder, z: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(re, im) of a complex value."""
    return b.extract_value(z, 0), b.extract_value(z, 1)


def pack(b: ir.IRBuilder, re: ir.Value, im: ir.Value) -> ir.Value:
    """The complex value re + im*j (re and im of one float type)."""
    ty = ir.LiteralStructType([re.type, re.type])
    return b.insert_value(b.insert_value(ir.Constant(ty, ir.Undefined), re, 0), im, 1)


def _c(ty: ir.Type, v: float) -> ir.Constant:
    return ir.Constant(ty, v)


def add(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x + y."""
    (a, c), (d, e) = parts(b, x), parts(b, y)
    return pack(b, b.fadd(a, d), b.fadd(c, e))


def sub(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x - y."""
    (a, c), (d, e) = parts(b, x), parts(b, y)
    return pack(b, b.fsub(a, d), b.fsub(c, e))


def neg(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """-x."""
    a, c = parts(b, x)
    return pack(b, b.fneg(a), b.fneg(c))


def conj(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The complex conjugate."""
    a, c = parts(b, x)
    return pack(b, a, b.fneg(c))


def mul(ctx: LowerContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """x * y as numpy's loops compute it on an FMA host: (fma(a, d, -c*e), fma(a, e, c*d))."""
    b = ctx.builder
    (a, c), (d, e) = parts(b, x), parts(b, y)
    re = ctx.call_intrinsic("fma", [a, d, b.fneg(b.fmul(c, e))])
    return pack(b, re, ctx.call_intrinsic("fma", [a, e, b.fmul(c, d)]))


def mul_plain(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x * y as (a*d - c*e, a*e + c*d), no FMA (numpy's scalar products: its power loop; matrix-product loops)."""
    (a, c), (d, e) = parts(b, x), parts(b, y)
    return pack(b, b.fsub(b.fmul(a, d), b.fmul(c, e)), b.fadd(b.fmul(a, e), b.fmul(c, d)))


def sqr(ctx: LowerContext, x: ir.Value) -> ir.Value:
    """x * x as numpy's square: (fma(a, a, -c*c), fma(a, c, c*a))."""
    b = ctx.builder
    a, c = parts(b, x)
    re = ctx.call_intrinsic("fma", [a, a, b.fneg(b.fmul(c, c))])
    return pack(b, re, ctx.call_intrinsic("fma", [a, c, b.fmul(c, a)]))


def div(ctx: LowerContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """x / y by Smith's method with numpy's branches (no overflow for large or tiny y; y == 0 gives inf/nan)."""
    b = ctx.builder
    (a, c), (d, e) = parts(b, x), parts(b, y)
    ty = a.type
    ad, ae = ctx.call_intrinsic("fabs", [d]), ctx.call_intrinsic("fabs", [e])
    # |d| >= |e|: ratio e/d
    rat1 = b.fdiv(e, d)
    scl1 = b.fdiv(_c(ty, 1.0), b.fadd(d, b.fmul(e, rat1)))
    re1 = b.fmul(b.fadd(a, b.fmul(c, rat1)), scl1)
    im1 = b.fmul(b.fsub(c, b.fmul(a, rat1)), scl1)
    # both zero: a complex inf or nan, as numpy (division by |d|)
    re0, im0 = b.fdiv(a, ad), b.fdiv(c, ad)
    # |d| < |e| (or a NaN): ratio d/e
    rat2 = b.fdiv(d, e)
    scl2 = b.fdiv(_c(ty, 1.0), b.fadd(e, b.fmul(d, rat2)))
    re2 = b.fmul(b.fadd(b.fmul(a, rat2), c), scl2)
    im2 = b.fmul(b.fsub(b.fmul(c, rat2), a), scl2)
    first = b.fcmp_ordered(">=", ad, ae)
    zero = b.and_(b.fcmp_ordered("==", ad, _c(ty, 0.0)), b.fcmp_ordered("==", ae, _c(ty, 0.0)))
    re = b.select(first, b.select(zero, re0, re1), re2)
    im = b.select(first, b.select(zero, im0, im1), im2)
    return pack(b, re, im)


def _libm(ctx: LowerContext, name: str, args: Sequence[ir.Value]) -> ir.Value:
    """glibc's scalar libm function (not call_math: its libmvec variants round differently from numpy's)."""
    ty = args[0].type
    name = name + ("f" if isinstance(ty, ir.FloatType) else "")
    return ctx.call_external(name, ir.FunctionType(ty, [a.type for a in args]), args, attrs=("nounwind", "readnone"))


def abs_(ctx: LowerContext, x: ir.Value) -> ir.Value:
    """|x| = hypot(re, im) (no overflow or underflow in between), a float: graphjit's hypot (libmvec's in
    vectorised loops, ~15x faster than glibc's scalar one), within 2 ulp of numpy's."""
    return ctx.call_math("hypot", list(parts(ctx.builder, x)))


def angle(ctx: LowerContext, x: ir.Value) -> ir.Value:
    """arg(x) = atan2(im, re), a float."""
    re, im = parts(ctx.builder, x)
    return _libm(ctx, "atan2", [im, re])


def sign(ctx: LowerContext, x: ir.Value) -> ir.Value:
    """numpy 2's sign: x / |x|; 0 at 0; nan for a nan |x|; where |x| is inf, a unit along an infinite real part
    (nan if both parts are infinite), else along the imaginary axis (numpy's, also when |x| overflows)."""
    b = ctx.builder
    re, im = parts(b, x)
    ty = re.type
    r = _libm(ctx, "hypot", [re, im])           # glibc's, as numpy's npy_hypot: the same quotients
    inf, nan, zero, one = _c(ty, float("inf")), _c(ty, float("nan")), _c(ty, 0.0), _c(ty, 1.0)
    re_inf = b.fcmp_ordered("==", ctx.call_intrinsic("fabs", [re]), inf)
    im_inf = b.fcmp_ordered("==", ctx.call_intrinsic("fabs", [im]), inf)
    is_zero = b.fcmp_ordered("==", r, zero)
    out_re = b.select(is_zero, zero, b.fdiv(re, r))
    out_im = b.select(is_zero, zero, b.fdiv(im, r))
    inf_re = b.select(re_inf, b.select(im_inf, nan, ctx.call_intrinsic("copysign", [one, re])), zero)
    inf_im = b.select(re_inf, b.select(im_inf, nan, zero), ctx.call_intrinsic("copysign", [one, im]))
    r_inf = b.fcmp_ordered("==", r, inf)
    out_re, out_im = b.select(r_inf, inf_re, out_re), b.select(r_inf, inf_im, out_im)
    is_nan = b.fcmp_unordered("uno", r, r)
    return pack(b, b.select(is_nan, nan, out_re), b.select(is_nan, nan, out_im))


def eq(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x == y: both parts equal (an i1)."""
    (a, c), (d, e) = parts(b, x), parts(b, y)
    return b.and_(b.fcmp_ordered("==", a, d), b.fcmp_ordered("==", c, e))


def neq(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x != y: either part differs or is nan (an i1)."""
    (a, c), (d, e) = parts(b, x), parts(b, y)
    return b.or_(b.fcmp_unordered("!=", a, d), b.fcmp_unordered("!=", c, e))


def extremum(b: ir.IRBuilder, x: ir.Value, y: ir.Value, larger: bool) -> ir.Value:
    """numpy's maximum (larger) / minimum of complex values: lexicographic on (re, im); x when x has a NaN part
    or wins, else y (so a NaN in either propagates, x's first)."""
    (xr, xi), (yr, yi) = parts(b, x), parts(b, y)
    op = ">" if larger else "<"
    no_nan_im = b.and_(b.fcmp_ordered("==", xi, xi), b.fcmp_ordered("==", yi, yi))
    wins = b.or_(b.and_(b.fcmp_ordered(op, xr, yr), no_nan_im),
                 b.and_(b.fcmp_ordered("==", xr, yr), b.fcmp_ordered(op + "=", xi, yi)))
    x_nan = b.or_(b.fcmp_unordered("uno", xr, xr), b.fcmp_unordered("uno", xi, xi))
    return b.select(b.or_(x_nan, wins), x, y)


def call_c(ctx: LowerContext, name: str, args: Sequence[ir.Value]) -> ir.Value:
    """glibc's C99 complex function ``name`` (``cexp``; the ``f`` variant for complex64) on complex values."""
    b = ctx.builder
    part = args[0].type.elements[0]
    if isinstance(part, ir.DoubleType):
        flat = [p for z in args for p in parts(b, z)]
        fnty = ir.FunctionType(args[0].type, [part] * len(flat))
        return ctx.call_external(name, fnty, flat, attrs=("nounwind", "readnone"))
    vec = ir.VectorType(part, 2)
    packed = []
    for z in args:
        re, im = parts(b, z)
        v = b.insert_element(ir.Constant(vec, ir.Undefined), re, ir.Constant(ir.IntType(32), 0))
        packed.append(b.insert_element(v, im, ir.Constant(ir.IntType(32), 1)))
    # (call_external refuses vector arguments to a C function: they mean a scalar body given vectors there)
    fn = ctx.declare(name + "f", ir.FunctionType(vec, [vec] * len(packed)))
    out = b.call(fn, packed, attrs=("nounwind", "readnone"))
    i32 = ir.IntType(32)
    return pack(b, b.extract_element(out, ir.Constant(i32, 0)), b.extract_element(out, ir.Constant(i32, 1)))
