"""Sorting networks of the sort kernel: the leaves of its MSD radix sort (ops/sort_msd.py), buckets of at most
LANES keys, and whole lanes of at most LANES elements (small_lane, straight from the source), sorted in vector
registers by a bitonic network (the smallest of SIZES that holds them; those from OUT_OF_LINE lanes up are one
function per kernel) and written to the outputs.

A network is not stable, so when indices are asked for each key is first *packed*: the keys share their bits
from ``shift`` up (``shift <= 8 * width - POS_BITS``: the radix sort's digits are at least POS_BITS wide), so
``(key's low bits << POS_BITS) | position`` orders the keys as the keys, ties by position, and fits the key's
width; the network sorts the packed keys, the key comes back as ``shared bits | packed >> POS_BITS`` and the
index is gathered from the bucket's indices at the position (a whole lane's position is its index). Values alone
need no packing: equal keys are the same value (zeros and NaNs are rewritten afterwards anyway). Unused lanes
hold the largest key (all ones), which a packed key of a partial bucket never equals, so they sort last. The key
buffers carry LANES keys of padding, so the vector loads past a bucket's end stay inside the scratch.
"""

from __future__ import annotations

from typing import Optional

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.layouts import I32, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.ops.sort_kernels import I1, LANES, VOID, SortKernel

SIZES = tuple(s for s in (8, 16, 32, 64) if s <= LANES)      # the networks: a bucket takes the smallest that holds it
OUT_OF_LINE = 32    # networks from this size are one function per kernel, called from each leaf (compile time)
POS_BITS = LANES.bit_length() - 1       # the bits of a position in a bucket, below a packed key's bits


def stages(lanes: int) -> list[tuple[int, list[int], list[bool]]]:
    """The bitonic sorting network of lanes (a power of two) keys, ascending, as stages of (the distance of the
    pairs, the partner of each lane, whether the lane keeps the larger of its pair)."""
    out = []
    size = 2
    while size <= lanes:
        step = size // 2
        while step:
            partner = [i ^ step for i in range(lanes)]
            keeps_max = [(i > (i ^ step)) == ((i & size) == 0) for i in range(lanes)]
            out.append((step, partner, keeps_max))
            step //= 2
        size *= 2
    return out


def leaf(k: SortKernel, keys: ir.Value, idx: Optional[ir.Value], lo: ir.Value, c: ir.Value, shift: ir.Value,
         count: ir.Value, vals: tuple, out_idx: tuple) -> None:
    """Sort the 1 <= c <= LANES keys at keys[lo:] (bits from shift up shared; their i32 indices at idx[lo:]
    travel along) and write the first count (<= c) results to sorted positions lo, lo + 1, ... of vals and out_idx
    ((pointer, byte stride) pairs)."""
    b = k.builder
    low = _low_mask(k, shift) if idx is not None else None
    shared = b.and_(b.load(k.at(keys, lo)), b.not_(low)) if low is not None else None

    def sort(lanes: int) -> None:
        vty = ir.VectorType(k.spec.key, lanes)
        raw = b.load(b.bitcast(k.at(keys, lo), vty.as_pointer()), align=k.spec.width)
        _write(k, _network(k, raw, c, low), lo, count, vals, out_idx, shared,
               k.at(idx, lo) if idx is not None else None)
    _by_size(k, c, sort)


def _by_size(k: SortKernel, c: ir.Value, sort, sizes: tuple = SIZES) -> None:
    """sort(lanes) for the smallest network of sizes holding c keys."""
    if len(sizes) == 1:
        sort(sizes[0])
        return
    with k.builder.if_else(k.builder.icmp_signed("<=", c, I64(sizes[0]))) as (fits, larger):
        with fits:
            sort(sizes[0])
        with larger:
            _by_size(k, c, sort, sizes[1:])


