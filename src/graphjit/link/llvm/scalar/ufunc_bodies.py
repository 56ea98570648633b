"""LLVM bodies of numpy ufuncs that are more than one libm call: fmod, deg2rad/rad2deg, gcd/lcm, spacing,
logaddexp/logaddexp2.  Each computes what numpy's own loop computes (npymath's formulas), in numpy's loop dtypes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.ir.casts import element_type, kind

from graphjit.scalar import math as smath

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.registry import scalar_lowerings
from graphjit.link.llvm.scalar.bodies import Body

# numpy's float32 constants are float32 arithmetic on float32 pi (NPY_PIf / 180.0f, 180.0f / NPY_PIf)
_DEG = {"float64": np.pi / 180.0, "float32": float(np.float32(np.pi) / np.float32(180.0))}
_RAD = {"float64": 180.0 / np.pi, "float32": float(np.float32(180.0) / np.float32(np.pi))}


def _const(ty: ir.Type, value: float | int) -> ir.Constant:
    return ir.Constant(ty, value)


@scalar_lowerings.register(smath.fmod)
def _fmod(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    """C fmod for floats; integers: the remainder of truncated division, 0 for a zero divisor (as numpy)."""
    b, (x, y), k = ctx.builder, a, kind(dts[0])
    if k == "f":
        return ctx.call_math("fmod", [x, y]), dts[0]
    zero, one = _const(x.type, 0), _const(x.type, 1)
    special = b.icmp_unsigned("==", y, zero)
    if k == "i":        # x % -1 is 0 (and MIN % -1 would trap)
        special = b.or_(special, b.icmp_signed("==", y, _const(x.type, -1)))
    safe = b.select(special, one, y)
    rem = b.srem(x, safe) if k == "i" else b.urem(x, safe)
    return b.select(special, zero, rem), dts[0]


@scalar_lowerings.register(smath.deg2rad)
def _deg2rad(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return ctx.builder.fmul(a[0], _const(a[0].type, _DEG[dts[0]])), dts[0]


@scalar_lowerings.register(smath.rad2deg)
def _rad2deg(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return ctx.builder.fmul(a[0], _const(a[0].type, _RAD[dts[0]])), dts[0]


def _magnitude(ctx: LowerContext, x: ir.Value, k: str) -> ir.Value:
    """|x| (two's complement: abs(MIN) is MIN, read as unsigned that is 2**(n-1), numpy's answer)."""
    b = ctx.builder
    if k != "i":
        return x
    return b.select(b.icmp_signed("<", x, _const(x.type, 0)), b.sub(_const(x.type, 0), x), x)


def _euclid(ctx: LowerContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """gcd of two unsigned values: while y: x, y = y, x % y."""
    b = ctx.builder
    ty = x.type
    pre = b.block
    head = b.append_basic_block("gcd.head")
    body = b.append_basic_block("gcd.body")
    done = b.append_basic_block("gcd.done")
    b.branch(head)
    b.position_at_end(head)
    u, v = b.phi(ty), b.phi(ty)
    u.add_incoming(x, pre)
    v.add_incoming(y, pre)
    b.cbranch(b.icmp_unsigned("!=", v, _const(ty, 0)), body, done)
    b.position_at_end(body)
    u.add_incoming(v, body)
    v.add_incoming(b.urem(u, v), body)
    b.branch(head)
    b.position_at_end(done)
    return u


@scalar_lowerings.register(smath.gcd)
def _gcd(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    k = kind(dts[0])
    return _euclid(ctx, _magnitude(ctx, a[0], k), _magnitude(ctx, a[1], k)), dts[0]


@scalar_lowerings.register(smath.lcm)
def _lcm(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    """numpy's |x| / gcd * |y| (0 when both are 0), wrapping modulo 2**bits as numpy's does."""
    b, k = ctx.builder, kind(dts[0])
    x, y = _magnitude(ctx, a[0], k), _magnitude(ctx, a[1], k)
    g = _euclid(ctx, x, y)
    zero = b.icmp_unsigned("==", g, _const(g.type, 0))
    product = b.mul(b.udiv(x, b.select(zero, _const(g.type, 1), g)), y)
    return b.select(zero, _const(g.type, 0), product), dts[0]


@scalar_lowerings.register(smath.spacing)
def _spacing(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    """npy_spacing: the next float away from zero minus x; NaN for +-inf."""
    b, (x,) = ctx.builder, a
    inf = _const(x.type, float("inf"))
    # away from zero; from either zero towards +inf (numpy's spacing(-0.0) is the smallest positive subnormal)
    towards = b.select(b.fcmp_ordered("==", x, _const(x.type, 0.0)), inf, ctx.call_intrinsic("copysign", [inf, x]))
    step = b.fsub(ctx.call_math("nextafter", [x, towards]), x)
    is_inf = b.fcmp_ordered("==", ctx.call_intrinsic("fabs", [x]), inf)
    return b.select(is_inf, _const(x.type, float("nan")), step), dts[0]


def libm_scalar(ctx: LowerContext, name: str, x: ir.Value) -> ir.Value:
    """The C library's own scalar function (no vector variant, no inline exp): what numpy's scalar loop calls,
    so results that cancel (logaddexp near 0) agree to the bit."""
    single = isinstance(element_type(x.type), ir.FloatType)
    return ctx.call_external(name + ("f" if single else ""), ir.FunctionType(x.type, [x.type]), [x],
                             attrs=("nounwind", "readnone"))


def _logaddexp(ctx: LowerContext, x: ir.Value, y: ir.Value, base2: bool) -> ir.Value:
    """npy_logaddexp(2): x == y gives x + log(2) (equal infinities); else max + log1p(exp(-|x - y|))."""
    b = ctx.builder
    t = b.fsub(x, y)
    pos = b.fcmp_ordered(">", t, _const(x.type, 0.0))
    big = b.select(pos, x, y)
    neg_gap = b.select(pos, b.fneg(t), t)         # NaN stays NaN (then the sum is NaN too)
    if base2:
        tail = b.fmul(_const(x.type, 1.0 / np.log(2.0)), libm_scalar(ctx, "log1p", libm_scalar(ctx, "exp2", neg_gap)))
        same = b.fadd(x, _const(x.type, 1.0))
    else:
        tail = libm_scalar(ctx, "log1p", libm_scalar(ctx, "exp", neg_gap))
        same = b.fadd(x, _const(x.type, float(np.log(2.0))))
    return b.select(b.fcmp_ordered("==", x, y), same, b.fadd(big, tail))


@scalar_lowerings.register(smath.logaddexp)
def _logaddexp_body(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _logaddexp(ctx, a[0], a[1], base2=False), dts[0]


@scalar_lowerings.register(smath.logaddexp2)
def _logaddexp2_body(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _logaddexp(ctx, a[0], a[1], base2=True), dts[0]
