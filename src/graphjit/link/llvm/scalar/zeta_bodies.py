"""trigamma and polygamma in graphjit's IR, through the Hurwitz zeta function zeta(s, q) = sum_k (k + q)**-s.

scipy exports no pointer to its zeta (it is not in cython_special), so graphjit emits the same computation:
polygamma(n, x) = (-1)**(n+1) n! zeta(n+1, x) (psi(x) for n == 0), zeta by Euler-Maclaurin summation (direct terms
until the next term is below half an ulp or q + terms > 9, then the tail integral, the half term and up to twelve
Bernoulli corrections), with zeta's domain: inf at s == 1 and at q a non-positive integer, NaN for s < 1 or q < 0
with s not an integer, and (1/(s-1) + 1/(2q)) q**(1-s) for q > 1e8.  Every operation is an IEEE one in scipy's
order, and pow is libm's, so the values are scipy's.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

from llvmlite import ir

from graphjit.link.llvm.ir.casts import element_type

from graphjit.scalar import special as sspecial

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.scalar.bodies import Body, in_out_dtype
from graphjit.link.llvm.scalar.special_bodies import call_scipy
from graphjit.link.llvm.registry import scalar_lowerings

_D = ir.DoubleType()
_HALF_ULP = 2.0 ** -53


def _bernoulli_even(count: int) -> list:
    """B_2, B_4, ..., B_2count (Akiyama-Tanigawa), as Fractions."""
    from fractions import Fraction  # here: importing it (and decimal) costs a cold compile ~2 ms
    row, out = [Fraction(0)] * (2 * count + 1), []
    for m in range(2 * count + 1):
        row[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        if m >= 2 and m % 2 == 0:
            out.append(row[0])
    return out


@functools.lru_cache(maxsize=None)
def divisors() -> tuple[float, ...]:
    """(2j)! / B_2j, j = 1..12: the Euler-Maclaurin correction divisors (computed when a zeta is first lowered)."""
    return tuple(float(math.factorial(2 * j) / b) for j, b in enumerate(_bernoulli_even(12), start=1))


def _c(value: float) -> ir.Constant:
    return ir.Constant(_D, value)


def _domain(ctx: LowerContext, s: ir.Value, q: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(whether zeta(s, q) needs no summation, its value then): the poles, the domain errors, q > 1e8."""
    b = ctx.builder
    floor_q, floor_s = ctx.call_intrinsic("floor", [q]), ctx.call_intrinsic("floor", [s])
    q_nonpos = b.fcmp_ordered("<=", q, _c(0.0))
    # in scipy's order of tests: s == 1, s < 1, q a non-positive integer, q < 0 with s not an integer
    s_one, s_small = b.fcmp_ordered("==", s, _c(1.0)), b.fcmp_ordered("<", s, _c(1.0))
    q_pole = b.and_(q_nonpos, b.fcmp_ordered("==", q, floor_q))
    q_domain = b.and_(q_nonpos, b.fcmp_unordered("!=", s, floor_s))
    huge_q = b.fcmp_ordered(">", q, _c(1e8))
    asymptotic = b.fmul(b.fadd(b.fdiv(_c(1.0), b.fsub(s, _c(1.0))), b.fdiv(_c(1.0), b.fmul(_c(2.0), q))),
                        ctx.call_math("pow", [q, b.fsub(_c(1.0), s)]))
    value = b.select(s_one, _c(math.inf), b.select(s_small, _c(math.nan), b.select(
        q_pole, _c(math.inf), b.select(q_domain, _c(math.nan), asymptotic))))
    return b.or_(b.or_(b.or_(s_one, s_small), b.or_(q_pole, q_domain)), huge_q), value


