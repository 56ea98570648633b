"""The pieces of the per-lane sort kernel of the sorting lowerings (assembled by ops/sort_lane.py; the MSD
radix sort of the values-only path is ops/sort_msd.py).

The kernel, ``void k(i8* src, i64 src_stride, i64 n, i64 count, i8* vals, i64 vals_stride, i8* idx, i64 idx_stride,
i8* scratch)`` sorts one lane of n elements stably and writes the first ``count`` results (values and/or
indices, any strides). Every element is first turned into an unsigned *key* whose integer order is numpy's
order: floats flip their sign bit (negatives all their bits), NaNs become the largest key and -0.0 the key of
0.0 (so zeros keep their input order); signed integers flip their sign bit; a descending sort complements the
key. Then:

* an already sorted lane (no descent among the keys) is copied;
* a lane shorter than RADIX_MIN is insertion-sorted in runs of RUN and merged bottom-up (branch-free merge);
* a longer one goes through an LSD radix sort (8-bit digits for 1- and 2-byte keys, 11-bit otherwise, all
  histograms counted in one pass, a pass skipped when every key has the same digit) when indices are asked
  for (it is stable) or only the first count results are, else through the MSD radix sort.

Indices travel with the keys as i32 (lanes are limited to MAX_LANE elements). The values written back are the
keys decoded, then the zeros and NaNs rewritten from the source in input order (their sign and payload bits).

scratch holds two key buffers, two index buffers and the histograms (sort_lane.scratch_bytes).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I8P, I32, I64

RUN = 16                                        # insertion-sorted run length of the merge sort
RADIX_MIN = {1: 256, 2: 512, 4: 2048, 8: 4096}  # lane length from which a key of this many bytes is radix-sorted
DIGIT_BITS = {1: 8, 2: 8, 4: 11, 8: 11}
MAX_LANE = 2 ** 31 - 1
I1 = ir.IntType(1)
VOID = ir.VoidType()
KERNEL_ARGS = [I8P, I64, I64, I64, I8P, I64, I8P, I64, I8P]


def radix_shape(width: int) -> tuple[int, int]:
    """(digit bits, passes) of a key of width bytes."""
    bits = DIGIT_BITS[width]
    return bits, -(-8 * width // bits)


def _align8(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.and_(b.add(v, I64(7)), I64(-8))


def scratch_layout(b: ir.IRBuilder, width: int, n: ir.Value, with_idx: bool) -> tuple[ir.Value, ir.Value]:
    """(bytes of one key buffer, bytes of one index buffer) for a lane of n keys of width bytes."""
    keys = _align8(b, b.mul(n, I64(width)))
    return keys, (_align8(b, b.mul(n, I64(4))) if with_idx else I64(0))


class _Spec:
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


class _Kernel(LowerContext):
    """A LowerContext inside the kernel, with its key helpers."""

    def __init__(self, fn: ir.Function, spec: _Spec) -> None:
        super().__init__(ir.IRBuilder(fn.append_basic_block("entry")))
        self.spec = spec

    def kconst(self, v: int) -> ir.Constant:
        return ir.Constant(self.spec.key, v & ((1 << (8 * self.spec.width)) - 1))

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
        """i1: the float's bits are a NaN (exponent all ones, mantissa not zero)."""
        b = self.builder
        return b.icmp_unsigned(">", b.and_(bits, self.kconst(self.spec.sign - 1)), self.kconst(self._inf()))

    def is_zero(self, bits: ir.Value) -> ir.Value:
        b = self.builder
        return b.icmp_unsigned("==", b.and_(bits, self.kconst(self.spec.sign - 1)), self.kconst(0))

    def _inf(self) -> int:
        return 0x7F800000 if self.spec.width == 4 else 0x7FF0000000000000

    def key_of(self, bits: ir.Value) -> ir.Value:
        """The unsigned sort key of an element's bits."""
        b, spec = self.builder, self.spec
        if spec.kind == "f":
            neg = b.icmp_signed("<", bits, self.kconst(0))
            key = b.select(neg, b.not_(bits), b.xor(bits, self.kconst(spec.sign)))
            key = b.select(self.is_zero(bits), self.kconst(spec.sign), key)
            key = b.select(self.is_nan(bits), self.kconst(-1), key)
        elif spec.kind == "i":
            key = b.xor(bits, self.kconst(spec.sign))
        else:
            key = bits
        return b.not_(key) if spec.descending else key

    def bits_of(self, key: ir.Value) -> ir.Value:
        """The element's bits of a key (zeros come out +0.0, NaNs as the positive quiet NaN of all ones)."""
        b, spec = self.builder, self.spec
        if spec.descending:
            key = b.not_(key)
        if spec.kind == "f":
            pos = b.icmp_signed("<", key, self.kconst(0))          # top bit set: a non-negative number
            return b.select(pos, b.xor(key, self.kconst(spec.sign)), b.not_(key))
        return b.xor(key, self.kconst(spec.sign)) if spec.kind == "i" else key

    def at(self, base: ir.Value, i: ir.Value) -> ir.Value:
        return self.builder.gep(base, [i], inbounds=True)

    def counter(self, name: str, init: ir.Value = I64(0)) -> ir.AllocaInstr:
        slot = self.alloca(init.type, name=name)
        self.builder.store(init, slot)
        return slot

    def bump(self, slot: ir.Value, cond: ir.Value) -> None:
        b = self.builder
        b.store(b.add(b.load(slot), b.zext(cond, slot.type.pointee)), slot)


