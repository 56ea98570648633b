"""The one generic LLVM lowering of scalar ops: reads ``op.llvm`` (Intrinsic/Libm/Opcode), or a custom body.

Values are in their *compute* representation: floats as float/double, integers as iN, bool as i1.
``lower_scalar`` casts the inputs to the dtypes numpy's loop would use, emits the op and returns a value of
``out_dtype``.  ``can_lower`` says beforehand whether an op/dtype combination is supported (else: fallback).
Imported lazily by ``ScalarOp.lower_scalar`` (the scalar package never imports link/llvm at module load).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir

from graphjit.scalar.basic import Intrinsic, Libm, Opcode, ScalarOp

_KIND_FIELD = {"f": "float", "i": "int", "u": "uint", "b": "bool"}
_NATIVE = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
           "float64")
_MATH_INTRINSICS = ("sqrt", "fabs", "exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos", "pow",
                    "floor", "ceil", "trunc", "rint", "round")


def compute_type(dtype: str) -> ir.Type:
    """The LLVM type values of dtype are computed in (bool: i1)."""
    if dtype == "bool":
        return ir.IntType(1)
    if dtype == "float32":
        return ir.FloatType()
    if dtype == "float64":
        return ir.DoubleType()
    return ir.IntType(np.dtype(dtype).itemsize * 8)


def _kind(dtype: str) -> str:
    return np.dtype(dtype).kind


def cast_value(b: ir.IRBuilder, v: ir.Value, src: str, dst: str) -> ir.Value:
    """numpy's astype of one compute value from dtype src to dtype dst."""
    if src == dst:
        return v
    sk, dk, ty = _kind(src), _kind(dst), compute_type(dst)
    if dk == "b":
        if sk == "f":
            return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
    if sk == "b":
        return b.uitofp(v, ty) if dk == "f" else b.zext(v, ty)
    if sk == "f" and dk == "f":
        return b.fpext(v, ty) if isinstance(ty, ir.DoubleType) else b.fptrunc(v, ty)
    if sk == "f":
        return _float_to_int(b, v, dk, ty.width)
    if dk == "f":
        return b.sitofp(v, ty) if sk == "i" else b.uitofp(v, ty)
    if ty.width == v.type.width:
        return v
    if ty.width < v.type.width:
        return b.trunc(v, ty)
    return b.sext(v, ty) if sk == "i" else b.zext(v, ty)


def _float_to_int(b: ir.IRBuilder, v: ir.Value, kind: str, width: int) -> ir.Value:
    """numpy's float -> int cast as on x86-64, NaN and out-of-range values included (scalar/casting.py)."""
    if kind == "i" and width == 64:
        return _cvtt(b, v, 64)
    if kind == "i" or width <= 16:
        r = _cvtt(b, v, 32)
        return r if width == 32 else b.trunc(r, ir.IntType(width))
    half = ir.Constant(v.type, 2.0 ** (width - 1))
    big = b.fcmp_ordered(">=", v, half)
    low = _cvtt(b, b.select(big, b.fsub(v, half), v), width)
    return b.select(big, b.xor(low, ir.Constant(low.type, 1 << (width - 1))), low)


def _cvtt(b: ir.IRBuilder, v: ir.Value, bits: int) -> ir.Value:
    """x86's cvtt: truncate to a signed `bits`-bit int, INT_MIN when NaN or out of range (never poison)."""
    lo = -(1 << (bits - 1))
    np_float = np.float32 if isinstance(v.type, ir.FloatType) else np.float64
    below = lo - 1  # the largest integer whose truncation no longer fits, when the float type holds it
    if int(np_float(below)) == below:
        low_ok = b.fcmp_ordered(">", v, ir.Constant(v.type, float(below)))
    else:
        low_ok = b.fcmp_ordered(">=", v, ir.Constant(v.type, float(lo)))
    ok = b.and_(low_ok, b.fcmp_ordered("<", v, ir.Constant(v.type, -float(lo))))
    ity = ir.IntType(bits)
    conv = b.fptosi(b.select(ok, v, ir.Constant(v.type, 0.0)), ity)
    return b.select(ok, conv, ir.Constant(ity, lo))