def small_lane(k: SortKernel, src: ir.Value, ss: ir.Value, n: ir.Value, count: ir.Value, vals: tuple,
               out_idx: tuple) -> None:
    """A whole lane of 1 <= n <= LANES elements (at src, byte stride ss) sorted in registers straight from the
    source, its first count results written, and the kernel returned; falls through (to the scratch path) when
    values are written and the lane holds a zero or a NaN (their bits are restored there), or when indices are
    asked for and the keys differ above the bits a packed key keeps."""
    _by_size(k, n, lambda lanes: _small_lane(k, lanes, src, ss, n, count, vals, out_idx))


def _small_lane(k: SortKernel, lanes: int, src: ir.Value, ss: ir.Value, n: ir.Value, count: ir.Value,
                vals: tuple, out_idx: tuple) -> None:
    b, spec = k.builder, k.spec
    vty = ir.VectorType(spec.key, lanes)
    lane = _vconst(vty, range(lanes))
    live = b.icmp_unsigned("<", lane, _splat(k, _as_key(b, n, spec.key), lanes))
    with b.if_else(b.icmp_signed("==", ss, I64(spec.width))) as (unit, strided):
        with unit:
            direct = _load_lane(k, src, n, vty, live)
            unit_end = b.block
        with strided:
            offsets = b.mul(b.zext(lane, ir.VectorType(I64, lanes)) if spec.width < 8 else lane,
                            _splat(k, ss, lanes))
            gathered = _gather(k, b.ptrtoint(src, I64), offsets, spec.key, live)
            strided_end = b.block
    bits = b.phi(vty)
    bits.add_incoming(direct, unit_end)
    bits.add_incoming(gathered, strided_end)
    key = k.key_of(bits)
    ok = ir.Constant(I1, 1)
    if spec.values and spec.kind == "f":
        special = b.and_(live, b.or_(k.is_zero(bits), k.is_nan(bits)))
        ok = b.not_(k.call_intrinsic("vector.reduce.or", [special], return_type=I1))
    low = shared = None
    if spec.idx_dtype is not None:
        smallest = k.call_intrinsic("vector.reduce.umin", [b.select(live, key, k.kconst(-1, key))],
                                    return_type=spec.key)
        largest = k.call_intrinsic("vector.reduce.umax", [b.select(live, key, k.kconst(0, key))],
                                   return_type=spec.key)
        top = b.sub(ir.Constant(spec.key, 8 * spec.width),
                    k.call_intrinsic("ctlz", [b.xor(smallest, largest), ir.Constant(I1, 0)]))
        ok = b.and_(ok, b.icmp_unsigned("<=", top, ir.Constant(spec.key, 8 * spec.width - POS_BITS)))
        low = b.sub(b.shl(ir.Constant(spec.key, 1), top), ir.Constant(spec.key, 1))
        shared = b.and_(smallest, b.not_(low))
    with b.if_then(ok):
        _write(k, _network(k, key, n, low), I64(0), count, vals, out_idx, shared, None)
        b.ret_void()


def _load_lane(k: SortKernel, src: ir.Value, n: ir.Value, vty: ir.VectorType, live: ir.Value) -> ir.Value:
    """The n contiguous elements at src in the first lanes of vty (the others undefined): one plain load when the
    vector ends in the page of the last element (so every byte it reads is mapped; a masked load costs a stall
    of ~20 cycles on AMD's AVX-512 cores), else a masked load."""
    b, width = k.builder, k.spec.width
    at = b.ptrtoint(src, I64)
    last = b.add(at, b.mul(b.sub(n, I64(1)), I64(width)))
    end = b.add(at, I64(vty.count * width - 1))
    same_page = b.icmp_unsigned("==", b.lshr(last, I64(12)), b.lshr(end, I64(12)))
    ptr = b.bitcast(src, vty.as_pointer())
    with b.if_else(same_page, likely=True) as (plain, masked):
        with plain:
            whole = b.load(ptr, align=width)
            plain_end = b.block
        with masked:
            part = k.call_external(f"llvm.masked.load.v{vty.count}i{8 * width}.p0",
                                   ir.FunctionType(vty, [vty.as_pointer(), I32, live.type, vty]),
                                   [ptr, I32(width), live, ir.Constant(vty, None)])
            masked_end = b.block
    got = b.phi(vty)
    got.add_incoming(whole, plain_end)
    got.add_incoming(part, masked_end)
    return got


