"""The pieces of the per-lane sort kernel of the sorting lowerings: keys and the zeros' and NaNs' restoration
(ops/sort_lane.py assembles the kernel, ops/sort_msd.py is its radix sort, ops/sort_leaf.py its leaves).

The kernel, ``void k(i8* src, i64 src_stride, i64 n, i64 count, i8* vals, i64 vals_stride, i8* idx,
i64 idx_stride, i8* scratch)``, sorts one lane of n elements stably and writes the first ``count`` results
(values and/or indices, any strides). Every element is first turned into an unsigned *key* whose integer
order is numpy's order: floats flip their sign bit (negatives all their bits), NaNs become the largest key and
-0.0 the key of 0.0 (so zeros keep their input order); signed integers flip their sign bit; a descending sort
complements the key. A lane of at most LANES elements is sorted in vector registers straight from the source
when it can be (ops/sort_leaf.py small_lane); any other is copied as keys into the scratch, and written as it
is when already in order (no descent among the keys), else sorted by the MSD radix sort. Indices travel with
the keys as i32 (lanes are limited to MAX_LANE elements). The values written are the keys decoded, then the
zeros and NaNs rewritten from the source in input order (their sign and payload bits).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I8P, I32, I64

MAX_LANE = 2 ** 31 - 1
LANES = 64              # the widest leaf network (ops/sort_leaf.py), and the keys of padding after each key buffer
I1 = ir.IntType(1)
VOID = ir.VoidType()
KERNEL_ARGS = [I8P, I64, I64, I64, I8P, I64, I8P, I64, I8P]


def _align8(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.and_(b.add(v, I64(7)), I64(-8))


def scratch_layout(b: ir.IRBuilder, width: int, n: ir.Value, with_idx: bool) -> tuple[ir.Value, ir.Value]:
    """(bytes of one key buffer, bytes of one index buffer) for a lane of n keys of width bytes."""
    keys = _align8(b, b.mul(b.add(n, I64(LANES)), I64(width)))
    return keys, (_align8(b, b.mul(n, I64(4))) if with_idx else I64(0))


class KernelSpec:
    """What one kernel does: dtype, which outputs (idx_dtype None: no indices), direction."""

    def __init__(self, dtype: str, values: bool, idx_dtype: Optional[str], descending: bool) -> None:
        self.dtype, self.values, self.idx_dtype, self.descending = dtype, values, idx_dtype, descending
        self.kind = np.dtype(dtype).kind
        self.width = L.itemsize(dtype)
        self.key = ir.IntType(8 * self.width)
        self.sign = 1 << (8 * self.width - 1)

    @property
    def name(self) -> str:
        outs = ("v" if self.values else "") + (f"i{self.idx_dtype}" if self.idx_dtype else "")
        return f"gj_sort.{self.dtype}.{outs}" + (".desc" if self.descending else "")


class SortKernel(LowerContext):
    """A LowerContext inside the kernel, with its key helpers."""

    def __init__(self, fn: ir.Function, spec: KernelSpec) -> None:
        super().__init__(ir.IRBuilder(fn.append_basic_block("entry")))
        self.spec = spec

    def kconst(self, v: int, like: Optional[ir.Value] = None) -> ir.Constant:
        """The key-width constant v, in every lane when like is a vector."""
        c = ir.Constant(self.spec.key, v & ((1 << (8 * self.spec.width)) - 1))
        if like is not None and isinstance(like.type, ir.VectorType):
            return ir.Constant(like.type, [c] * like.type.count)
        return c

    def raw_bits(self, ptr: ir.Value) -> ir.Value:
        """The element at byte pointer ptr as an integer of its width."""
        b, spec = self.builder, self.spec
        v = b.load(b.bitcast(ptr, L.llvm_scalar_type(spec.dtype).as_pointer()))
        return b.bitcast(v, spec.key) if spec.kind == "f" else v

    def store_bits(self, ptr: ir.Value, bits: ir.Value) -> None:
        b, spec = self.builder, self.spec
        mem = L.llvm_scalar_type(spec.dtype)
        b.store(b.bitcast(bits, mem) if spec.kind == "f" else bits, b.bitcast(ptr, mem.as_pointer()))

    def is_nan(self, bits: ir.Value) -> ir.Value:
        """i1: the float's bits are a NaN (exponent all ones, mantissa not zero); lane-wise on vectors."""
        b = self.builder
        return b.icmp_unsigned(">", b.and_(bits, self.kconst(self.spec.sign - 1, bits)),
                               self.kconst(self._inf(), bits))

    def is_zero(self, bits: ir.Value) -> ir.Value:
        b = self.builder
        return b.icmp_unsigned("==", b.and_(bits, self.kconst(self.spec.sign - 1, bits)), self.kconst(0, bits))

    def _inf(self) -> int:
        return 0x7F800000 if self.spec.width == 4 else 0x7FF0000000000000

    def key_of(self, bits: ir.Value) -> ir.Value:
        """The unsigned sort key of an element's bits (lane-wise on vectors)."""
        b, spec = self.builder, self.spec
        if spec.kind == "f":
            neg = b.icmp_signed("<", bits, self.kconst(0, bits))
            key = b.select(neg, b.not_(bits), b.xor(bits, self.kconst(spec.sign, bits)))
            key = b.select(self.is_zero(bits), self.kconst(spec.sign, bits), key)
            key = b.select(self.is_nan(bits), self.kconst(-1, bits), key)
        elif spec.kind == "i":
            key = b.xor(bits, self.kconst(spec.sign, bits))
        else:
            key = bits
        return b.not_(key) if spec.descending else key

    def bits_of(self, key: ir.Value) -> ir.Value:
        """The element's bits of a key (zeros come out +0.0, NaNs as the positive quiet NaN of all ones;
        lane-wise on vectors)."""
        b, spec = self.builder, self.spec
        if spec.descending:
            key = b.not_(key)
        if spec.kind == "f":
            pos = b.icmp_signed("<", key, self.kconst(0, key))          # top bit set: a non-negative number
            return b.select(pos, b.xor(key, self.kconst(spec.sign, key)), b.not_(key))
        return b.xor(key, self.kconst(spec.sign, key)) if spec.kind == "i" else key

    def at(self, base: ir.Value, i: ir.Value) -> ir.Value:
        return self.builder.gep(base, [i], inbounds=True)

    def counter(self, name: str, init: ir.Value = I64(0)) -> ir.AllocaInstr:
        slot = self.alloca(init.type, name=name)
        self.builder.store(init, slot)
        return slot

    def bump(self, slot: ir.Value, cond: ir.Value) -> None:
        b = self.builder
        b.store(b.add(b.load(slot), b.zext(cond, slot.type.pointee)), slot)


