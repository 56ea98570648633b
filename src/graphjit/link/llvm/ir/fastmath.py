"""Inline, branch-free float64 exp in LLVM IR (scalar or vector; the loop vectoriser vectorises the scalar form).

exp(x) = 2**n * 2**(j/N) * exp(r): m = round(x * N/ln2) is taken by adding the magic number 1.5 * 2**52 (m then
sits in the low bits of the sum), n = m >> log2(N), j = m & (N - 1), r = x - m*ln2/N with ln2/N split in two
constants (both steps are fma), |r| <= ln2/(2N).  exp(r) - 1 = r + r*r*(c2 + c3*r + ...), a minimax polynomial
(coefficients from a Remez exchange in high precision).  T = 2**(j/N) is a table of correctly rounded values
and T * exp(r) = fma(T, exp(r) - 1, T).  2**n is applied as two exact powers of two, 2**n1 (added to T's exponent
field) and 2**n2 (n1 + n2 = n, both in the normal range), so results near overflow become inf and results below
the normal range round into subnormals or 0.  Within 1 ulp of glibc's exp (numpy's) over the whole range
(tests/link/llvm/ir/test_fastmath.py, for both methods).

Two methods (ExpMethod), chosen by the host (host_method):
- MEMORY_TABLE, N = 256, degree 4: a 2 KiB global table, one load per element (a gather once vectorised).
- REGISTER_TABLE, N = 8, degree 7: the table is one 8-lane constant vector.  Explicit vector code looks it up
  with extracts that X86 turns into one ``vpermq``; the scalar form uses a tree of selects, which the loop
  vectoriser widens into blends.  On AVX-512 this beats the gather (W4's softmax rows 2.9 -> 2.1 ms on Zen 5);
  on AVX2 the gather is faster (measured with the code generated for znver3), so AVX2 hosts keep the memory table.

x is first clamped to [-746, 710] (beyond which the result is 0 or inf anyway) with compare-and-select, which
keeps NaN (x86 min/max order): NaN propagates through the arithmetic (its table index is masked, so the lookup
stays in bounds), -inf gives 0, +inf gives inf.  The scalar form is emitted once per module as the internal
``alwaysinline`` function ``gj_fast_exp_f64``; the memory table is the internal constant ``gj_exp2_table_f64``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache
from math import isqrt

from llvmlite import ir

from graphjit.link.llvm.ir.modules import kernel_function
# the host's method and the flags live in variant.py (warm processes read them without this module's IR)
from graphjit.link.llvm import variant as _variant

I32, I64 = ir.IntType(32), ir.IntType(64)
LO, HI = -746.0, 710.0                                   # exp(LO) rounds to 0, exp(HI) overflows
SHIFT = 1.5 * 2.0 ** 52
BIAS = 1023
TABLE_NAME = "gj_exp2_table_f64"
FUNCTION_NAME = "gj_fast_exp_f64"


@dataclass(frozen=True)
class ExpMethod:
    """One table size of the exp: N = 2**bits values 2**(j/N), the reduction's and the polynomial's constants."""

    name: str
    bits: int
    inv_ln2_n: float                 # N / ln2
    ln2_n_hi: float                  # ln2 / N on a coarse grid ...
    ln2_n_lo: float                  # ... and the rest
    coeffs: tuple[float, ...]        # c2, c3, ...: exp(r) - 1 = r + r*r*(c2 + c3*r + ...), a minimax polynomial
    in_registers: bool               # the table is an 8-lane constant vector (a permute), else a global array

    @property
    def size(self) -> int:
        """N, the table's length."""
        return 1 << self.bits


def _hex(*values: str) -> tuple[float, ...]:
    return tuple(float.fromhex(h) for h in values)


# N = 256: |r| <= ln2/512, degree 4 (relative error 5e-18); one table load per element (a gather in vector code)
MEMORY_TABLE = ExpMethod(_variant.MEMORY_TABLE_NAME, 8, *_hex("0x1.71547652b82fep+8", "0x1.62e42fefa3800p-9", "0x1.ef35793c76730p-53"),
                         _hex("0x1.000000000006ep-1", "0x1.5555571e550bcp-3", "0x1.5555520e8e1b8p-5"), False)
# N = 8: |r| <= ln2/16, degree 7 (relative error 5e-18); the table fits one 512-bit register (vpermq on AVX-512)
REGISTER_TABLE = ExpMethod(_variant.REGISTER_TABLE_NAME, 3, *_hex("0x1.71547652b82fep+3", "0x1.62e42fefa4000p-4", "-0x1.8432a1b0e2634p-46"),
                           _hex("0x1.0000000000115p-1", "0x1.55555555555d0p-3", "0x1.555555471342cp-5",
                                "0x1.1111110abad2dp-7", "0x1.6c1d00cea5bf1p-10", "0x1.a01f8f4b1a1fep-13"), True)