def _low_mask(k: SortKernel, shift: ir.Value) -> ir.Value:
    b, key_t = k.builder, k.spec.key
    return b.sub(b.shl(ir.Constant(key_t, 1), _as_key(b, shift, key_t)), ir.Constant(key_t, 1))


def _network(k: SortKernel, keys: ir.Value, c: ir.Value, low: Optional[ir.Value]) -> ir.Value:
    """The first c lanes of the key vector sorted (the rest padded with all ones); packed with their lane
    positions first when low (the mask of the bits below the shared ones) is given."""
    b = k.builder
    vty = keys.type
    lanes = vty.count
    lane = _vconst(vty, range(lanes))
    v = keys
    if low is not None:
        v = b.or_(b.shl(b.and_(keys, _splat(k, low, lanes)), _vconst(vty, [POS_BITS] * lanes)), lane)
    live = b.icmp_unsigned("<", lane, _splat(k, _as_key(b, c, vty.element), lanes))
    v = b.select(live, v, k.kconst(-1, v))
    if lanes < OUT_OF_LINE:
        return _stages(k, v)
    fn, new = kernel_function(k.module, f"{k.spec.name}.net{lanes}", ir.FunctionType(VOID, [vty.as_pointer()]))
    if new:
        fn.attributes.add("noinline")
        inner = SortKernel(fn, k.spec)
        inner.builder.store(_stages(inner, inner.builder.load(fn.args[0])), fn.args[0])
        inner.builder.ret_void()
    slot = k.alloca(vty, name=f"net{lanes}")
    b.store(v, slot)
    b.call(fn, [slot])
    return b.load(slot)