def load_keys(k: SortKernel, src: ir.Value, ss: ir.Value, n: ir.Value, keys: ir.Value,
               idx: Optional[ir.Value]) -> dict:
    """keys[i] = key of src[i], idx[i] = i; returns the counts (descents, and for floats the zeros' and
    NaNs' positions' ingredients) and the smallest and largest key."""
    b, spec = k.builder, k.spec
    names = ["descents"] + (["below", "above", "nans", "negzeros"] if spec.kind == "f" else [])
    slots = {nm: k.counter(nm) for nm in names}
    prev = k.counter("prev", k.kconst(0))
    lo, hi = k.counter("kmin", k.kconst(-1)), k.counter("kmax", k.kconst(0))
    contiguous = b.icmp_signed("==", ss, I64(spec.width))
    for unit in (True, False):       # a unit-stride copy of the loop, which the loop vectoriser takes
        with b.if_then(contiguous if unit else b.not_(contiguous)):
            with k.for_range(n, name="load_u" if unit else "load_s") as i:
                ptr = b.gep(src, [b.mul(i, I64(spec.width) if unit else ss)])
                bits = k.raw_bits(ptr)
                key = k.key_of(bits)
                b.store(key, k.at(keys, i))
                if idx is not None:
                    b.store(b.trunc(i, I32), k.at(idx, i))
                k.bump(slots["descents"], b.icmp_unsigned("<", key, b.load(prev)))
                b.store(key, prev)
                b.store(b.select(b.icmp_unsigned("<", key, b.load(lo)), key, b.load(lo)), lo)
                b.store(b.select(b.icmp_unsigned(">", key, b.load(hi)), key, b.load(hi)), hi)
                if spec.kind == "f":
                    nan, zero = k.is_nan(bits), k.is_zero(bits)
                    neg = b.icmp_signed("<", bits, k.kconst(0))
                    other = b.not_(b.or_(nan, zero))
                    k.bump(slots["below"], b.and_(other, neg))
                    k.bump(slots["above"], b.and_(other, b.not_(neg)))
                    k.bump(slots["nans"], nan)
                    k.bump(slots["negzeros"], b.and_(zero, neg))
    stats = {nm: b.load(s) for nm, s in slots.items()}
    stats["min"], stats["max"] = b.load(lo), b.load(hi)
    return stats


def smin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """The signed minimum of two i64 values."""
    return b.select(b.icmp_signed("<", x, y), x, y)


def restore_zeros_and_nans(k: SortKernel, src: ir.Value, ss: ir.Value, n: ir.Value, count: ir.Value,
                            vals: ir.Value, vs: ir.Value, stats: dict) -> None:
    """Rewrite the zeros' and NaNs' runs of the output from the source, in input order (their exact bits)."""
    b, spec = k.builder, k.spec
    nans = stats["nans"]
    if spec.descending:
        zero_at, nan_at = b.add(nans, stats["above"]), I64(0)
    else:
        zero_at, nan_at = stats["below"], b.sub(n, nans)
    needed = b.icmp_signed(">", b.add(nans, stats["negzeros"]), I64(0))
    with b.if_then(needed, likely=False):
        zpos, npos = k.counter("zpos", zero_at), k.counter("npos", nan_at)
        with k.for_range(n, name="restore", vectorize=False) as i:
            bits = k.raw_bits(b.gep(src, [b.mul(i, ss)]))
            zero, nan = k.is_zero(bits), k.is_nan(bits)
            slot = b.select(zero, zpos, npos)
            with b.if_then(b.or_(zero, nan)):
                pos = b.load(slot)
                with b.if_then(b.icmp_signed("<", pos, count)):
                    k.store_bits(b.gep(vals, [b.mul(pos, vs)]), bits)
                b.store(b.add(pos, I64(1)), slot)
