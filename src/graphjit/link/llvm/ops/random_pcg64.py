"""numpy's standard normal inlined for PCG64: its 128-bit step and numpy's ziggurat, in IR, numpy's numbers.

numpy's ``random_standard_normal`` (distributions.c) draws a uint64 through ``bitgen->next_uint64`` (an indirect
call), splits it into a table index, a sign and 52 bits, and returns ``rabs * wi[idx]`` when ``rabs < ki[idx]``
(99.3% of the time); otherwise it tests the wedge (``fi``, ``exp``) or draws from the tail (``log1p``) with
``next_double``, and loops.  When the generator is numpy's PCG64 (its ``next_uint64`` pointer is the one
jit/generator_abi.py checked: state * multiplier + inc, XSL-RR output), ``glue.rng.pcg64_normal`` does the same
with the step inline and numpy's own tables (ki_double/wi_double/fi_double, local symbols of the archive
published by jit/npyrandom.py), libm's ``exp``/``log1p`` (not graphjit's inline exp: the same bits as numpy's
calls), the same operations in the same order: the numbers are numpy's.  Other bit generators take numpy's
function.
"""

from __future__ import annotations

from typing import Callable

from llvmlite import ir

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64, I8P
from graphjit.link.llvm.jit import npyrandom
from graphjit.link.llvm.jit.generator_abi import PCG64_MULTIPLIER, PCG64_SYMBOL, pcg64_buffer_inline, pcg64_next64
from graphjit.link.llvm.loops.rows import internal_function

DBL = ir.DoubleType()
FLT = ir.FloatType()
I32 = ir.IntType(32)
I128 = ir.IntType(128)
ZIGGURAT_NOR_R = 3.6541528853610087963519472518
ZIGGURAT_NOR_INV_R = 0.27366123732975827203338247596


def available() -> bool:
    """Whether the inline PCG64 normal can be emitted in this process."""
    return bool(pcg64_next64()) and npyrandom.unavailable() is None


def is_pcg64(ctx: LowerContext, bitgen: ir.Value) -> ir.Value:
    """i1: the generator's next_uint64 is numpy's PCG64 one."""
    b = ctx.builder
    slot = b.bitcast(b.gep(bitgen, [I64(8)], inbounds=True), I64.as_pointer())
    known = b.ptrtoint(ctx.declare_global(PCG64_SYMBOL), I64)
    return b.icmp_unsigned("==", b.load(slot), known)


def _table(ctx: LowerContext, name: str, ty: ir.Type) -> ir.Value:
    npyrandom.publish_table(name)
    return ctx.declare_global(npyrandom.symbol(name), ir.ArrayType(ty, 256))


def _state(b: ir.IRBuilder, bitgen: ir.Value) -> ir.Value:
    """bitgen->state: numpy's pcg64_state* (its pcg64_random_t* first, then has_uint32 and uinteger)."""
    return b.load(b.bitcast(bitgen, I8P.as_pointer()))


def _stepper(c: LowerContext, bitgen: ir.Value) -> Callable[[], ir.Value]:
    """A function emitting PCG64's next_uint64 inline: state * multiplier + inc, the XSL-RR output."""
    pcg64_next64()
    b = c.builder
    pcg = b.bitcast(b.load(b.bitcast(_state(b, bitgen), I8P.as_pointer())), I128.as_pointer())  # ->pcg_state
    inc = b.load(b.gep(pcg, [I64(1)]), align=8)

    def next64() -> ir.Value:
        s = b.add(b.mul(b.load(pcg, align=8), I128(PCG64_MULTIPLIER)), inc)
        b.store(s, pcg, align=8)
        folded = b.xor(b.trunc(b.lshr(s, I128(64)), I64), b.trunc(s, I64))
        rot = b.trunc(b.lshr(s, I128(122)), I64)
        return c.call_intrinsic("fshr", [folded, folded, rot])
    return next64


def _to_double(b: ir.IRBuilder, word: ir.Value) -> ir.Value:
    """numpy's next_double from a uint64: its top 53 bits times 2**-53."""
    return b.fmul(b.uitofp(b.lshr(word, I64(11)), DBL), DBL(1.0 / 9007199254740992.0))


def uniform_available(single: bool) -> bool:
    """Whether the inline PCG64 uniform (float32 when single) can be emitted in this process."""
    return available() and (not single or pcg64_buffer_inline())