def _loop_dtypes(op: ScalarOp, in_dtypes: Sequence[str], out_dtype: str) -> tuple[str, ...]:
    """The dtypes numpy's loop computes the op in (float16 -> float32 as graphjit does)."""
    if op.name == "switch":
        return (in_dtypes[0], out_dtype, out_dtype)
    if op.name == "second":
        return (in_dtypes[0], out_dtype)
    if isinstance(op.numpy, np.ufunc) and op.name not in _CUSTOM_OUT_LOOP:
        try:
            resolved = op.numpy.resolve_dtypes(tuple(np.dtype(d) for d in in_dtypes) + (None,))
        except Exception:
            return tuple(out_dtype for _ in in_dtypes)
        return tuple("float32" if d == np.float16 else str(d) for d in resolved[:op.nin])
    return tuple(out_dtype for _ in in_dtypes)


def can_lower(op: Any, in_dtypes: Sequence[str], out_dtype: str) -> bool:
    """Whether lower_scalar supports op on these dtypes (complex and unknown ops take the fallback)."""
    if not isinstance(op, ScalarOp) or out_dtype not in _NATIVE or any(d not in _NATIVE for d in in_dtypes):
        return False
    loop = _loop_dtypes(op, in_dtypes, out_dtype)
    if any(d not in _NATIVE for d in loop):
        return False
    if _custom_body(op) is not None:
        return True
    spec = op.llvm
    if isinstance(spec, Opcode):
        return getattr(spec, _KIND_FIELD[_kind(loop[0])]) is not None
    if isinstance(spec, Intrinsic) and spec.identity_on_ints and all(_kind(d) in "iub" for d in loop):
        return True
    if isinstance(spec, (Intrinsic, Libm)):
        return all(_kind(d) == "f" for d in loop)
    return False


def lower_scalar(op: ScalarOp, ctx: Any, inputs: Sequence[ir.Value], in_dtypes: Sequence[str],
                 out_dtype: str) -> ir.Value:
    """Emit op on compute values inputs (of in_dtypes) and return the result as out_dtype."""
    b = ctx.builder
    loop = _loop_dtypes(op, in_dtypes, out_dtype)
    args = [cast_value(b, v, s, d) for v, s, d in zip(inputs, in_dtypes, loop)]
    body = _custom_body(op)
    if body is not None:
        result, res_dtype = body(ctx, args, loop, out_dtype)
    else:
        result, res_dtype = _declared(op, ctx, args, loop[0]), _declared_dtype(op, loop[0], out_dtype)
    return cast_value(b, result, res_dtype, out_dtype)


def _declared_dtype(op: ScalarOp, loop_dtype: str, out_dtype: str) -> str:
    spec = op.llvm
    if isinstance(spec, Opcode) and "cmp" in getattr(spec, _KIND_FIELD[_kind(loop_dtype)]):
        return "bool"
    return loop_dtype


def _declared(op: ScalarOp, ctx: Any, args: list, loop_dtype: str) -> ir.Value:
    """The math declared as data: an Opcode (IRBuilder method), an Intrinsic or a Libm function."""
    b = ctx.builder
    spec = op.llvm
    if isinstance(spec, Opcode):
        method = getattr(spec, _KIND_FIELD[_kind(loop_dtype)])
        if " " in method:
            name, pred = method.split(" ", 1)
            return getattr(b, name)(pred, *args)
        return getattr(b, method)(*args)
    if isinstance(spec, Intrinsic) and spec.identity_on_ints and _kind(loop_dtype) in "iub":
        return args[0]
    name = spec.name[5:] if isinstance(spec, Intrinsic) else spec.name
    if isinstance(spec, Intrinsic) and name not in _MATH_INTRINSICS:
        return ctx.call_intrinsic(name, args)
    return ctx.call_math(name, args)


# ---------------------------------------------------------------- custom bodies (op.llvm is None)

def _const(ty: ir.Type, value: Any) -> ir.Constant:
    return ir.Constant(ty, value)


def _neg(ctx, a, dts, out):
    b = ctx.builder
    x, = a
    return (b.fneg(x) if _kind(dts[0]) == "f" else b.sub(_const(x.type, 0), x)), dts[0]


def _abs(ctx, a, dts, out):
    b, (x,), k = ctx.builder, a, _kind(dts[0])
    if k == "f":
        return ctx.call_intrinsic("fabs", [x]), dts[0]
    if k == "i":
        return b.select(b.icmp_signed("<", x, _const(x.type, 0)), b.sub(_const(x.type, 0), x), x), dts[0]
    return x, dts[0]


