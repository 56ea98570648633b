"""An inline float64 tanh for loop-carried recurrences (a scan step's h = tanh(w * h + x)).

libm's scalar tanh costs ~120 ns per call on the machines measured here, and a recurrence cannot vectorise it, so
what counts is the latency from x to tanh(x).  Branch-free, within 1 ulp of numpy's (tests/link/llvm/test_tanh.py):
- |x| < 0.625: x + x^3 P(x^2), P of degree 10 by Estrin's scheme (least-squares fit of the relative error).
- 0.625 <= |x| < CAP: a table of polynomials (ir/tanh_table.py, fitted by tools/fit_tanh.py), one per 1/32 of a
  binade: the row index is |x|'s exponent and top 5 mantissa bits, so it is two integer operations from the bits;
  t = |x| - c (exact) with c the interval's centre, also from the bits; tanh = fma(t, Q(t), c0) with c0 = tanh(c)
  and Q of degree 6 by Estrin's scheme: one rounding of the result's size.  No exp and no division (the previous
  form, 1 - 2 / (exp(2|x|) + 1), cost ~75 cycles of latency; this one ~36).
- |x| >= CAP (and inf): the table's last row, the constant 1.
The sign is copied from x; NaN takes the first path (the index is computed from a clamped |x|, so every load stays
in the table) and propagates.
"""

from __future__ import annotations

import struct

from llvmlite import ir

from graphjit.link.llvm.ir import tanh_table

THRESHOLD = 0.625
# tanh(a) = a + a^3 * sum(C[k] * (a^2)^k) on [0, THRESHOLD]
COEFFICIENTS = (-0.3333333333333293, 0.13333333333271302, -0.053968253935267954, 0.021869487662505665,
                -0.008863222077315413, 0.003591997446768058, -0.0014549995916153648, 0.0005864448382557984,
                -0.00022881464311753151, 7.742007509541361e-05, -1.6203433655848014e-05)
TABLE_NAME = "gj_tanh_table_f64"
_SHIFT = 52 - tanh_table.BITS
_I64 = ir.IntType(64)
_DBL = ir.DoubleType()
ROWS = 256                                                 # a power of two above len(tanh_table.ROWS)
_CENTRE_MASK = 0x7FFF_FFFF_FFFF_FFFF & -(1 << _SHIFT)      # |x| truncated to its interval's low end


def _bits(value: float) -> int:
    """The bit pattern of a double."""
    return struct.unpack("<q", struct.pack("<d", value))[0]


FIRST_ROW = (_bits(tanh_table.LOW) >> _SHIFT) % ROWS       # where interval 0 sits in the table


def emit_tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """tanh(x) for a double x, inline (see the module doc)."""
    if x.type != _DBL:
        raise TypeError(f"inline tanh is float64 only, not {x.type}")
    mod = b.module
    fabs = mod.declare_intrinsic("llvm.fabs", [_DBL])
    copysign = _intrinsic(mod, "llvm.copysign.f64", 2)
    a = b.call(fabs, [x])
    u = b.fmul(a, a)
    fmuladd = _intrinsic(mod, "llvm.fmuladd.f64", 3)
    small = b.call(fmuladd, [b.fmul(a, u), _estrin(b, fmuladd, u, [ir.Constant(_DBL, c) for c in COEFFICIENTS]), a])
    big = b.select(b.fcmp_ordered(">=", a, ir.Constant(_DBL, tanh_table.CAP)), ir.Constant(_DBL, 1.0),
                   _table_path(b, x, a))
    t = b.select(b.fcmp_ordered(">=", a, ir.Constant(_DBL, THRESHOLD)), big, small)    # NaN: small
    return b.call(copysign, [t, x])


def _table_path(b: ir.IRBuilder, x: ir.Value, a: ir.Value) -> ir.Value:
    """tanh(a) for THRESHOLD <= a < CAP, a = |x| (any other x reads some in-bounds row; the caller selects)."""
    fma = _intrinsic(b.module, "llvm.fma.f64", 3)
    xb = b.bitcast(x, _I64)
    # the row: |x|'s exponent and top mantissa bits modulo the table's size (the sign bit is shifted out of the mask)
    row = b.and_(b.lshr(xb, _I64(_SHIFT)), _I64(ROWS - 1))
    centre = b.or_(b.and_(xb, _I64(_CENTRE_MASK)), _I64(1 << (_SHIFT - 1)))
    t = b.fsub(a, b.bitcast(centre, _DBL))                                     # exact (Sterbenz)
    ptr = b.gep(_table(b.module), [_I64(0), row], inbounds=True)
    coeffs = [b.load(b.gep(ptr, [_I64(0), ir.IntType(32)(k)], inbounds=True)) for k in range(tanh_table.DEGREE + 1)]
    return b.call(fma, [t, _estrin(b, fma, t, coeffs[1:]), coeffs[0]])


def table_rows() -> list[tuple[float, ...]]:
    """The ROWS rows of the global table: interval k of tanh_table at row (k + FIRST_ROW) % ROWS, zeros elsewhere."""
    rows = [(0.0,) * (tanh_table.DEGREE + 1)] * ROWS
    for k, r in enumerate(tanh_table.ROWS):
        rows[(k + FIRST_ROW) % ROWS] = r
    return rows


def _table(module: ir.Module) -> ir.GlobalVariable:
    """The module's constant table of polynomial rows (one 64-byte line each)."""
    table = module.globals.get(TABLE_NAME)
    if table is None:
        rty = ir.ArrayType(_DBL, tanh_table.DEGREE + 1)
        ty = ir.ArrayType(rty, ROWS)
        table = ir.GlobalVariable(module, ty, TABLE_NAME)
        table.global_constant = True
        table.linkage = "internal"
        table.align = 64
        table.initializer = ir.Constant(ty, [ir.Constant(rty, list(r)) for r in table_rows()])
    return table


def _intrinsic(mod: ir.Module, name: str, arity: int) -> ir.Function:
    """The module's declaration of a double intrinsic taking arity doubles."""
    return mod.globals.get(name) or ir.Function(mod, ir.FunctionType(_DBL, [_DBL] * arity), name)


def _estrin(b: ir.IRBuilder, fma: ir.Function, u: ir.Value, terms: list[ir.Value]) -> ir.Value:
    """P(u) = sum terms[k] u^k by Estrin's scheme: a recurrence waits for its latency (log depth), not a Horner chain."""
    power = u
    while len(terms) > 1:
        terms = [b.call(fma, [terms[k + 1], power, terms[k]]) if k + 1 < len(terms) else terms[k]
                 for k in range(0, len(terms), 2)]
        power = b.fmul(power, power)
    return terms[0]


__all__ = ["emit_tanh", "THRESHOLD", "COEFFICIENTS", "TABLE_NAME"]