def _load_keys(k: _Kernel, src: ir.Value, ss: ir.Value, n: ir.Value, keys: ir.Value,
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


def _insertion_sort(k: _Kernel, keys: ir.Value, idx: Optional[ir.Value], lo: ir.Value, hi: ir.Value) -> None:
    """Stable insertion sort of keys[lo:hi] (and idx alongside), branch-free: the new key is carried down the
    sorted prefix, each step storing the larger of it and the next key (a strictly larger one moves up, an equal
    one stays before it) and carrying the other; the buckets are a few keys, whose order a branch mispredicts."""
    b = k.builder
    with k.for_range(hi, start=b.add(lo, I64(1)), name="ins", vectorize=False) as i:
        carry = k.counter("ins_key", b.load(k.at(keys, i)))
        carry_i = k.counter("ins_idx", b.load(k.at(idx, i))) if idx is not None else None
        with k.for_range(b.sub(i, lo), name="ins_down", vectorize=False, unroll=False) as t:
            j = b.sub(b.sub(i, I64(1)), t)
            x, y = b.load(carry), b.load(k.at(keys, j))
            up = b.icmp_unsigned(">", y, x)
            b.store(b.select(up, y, x), k.at(keys, b.add(j, I64(1))))
            b.store(b.select(up, x, y), carry)
            if idx is not None:
                xi, yi = b.load(carry_i), b.load(k.at(idx, j))
                b.store(b.select(up, yi, xi), k.at(idx, b.add(j, I64(1))))
                b.store(b.select(up, xi, yi), carry_i)
        b.store(b.load(carry), k.at(keys, lo))
        if idx is not None:
            b.store(b.load(carry_i), k.at(idx, lo))


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _merge_sort(k: _Kernel, n: ir.Value, bufs_k: list, bufs_i: Optional[list], cur_k: ir.Value,
                cur_i: ir.Value) -> None:
    """Runs of RUN insertion-sorted in buffer 0, then merged bottom-up between the buffers (cur_* = result)."""
    b = k.builder
    keys0, idx0 = bufs_k[0], bufs_i[0] if bufs_i else None
    with k.for_range(n, step=I64(RUN), name="runs", vectorize=False) as lo:
        _insertion_sort(k, keys0, idx0, lo, _min(b, b.add(lo, I64(RUN)), n))
    width = k.counter("width", I64(RUN))
    other_k = k.counter("other_k", bufs_k[1])
    other_i = k.counter("other_i", bufs_i[1]) if bufs_i else None
    head, body, end = (b.append_basic_block(f"merge.{s}") for s in ("head", "body", "end"))
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(b.icmp_signed("<", b.load(width), n), body, end)
    b.position_at_end(body)
    w = b.load(width)
    sk, dk = b.load(cur_k), b.load(other_k)
    si, di = (b.load(cur_i), b.load(other_i)) if bufs_i else (None, None)
    with k.for_range(n, step=b.mul(w, I64(2)), name="pairs", vectorize=False) as lo:
        mid, hi = _min(b, b.add(lo, w), n), _min(b, b.add(lo, b.mul(w, I64(2))), n)
        _merge(k, (sk, si), (dk, di), lo, mid, hi)
    b.store(dk, cur_k)
    b.store(sk, other_k)
    if bufs_i:
        b.store(di, cur_i)
        b.store(si, other_i)
    b.store(b.mul(w, I64(2)), width)
    b.branch(head)
    b.position_at_end(end)


def _merge(k: _Kernel, src: tuple, dst: tuple, lo: ir.Value, mid: ir.Value, hi: ir.Value) -> None:
    """dst[lo:hi] = the stable merge of src[lo:mid] and src[mid:hi] (branch-free)."""
    b = k.builder
    (sk, si), (dk, di) = src, dst
    i, j = k.alloca(I64, name="mi"), k.alloca(I64, name="mj")
    b.store(lo, i)
    b.store(mid, j)
    with k.for_range(hi, start=lo, name="mrg", vectorize=False) as o:
        iv, jv = b.load(i), b.load(j)
        i_left, j_left = b.icmp_signed("<", iv, mid), b.icmp_signed("<", jv, hi)
        ii, jj = b.select(i_left, iv, lo), b.select(j_left, jv, lo)
        ki, kj = b.load(k.at(sk, ii)), b.load(k.at(sk, jj))
        take_j = b.and_(j_left, b.or_(b.not_(i_left), b.icmp_unsigned("<", kj, ki)))
        b.store(b.select(take_j, kj, ki), k.at(dk, o))
        if si is not None:
            b.store(b.select(take_j, b.load(k.at(si, jj)), b.load(k.at(si, ii))), k.at(di, o))
        step = b.zext(take_j, I64)
        b.store(b.add(jv, step), j)
        b.store(b.add(iv, b.sub(I64(1), step)), i)


def _radix_sort(k: _Kernel, n: ir.Value, bufs_k: list, bufs_i: Optional[list], hist: ir.Value,
                cur_k: ir.Value, cur_i: ir.Value) -> None:
    """LSD radix sort from buffer 0 (cur_* = the buffer holding the result)."""
    b, spec = k.builder, k.spec
    bits, passes = radix_shape(spec.width)
    buckets, mask = 1 << bits, k.kconst((1 << bits) - 1)
    k.call_external("llvm.memset.p0.i64", ir.FunctionType(VOID, [I8P, ir.IntType(8), I64, I1]),
                    [b.bitcast(hist, I8P), ir.Constant(ir.IntType(8), 0), I64(4 * passes * buckets),
                     ir.Constant(I1, 0)])

    def digit(key: ir.Value, p: int) -> ir.Value:
        d = b.and_(b.lshr(key, k.kconst(p * bits)), mask) if p else b.and_(key, mask)
        return b.zext(d, I64) if spec.width < 8 else d

    with k.for_range(n, name="hist") as i:
        key = b.load(k.at(bufs_k[0], i))
        for p in range(passes):
            slot = k.at(hist, b.add(digit(key, p), I64(p * buckets)))
            b.store(b.add(b.load(slot), I32(1)), slot)
    other_k = k.counter("r_other_k", bufs_k[1])
    other_i = k.counter("r_other_i", bufs_i[1]) if bufs_i else None
    n32 = b.trunc(n, I32)
    for p in range(passes):
        h = k.at(hist, I64(p * buckets))
        sk, dk = b.load(cur_k), b.load(other_k)
        trivial = b.icmp_signed("==", b.load(k.at(h, digit(b.load(sk), p))), n32)
        with b.if_then(b.not_(trivial)):
            total = k.counter(f"sum{p}", I32(0))
            with k.for_range(I64(buckets), name=f"pre{p}") as d:
                c = b.load(k.at(h, d))
                b.store(b.load(total), k.at(h, d))
                b.store(b.add(b.load(total), c), total)
            si, di = (b.load(cur_i), b.load(other_i)) if bufs_i else (None, None)
            with k.for_range(n, name=f"scatter{p}", vectorize=False) as i:
                key = b.load(k.at(sk, i))
                slot = k.at(h, digit(key, p))
                pos = b.load(slot)
                b.store(b.add(pos, I32(1)), slot)
                pos64 = b.zext(pos, I64)
                b.store(key, k.at(dk, pos64))
                if si is not None:
                    b.store(b.load(k.at(si, i)), k.at(di, pos64))
            b.store(dk, cur_k)
            b.store(sk, other_k)
            if bufs_i:
                b.store(di, cur_i)
                b.store(si, other_i)


def _restore_zeros_and_nans(k: _Kernel, src: ir.Value, ss: ir.Value, n: ir.Value, count: ir.Value,
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
