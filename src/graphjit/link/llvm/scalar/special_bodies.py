"""LLVM bodies of the special functions (graphjit/scalar/special.py).

scipy's own kernels (jit/special_library.py: called through cython_special's pointers, so the values are
scipy's): a float32 result calls scipy's float kernel where it has one, else its double kernel on the widened
inputs, rounded once.  log1mexp (not in scipy) is graphjit's IR, in double for any result dtype.
trigamma/polygamma are in zeta_bodies.py.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.ir.casts import element_type

from graphjit.scalar import special as sspecial

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.jit import special_library
from graphjit.link.llvm.scalar.bodies import Body, in_out_dtype
from graphjit.link.llvm.registry import scalar_lowerings

_DOUBLE = ir.DoubleType()


def call_scipy(ctx: LowerContext, name: str, args: Sequence[ir.Value], float_name: Optional[str] = None
               ) -> ir.Value:
    """scipy's kernel `name` on args (float or double values); float args use float_name or widen to double."""
    b = ctx.builder
    single = isinstance(element_type(args[0].type), ir.FloatType)
    use = float_name if single and float_name else name
    special_library.publish(use)
    wide = single and use == name
    values = [b.fpext(v, _DOUBLE) for v in args] if wide else list(args)
    result = ctx.call_external(special_library.symbol(use), special_library.function_type(use),
                               values + [ir.Constant(ir.IntType(32), 0)], attrs=("nounwind",))
    return b.fptrunc(result, ir.FloatType()) if wide else result


def _scipy_body(op: sspecial.ScalarOp, name: str, float_name: Optional[str] = None) -> None:
    def body(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
        return call_scipy(ctx, name, a, float_name), dts[0]
    body.__name__ = f"_{op.name}"
    scalar_lowerings.register(op, loop_dtypes=in_out_dtype)(body)


for _op, _name, _float in [(sspecial.gammaln, "gammaln", None), (sspecial.gamma, "gamma", None),
                           (sspecial.digamma, "psi", None), (sspecial.betaln, "betaln", None),
                           (sspecial.erfinv, "erfinv", "erfinvf"), (sspecial.erfcinv, "erfcinv", None),
                           (sspecial.erfcx, "erfcx", None), (sspecial.logit, "logit", "logitf"),
                           (sspecial.gammainc, "gammainc", None), (sspecial.gammaincc, "gammaincc", None),
                           (sspecial.i0, "i0", None), (sspecial.i1, "i1", None), (sspecial.i0e, "i0e", None),
                           (sspecial.i1e, "i1e", None), (sspecial.xlogy, "xlogy", None),
                           (sspecial.xlog1py, "xlog1py", None)]:
    _scipy_body(_op, _name, _float)


def in_double(in_dtypes: Sequence[str], out_dtype: str) -> tuple:
    """loop_dtypes of a formula computed in double even for a float32 result (rounded once, at the end)."""
    return tuple("float64" for _ in in_dtypes)


@scalar_lowerings.register(sspecial.log1mexp, loop_dtypes=in_double)
def _log1mexp(ctx: LowerContext, a: list, dts: Sequence[str], out: str) -> Body:
    """log1p(-exp(x)) below -log 2, log(-expm1(x)) above (each accurate where the other is not)."""
    b, (x,) = ctx.builder, a
    far = ctx.call_math("log1p", [b.fneg(ctx.call_math("exp", [x]))])
    near = ctx.call_math("log", [b.fneg(ctx.call_math("expm1", [x]))])
    return b.select(b.fcmp_ordered("<", x, ir.Constant(x.type, -float(np.log(2.0)))), far, near), dts[0]


@scalar_lowerings.register(sspecial.gammainc_da, loop_dtypes=in_double)
def _gammainc_da(ctx: LowerContext, args: list, dts: Sequence[str], out: str) -> Body:
    """The series of scalar/special.py's _gammainc_da, term for term (the same stopping rule and limit)."""
    b, (a, x) = ctx.builder, args
    d = ir.DoubleType()

    def c(v: float) -> ir.Constant:
        return ir.Constant(d, v)

    log_x = ctx.call_math("log", [x])
    a1 = b.fadd(a, c(1.0))
    t0 = ctx.call_math("exp", [b.fsub(b.fsub(b.fmul(a, log_x), x), call_scipy(ctx, "gammaln", [a1]))])
    psi0 = call_scipy(ctx, "psi", [a1])
    valid = b.and_(b.fcmp_ordered(">", a, c(0.0)), b.fcmp_ordered(">=", x, c(0.0)))
    flat = b.or_(b.or_(b.fcmp_ordered("==", x, c(0.0)), b.fcmp_ordered("==", x, c(math.inf))),
                 b.fcmp_ordered("==", t0, c(0.0)))
    early = b.select(valid, c(0.0), c(math.nan))
    total0 = b.fmul(t0, b.fsub(log_x, psi0))
    entry = b.block
    head, body, done = (b.append_basic_block(f"gammainc_da.{n}") for n in ("head", "term", "done"))
    b.cbranch(b.or_(b.not_(valid), flat), done, head)
    b.position_at_start(done)
    result = b.phi(d)
    result.add_incoming(early, entry)

    b.position_at_end(head)
    n, t, psi, total, mass = (b.phi(d) for _ in range(5))
    for phi, start in ((n, c(0.0)), (t, t0), (psi, psi0), (total, total0), (mass, t0)):
        phi.add_incoming(start, entry)
    result.add_incoming(c(math.nan), head)              # the term limit reached
    b.cbranch(b.fcmp_ordered("<", n, c(float(sspecial.GAMMAINC_DA_MAX_TERMS))), body, done)

    b.position_at_end(body)
    n1 = b.fadd(n, c(1.0))
    an = b.fadd(a, n1)
    t1 = b.fdiv(b.fmul(t, x), an)
    psi1 = b.fadd(psi, b.fdiv(c(1.0), an))
    total1 = b.fadd(total, b.fmul(t1, b.fsub(log_x, psi1)))
    mass1 = b.fadd(mass, t1)
    for phi, value in ((n, n1), (t, t1), (psi, psi1), (total, total1), (mass, mass1)):
        phi.add_incoming(value, body)
    result.add_incoming(total1, body)
    converged = b.and_(b.fcmp_ordered(">", an, x), b.fcmp_ordered("<=", t1, b.fmul(c(1e-17), mass1)))
    b.cbranch(converged, done, head)
    b.position_at_end(done)
    return result, "float64"
