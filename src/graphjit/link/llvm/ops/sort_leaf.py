"""The leaves of the sort kernel's MSD radix sort (ops/sort_msd.py): a bucket of at most LANES keys sorted in
vector registers by a bitonic sorting network (8 lanes for up to 8 keys, else 16) and written to the outputs.

A network is not stable, so when indices are asked for each key is first *packed*: the bucket's keys share their
bits from ``shift`` up (``shift <= 8 * width - 4``), so ``(key's low bits << 4) | position in the bucket`` orders
the keys as the keys, ties by position, and fits the key's width; the network sorts the packed keys, the key comes
back as ``shared bits | packed >> 4`` and the index is gathered from the bucket's indices at the position. Values
alone need no packing: equal keys are the same value (zeros and NaNs are rewritten afterwards anyway). Unused
lanes hold the largest key (all ones), which a packed key of a partial bucket never equals, so they sort last.
The key buffers carry LANES keys of padding, so the vector loads past a bucket's end stay inside the scratch.
"""

from __future__ import annotations

from typing import Optional

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.layouts import I32, I64
from graphjit.link.llvm.ops.sort_kernels import I1, VOID, SortKernel

LANES = 16          # the widest network: buckets of at most this many keys are leaves
POS_BITS = 4        # the bits of a position in a bucket, below a packed key's bits


def stages(lanes: int) -> list[tuple[list[int], list[bool]]]:
    """The bitonic sorting network of lanes (a power of two) keys, ascending, as stages of (partner of each lane,
    whether the lane keeps the larger of its pair)."""
    out = []
    size = 2
    while size <= lanes:
        step = size // 2
        while step:
            partner = [i ^ step for i in range(lanes)]
            keeps_max = [(i > (i ^ step)) == ((i & size) == 0) for i in range(lanes)]
            out.append((partner, keeps_max))
            step //= 2
        size *= 2
    return out


def leaf(k: SortKernel, keys: ir.Value, idx: Optional[ir.Value], lo: ir.Value, c: ir.Value, shift: ir.Value,
         count: ir.Value, vals: tuple, out_idx: tuple) -> None:
    """Sort the 1 <= c <= LANES keys at keys[lo:] (bits from shift up shared; their i32 indices at idx[lo:]
    travel along) and write the first count (<= c) results to sorted positions lo, lo + 1, ... of vals and out_idx
    ((pointer, byte stride) pairs, the pointers None for an output not made)."""
    b = k.builder
    with b.if_else(b.icmp_signed("<=", c, I64(8))) as (narrow, wide):
        with narrow:
            _network(k, 8, keys, idx, lo, c, shift, count, vals, out_idx)
        with wide:
            _network(k, LANES, keys, idx, lo, c, shift, count, vals, out_idx)


def _vconst(ty: ir.VectorType, values) -> ir.Constant:
    return ir.Constant(ty, [ir.Constant(ty.element, v) for v in values])


def _splat(k: SortKernel, v: ir.Value, lanes: int) -> ir.Value:
    b = k.builder
    vty = ir.VectorType(v.type, lanes)
    one = b.insert_element(ir.Constant(vty, None), v, I32(0))
    return b.shuffle_vector(one, ir.Constant(vty, None), ir.Constant(ir.VectorType(I32, lanes), None))