def _sign(ctx, a, dts, out):
    b, (x,), k = ctx.builder, a, _kind(dts[0])
    one, zero = _const(x.type, 1 if k != "f" else 1.0), _const(x.type, 0 if k != "f" else 0.0)
    if k == "f":
        pos, neg = b.fcmp_ordered(">", x, zero), b.fcmp_ordered("<", x, zero)
        return b.select(pos, one, b.select(neg, _const(x.type, -1.0), x)), dts[0]
    if k == "i":
        pos, neg = b.icmp_signed(">", x, zero), b.icmp_signed("<", x, zero)
        return b.sub(b.zext(pos, x.type), b.zext(neg, x.type)), dts[0]
    return b.zext(b.icmp_unsigned("!=", x, zero), x.type) if k == "u" else x, dts[0]


def _sqr(ctx, a, dts, out):
    b, (x,), k = ctx.builder, a, _kind(dts[0])
    return (b.fmul(x, x) if k == "f" else b.and_(x, x) if k == "b" else b.mul(x, x)), dts[0]


def _reciprocal(ctx, a, dts, out):
    x, = a
    return ctx.builder.fdiv(_const(x.type, 1.0), x), dts[0]


def _identity(ctx, a, dts, out):
    return a[0], dts[0]


def _second(ctx, a, dts, out):
    return a[1], dts[1]


def _invert(ctx, a, dts, out):
    x, = a
    return ctx.builder.xor(x, _const(x.type, -1 if x.type.width > 1 else 1)), dts[0]


def _isnan(ctx, a, dts, out):
    x, = a
    if _kind(dts[0]) != "f":
        return _const(ir.IntType(1), 0), "bool"
    return ctx.builder.fcmp_unordered("uno", x, x), "bool"


def _isinf(ctx, a, dts, out):
    x, = a
    if _kind(dts[0]) != "f":
        return _const(ir.IntType(1), 0), "bool"
    return ctx.builder.fcmp_ordered("==", ctx.call_intrinsic("fabs", [x]), _const(x.type, float("inf"))), "bool"


def _isfinite(ctx, a, dts, out):
    x, = a
    if _kind(dts[0]) != "f":
        return _const(ir.IntType(1), 1), "bool"
    return ctx.builder.fcmp_ordered("<", ctx.call_intrinsic("fabs", [x]), _const(x.type, float("inf"))), "bool"


def _shift(ctx, a, dts, out, left: bool):
    """numpy's npy_lshift/npy_rshift: a count outside [0, width) (negative too) shifts every bit out."""
    b, (x, n), k = ctx.builder, a, _kind(dts[0])
    in_range = b.icmp_unsigned("<", n, _const(n.type, x.type.width))
    if not left and k == "i":
        # arithmetic shift by width-1 leaves the sign: 0 or -1, as numpy gives for large counts
        return b.ashr(x, b.select(in_range, n, _const(n.type, x.type.width - 1))), dts[0]
    safe = b.select(in_range, n, _const(n.type, 0))
    shifted = b.shl(x, safe) if left else b.lshr(x, safe)
    return b.select(in_range, shifted, _const(x.type, 0)), dts[0]


def _left_shift(ctx, a, dts, out):
    return _shift(ctx, a, dts, out, left=True)


def _right_shift(ctx, a, dts, out):
    return _shift(ctx, a, dts, out, left=False)


def _minmax(which: str) -> Callable:
    def body(ctx, a, dts, out):
        b, k = ctx.builder, _kind(dts[0])
        if k == "f":
            return ctx.call_intrinsic("minimum" if which == "min" else "maximum", a), dts[0]
        if k == "b":
            return (b.and_(*a) if which == "min" else b.or_(*a)), dts[0]
        return ctx.call_intrinsic(("s" if k == "i" else "u") + which, a), dts[0]
    return body


def _sigmoid(ctx, a, dts, out):
    b, (x,) = ctx.builder, a
    e = ctx.call_math("exp", [b.fneg(x)])
    return b.fdiv(_const(x.type, 1.0), b.fadd(_const(x.type, 1.0), e)), dts[0]


