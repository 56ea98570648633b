"""LLVM bodies of the scalar ops whose math is more than one Opcode/Intrinsic/Libm call, keyed by the op.

A body gets the inputs already cast to its loop dtypes and returns (value, its dtype); scalar/lower.py casts
that to the output dtype.  Registration options: ``loop_dtypes(in_dtypes, out_dtype)`` when the body does not
compute in numpy's ufunc loop dtypes, ``serial=True`` when it can raise (its loop never runs in threads).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Tuple

from llvmlite import ir

from graphjit.scalar import math as smath
from graphjit.scalar.basic import ScalarOp

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.registry import scalar_lowerings
from graphjit.link.llvm.ir.casts import cast_value, element_type, kind

Body = Tuple[ir.Value, str]


def in_out_dtype(in_dtypes: Sequence[str], out_dtype: str) -> tuple:
    """loop_dtypes of an op computed in its output dtype (graphjit's dtype rule, not numpy's ufunc loop)."""
    return tuple(out_dtype for _ in in_dtypes)


def _body(op: ScalarOp, **options: Any) -> Callable[[Callable], Callable]:
    return scalar_lowerings.register(op, **options)


def _const(ty: ir.Type, value: Any) -> ir.Constant:
    return ir.Constant(ty, value)


@_body(smath.neg)
def _neg(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    b = ctx.builder
    x, = a
    return (b.fneg(x) if kind(dts[0]) == "f" else b.sub(_const(x.type, 0), x)), dts[0]


@_body(smath.abs)
def _abs(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    b, (x,), k = ctx.builder, a, kind(dts[0])
    if k == "f":
        return ctx.call_intrinsic("fabs", [x]), dts[0]
    if k == "i":
        return b.select(b.icmp_signed("<", x, _const(x.type, 0)), b.sub(_const(x.type, 0), x), x), dts[0]
    return x, dts[0]


@_body(smath.sign)
def _sign(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    b, (x,), k = ctx.builder, a, kind(dts[0])
    one, zero = _const(x.type, 1 if k != "f" else 1.0), _const(x.type, 0 if k != "f" else 0.0)
    if k == "f":
        pos, neg = b.fcmp_ordered(">", x, zero), b.fcmp_ordered("<", x, zero)
        return b.select(pos, one, b.select(neg, _const(x.type, -1.0), x)), dts[0]
    if k == "i":
        pos, neg = b.icmp_signed(">", x, zero), b.icmp_signed("<", x, zero)
        return b.sub(b.zext(pos, x.type), b.zext(neg, x.type)), dts[0]
    return b.zext(b.icmp_unsigned("!=", x, zero), x.type) if k == "u" else x, dts[0]


@_body(smath.sqr)
def _sqr(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    b, (x,), k = ctx.builder, a, kind(dts[0])
    return (b.fmul(x, x) if k == "f" else b.and_(x, x) if k == "b" else b.mul(x, x)), dts[0]


@_body(smath.reciprocal)
def _reciprocal(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    x, = a
    return ctx.builder.fdiv(_const(x.type, 1.0), x), dts[0]


@_body(smath.identity)
def _identity(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return a[0], dts[0]


@_body(smath.second, loop_dtypes=lambda ins, out: (ins[0], out))
def _second(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return a[1], dts[1]


@_body(smath.invert)
def _invert(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    x, = a
    return ctx.builder.xor(x, _const(x.type, -1 if element_type(x.type).width > 1 else 1)), dts[0]


@_body(smath.isnan)
def _isnan(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    x, = a
    if kind(dts[0]) != "f":
        return _const(ir.IntType(1), 0), "bool"
    return ctx.builder.fcmp_unordered("uno", x, x), "bool"


@_body(smath.isinf)
def _isinf(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    x, = a
    if kind(dts[0]) != "f":
        return _const(ir.IntType(1), 0), "bool"
    return ctx.builder.fcmp_ordered("==", ctx.call_intrinsic("fabs", [x]), _const(x.type, float("inf"))), "bool"


@_body(smath.isfinite)
def _isfinite(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    x, = a
    if kind(dts[0]) != "f":
        return _const(ir.IntType(1), 1), "bool"
    return ctx.builder.fcmp_ordered("<", ctx.call_intrinsic("fabs", [x]), _const(x.type, float("inf"))), "bool"


def _shift(ctx: LowerContext, a: list, dts: Sequence[str], out: str, left: bool) -> Body:
    """numpy's npy_lshift/npy_rshift: a count outside [0, width) (negative too) shifts every bit out."""
    b, (x, n), k = ctx.builder, a, kind(dts[0])
    in_range = b.icmp_unsigned("<", n, _const(n.type, element_type(x.type).width))
    if not left and k == "i":
        # arithmetic shift by width-1 leaves the sign: 0 or -1, as numpy gives for large counts
        return b.ashr(x, b.select(in_range, n, _const(n.type, element_type(x.type).width - 1))), dts[0]
    safe = b.select(in_range, n, _const(n.type, 0))
    shifted = b.shl(x, safe) if left else b.lshr(x, safe)
    return b.select(in_range, shifted, _const(x.type, 0)), dts[0]


