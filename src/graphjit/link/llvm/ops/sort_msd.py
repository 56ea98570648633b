"""The MSD radix sort of the sort kernel (ops/sort_lane.py): a recursive internal function of the kernels
module that writes each finished bucket straight to the outputs (decoded values and/or int indices).

``msd(K* src, K* dst, i32* isrc, i32* idst, i64 n, i64 top, i32* hist, i8* vals, i64 vs, i8* idx, i64 is,
i64 limit)`` sorts the n keys at src (their indices at isrc travel along), whose bits from ``top`` up are all
equal and the bit below differs (top 0: all equal, written as they are), and writes sorted positions below
``limit`` only. It takes a digit just below ``top`` of about log2(n) - LEAF_BITS bits (so buckets come out a
few keys each; at most MAX_DIGIT, or BIG_DIGIT for a bucket larger than the caches, which gives up low bits
while it would scatter into more than MAX_STREAMS non-empty buckets), counts it, and scatters stably into dst;
a bucket of at most SMALL keys is a leaf (ops/sort_leaf.py: sorted in vector registers and written), a larger
one is scanned for where its keys differ and recurses with the buffers swapped, and buckets starting at or past
``limit`` are skipped (topk sorts only what it keeps). Each level counts in its own part of hist, after its
parent's, so the recursion needs at most ``hist_counts(width)`` counts. The whole is stable: equal keys keep
input order.
"""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.ops.sort_kernels import I1, VOID, SortKernel, smin
from graphjit.link.llvm.ops.sort_leaf import LANES, POS_BITS, leaf

SMALL = LANES               # buckets up to this size are leaves (ops/sort_leaf.py)
LEAF_BITS = 2               # a digit of log2(n) - LEAF_BITS bits: buckets of ~4 keys
MAX_DIGIT = 11              # the widest digit of a bucket that fits in the caches
BIG_DIGIT = 16              # ... and of a larger one: fewer passes out of cache
BIG = 1 << 17               # keys from which a bucket is larger
MAX_STREAMS = 2048          # the most non-empty buckets a wide digit scatters into (else it loses low bits)
MIN_DIGIT = POS_BITS        # (a leaf's packed keys need a digit at least this wide below top)
I32P = I32.as_pointer()


