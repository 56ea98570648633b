"""Inline, branch-free float64 exp in LLVM IR (scalar or vector; the loop vectoriser vectorises the scalar form).

exp(x) = 2**n * 2**(j/N) * exp(r) with N = 256: m = round(x * N/ln2) is taken by adding the magic number
1.5 * 2**52 (m then sits in the low bits of the sum), n = m >> 8, j = m & 255, r = x - m*ln2/N with ln2/N split
in two constants (both steps are fma), |r| <= ln2/512.  exp(r) - 1 = r + r*r*(c2 + c3*r + c4*r*r), a minimax
polynomial (relative error 5e-18; coefficients from a Remez exchange in 60-digit arithmetic).  T = 2**(j/N)
comes from a 2 KiB table of correctly rounded values (one load per element) and T * exp(r) = fma(T, exp(r) - 1,
T).  2**n is applied as two exact powers of two, 2**n1 (added to T's exponent field) and 2**n2 (n1 + n2 = n,
both in the normal range), so results near overflow become inf and results below the normal range round into
subnormals or 0.  Within 1 ulp of glibc's exp (numpy's) over the whole range (tests/link/llvm/test_fastmath.py).

x is first clamped to [-746, 710] (beyond which the result is 0 or inf anyway) with compare-and-select, which
keeps NaN (x86 min/max order): NaN propagates through the arithmetic (its table index is masked, so the load
stays in bounds), -inf gives 0, +inf gives inf.  The scalar form is emitted once per module as the internal
``alwaysinline`` function ``gj_fast_exp_f64``; the table is the internal constant ``gj_exp2_table_f64``.
"""

from __future__ import annotations

import struct
from functools import cache
from math import isqrt

from llvmlite import ir

from graphjit.config import config

I32, I64 = ir.IntType(32), ir.IntType(64)
TABLE_BITS = 8
TABLE_SIZE = 1 << TABLE_BITS
LO, HI = -746.0, 710.0                                   # exp(LO) rounds to 0, exp(HI) overflows
INV_LN2_N = float.fromhex("0x1.71547652b82fep+8")        # N / ln2
LN2_N_HI = float.fromhex("0x1.62e42fefa3800p-9")         # ln2 / N on a 2**-50 grid
LN2_N_LO = float.fromhex("0x1.ef35793c76730p-53")        # ln2 / N - LN2_N_HI
COEFFS = tuple(float.fromhex(h) for h in ("0x1.000000000006ep-1", "0x1.5555571e550bcp-3",
                                          "0x1.5555520e8e1b8p-5"))
SHIFT = 1.5 * 2.0 ** 52
BIAS = 1023
TABLE_NAME = "gj_exp2_table_f64"
FUNCTION_NAME = "gj_fast_exp_f64"


def _bits(value: float) -> int:
    """The bit pattern of a double, as a signed integer."""
    return struct.unpack("<q", struct.pack("<d", value))[0]


@cache
def table_values() -> tuple[float, ...]:
    """2**(j/N) for j in range(N), correctly rounded (256-bit fixed point; tests compare it with mpmath).

    2**(1/2**k) for k = 1..TABLE_BITS by repeated integer square roots, 2**(j/N) as the product of the ones
    j's bits select: a few units of 2**-256 below the true value, and int/int division rounds correctly, so
    the float is the correctly rounded one unless the value lay within ~2**-250 of a rounding midpoint (the
    test checks all N).  Decimal's power took 27 ms per process for the same table."""
    prec = 256
    roots, r = [], 2 << prec
    for _ in range(TABLE_BITS):
        r = isqrt(r << prec)
        roots.append(r)                                  # 2**(1/2**(k+1)) in fixed point
    out = []
    for j in range(TABLE_SIZE):
        v = 1 << prec
        for bit in range(TABLE_BITS):
            if j >> bit & 1:
                v = v * roots[TABLE_BITS - 1 - bit] >> prec
        out.append(v / (1 << prec))
    return tuple(out)


def _table(module: ir.Module) -> ir.GlobalVariable:
    """The module's table of bits(2**(j/N)) with the exponent field cleared (values in [1, 2))."""
    table = module.globals.get(TABLE_NAME)
    if table is None:
        ty = ir.ArrayType(I64, TABLE_SIZE)
        table = ir.GlobalVariable(module, ty, TABLE_NAME)
        table.global_constant = True
        table.linkage = "internal"
        table.align = 64
        table.initializer = ir.Constant(ty, [_bits(v) - (BIAS << 52) for v in table_values()])
    return table


def lowering_flags() -> tuple:
    """The flags that change how math lowers (part of the linker's in-memory key)."""
    return (config.inline_exp,)


