"""Lowering of SearchSorted: binary searches in numpy's order (NaN last) over the innermost rows of v.

A row kernel searches BATCH keys in lockstep: every key takes the same number of halvings of the range (no
branch on the data), and the BATCH probes of one halving are independent loads, so their cache misses overlap
(1e6 searches in 1e6 sorted float64 on a loaded 2-core host: one search at a time 672 ms, 8 at a time 426 ms,
16 at a time 68 ms, numpy 662 ms; benchmarks/search.py).
"""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.search import SearchSorted

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8P
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import advance, byte_ptr, load_as, store_as
from graphjit.link.llvm.ops.search import compare_dtype, less, real_dtypes, walk, while_loop
from graphjit.link.llvm.registry import lowerings

BATCH = 16


class _Probe:
    """Emits "a's i-th element (through the sorter) goes before key" into a row kernel."""

    def __init__(self, kctx: LowerContext, fn: ir.Function, dtypes: tuple, left: bool) -> None:
        self.kctx, self.b, self.fn, self.left = kctx, kctx.builder, fn, left
        self.adt, self.cdt, self.sdt = dtypes
        self.a, self.sa, self.n, self.sorter, self.ss = fn.args[:5]
        self.bad = fn.append_basic_block("bad")

    def before(self, i: ir.Value, key: ir.Value) -> ir.Value:
        """i1: element i goes before key (left: a[i] < key; right: not key < a[i])."""
        b, kctx = self.b, self.kctx
        k = i
        if self.sdt is not None:
            k = load_as(kctx, advance(kctx, self.sorter, i, self.ss), self.sdt, "int64")
            fine = self.fn.append_basic_block("fine")
            b.cbranch(b.icmp_unsigned(">=", k, self.n), self.bad, fine)
            b.position_at_end(fine)
        x = load_as(kctx, advance(kctx, self.a, k, self.sa), self.adt, self.cdt)
        return less(b, x, key, self.cdt) if self.left else b.not_(less(b, key, x, self.cdt))


def _row_kernel(ctx: GraphContext, dtypes: tuple, vdt: str, left: bool) -> ir.Function:
    """Kernel ``i64 (i8* a, i64 sa, i64 n, i8* sorter, i64 ss, i8* v, i64 sv, i64 count, i8* out, i64 so)``:
    out[j] = the insertion index of v[j] for j < count; returns 0, or -1 when a sorter entry is out of range."""
    adt, cdt, sdt = dtypes
    name = f"searchsorted_{adt}_{vdt}_{cdt}_{'left' if left else 'right'}{'_' + sdt if sdt else ''}"
    fn, new = kernel_function(ctx.module, name, ir.FunctionType(I64, [I8P, I64, I64, I8P, I64, I8P, I64, I64, I8P,
                                                                       I64]))
    if not new:
        return fn
    kctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = kctx.builder
    probe = _Probe(kctx, fn, dtypes, left)
    n, (v, sv, count, out, so) = fn.args[2], fn.args[5:]
    bases = [kctx.alloca(I64, name=f"base{j}") for j in range(BATCH)]
    length = kctx.alloca(I64, name="len")
    with kctx.for_range(count, step=I64(BATCH), name="blk") as blk:
        last = b.sub(count, I64(1))
        rows = [b.select(b.icmp_signed("<", b.add(blk, I64(j)), count), b.add(blk, I64(j)), last)
                for j in range(BATCH)]
        keys = [load_as(kctx, advance(kctx, v, r, sv), vdt, cdt) for r in rows]
        for base in bases:
            b.store(I64(0), base)
        b.store(n, length)

        def halve() -> None:
            half = b.lshr(b.load(length), I64(1))
            for base, key in zip(bases, keys):
                cur = b.load(base)
                probe_at = b.add(cur, half)
                b.store(b.select(probe.before(probe_at, key), probe_at, cur), base)
            b.store(b.sub(b.load(length), half), length)

        while_loop(kctx, lambda: b.icmp_signed(">", b.load(length), I64(1)), halve, "halve")
        with b.if_then(b.icmp_signed(">", n, I64(0))):
            for base, key in zip(bases, keys):
                cur = b.load(base)
                b.store(b.add(cur, b.zext(probe.before(cur, key), I64)), base)
        for base, row in zip(bases, rows):       # a clamped row repeats the last one: the same value again
            store_as(kctx, advance(kctx, out, row, so), b.select(b.icmp_signed(">", n, I64(0)), b.load(base), I64(0)),
                     "int64")
    b.ret(I64(0))
    b.position_at_end(probe.bad)
    b.ret(I64(-1))
    return fn


@lowerings.register(SearchSorted, applies=real_dtypes)
def lower_searchsorted(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Per element of v, the first index whose element is not before it (left) / is after it (right)."""
    b = ctx.builder
    a, v = inputs[:2]
    sorter = inputs[2] if len(inputs) > 2 else None
    adt, vdt, ndim = node.inputs[0].type.dtype, node.inputs[1].type.dtype, node.inputs[1].type.ndim
    cdt = compare_dtype(node.op.compare_dtype(node))
    n = ctx.shape(a, 0)
    sdt, sargs = None, [ir.Constant(I8P, None), I64(0)]
    if sorter is not None:
        sdt, sargs = node.inputs[2].type.dtype, [byte_ptr(ctx, sorter), ctx.stride(sorter, 0)]
        ctx.raise_if(b.icmp_signed("!=", ctx.shape(sorter, 0), n), node, "ValueError",
                     "sorter.size must equal a.size (%lld and %lld)", [ctx.shape(sorter, 0), n])
    out = ctx.allocate(node, 0, ctx.shapes(v, ndim))
    kernel = _row_kernel(ctx, (adt, cdt, sdt), vdt, node.op.side == "left")
    inner = [I64(0), I64(1), I64(0)] if ndim == 0 else [ctx.stride(v, ndim - 1), ctx.shape(v, ndim - 1),
                                                        ctx.stride(out, ndim - 1)]
    with walk(ctx, [v, out], max(ndim - 1, 0), "ss") as ((vp, op_), _):
        status = b.call(kernel, [byte_ptr(ctx, a), ctx.stride(a, 0), n, *sargs, vp, inner[0], inner[1], op_,
                                 inner[2]])
        if sorter is not None:
            ctx.raise_if(b.icmp_signed("<", status, I64(0)), node, "ValueError", "Sorter index out of range.")
    return [out]


__all__ = ["lower_searchsorted", "BATCH"]