def _softplus(ctx, a, dts, out):
    b, (x,) = ctx.builder, a
    zero = _const(x.type, 0.0)
    m = ctx.call_intrinsic("maximum", [x, zero])
    t = ctx.call_math("log1p", [ctx.call_math("exp", [b.fneg(ctx.call_intrinsic("fabs", [x]))])])
    return b.fadd(m, t), dts[0]


def _clip(ctx, a, dts, out):
    lo = _minmax("max")(ctx, [a[0], a[1]], dts, out)[0]
    return _minmax("min")(ctx, [lo, a[2]], dts, out)


def _switch(ctx, a, dts, out):
    cond = cast_value(ctx.builder, a[0], dts[0], "bool")
    return ctx.builder.select(cond, a[1], a[2]), out


def _cast(ctx, a, dts, out):
    return a[0], dts[0]


def _int_div(ctx, a, dts, out):
    b, (x, y), k = ctx.builder, a, _kind(dts[0])
    if k == "f":
        return _float_divmod(ctx, x, y)[0], dts[0]
    zero, one = _const(x.type, 0), _const(x.type, 1)
    y_zero = b.icmp_unsigned("==", y, zero)
    if k != "i":
        q = b.udiv(x, b.select(y_zero, one, y))
        return b.select(y_zero, zero, q), dts[0]
    y_m1 = b.icmp_signed("==", y, _const(x.type, -1))
    safe = b.select(b.or_(y_zero, y_m1), one, y)
    q, r = b.sdiv(x, safe), b.srem(x, safe)
    adjust = b.and_(b.icmp_signed("!=", r, zero), b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
    q = b.sub(q, b.zext(adjust, x.type))
    return b.select(y_zero, zero, b.select(y_m1, b.sub(zero, x), q)), dts[0]


def _mod(ctx, a, dts, out):
    b, (x, y), k = ctx.builder, a, _kind(dts[0])
    if k == "f":
        return _float_divmod(ctx, x, y)[1], dts[0]
    zero, one = _const(x.type, 0), _const(x.type, 1)
    y_zero = b.icmp_unsigned("==", y, zero)
    if k != "i":
        return b.select(y_zero, zero, b.urem(x, b.select(y_zero, one, y))), dts[0]
    y_m1 = b.icmp_signed("==", y, _const(x.type, -1))
    r = b.srem(x, b.select(b.or_(y_zero, y_m1), one, y))
    adjust = b.and_(b.icmp_signed("!=", r, zero), b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
    r = b.select(adjust, b.add(r, y), r)
    return b.select(b.or_(y_zero, y_m1), zero, r), dts[0]


def _float_divmod(ctx, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value]:
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


def _pow(ctx, a, dts, out):
    b, (x, y), k = ctx.builder, a, _kind(dts[0])
    if k == "f":
        return ctx.call_math("pow", [x, y]), dts[0]
    if k == "b":
        return b.or_(x, b.xor(y, _const(y.type, 1))), dts[0]
    if k == "i":
        ctx.scalar_error_if(b.icmp_signed("<", y, _const(y.type, 0)), "ValueError",
                            "Integers to negative integer powers are not allowed.")
    return _int_pow(ctx, x, y), dts[0]


def _int_pow(ctx, x: ir.Value, y: ir.Value) -> ir.Value:
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


_CUSTOM: dict[str, Callable] = {
    "neg": _neg, "abs": _abs, "sign": _sign, "sqr": _sqr, "reciprocal": _reciprocal, "identity": _identity,
    "second": _second,
    "invert": _invert, "isnan": _isnan, "isinf": _isinf, "isfinite": _isfinite, "minimum": _minmax("min"),
    "maximum": _minmax("max"), "sigmoid": _sigmoid, "softplus": _softplus, "clip": _clip, "switch": _switch,
    "int_div": _int_div, "mod": _mod, "pow": _pow, "left_shift": _left_shift, "right_shift": _right_shift,
}
# ops whose ufunc loop dtypes numpy resolves differently from graphjit's dtype rule: compute in out dtype
_CUSTOM_OUT_LOOP = frozenset({"sigmoid", "softplus", "reciprocal", "identity", "clip", "switch"})


def _custom_body(op: ScalarOp) -> Callable | None:
    if op.name.startswith("cast_") and hasattr(op, "dtype") and op.llvm is None:
        return _cast
    if op.llvm is None:
        return _CUSTOM.get(op.name)
    return None
