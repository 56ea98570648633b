"""An inline float64 tanh for loop-carried recurrences (a scan step's h = tanh(w * h + x)).

libm's scalar tanh costs ~120 ns per call, and a recurrence cannot vectorise it, so what counts is the latency from
x to tanh(x).  Branch-free, within 1 ulp of numpy's and nearly correctly rounded (tests/link/llvm/ir/test_tanh.py):
- LOW <= |x| < CAP (0.125 <= |x| < 19.5): a table of polynomials (ir/tanh_table.py, fitted by tools/fit_tanh.py),
  one per 1/32 of a binade.  The row's byte offset is two integer operations on x's bits (exponent and top 5
  mantissa bits, modulo 256 rows); t = |x| - (the row's low end, x's bits masked: exact), and
  tanh = c0 + sign * sum(q[k] t^(k+1)) with c0 a double-double: one rounding of the result's size.  The powers of t
  are computed while the row loads, so after the load come one multiply, one fma and three additions.  No exp and
  no division: the former 1 - 2 / (exp(2|x|) + 1) put ~75 cycles on the recurrence, this ~40 (docs/performance.md,
  W6).
- |x| < LOW: x + x^3 P(x^2), P of degree 5 by Estrin's scheme; |x| >= CAP (inf too): +-1.
A select picks the table's result or the other (NaN: the other, which propagates it); every x reads an in-bounds
row (the offset is masked), whose result is discarded outside the table's range.
"""

from __future__ import annotations

import struct
from functools import cache

from llvmlite import ir

from graphjit.link.llvm.ir import tanh_table

THRESHOLD = tanh_table.LOW                                  # the odd polynomial below, the table above
TABLE_NAME = "gj_tanh_table_f64"
_SHIFT = 52 - tanh_table.BITS
_I64 = ir.IntType(64)
_DBL = ir.DoubleType()
ROWS = 256                                                 # a power of two above len(tanh_table.ROWS)
_WIDTH = tanh_table.DEGREE + 1                             # doubles in a row: c0 hi, q0, ..., q6
_LOW_END_MASK = 0x7FFF_FFFF_FFFF_FFFF & -(1 << _SHIFT)     # |x| truncated to its interval's low end
_SIGN_BIT = 1 << 63


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
    fma = _intrinsic(mod, "llvm.fma.f64", 3)
    a = b.call(fabs, [x])
    copysign = _intrinsic(mod, "llvm.copysign.f64", 2)
    table = _table_path(b, x, a)             # emitted first: the core issues oldest first, and this is critical
    u = b.fmul(a, a)
    small = b.call(fma, [b.fmul(a, u), _estrin(b, fma, u, [ir.Constant(_DBL, c) for c in tanh_table.SMALL]), a])
    small = b.select(b.fcmp_ordered(">=", a, ir.Constant(_DBL, tanh_table.CAP)), ir.Constant(_DBL, 1.0), small)
    small = b.call(copysign, [small, x])                                     # the small path is off the critical one
    # THRESHOLD <= a < CAP in one compare (one select on the critical path; two compares become two selects); a
    # boundary may go either way by an ulp, where both sides are accurate.  NaN: false.
    mid, half = (THRESHOLD + tanh_table.CAP) / 2, (tanh_table.CAP - THRESHOLD) / 2
    in_table = b.fcmp_ordered("<", b.call(fabs, [b.fsub(a, ir.Constant(_DBL, mid))]), ir.Constant(_DBL, half))
    return b.select(in_table, table, small)


def _table_path(b: ir.IRBuilder, x: ir.Value, a: ir.Value) -> ir.Value:
    """tanh(x) for THRESHOLD <= a < CAP, a = |x| (any other x reads some in-bounds row; the caller selects).  x's sign
    goes into the terms (no copysign after the last addition)."""
    xb = b.bitcast(x, _I64)
    # the row's byte offset: |x|'s exponent and top mantissa bits modulo ROWS (the sign bit is shifted out of the
    # mask), times the row's 64 bytes, in two integer operations
    offset = b.and_(b.lshr(xb, _I64(_SHIFT - 6)), _I64((ROWS - 1) << 6))
    # t = a - (the row's low end) and sign * t, both exact (Sterbenz); two masks of x side by side
    t, signed_t = b.fsub(a, _mask(b, x, _LOW_END_MASK)), b.fsub(x, _mask(b, x, _LOW_END_MASK | _SIGN_BIT))
    base = b.bitcast(_table(b.module), ir.IntType(8).as_pointer())
    row = b.bitcast(b.gep(base, [offset], inbounds=True), _DBL.as_pointer())
    coeffs = [b.load(b.gep(row, [_I64(k)], inbounds=True)) for k in range(_WIDTH)]
    # c0's low part, in the table's tail
    low = b.bitcast(b.gep(base, [b.add(b.lshr(offset, _I64(3)), _I64(ROWS * _WIDTH * 8))], inbounds=True),
                    _DBL.as_pointer())
    sign_bit = _mask(b, x, _SIGN_BIT)
    tail = _tail(b, t, signed_t, coeffs[1:], _xor(b, b.load(low), sign_bit))
    return b.fadd(_xor(b, coeffs[0], sign_bit), tail)                # the one rounding of the result's size