def _network(k: SortKernel, lanes: int, keys: ir.Value, idx: Optional[ir.Value], lo: ir.Value, c: ir.Value,
             shift: ir.Value, count: ir.Value, vals: tuple, out_idx: tuple) -> None:
    b, spec = k.builder, k.spec
    key_t, bits = spec.key, 8 * spec.width
    vty = ir.VectorType(key_t, lanes)
    ones = _vconst(vty, [(1 << bits) - 1] * lanes)
    lane = _vconst(vty, range(lanes))
    raw = b.load(b.bitcast(k.at(keys, lo), vty.as_pointer()), align=spec.width)
    packed = spec.idx_dtype is not None
    kshift = _as_key(b, shift, key_t)
    if packed:
        low = b.sub(b.shl(ir.Constant(key_t, 1), kshift), ir.Constant(key_t, 1))
        v = b.or_(b.shl(b.and_(raw, _splat(k, low, lanes)), _vconst(vty, [POS_BITS] * lanes)), lane)
    else:
        v = raw
    live = b.icmp_unsigned("<", lane, _splat(k, _as_key(b, c, key_t), lanes))
    v = b.select(live, v, ones)
    for partner, keeps_max in stages(lanes):
        other = b.shuffle_vector(v, ir.Constant(vty, None), _vconst(ir.VectorType(I32, lanes), partner))
        small = k.call_intrinsic("umin", [v, other])
        large = k.call_intrinsic("umax", [v, other])
        v = b.select(_vconst(ir.VectorType(I1, lanes), [int(m) for m in keeps_max]), large, small)
    written = b.icmp_unsigned("<", lane, _splat(k, _as_key(b, count, key_t), lanes))
    if spec.values:
        key = v
        if packed:
            shared = b.and_(b.load(k.at(keys, lo)), b.not_(low))
            key = b.or_(b.lshr(v, _vconst(vty, [POS_BITS] * lanes)), _splat(k, shared, lanes))
        _store(k, _decode(k, key, lanes), vals, lo, count, written)
    if spec.idx_dtype is not None:
        pos = b.and_(v, _vconst(vty, [(1 << POS_BITS) - 1] * lanes))
        pos = pos if key_t.width == 64 else b.zext(pos, ir.VectorType(I64, lanes))
        base = b.ptrtoint(k.at(idx, lo), I64)
        ptrs = b.inttoptr(b.add(_splat(k, base, lanes), b.shl(pos, _vconst(pos.type, [2] * lanes))),
                          ir.VectorType(I32.as_pointer(), lanes))
        i32v = ir.VectorType(I32, lanes)
        got = k.call_external(f"llvm.masked.gather.v{lanes}i32.v{lanes}p0",
                              ir.FunctionType(i32v, [ptrs.type, I32, written.type, i32v]),
                              [ptrs, I32(4), written, ir.Constant(i32v, None)])
        ity = L.llvm_scalar_type(spec.idx_dtype)
        if ity.width > 32:
            got = b.zext(got, ir.VectorType(ity, lanes))
        elif ity.width < 32:
            got = b.trunc(got, ir.VectorType(ity, lanes))
        _store(k, got, out_idx, lo, count, written)


def _decode(k: SortKernel, key: ir.Value, lanes: int) -> ir.Value:
    """The elements' bits of a vector of keys (KernelSpec.bits_of on every lane)."""
    b, spec = k.builder, k.spec
    vty = key.type
    sign = _vconst(vty, [spec.sign] * lanes)
    if spec.descending:
        key = b.not_(key)
    if spec.kind == "f":
        pos = b.icmp_signed("<", key, _vconst(vty, [0] * lanes))
        return b.select(pos, b.xor(key, sign), b.not_(key))
    return b.xor(key, sign) if spec.kind == "i" else key


def _store(k: SortKernel, v: ir.Value, out: tuple, lo: ir.Value, count: ir.Value, written: ir.Value) -> None:
    """Lanes below count of v (integers: a float's bits) to positions lo, lo + 1, ... of out (pointer, byte
    stride); written: the lanes below count."""
    b = k.builder
    ptr, stride = out
    elem, lanes = v.type.element, v.type.count
    size = elem.width // 8
    start = b.gep(ptr, [b.mul(lo, stride)])
    with b.if_else(b.icmp_signed("==", stride, I64(size))) as (unit, strided):
        with unit:
            vty = v.type
            k.call_external(f"llvm.masked.store.v{lanes}i{elem.width}.p0",
                            ir.FunctionType(VOID, [vty, vty.as_pointer(), I32, written.type]),
                            [v, b.bitcast(start, vty.as_pointer()), I32(size), written])
        with strided:
            with k.for_range(count, name="leaf_wr", vectorize=False, unroll=False) as t:
                b.store(b.extract_element(v, t), b.bitcast(b.gep(start, [b.mul(t, stride)]),
                                                           elem.as_pointer()))


def _as_key(b: ir.IRBuilder, v: ir.Value, key_t: ir.IntType) -> ir.Value:
    return v if key_t.width == 64 else b.trunc(v, key_t)
