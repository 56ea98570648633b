"""LLVM bodies of the special functions (graphjit/scalar/special.py).

scipy's own kernels (jit/special_library.py: called through cython_special's pointers, so the values are
scipy's): a float32 result calls scipy's float kernel where it has one, else its double kernel on the widened
inputs, rounded once.  log1mexp (not in scipy) is graphjit's IR, in double for any result dtype.
trigamma/polygamma are in zeta_bodies.py.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from llvmlite import ir

from graphjit.scalar import special as sspecial

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.jit import special_library
from graphjit.link.llvm.ops.scalar_bodies import Body, in_out_dtype
from graphjit.link.llvm.registry import scalar_lowerings

_DOUBLE = ir.DoubleType()


def call_scipy(ctx: LowerContext, name: str, args: Sequence[ir.Value], float_name: Optional[str] = None
               ) -> ir.Value:
    """scipy's kernel `name` on args (float or double values); float args use float_name or widen to double."""
    b = ctx.builder
    single = isinstance(args[0].type, ir.FloatType)
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
