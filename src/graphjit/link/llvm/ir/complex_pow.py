"""x ** y on complex values as numpy's loop computes it (its ``nc_pow``): 1 for y == 0; 0 for x == 0 and real(y) > 0,
else nan there; for a real integer y with |y| < 100, repeated products (the schoolbook product, no FMA)
and, for y < 0, Smith's quotient 1 / x**|y|; otherwise glibc's ``cpow``. Branch-free but for the ``cpow`` call,
which runs only where the cheaper cases do not apply."""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir.complex_math import call_c, div, mul_plain as _prod, pack, parts
from graphjit.link.llvm.ir.context import LowerContext

_BITS = 7          # |n| < 100 < 2**7


def _int_power(b: ir.IRBuilder, x: ir.Value, n: ir.Value) -> ir.Value:
    """x ** |n| by squaring (n an i64 with |n| < 2**_BITS), the products in numpy's order."""
    ty = x.type
    part = ty.elements[0]
    one = ir.Constant(ty, [ir.Constant(part, 1.0), ir.Constant(part, 0.0)])
    i64 = n.type
    m = b.select(b.icmp_signed("<", n, ir.Constant(i64, 0)), b.neg(n), n)
    acc, p = one, x
    for bit in range(_BITS):
        on = b.icmp_unsigned("!=", b.and_(m, ir.Constant(i64, 1 << bit)), ir.Constant(i64, 0))
        acc = b.select(on, _prod(b, acc, p), acc)
        if bit + 1 < _BITS:
            p = _prod(b, p, p)
    return acc


def power(ctx: LowerContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """numpy's complex x ** y (module doc)."""
    b = ctx.builder
    (xr, xi), (yr, yi) = parts(b, x), parts(b, y)
    part = xr.type
    zero, i64 = ir.Constant(part, 0.0), ir.IntType(64)
    nan = ir.Constant(part, float("nan"))
    y_zero = b.and_(b.fcmp_ordered("==", yr, zero), b.fcmp_ordered("==", yi, zero))
    x_zero = b.and_(b.fcmp_ordered("==", xr, zero), b.fcmp_ordered("==", xi, zero))
    y_real = b.fcmp_ordered("==", yi, zero)
    # an integer exponent: yr == trunc(yr) and |yr| < 100 (so the i64 conversion is exact)
    small = b.fcmp_ordered("<", ctx.call_intrinsic("fabs", [yr]), ir.Constant(part, 100.0))
    integral = b.and_(b.and_(y_real, small), b.fcmp_ordered("==", yr, ctx.call_intrinsic("trunc", [yr])))
    n = b.fptosi(b.select(integral, yr, zero), i64)
    powered = _int_power(b, x, n)
    negative = b.fcmp_ordered("<", yr, zero)
    one = pack(b, ir.Constant(part, 1.0), zero)
    by_ints = b.select(negative, div(ctx, one, powered), powered)
    n1 = b.icmp_signed("==", n, ir.Constant(i64, 1))
    n2 = b.icmp_signed("==", n, ir.Constant(i64, 2))
    n3 = b.icmp_signed("==", n, ir.Constant(i64, 3))
    sq = _prod(b, x, x)
    by_ints = b.select(n1, x, b.select(n2, sq, b.select(n3, _prod(b, x, sq), by_ints)))
    at_zero = b.select(b.fcmp_ordered(">", yr, zero), pack(b, zero, zero), pack(b, nan, nan))
    cheap = b.select(y_zero, one, b.select(x_zero, at_zero, by_ints))
    slot = ctx.alloca(x.type, name="cpow")
    b.store(cheap, slot)
    general = b.not_(b.or_(y_zero, b.or_(x_zero, integral)))
    with b.if_then(general, likely=False):
        b.store(call_c(ctx, "cpow", [x, y]), slot)
    return b.load(slot)