def uniform_function(ctx: LowerContext, single: bool) -> ir.Function:
    """``double glue.rng.pcg64_uniform(i8* bitgen)`` / ``float glue.rng.pcg64_uniform_f``: numpy's
    random_standard_uniform(_f) on a PCG64 generator (next_double; next_uint32 with numpy's buffered half-word)."""
    name = "glue.rng.pcg64_uniform_f" if single else "glue.rng.pcg64_uniform"
    fn, b, new = internal_function(ctx, name, FLT if single else DBL, [I8P])
    if not new:
        return fn
    c = LowerContext(b)
    next64 = _stepper(c, fn.args[0])
    if not single:
        b.ret(_to_double(b, next64()))
        return fn
    state = b.bitcast(_state(b, fn.args[0]), ir.IntType(8).as_pointer())
    has = b.bitcast(b.gep(state, [I64(8)]), I32.as_pointer())
    held = b.bitcast(b.gep(state, [I64(12)]), I32.as_pointer())
    with b.if_else(b.icmp_signed("!=", b.load(has), I32(0))) as (buffered, fresh):
        with buffered:
            b.store(I32(0), has)
            first = b.load(held)
            first_block = b.block
        with fresh:
            word = next64()
            b.store(I32(1), has)
            b.store(b.trunc(b.lshr(word, I64(32)), I32), held)
            second = b.trunc(word, I32)
            second_block = b.block
    bits = b.phi(I32)
    bits.add_incoming(first, first_block)
    bits.add_incoming(second, second_block)
    b.ret(b.fmul(b.uitofp(b.lshr(bits, I32(8)), FLT), FLT(1.0 / 16777216.0)))
    return fn


def normal_function(ctx: LowerContext) -> ir.Function:
    """``double glue.rng.pcg64_normal(i8* bitgen)``: numpy's random_standard_normal on a PCG64 generator."""
    fn, b, new = internal_function(ctx, "glue.rng.pcg64_normal", DBL, [I8P])
    if not new:
        return fn
    c = LowerContext(b)
    ki, wi, fi = (_table(c, n, t) for n, t in (("ki_double", I64), ("wi_double", DBL), ("fi_double", DBL)))
    exp = c.declare("exp", ir.FunctionType(DBL, [DBL]))
    log1p = c.declare("log1p", ir.FunctionType(DBL, [DBL]))
    next64 = _stepper(c, fn.args[0])

    def next_double() -> ir.Value:
        return _to_double(b, next64())

    top = b.append_basic_block("draw")
    b.branch(top)
    b.position_at_end(top)
    r = next64()
    idx = b.and_(r, I64(0xFF))
    r = b.lshr(r, I64(8))
    rabs = b.and_(b.lshr(r, I64(1)), I64(0x000FFFFFFFFFFFFF))
    x = b.fmul(b.uitofp(rabs, DBL), b.load(b.gep(wi, [I64(0), idx])))
    x = b.select(b.trunc(r, ir.IntType(1)), b.fneg(x), x)
    fast = b.icmp_unsigned("<", rabs, b.load(b.gep(ki, [I64(0), idx])))
    with b.if_then(fast, likely=True):
        b.ret(x)
    tail = b.append_basic_block("tail")
    wedge = b.append_basic_block("wedge")
    b.cbranch(b.icmp_unsigned("==", idx, I64(0)), tail, wedge)
    b.position_at_end(wedge)
    f_lo, f_hi = b.load(b.gep(fi, [I64(0), idx])), b.load(b.gep(fi, [I64(0), b.sub(idx, I64(1))]))
    y = b.fadd(b.fmul(b.fsub(f_hi, f_lo), next_double()), f_lo)
    bound = b.call(exp, [b.fmul(b.fmul(DBL(-0.5), x), x)])
    with b.if_then(b.fcmp_ordered("<", y, bound)):
        b.ret(x)
    b.branch(top)
    b.position_at_end(tail)
    xx = b.fmul(DBL(-ZIGGURAT_NOR_INV_R), b.call(log1p, [b.fneg(next_double())]))
    yy = b.fneg(b.call(log1p, [b.fneg(next_double())]))
    with b.if_then(b.fcmp_ordered(">", b.fadd(yy, yy), b.fmul(xx, xx))):
        far = b.fadd(DBL(ZIGGURAT_NOR_R), xx)
        negative = b.trunc(b.lshr(rabs, I64(8)), ir.IntType(1))
        b.ret(b.select(negative, b.fneg(far), far))
    b.branch(tail)
    return fn