def is_exp_type(ty: ir.Type) -> bool:
    """Whether emit_exp handles ty (double or a vector of doubles)."""
    elem = ty.element if isinstance(ty, ir.VectorType) else ty
    return isinstance(elem, ir.DoubleType)


class _Emitter:
    """Splat constants, fma and table loads for values of one scalar or vector double type."""

    def __init__(self, b: ir.IRBuilder, ty: ir.Type) -> None:
        self.b, self.ty = b, ty
        self.lanes = ty.count if isinstance(ty, ir.VectorType) else 0
        self.ity = ir.VectorType(I64, self.lanes) if self.lanes else I64
        name = "llvm.fma." + (f"v{self.lanes}" if self.lanes else "") + "f64"
        fn = b.module.globals.get(name)
        self._fma = fn if fn is not None else ir.Function(b.module, ir.FunctionType(ty, [ty, ty, ty]), name)

    def f(self, value: float) -> ir.Constant:
        """A double constant (splat over the lanes)."""
        return ir.Constant(self.ty, [value] * self.lanes if self.lanes else value)

    def i(self, value: int) -> ir.Constant:
        """An i64 constant (splat over the lanes)."""
        return ir.Constant(self.ity, [value] * self.lanes if self.lanes else value)

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        """a * b + c rounded once."""
        return self.b.call(self._fma, [a, b, c])

    def lookup(self, j: ir.Value) -> ir.Value:
        """Table entries at the (in-bounds) indices j, lane by lane."""
        b, table = self.b, _table(self.b.module)
        if not self.lanes:
            return b.load(b.gep(table, [I64(0), j], inbounds=True))
        out = ir.Constant(self.ity, ir.Undefined)
        for k in range(self.lanes):
            entry = b.load(b.gep(table, [I64(0), b.extract_element(j, I32(k))], inbounds=True))
            out = b.insert_element(out, entry, I32(k))
        return out


def _scaled_table(e: _Emitter, t: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(2**(j/N) * 2**n1, 2**n2) from t = SHIFT + m, m = n*N + j, n1 = floor(n/2) (both factors normal)."""
    b = e.b
    u = b.sub(b.bitcast(t, e.ity), e.i(_bits(SHIFT) - TABLE_SIZE * 2 * BIAS))   # m + N*2*BIAS > 0
    j = b.and_(u, e.i(TABLE_SIZE - 1))
    v = b.lshr(u, e.i(TABLE_BITS))                                              # n + 2*BIAS
    e1 = b.lshr(v, e.i(1))                                                      # n1 + BIAS
    e2 = b.sub(v, e1)                                                           # n2 + BIAS
    scaled = b.add(e.lookup(j), b.shl(e1, e.i(52)))
    return b.bitcast(scaled, e.ty), b.bitcast(b.shl(e2, e.i(52)), e.ty)


def _exp_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """exp of a double (vector) by the table method."""
    e = _Emitter(b, x.type)
    x = b.select(b.fcmp_ordered("<", x, e.f(LO)), e.f(LO), x)
    x = b.select(b.fcmp_ordered(">", x, e.f(HI)), e.f(HI), x)
    t = e.fma(x, e.f(INV_LN2_N), e.f(SHIFT))
    m = b.fsub(t, e.f(SHIFT))
    r = e.fma(m, e.f(-LN2_N_HI), x)
    r = e.fma(m, e.f(-LN2_N_LO), r)
    r2 = b.fmul(r, r)
    c2, c3, c4 = (e.f(c) for c in COEFFS)
    q = e.fma(c4, r2, e.fma(c3, r, c2))
    p1 = e.fma(q, r2, r)                                   # exp(r) - 1
    scaled, s2 = _scaled_table(e, t)
    return b.fmul(e.fma(scaled, p1, scaled), s2)


def emit_exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Emit exp(x) inline for a double or a vector of doubles x."""
    if not is_exp_type(x.type):
        raise TypeError(f"inline exp is float64 only, not {x.type}")
    return _exp_f64(b, x)


def exp_function(module: ir.Module) -> ir.Function:
    """The module's internal always-inlined ``double gj_fast_exp_f64(double)``, defined on first use."""
    fn = module.globals.get(FUNCTION_NAME)
    if fn is not None:
        return fn
    ty = ir.DoubleType()
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), FUNCTION_NAME)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(emit_exp(b, fn.args[0]))
    return fn


def call_exp(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """exp(x) for a double x through the module's inline exp."""
    if not isinstance(x.type, ir.DoubleType):
        raise TypeError(f"inline exp is float64 only, not {x.type}")
    return builder.call(exp_function(builder.module), [x])


__all__ = ["emit_exp", "exp_function", "call_exp", "is_exp_type", "lowering_flags", "table_values"]
