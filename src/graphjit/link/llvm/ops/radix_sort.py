"""A stable LSD radix sort kernel of real values with their positions, for unique's axis-None case
(ops/unique.py): each value becomes an unsigned 64-bit key ordered as numpy orders the values (NaNs all equal
and last, -0.0 equal to 0.0), one pass counts every 8-bit digit, and one scatter pass per digit that is not the
same for every key moves (key, position) pairs between two buffers. Equal keys mean equal values, so the caller
finds the groups by comparing neighbouring keys. A native sort op may later share or replace this kernel.

Kernel: ``i1 name(T* values, i64 n, i64* keys, i64* pos, i64* keys2, i64* pos2)``; returns 1 when the sorted
pairs ended in keys2/pos2.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import I1

DIGIT_BITS = 8
BUCKETS = 1 << DIGIT_BITS


def sortable_key(b: ir.IRBuilder, raw: ir.Value, dtype: str) -> ir.Value:
    """The i64 (read unsigned) whose order is numpy's order of the value raw (as stored: bool is i8)."""
    kind, bits = np.dtype(dtype).kind, np.dtype(dtype).itemsize * 8
    if kind == "f":
        ity = ir.IntType(bits)
        sign = ir.Constant(ity, -(1 << (bits - 1)))
        u = b.bitcast(raw, ity)
        u = b.select(b.icmp_unsigned("==", u, sign), ir.Constant(ity, 0), u)      # -0.0 is 0.0
        u = b.select(b.icmp_signed("<", u, ir.Constant(ity, 0)), b.not_(u), b.or_(u, sign))
        u = b.select(b.fcmp_unordered("uno", raw, raw), ir.Constant(ity, -1), u)  # every NaN alike, last
    elif kind == "i":
        u = b.xor(raw, ir.Constant(raw.type, -(1 << (bits - 1))))
    else:
        u = raw
    return u if bits == 64 else b.zext(u, I64)


def radix_kernel(module: ir.Module, dtype: str) -> ir.Function:
    """The kernel for dtype (see the module docstring)."""
    elem = L.llvm_scalar_type(dtype)
    i64p = I64.as_pointer()
    fn, new = kernel_function(module, f"radix_sort_{L.dtype_name(dtype)}",
                              ir.FunctionType(I1, [elem.as_pointer(), I64, i64p, i64p, i64p, i64p]))
    if not new:
        return fn
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = ctx.builder
    values, n, keys, pos, keys2, pos2 = fn.args
    digits = np.dtype(dtype).itemsize * 8 // DIGIT_BITS
    hist = b.bitcast(ctx.alloca(ir.ArrayType(I64, BUCKETS * digits), name="hist"), i64p)
    offsets = b.bitcast(ctx.alloca(ir.ArrayType(I64, BUCKETS), name="offsets"), i64p)
    with ctx.for_range(I64(BUCKETS * digits), name="zero") as i:
        b.store(I64(0), b.gep(hist, [i]))
    with ctx.for_range(n, name="count") as i:
        key = sortable_key(b, b.load(b.gep(values, [i])), dtype)
        b.store(key, b.gep(keys, [i]))
        b.store(i, b.gep(pos, [i]))
        for d in range(digits):
            slot = b.gep(hist, [b.add(I64(d * BUCKETS), _digit(b, key, d))])
            b.store(b.add(b.load(slot), I64(1)), slot)
    flip = ctx.alloca(I1, name="flip")
    b.store(ir.Constant(I1, 0), flip)
    with b.if_then(b.icmp_signed(">", n, I64(0))):
        first = b.load(keys)
        for d in range(digits):
            row = b.gep(hist, [I64(d * BUCKETS)])
            uniform = b.icmp_signed("==", b.load(b.gep(row, [_digit(b, first, d)])), n)
            with b.if_then(b.not_(uniform)):
                _scatter(ctx, row, offsets, n, d, flip, (keys, pos, keys2, pos2))
    b.ret(b.load(flip))
    return fn


def _digit(b: ir.IRBuilder, key: ir.Value, d: int) -> ir.Value:
    return b.and_(b.lshr(key, I64(d * DIGIT_BITS)), I64(BUCKETS - 1))


def _scatter(ctx: LowerContext, row: ir.Value, offsets: ir.Value, n: ir.Value, d: int, flip: ir.Value,
             buffers: tuple) -> None:
    """One stable counting-sort pass on digit d from the current buffers into the others."""
    b = ctx.builder
    keys, pos, keys2, pos2 = buffers
    total = ctx.alloca(I64, name=f"sum{d}")
    b.store(I64(0), total)
    with ctx.for_range(I64(BUCKETS), name=f"prefix{d}") as c:
        t = b.load(total)
        b.store(t, b.gep(offsets, [c]))
        b.store(b.add(t, b.load(b.gep(row, [c]))), total)
    f = b.load(flip)
    src_k, src_p = b.select(f, keys2, keys), b.select(f, pos2, pos)
    dst_k, dst_p = b.select(f, keys, keys2), b.select(f, pos, pos2)
    with ctx.for_range(n, name=f"scatter{d}") as i:
        key = b.load(b.gep(src_k, [i]))
        slot = b.gep(offsets, [_digit(b, key, d)])
        at = b.load(slot)
        b.store(b.add(at, I64(1)), slot)
        b.store(key, b.gep(dst_k, [at]))
        b.store(b.load(b.gep(src_p, [i])), b.gep(dst_p, [at]))
    b.store(b.not_(f), flip)


__all__ = ["radix_kernel", "sortable_key"]