def _stages(k: SortKernel, v: ir.Value) -> ir.Value:
    """The network's stages on the vector v, as vector registers of 64 bytes: a stage pairing lanes of two
    registers is a min and a max of the two (a register keeps the same side in all its lanes), one within a
    register a shuffle, a min, a max and a blend."""
    b = k.builder
    lanes = v.type.count
    per = min(lanes, 64 // k.spec.width)
    rty = ir.VectorType(v.type.element, per)
    undef = ir.Constant(v.type, None)
    regs = [v] if per == lanes else [
        b.shuffle_vector(v, undef, _vconst(ir.VectorType(I32, per), range(r * per, r * per + per)))
        for r in range(lanes // per)]
    for step, partner, keeps_max in stages(lanes):
        for r in range(len(regs)):
            if step >= per:
                p = r ^ (step // per)
                if r < p:
                    small, large = (k.call_intrinsic(f, [regs[r], regs[p]]) for f in ("umin", "umax"))
                    regs[r], regs[p] = (large, small) if keeps_max[r * per] else (small, large)
                continue
            mask = _vconst(ir.VectorType(I32, per), [partner[r * per + i] - r * per for i in range(per)])
            other = b.shuffle_vector(regs[r], ir.Constant(rty, None), mask)
            small, large = (k.call_intrinsic(f, [regs[r], other]) for f in ("umin", "umax"))
            keeps = _vconst(ir.VectorType(I1, per), [int(m) for m in keeps_max[r * per:(r + 1) * per]])
            regs[r] = b.select(keeps, large, small)
    while len(regs) > 1:
        width = regs[0].type.count
        both = _vconst(ir.VectorType(I32, 2 * width), range(2 * width))
        regs = [b.shuffle_vector(regs[i], regs[i + 1], both) for i in range(0, len(regs), 2)]
    return regs[0]


def _write(k: SortKernel, v: ir.Value, lo: ir.Value, count: ir.Value, vals: tuple, out_idx: tuple,
           shared: Optional[ir.Value], positions: Optional[ir.Value]) -> None:
    """The first count lanes of the sorted vector v written at positions lo, lo + 1, ... of vals (values
    decoded) and out_idx. Packed keys (shared: the bits they share) give back the key and a position: the
    index at positions[position] (an i32 pointer), or the position itself (positions None)."""
    b, spec = k.builder, k.spec
    vty = v.type
    lanes = vty.count
    lane = _vconst(vty, range(lanes))
    written = b.icmp_unsigned("<", lane, _splat(k, _as_key(b, count, vty.element), lanes))
    if spec.values:
        key = v
        if shared is not None:
            key = b.or_(b.lshr(v, _vconst(vty, [POS_BITS] * lanes)), _splat(k, shared, lanes))
        _store(k, k.bits_of(key), vals, lo, count, written)
    if spec.idx_dtype is None:
        return
    pos = b.and_(v, _vconst(vty, [(1 << POS_BITS) - 1] * lanes))
    ity = L.llvm_scalar_type(spec.idx_dtype)
    if positions is not None:
        pos64 = pos if vty.element.width == 64 else b.zext(pos, ir.VectorType(I64, lanes))
        offsets = b.shl(pos64, _vconst(pos64.type, [2] * lanes))
        got = _gather(k, b.ptrtoint(positions, I64), offsets, I32, written)
    else:
        got = pos
    width = got.type.element.width
    if ity.width > width:
        got = b.zext(got, ir.VectorType(ity, lanes))
    elif ity.width < width:
        got = b.trunc(got, ir.VectorType(ity, lanes))
    _store(k, got, out_idx, lo, count, written)


def _gather(k: SortKernel, base: ir.Value, offsets: ir.Value, elem: ir.IntType, mask: ir.Value) -> ir.Value:
    """The elems at byte address base + offsets (an i64 vector) in the lanes of mask (others undefined)."""
    b = k.builder
    lanes = offsets.type.count
    ptrs = b.inttoptr(b.add(_splat(k, base, lanes), offsets), ir.VectorType(elem.as_pointer(), lanes))
    vty = ir.VectorType(elem, lanes)
    return k.call_external(f"llvm.masked.gather.v{lanes}i{elem.width}.v{lanes}p0",
                           ir.FunctionType(vty, [ptrs.type, I32, mask.type, vty]),
                           [ptrs, I32(elem.width // 8), mask, ir.Constant(vty, None)])


def _vconst(ty: ir.VectorType, values) -> ir.Constant:
    return ir.Constant(ty, [ir.Constant(ty.element, v) for v in values])


def _splat(k: SortKernel, v: ir.Value, lanes: int) -> ir.Value:
    b = k.builder
    vty = ir.VectorType(v.type, lanes)
    one = b.insert_element(ir.Constant(vty, None), v, I32(0))
    return b.shuffle_vector(one, ir.Constant(vty, None), ir.Constant(ir.VectorType(I32, lanes), None))


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
            k.call_external(f"llvm.masked.store.v{lanes}i{elem.width}.p0",
                            ir.FunctionType(VOID, [v.type, v.type.as_pointer(), I32, written.type]),
                            [v, b.bitcast(start, v.type.as_pointer()), I32(size), written])
        with strided:
            with k.for_range(count, name="leaf_wr", vectorize=False, unroll=False) as t:
                b.store(b.extract_element(v, t), b.bitcast(b.gep(start, [b.mul(t, stride)]), elem.as_pointer()))


def _as_key(b: ir.IRBuilder, v: ir.Value, key_t: ir.IntType) -> ir.Value:
    return v if key_t.width == 64 else b.trunc(v, key_t)