def _mask(b: ir.IRBuilder, x: ir.Value, mask: int) -> ir.Value:
    """x's bits and mask, written on a 2-lane vector so that it stays one floating-point ``and`` (as a scalar,
    LLVM moves x to an integer register and back: ~6 cycles more on the critical path)."""
    v2d, v2i = ir.VectorType(_DBL, 2), ir.VectorType(_I64, 2)
    v = b.insert_element(ir.Constant(v2d, ir.Undefined), x, ir.IntType(32)(0))
    masked = b.and_(b.bitcast(v, v2i), ir.Constant(v2i, [mask - (1 << 64) if mask >= 1 << 63 else mask] * 2))
    return b.extract_element(b.bitcast(masked, v2d), ir.IntType(32)(0))


def _xor(b: ir.IRBuilder, v: ir.Value, sign_bit: ir.Value) -> ir.Value:
    """v with its sign flipped where sign_bit (a double holding only a sign) is negative: a logic operation, which
    leaves the multiply pipes to the polynomial (written on 2-lane vectors, see _mask)."""
    v2d, v2i = ir.VectorType(_DBL, 2), ir.VectorType(_I64, 2)
    lanes = [b.bitcast(b.insert_element(ir.Constant(v2d, ir.Undefined), w, ir.IntType(32)(0)), v2i)
             for w in (v, sign_bit)]
    return b.extract_element(b.bitcast(b.xor(*lanes), v2d), ir.IntType(32)(0))


def _tail(b: ir.IRBuilder, t: ir.Value, signed_t: ir.Value, q: list[ir.Value], low: ir.Value) -> ir.Value:
    """low + sign * sum(q[k] * t^(k+1)) for 7 coefficients q, which arrive last (a table load), signed_t = sign * t:
    the signed powers sign * t^k are computed while the load is in flight, so that after it come only a multiply,
    an fma and two additions.  A few products are fma(x, y, +0) (the same value here): the SLP vectoriser pairs
    isomorphic multiplies into 2-lane vectors, whose shuffles would lengthen the critical path."""
    fma = _intrinsic(b.module, "llvm.fma.f64", 3)
    zero = ir.Constant(_DBL, 0.0)
    t2 = b.fmul(t, t)
    t4 = b.fmul(t2, t2)
    p2 = b.call(fma, [signed_t, t, zero])
    p3 = b.call(fma, [signed_t, t2, zero])
    p = [None, signed_t, p2, p3, b.fmul(p2, t2), b.call(fma, [signed_t, t4, zero]), b.fmul(p2, t4), b.fmul(p3, t4)]
    first = b.call(fma, [q[0], p[1], low])
    pairs = [b.call(fma, [q[k + 1], p[k + 2], b.fmul(q[k], p[k + 1])]) for k in (1, 3, 5)]  # q_k t^(k+1) + ...
    return b.fadd(b.fadd(first, pairs[0]), b.fadd(pairs[1], pairs[2]))


def table_values() -> list[float]:
    """The global table: ROWS rows (c0 hi, q0, ..., q6), then ROWS values c0 lo; interval k of tanh_table at row
    (k + FIRST_ROW) % ROWS, zeros in the rows no interval uses."""
    rows = [(0.0,) * (_WIDTH + 1)] * ROWS
    for k, r in enumerate(tanh_table.ROWS):
        rows[(k + FIRST_ROW) % ROWS] = r
    return [v for r in rows for v in r[:_WIDTH]] + [r[_WIDTH] for r in rows]


def _table(module: ir.Module) -> ir.GlobalVariable:
    """The module's constant table (table_values), aligned so that each row is one 64-byte line."""
    table = module.globals.get(TABLE_NAME)
    if table is None:
        ty = ir.ArrayType(_DBL, ROWS * (_WIDTH + 1))
        table = ir.GlobalVariable(module, ty, TABLE_NAME)
        table.global_constant = True
        table.linkage = "internal"
        table.align = 64
        table.initializer = ir.FormattedConstant(ty, _table_text())
    return table


@cache
def _table_text() -> str:
    """The table's initializer in IR text, formatted once per process: 2,304 constants cost ~10 ms to build and
    ~20 ms to print in every module that uses the inline tanh."""
    return ir.Constant(ir.ArrayType(_DBL, ROWS * (_WIDTH + 1)), table_values()).get_reference()


def _intrinsic(mod: ir.Module, name: str, arity: int) -> ir.Function:
    """The module's declaration of a double intrinsic taking arity doubles."""
    return mod.globals.get(name) or ir.Function(mod, ir.FunctionType(_DBL, [_DBL] * arity), name)


def _estrin(b: ir.IRBuilder, fma: ir.Function, u: ir.Value, terms: list[ir.Value]) -> ir.Value:
    """P(u) = sum terms[k] u^k by Estrin's scheme (log depth: a recurrence waits for its latency)."""
    power = u
    while len(terms) > 1:
        terms = [b.call(fma, [terms[k + 1], power, terms[k]]) if k + 1 < len(terms) else terms[k]
                 for k in range(0, len(terms), 2)]
        power = b.fmul(power, power)
    return terms[0]


__all__ = ["emit_tanh", "THRESHOLD", "TABLE_NAME", "ROWS", "FIRST_ROW", "table_values"]
