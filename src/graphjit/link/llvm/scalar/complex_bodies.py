"""LLVM bodies of the scalar ops on complex values (ir/complex_math.py), keyed by the op.

scalar/lower.py takes this table whenever an op's loop has a complex dtype (an input or the output): the op
computes on ``{re, im}`` values of its loop dtype. A body is (ctx, args, loop dtypes, out dtype) -> (value, its
dtype), as in scalar/bodies.py; ``loop`` gives the loop dtypes where they are not numpy's ufunc loop (the ops
of non-ufunc numpy functions: real, imag, angle, complex).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple

from llvmlite import ir

from graphjit.scalar import math as smath
from graphjit.scalar.basic import ScalarOp

from graphjit.link.llvm.ir import complex_math as C
from graphjit.link.llvm.ir.complex_pow import power as complex_power
from graphjit.link.llvm.ir.casts import cast_value, component_dtype, kind
from graphjit.link.llvm.ir.context import LowerContext

Body = Tuple[ir.Value, str]


@dataclass(frozen=True)
class ComplexBody:
    """How an op computes on complex values: its body, its loop dtypes rule, and whether it calls glibc."""

    impl: Callable[..., Body]
    loop: Optional[Callable[[Sequence[str], str], tuple]] = None
    libc: bool = False


COMPLEX_BODIES: dict = {}


def _register(op: ScalarOp, loop: Optional[Callable] = None, libc: bool = False) -> Callable[[Callable], Callable]:
    def deco(fn: Callable) -> Callable:
        COMPLEX_BODIES[op] = ComplexBody(fn, loop, libc)
        return fn
    return deco


def _own_loop(ins: Sequence[str], out: str) -> tuple:
    """real/imag/angle: the input read as it is (a complex; a real input takes the real bodies)."""
    return tuple(ins)


def _complex_parts_loop(ins: Sequence[str], out: str) -> tuple:
    """complex(re, im): both parts in the output's component dtype."""
    return (component_dtype(out),) * len(ins)


def _unary(op: ScalarOp, fn: Callable[[ir.IRBuilder, ir.Value], ir.Value]) -> None:
    _register(op)(lambda ctx, a, dts, out: (fn(ctx.builder, a[0]), dts[0]))


def _binary(op: ScalarOp, fn: Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value], res: str = "") -> None:
    _register(op)(lambda ctx, a, dts, out: (fn(ctx.builder, a[0], a[1]), res or dts[0]))


_binary(smath.add, C.add)
_binary(smath.sub, C.sub)
_register(smath.mul)(lambda ctx, a, dts, out: (C.mul(ctx, a[0], a[1]), dts[0]))
_register(smath.sqr)(lambda ctx, a, dts, out: (C.sqr(ctx, a[0]), dts[0]))
_binary(smath.eq, C.eq, "bool")
_binary(smath.neq, C.neq, "bool")
_binary(smath.maximum, lambda b, x, y: C.extremum(b, x, y, True))
_binary(smath.minimum, lambda b, x, y: C.extremum(b, x, y, False))
_unary(smath.neg, C.neg)
_unary(smath.conj, C.conj)
_unary(smath.identity, lambda b, z: z)


@_register(smath.true_div)
def _true_div(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return C.div(ctx, a[0], a[1]), dts[0]


@_register(smath.reciprocal)
def _reciprocal(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    one = ir.Constant(a[0].type, [ir.Constant(a[0].type.elements[0], 1.0), ir.Constant(a[0].type.elements[0], 0.0)])
    return C.div(ctx, one, a[0]), dts[0]


@_register(smath.abs)
def _abs(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return C.abs_(ctx, a[0]), component_dtype(dts[0])


@_register(smath.sign)
def _sign(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return C.sign(ctx, a[0]), dts[0]


@_register(smath.real, loop=_own_loop)
def _real(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return ctx.builder.extract_value(a[0], 0), component_dtype(dts[0])


@_register(smath.imag, loop=_own_loop)
def _imag(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return ctx.builder.extract_value(a[0], 1), component_dtype(dts[0])


@_register(smath.angle, loop=_own_loop)
def _angle(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return C.angle(ctx, a[0]), component_dtype(dts[0])


@_register(smath.complex, loop=_complex_parts_loop)
def _complex(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return C.pack(ctx.builder, a[0], a[1]), out


@_register(smath.switch, loop=lambda ins, out: (ins[0], out, out))
def _switch(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    cond = cast_value(ctx.builder, a[0], dts[0], "bool")
    return ctx.builder.select(cond, a[1], a[2]), out


@_register(smath.second, loop=lambda ins, out: (ins[0], out))
def _second(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return a[1], dts[1]


def _libc(op: ScalarOp, name: str) -> None:
    _register(op, libc=True)(lambda ctx, a, dts, out: (C.call_c(ctx, name, a), dts[0]))


for _op, _name in ((smath.exp, "cexp"), (smath.log, "clog"), (smath.sqrt, "csqrt"), (smath.sin, "csin"),
                   (smath.cos, "ccos"), (smath.tan, "ctan"), (smath.sinh, "csinh"), (smath.cosh, "ccosh"),
                   (smath.tanh, "ctanh"), (smath.arcsin, "casin"), (smath.arccos, "cacos"),
                   (smath.arctan, "catan"), (smath.arcsinh, "casinh"), (smath.arccosh, "cacosh"),
                   (smath.arctanh, "catanh")):
    _libc(_op, _name)


def complex_body(op: ScalarOp, in_dtypes: Sequence[str], out_dtype: str) -> Optional[ComplexBody]:
    """op's complex body when its loop involves a complex dtype and one exists (None: not lowered natively)."""
    if not any(kind(d) == "c" for d in (*in_dtypes, out_dtype)):
        return None
    body = COMPLEX_BODIES.get(op)
    if body is None or (body.libc and not C.HAS_C_COMPLEX):
        return None
    return body


@_register(smath.pow, libc=True)
def _pow(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return complex_power(ctx, a[0], a[1]), dts[0]