METHODS = (MEMORY_TABLE, REGISTER_TABLE)


def host_method() -> ExpMethod:
    """The method for this machine: the register table where AVX-512 makes its lookup one permute."""
    return REGISTER_TABLE if _variant.uses_register_table() else MEMORY_TABLE


def _bits(value: float) -> int:
    """The bit pattern of a double, as a signed integer."""
    return struct.unpack("<q", struct.pack("<d", value))[0]


@cache
def table_values(bits: int = MEMORY_TABLE.bits) -> tuple[float, ...]:
    """2**(j/N) for j in range(N = 2**bits), correctly rounded (256-bit fixed point; tests compare with mpmath).

    2**(1/2**k) for k = 1..bits by repeated integer square roots, 2**(j/N) as the product of the ones
    j's bits select: a few units of 2**-256 below the true value, and int/int division rounds correctly, so
    the float is the correctly rounded one unless the value lay within ~2**-250 of a rounding midpoint (the
    test checks all N).  Decimal's power took 27 ms per process for the same table."""
    prec = 256
    roots, r = [], 2 << prec
    for _ in range(bits):
        r = isqrt(r << prec)
        roots.append(r)                                  # 2**(1/2**(k+1)) in fixed point
    out = []
    for j in range(1 << bits):
        v = 1 << prec
        for bit in range(bits):
            if j >> bit & 1:
                v = v * roots[bits - 1 - bit] >> prec
        out.append(v / (1 << prec))
    return tuple(out)


def _table_bits(method: ExpMethod) -> list[int]:
    """bits(2**(j/N)) with the exponent field cleared (values in [1, 2)), as i64."""
    return [_bits(v) - (BIAS << 52) for v in table_values(method.bits)]


def _table(module: ir.Module) -> ir.GlobalVariable:
    """The module's global table of the memory method."""
    table = module.globals.get(TABLE_NAME)
    if table is None:
        ty = ir.ArrayType(I64, MEMORY_TABLE.size)
        table = ir.GlobalVariable(module, ty, TABLE_NAME)
        table.global_constant = True
        table.linkage = "internal"
        table.align = 64
        table.initializer = ir.Constant(ty, _table_bits(MEMORY_TABLE))
    return table


def lowering_flags() -> tuple:
    """The flags that change how math lowers (part of the linker's keys; variant.py computes them)."""
    return _variant.lowering_flags()


def is_exp_type(ty: ir.Type) -> bool:
    """Whether emit_exp handles ty (double or a vector of doubles)."""
    elem = ty.element if isinstance(ty, ir.VectorType) else ty
    return isinstance(elem, ir.DoubleType)