def hurwitz_zeta(ctx: LowerContext, s: ir.Value, q: ir.Value) -> ir.Value:
    """zeta(s, q) on doubles (see the module docstring)."""
    b = ctx.builder
    skip, early = _domain(ctx, s, q)
    minus_s = b.fneg(s)
    first = ctx.call_math("pow", [q, minus_s])
    entry = b.block
    head = b.append_basic_block("zeta.direct")
    body = b.append_basic_block("zeta.term")
    tail = b.append_basic_block("zeta.tail")
    done = b.append_basic_block("zeta.done")
    b.cbranch(skip, done, head)
    result = _phi_at(b, done, [(early, entry)])

    b.position_at_end(head)                 # direct sum: s_k = q**-s + (q+1)**-s + ... while i < 9 or a <= 9
    i, a, term, total = b.phi(ir.IntType(32)), b.phi(_D), b.phi(_D), b.phi(_D)
    i.add_incoming(ir.Constant(ir.IntType(32), 0), entry)
    a.add_incoming(q, entry)
    term.add_incoming(_c(0.0), entry)
    total.add_incoming(first, entry)
    more = b.or_(b.icmp_signed("<", i, ir.Constant(ir.IntType(32), 9)), b.fcmp_ordered("<=", a, _c(9.0)))
    b.cbranch(more, body, tail)

    b.position_at_end(body)
    i1, a1 = b.add(i, ir.Constant(ir.IntType(32), 1)), b.fadd(a, _c(1.0))
    t1 = ctx.call_math("pow", [a1, minus_s])
    s1 = b.fadd(total, t1)
    small = b.fcmp_ordered("<", ctx.call_intrinsic("fabs", [b.fdiv(t1, s1)]), _c(_HALF_ULP))
    for phi, value in ((i, i1), (a, a1), (term, t1), (total, s1)):
        phi.add_incoming(value, body)
    result.add_incoming(s1, body)
    b.cbranch(small, done, head)

    b.position_at_end(tail)                 # the integral, the half term, then the Bernoulli corrections
    w = a
    acc = b.fsub(b.fadd(total, b.fdiv(b.fmul(term, w), b.fsub(s, _c(1.0)))), b.fmul(_c(0.5), term))
    rising, power, k = _c(1.0), term, _c(0.0)
    for divisor in divisors():
        rising = b.fmul(rising, b.fadd(s, k))
        power = b.fdiv(power, w)
        t = b.fdiv(b.fmul(rising, power), _c(divisor))
        acc = b.fadd(acc, t)
        converged = b.fcmp_ordered("<", ctx.call_intrinsic("fabs", [b.fdiv(t, acc)]), _c(_HALF_ULP))
        result.add_incoming(acc, b.block)
        following = b.append_basic_block("zeta.correction")
        b.cbranch(converged, done, following)
        b.position_at_end(following)
        k = b.fadd(k, _c(1.0))
        rising = b.fmul(rising, b.fadd(s, k))
        power = b.fdiv(power, w)
        k = b.fadd(k, _c(1.0))
    result.add_incoming(acc, b.block)
    b.branch(done)
    b.position_at_end(done)
    return result


def _phi_at(b: ir.IRBuilder, block: ir.Block, incoming: list) -> ir.PhiInstr:
    """A double phi at the start of block (the builder's position is kept)."""
    here = b.block
    b.position_at_start(block)
    phi = b.phi(_D, name="zeta")
    for value, pred in incoming:
        phi.add_incoming(value, pred)
    b.position_at_end(here)
    return phi


def _polygamma(ctx: LowerContext, n: ir.Value, x: ir.Value) -> ir.Value:
    """scipy's where(n == 0, psi(x), (-1.0)**(n+1) * gamma(n+1.0) * zeta(n+1, x)), in n's float type."""
    b = ctx.builder
    ty = x.type
    single = isinstance(ty, ir.FloatType)
    order = b.fadd(n, ir.Constant(ty, 1.0))
    sign = ctx.call_math("pow", [ir.Constant(ty, -1.0), order])
    factorial = call_scipy(ctx, "gamma", [order])
    wide = [b.fpext(v, _D) for v in (order, x)] if single else [order, x]
    zeta = hurwitz_zeta(ctx, *wide)
    zeta = b.fptrunc(zeta, ty) if single else zeta
    value = b.fmul(b.fmul(sign, factorial), zeta)
    return b.select(b.fcmp_ordered("==", n, ir.Constant(ty, 0.0)), call_scipy(ctx, "psi", [x]), value)


@scalar_lowerings.register(sspecial.polygamma, loop_dtypes=in_out_dtype)
def _polygamma_body(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    return _polygamma(ctx, a[0], a[1]), dts[0]


@scalar_lowerings.register(sspecial.trigamma, loop_dtypes=in_out_dtype)
def _trigamma_body(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    """polygamma(1, x) = 1 * 1 * zeta(2, x), computed in double as scipy's does for any x."""
    b, (x,) = ctx.builder, a
    single = isinstance(element_type(x.type), ir.FloatType)
    value = hurwitz_zeta(ctx, _c(2.0), b.fpext(x, _D) if single else x)
    return (b.fptrunc(value, x.type) if single else value), dts[0]