def hist_counts(width: int, big: bool) -> int:
    """The counts the deepest recursion over keys of width bytes needs (a level's counts follow its parent's, and
    the digits of a chain of levels have at most 8 * width bits in all); big: the lane has BIG keys or more."""
    small = (1 << MAX_DIGIT) * (-(-8 * width // MAX_DIGIT) + 1)
    return small + ((1 << BIG_DIGIT) * -(-8 * width // BIG_DIGIT) if big else 0)


def msd_function(k: SortKernel) -> ir.Function:
    """The recursive MSD function of k's spec, defined on first use."""
    kp = k.spec.key.as_pointer()
    fnty = ir.FunctionType(VOID, [kp, kp, I32P, I32P, I64, I64, I32P, I8P, I64, I8P, I64, I64])
    fn, new = kernel_function(k.module, k.spec.name + ".msd", fnty)
    if new:
        _build_msd(SortKernel(fn, k.spec), fn)
    return fn


def write_results(k: SortKernel, keys: ir.Value, idx: ir.Value, lo: ir.Value, hi: ir.Value, vals: tuple,
                  out_idx: tuple) -> None:
    """Sorted positions [lo, hi) of keys/idx decoded into vals and out_idx ((pointer, byte stride) pairs)."""
    b, spec = k.builder, k.spec
    itype = L.llvm_scalar_type(spec.idx_dtype) if spec.idx_dtype is not None else None
    unit = ir.Constant(I1, 1)
    if spec.values:
        unit = b.icmp_signed("==", vals[1], I64(spec.width))
    if itype is not None:
        unit = b.and_(unit, b.icmp_signed("==", out_idx[1], I64(itype.width // 8)))
    for contiguous in (True, False):      # a unit-stride copy of the loop, which the loop vectoriser takes
        with b.if_then(unit if contiguous else b.not_(unit)):
            with k.for_range(hi, start=lo, name="wr_u" if contiguous else "wr_s", vectorize=contiguous) as i:
                if spec.values:
                    step = I64(spec.width) if contiguous else vals[1]
                    k.store_bits(b.gep(vals[0], [b.mul(i, step)]), k.bits_of(b.load(k.at(keys, i))))
                if itype is not None:
                    step = I64(itype.width // 8) if contiguous else out_idx[1]
                    j = b.zext(b.load(k.at(idx, i)), itype)
                    b.store(j, b.bitcast(b.gep(out_idx[0], [b.mul(i, step)]), itype.as_pointer()))


def _build_msd(k: SortKernel, fn: ir.Function) -> None:
    b, spec = k.builder, k.spec
    src, dst, isrc, idst, n, top, hist, vals, vs, oidx, os_, limit = fn.args
    for a in (src, dst, isrc, idst, vals, oidx):
        a.add_attribute("noalias")
    with_idx = spec.idx_dtype is not None
    ipair = (isrc, idst) if with_idx else (None, None)
    with b.if_then(b.icmp_signed("<=", top, I64(0)), likely=False):     # equal keys, in input order already
        write_results(k, src, isrc, I64(0), smin(b, n, limit), (vals, vs), (oidx, os_))
        b.ret_void()
    small = b.icmp_signed("<=", n, I64(SMALL))
    packable = I64(8 * spec.width - POS_BITS)       # the highest top a leaf's packed keys allow
    fits = b.icmp_signed("<=", top, packable) if with_idx else ir.Constant(I1, 1)
    with b.if_then(b.and_(small, fits), likely=False):
        leaf(k, src, ipair[0], I64(0), n, top, smin(b, n, limit), (vals, vs), (oidx, os_))
        b.ret_void()
    lg = b.sub(I64(64), k.call_intrinsic("ctlz", [n, ir.Constant(I1, 1)]))
    wide = b.sub(lg, I64(LEAF_BITS))
    widest = b.select(b.icmp_signed(">=", n, I64(BIG)), I64(BIG_DIGIT), I64(MAX_DIGIT))
    d = smin(b, smin(b, b.select(b.icmp_signed("<", wide, I64(MIN_DIGIT)), I64(MIN_DIGIT), wide), widest), top)
    d = b.select(small, b.sub(top, packable), d)        # a few keys: the narrowest digit that makes them fit
    shift = b.sub(top, d)
    buckets = b.shl(I64(1), d)
    kshift, kmask = _as_key(k, shift), _as_key(k, b.sub(buckets, I64(1)))

    def digit(key: ir.Value) -> ir.Value:
        v = b.and_(b.lshr(key, kshift), kmask)
        return v if spec.width == 8 else b.zext(v, I64)

    k.call_external("llvm.memset.p0.i64", ir.FunctionType(VOID, [I8P, ir.IntType(8), I64, I1]),
                    [b.bitcast(hist, I8P), ir.Constant(ir.IntType(8), 0), b.mul(buckets, I64(4)),
                     ir.Constant(I1, 0)])
    with k.for_range(n, name="mh", vectorize=False) as i:
        slot = k.at(hist, digit(b.load(k.at(src, i))))
        b.store(b.add(b.load(slot), I32(1)), slot)
    d, shift = _coarsen(k, hist, d, shift)
    buckets = b.shl(I64(1), d)
    kshift, kmask = _as_key(k, shift), _as_key(k, b.sub(buckets, I64(1)))
    _prefix_and_scatter(k, n, buckets, hist, digit, (src, dst), ipair)
    _buckets(k, fn, buckets, shift, hist, (src, dst), (isrc, idst), ((vals, vs), (oidx, os_)), limit)
    b.ret_void()


def _occupied(k: SortKernel, hist: ir.Value, buckets: ir.Value) -> ir.Value:
    b = k.builder
    count = k.counter("occ", I64(0))
    with k.for_range(buckets, name="occ", vectorize=False) as j:
        k.bump(count, b.icmp_unsigned("!=", b.load(k.at(hist, j)), I32(0)))
    return b.load(count)


def _coarsen(k: SortKernel, hist: ir.Value, d: ir.Value, shift: ir.Value) -> tuple:
    """(digit bits, shift) after dropping the digit's low bits (summing neighbouring counts) while a wide digit
    has more than MAX_STREAMS non-empty buckets: a scatter into that many places at once leaves the caches."""
    b = k.builder
    d_slot, s_slot = k.counter("co_d", d), k.counter("co_s", shift)
    head, body, done = (b.append_basic_block(f"co.{s}") for s in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    dv = b.load(d_slot)
    wide = b.icmp_signed(">", dv, I64(MAX_DIGIT))
    check = b.append_basic_block("co.check")
    b.cbranch(wide, check, done)
    b.position_at_end(check)
    b.cbranch(b.icmp_signed(">", _occupied(k, hist, b.shl(I64(1), dv)), I64(MAX_STREAMS)), body, done)
    b.position_at_end(body)
    half = b.shl(I64(1), b.sub(dv, I64(1)))
    with k.for_range(half, name="co_sum", vectorize=False) as j:
        two = b.mul(j, I64(2))
        b.store(b.add(b.load(k.at(hist, two)), b.load(k.at(hist, b.add(two, I64(1))))), k.at(hist, j))
    b.store(b.sub(dv, I64(1)), d_slot)
    b.store(b.add(b.load(s_slot), I64(1)), s_slot)
    b.branch(head)
    b.position_at_end(done)
    return b.load(d_slot), b.load(s_slot)


def _prefix_and_scatter(k: SortKernel, n: ir.Value, buckets: ir.Value, hist: ir.Value, digit, keys: tuple,
                        idx: tuple) -> None:
    """Counts to starting offsets, then the stable scatter src -> dst (hist[d] ends as bucket d's end)."""
    b = k.builder
    total = k.counter("ms_sum", I32(0))
    with k.for_range(buckets, name="mp", vectorize=False) as j:
        c = b.load(k.at(hist, j))
        b.store(b.load(total), k.at(hist, j))
        b.store(b.add(b.load(total), c), total)
    with k.for_range(n, name="ms", vectorize=False) as i:
        key = b.load(k.at(keys[0], i))
        slot = k.at(hist, digit(key))
        pos = b.load(slot)
        b.store(b.add(pos, I32(1)), slot)
        pos64 = b.zext(pos, I64)
        b.store(key, k.at(keys[1], pos64))
        if idx[0] is not None:
            b.store(b.load(k.at(idx[0], i)), k.at(idx[1], pos64))


def _buckets(k: SortKernel, fn: ir.Function, buckets: ir.Value, shift: ir.Value, hist: ir.Value, keys: tuple,
             idx: tuple, outs: tuple, limit: ir.Value) -> None:
    """Each bucket (now in dst) below limit: a few keys sorted and written here, more by recursion."""
    b, spec = k.builder, k.spec
    (src, dst), (isrc, idst), ((vals, vs), (oidx, os_)) = keys, idx, outs
    with_idx = spec.idx_dtype is not None
    start = k.counter("ms_start", I64(0))
    child = k.at(hist, buckets)
    loop = b.append_basic_block("mr.head")
    body, done = b.append_basic_block("mr.body"), b.append_basic_block("mr.done")
    j = k.counter("mr_j", I64(0))
    b.branch(loop)
    b.position_at_end(loop)
    lo = b.load(start)
    b.cbranch(b.and_(b.icmp_signed("<", b.load(j), buckets), b.icmp_signed("<", lo, limit)), body, done)
    b.position_at_end(body)
    hi = b.zext(b.load(k.at(hist, b.load(j))), I64)
    c = b.sub(hi, lo)
    with b.if_else(b.icmp_signed("<=", c, I64(SMALL))) as (few, more):
        with few:       # inline: a call per bucket of a few keys would cost more than sorting them
            with b.if_then(b.icmp_signed(">", c, I64(0))):
                leaf(k, dst, idst if with_idx else None, lo, c, shift, b.sub(smin(b, hi, limit), lo),
                     (vals, vs), (oidx, os_))
        with more:      # from where the bucket's keys differ (a pass in cache; none: all equal, written)
            at = (lambda p, s: b.gep(p, [b.mul(lo, s)]))
            b.call(fn, [k.at(dst, lo), k.at(src, lo), k.at(idst, lo), k.at(isrc, lo), c,
                        _differing_top(k, k.at(dst, lo), c), child, at(vals, vs), vs, at(oidx, os_), os_,
                        b.sub(limit, lo)])
    b.store(hi, start)
    b.store(b.add(b.load(j), I64(1)), j)
    b.branch(loop)
    b.position_at_end(done)


def _differing_top(k: SortKernel, keys: ir.Value, n: ir.Value) -> ir.Value:
    """One past the highest bit in which the n keys differ (0: all equal), from their smallest and largest."""
    b = k.builder
    lo, hi = k.counter("dt_min", k.kconst(-1)), k.counter("dt_max", k.kconst(0))
    with k.for_range(n, name="dt") as i:
        key = b.load(k.at(keys, i))
        b.store(b.select(b.icmp_unsigned("<", key, b.load(lo)), key, b.load(lo)), lo)
        b.store(b.select(b.icmp_unsigned(">", key, b.load(hi)), key, b.load(hi)), hi)
    return top_of(k, b.load(lo), b.load(hi))


def top_of(k: SortKernel, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """One past the highest bit in which the keys lo and hi differ, as i64."""
    b = k.builder
    differ = b.xor(lo, hi)
    top = b.sub(ir.Constant(differ.type, 8 * k.spec.width), k.call_intrinsic("ctlz", [differ, ir.Constant(I1, 0)]))
    return top if k.spec.width == 8 else b.zext(top, I64)


def _as_key(k: SortKernel, v: ir.Value) -> ir.Value:
    return v if k.spec.width == 8 else k.builder.trunc(v, k.spec.key)