class _Emitter:
    """Splat constants, fma and table lookups for values of one scalar or vector double type."""

    def __init__(self, b: ir.IRBuilder, ty: ir.Type, method: ExpMethod) -> None:
        self.b, self.ty, self.method = b, ty, method
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
        if self.method.in_registers:
            return self._register_lookup(j)
        b, table = self.b, _table(self.b.module)
        if not self.lanes:
            return b.load(b.gep(table, [I64(0), j], inbounds=True))
        out = ir.Constant(self.ity, ir.Undefined)
        for k in range(self.lanes):
            entry = b.load(b.gep(table, [I64(0), b.extract_element(j, I32(k))], inbounds=True))
            out = b.insert_element(out, entry, I32(k))
        return out

    def _register_lookup(self, j: ir.Value) -> ir.Value:
        """A vector: extracts from a constant vector (X86 matches them to one variable permute).  A scalar: a
        tree of selects on j's bits (what the loop vectoriser widens well; an extract would go through memory)."""
        b, values = self.b, _table_bits(self.method)
        if self.lanes:
            table = ir.Constant(ir.VectorType(I64, len(values)), values)
            out = ir.Constant(self.ity, ir.Undefined)
            for k in range(self.lanes):
                out = b.insert_element(out, b.extract_element(table, b.extract_element(j, I32(k))), I32(k))
            return out
        level: list[ir.Value] = [I64(v) for v in values]
        for bit in range(self.method.bits):
            set_ = b.icmp_unsigned("!=", b.and_(j, I64(1 << bit)), I64(0))
            level = [b.select(set_, level[2 * k + 1], level[2 * k]) for k in range(len(level) // 2)]
        return level[0]


def _scaled_table(e: _Emitter, t: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(2**(j/N) * 2**n1, 2**n2) from t = SHIFT + m, m = n*N + j, n1 = floor(n/2) (both factors normal)."""
    b, bits = e.b, e.method.bits
    u = b.sub(b.bitcast(t, e.ity), e.i(_bits(SHIFT) - e.method.size * 2 * BIAS))   # m + N*2*BIAS > 0
    j = b.and_(u, e.i(e.method.size - 1))
    v = b.lshr(u, e.i(bits))                                                     # n + 2*BIAS
    e1 = b.lshr(v, e.i(1))                                                       # n1 + BIAS
    e2 = b.sub(v, e1)                                                            # n2 + BIAS
    scaled = b.add(e.lookup(j), b.shl(e1, e.i(52)))
    return b.bitcast(scaled, e.ty), b.bitcast(b.shl(e2, e.i(52)), e.ty)


def _polynomial(e: _Emitter, r: ir.Value, r2: ir.Value) -> ir.Value:
    """c2 + c3*r + c4*r**2 + ...: pairs (c2k + c2k+1*r) combined by Horner's rule in r*r (short dependency chain)."""
    cs = [e.f(c) for c in e.method.coeffs]
    pairs = [e.fma(cs[k + 1], r, cs[k]) if k + 1 < len(cs) else cs[k] for k in range(0, len(cs), 2)]
    q = pairs[-1]
    for p in reversed(pairs[:-1]):
        q = e.fma(q, r2, p)
    return q


def _exp_f64(b: ir.IRBuilder, x: ir.Value, method: ExpMethod) -> ir.Value:
    """exp of a double (vector) by the table method."""
    e = _Emitter(b, x.type, method)
    x = b.select(b.fcmp_ordered("<", x, e.f(LO)), e.f(LO), x)
    x = b.select(b.fcmp_ordered(">", x, e.f(HI)), e.f(HI), x)
    t = e.fma(x, e.f(method.inv_ln2_n), e.f(SHIFT))
    m = b.fsub(t, e.f(SHIFT))
    r = e.fma(m, e.f(-method.ln2_n_hi), x)
    r = e.fma(m, e.f(-method.ln2_n_lo), r)
    r2 = b.fmul(r, r)
    p1 = e.fma(_polynomial(e, r, r2), r2, r)               # exp(r) - 1
    scaled, s2 = _scaled_table(e, t)
    return b.fmul(e.fma(scaled, p1, scaled), s2)


def emit_exp(b: ir.IRBuilder, x: ir.Value, method: ExpMethod | None = None) -> ir.Value:
    """Emit exp(x) inline for a double or a vector of doubles x (method: the host's by default)."""
    if not is_exp_type(x.type):
        raise TypeError(f"inline exp is float64 only, not {x.type}")
    return _exp_f64(b, x, method or host_method())


def exp_function(module: ir.Module, method: ExpMethod | None = None) -> ir.Function:
    """The always-inlined kernel ``double gj_fast_exp_f64(double)`` (modules.kernel_function), defined on first use."""
    ty = ir.DoubleType()
    fn, new = kernel_function(module, FUNCTION_NAME, ir.FunctionType(ty, [ty]))
    if not new:
        return fn
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(emit_exp(b, fn.args[0], method))
    return fn


def vector_exp_function(module: ir.Module, ty: ir.VectorType) -> ir.Function:
    """The always-inlined kernel ``<n x double> gj_fast_exp_v<n>f64(<n x double>)``, defined on first use: a
    vector kernel calls it (its body is built and printed once per module, not once per call)."""
    fn, new = kernel_function(module, f"gj_fast_exp_v{ty.count}f64", ir.FunctionType(ty, [ty]))
    if not new:
        return fn
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(emit_exp(b, fn.args[0]))
    return fn


def call_exp(builder: ir.IRBuilder, x: ir.Value, method: ExpMethod | None = None) -> ir.Value:
    """exp(x) for a double x (or a vector of them) through the module's inline exp (one method per module)."""
    if isinstance(x.type, ir.VectorType) and is_exp_type(x.type) and method is None:
        return builder.call(vector_exp_function(builder.module, x.type), [x])
    if not isinstance(x.type, ir.DoubleType):
        raise TypeError(f"inline exp is float64 only, not {x.type}")
    return builder.call(exp_function(builder.module, method), [x])


__all__ = ["emit_exp", "exp_function", "vector_exp_function", "call_exp", "is_exp_type", "lowering_flags", "table_values", "ExpMethod",
           "MEMORY_TABLE", "REGISTER_TABLE", "METHODS", "host_method"]