@_body(smath.left_shift)
def _left_shift(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _shift(ctx, a, dts, out, left=True)


@_body(smath.right_shift)
def _right_shift(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _shift(ctx, a, dts, out, left=False)


def _minmax(which: str) -> Callable:
    def body(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
        b, k = ctx.builder, kind(dts[0])
        if k == "f":
            return ctx.call_intrinsic("minimum" if which == "min" else "maximum", a), dts[0]
        if k == "b":
            return (b.and_(*a) if which == "min" else b.or_(*a)), dts[0]
        return ctx.call_intrinsic(("s" if k == "i" else "u") + which, a), dts[0]
    return body


# in double for a float32 result too: rounded once it is within 2 ulp of scipy's float expit everywhere
@_body(smath.sigmoid, loop_dtypes=lambda ins, out: ("float64",))
def _sigmoid(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    b, (x,) = ctx.builder, a
    e = ctx.call_math("exp", [b.fneg(x)])
    return b.fdiv(_const(x.type, 1.0), b.fadd(_const(x.type, 1.0), e)), dts[0]


@_body(smath.softplus)
def _softplus(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    b, (x,) = ctx.builder, a
    zero = _const(x.type, 0.0)
    m = ctx.call_intrinsic("maximum", [x, zero])
    t = ctx.call_math("log1p", [ctx.call_math("exp", [b.fneg(ctx.call_intrinsic("fabs", [x]))])])
    return b.fadd(m, t), dts[0]


@_body(smath.clip)
def _clip(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    lo = _minmax("max")(ctx, [a[0], a[1]], dts, out)[0]
    return _minmax("min")(ctx, [lo, a[2]], dts, out)


@_body(smath.switch, loop_dtypes=lambda ins, out: (ins[0], out, out))
def _switch(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    cond = cast_value(ctx.builder, a[0], dts[0], "bool")
    return ctx.builder.select(cond, a[1], a[2]), out


@_body(smath.int_div)
def _int_div(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _divmod(ctx, a[0], a[1], kind(dts[0]))[0], dts[0]


@_body(smath.mod)
def _mod(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _divmod(ctx, a[0], a[1], kind(dts[0]))[1], dts[0]


def _divmod(ctx: LowerContext, x: ir.Value, y: ir.Value, k: str) -> tuple[ir.Value, ir.Value]:
    """numpy's floor division and remainder for dtype kind k; integers: (0, 0) for y == 0, MIN // -1 wraps."""
    if k == "f":
        return _float_divmod(ctx, x, y)
    b, signed = ctx.builder, k == "i"
    zero, one = _const(x.type, 0), _const(x.type, 1)
    y_zero = b.icmp_unsigned("==", y, zero)
    if not signed:
        safe = b.select(y_zero, one, y)
        return b.select(y_zero, zero, b.udiv(x, safe)), b.select(y_zero, zero, b.urem(x, safe))
    y_m1 = b.icmp_signed("==", y, _const(x.type, -1))
    special = b.or_(y_zero, y_m1)
    safe = b.select(special, one, y)
    q, r = b.sdiv(x, safe), b.srem(x, safe)
    adjust = b.and_(b.icmp_signed("!=", r, zero), b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
    q = b.select(y_zero, zero, b.select(y_m1, b.sub(zero, x), b.sub(q, b.zext(adjust, x.type))))
    return q, b.select(special, zero, b.select(adjust, b.add(r, y), r))


def _float_divmod(ctx: LowerContext, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """numpy's npy_divmod: (floor division, remainder with the sign of the divisor)."""
    b = ctx.builder
    zero, half, one = _const(x.type, 0.0), _const(x.type, 0.5), _const(x.type, 1.0)
    mod = b.frem(x, y)
    div = b.fdiv(b.fsub(x, mod), y)
    fix = b.and_(b.fcmp_ordered("!=", mod, zero), b.xor(b.fcmp_ordered("<", y, zero),
                                                       b.fcmp_ordered("<", mod, zero)))
    mod = b.select(fix, b.fadd(mod, y), b.select(b.fcmp_ordered("==", mod, zero),
                                                 ctx.call_intrinsic("copysign", [zero, y]), mod))
    div = b.select(fix, b.fsub(div, one), div)
    floordiv = ctx.call_intrinsic("floor", [div])
    floordiv = b.select(b.fcmp_ordered(">", b.fsub(div, floordiv), half), b.fadd(floordiv, one), floordiv)
    floordiv = b.select(b.fcmp_ordered("==", div, zero), ctx.call_intrinsic("copysign", [zero, b.fdiv(x, y)]),
                        floordiv)
    floordiv = b.select(b.fcmp_ordered("==", y, zero), b.fdiv(x, y), floordiv)
    return floordiv, mod


@_body(smath.pow, serial=True)
def _pow(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    b, (x, y), k = ctx.builder, a, kind(dts[0])
    if k == "f":
        return ctx.call_math("pow", [x, y]), dts[0]
    if k == "b":
        return b.or_(x, b.xor(y, _const(y.type, 1))), dts[0]
    if k == "i":
        ctx.scalar_error_if(b.icmp_signed("<", y, _const(y.type, 0)), "ValueError",
                            "Integers to negative integer powers are not allowed.")
    return _int_pow(ctx, x, y), dts[0]


def _int_pow(ctx: LowerContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """Exponentiation by squaring (y >= 0), wrapping like numpy's integer power."""
    b = ctx.builder
    ty = x.type
    pre = b.block
    head = b.append_basic_block("pow.head")
    body = b.append_basic_block("pow.body")
    done = b.append_basic_block("pow.done")
    b.branch(head)
    b.position_at_end(head)
    acc, base, e = b.phi(ty), b.phi(ty), b.phi(ty)
    acc.add_incoming(_const(ty, 1), pre)
    base.add_incoming(x, pre)
    e.add_incoming(y, pre)
    b.cbranch(b.icmp_signed(">", e, _const(ty, 0)), body, done)
    b.position_at_end(body)
    odd = b.icmp_unsigned("!=", b.and_(e, _const(ty, 1)), _const(ty, 0))
    acc.add_incoming(b.select(odd, b.mul(acc, base), acc), body)
    base.add_incoming(b.mul(base, base), body)
    e.add_incoming(b.lshr(e, _const(ty, 1)), body)
    b.branch(head)
    b.position_at_end(done)
    return acc


@_body(smath.minimum)
def _minimum(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _minmax("min")(ctx, a, dts, out)


@_body(smath.maximum)
def _maximum(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _minmax("max")(ctx, a, dts, out)


# real/imag/conj/angle of a real value (their complex bodies: scalar/complex_bodies.py)
@_body(smath.real)
def _real(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return a[0], dts[0]


@_body(smath.conj)
def _conj(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return a[0], dts[0]


@_body(smath.imag)
def _imag(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _const(a[0].type, 0.0 if kind(dts[0]) == "f" else 0), dts[0]


@_body(smath.angle)
def _angle(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    x, = a
    return ctx.call_math("atan2", [_const(x.type, 0.0), x]), dts[0]


def cast_body(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    """A Cast: its input, cast to the output dtype (its loop dtype) already."""
    return a[0], dts[0]
