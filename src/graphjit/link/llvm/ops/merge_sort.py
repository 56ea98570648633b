"""A small stable sort kernel (bottom-up merge sort, runs of RUN items first sorted by insertion) over parallel
arrays: items are positions holding one element of each array, ordered by a key the caller derives from them
(ops/unique.py sorts the indices of the slices along an axis, compared through a row function; axis None takes
the sorting ops' kernel, ops/sort_lane.py).

The kernel ``i1 name(i64 n, extra..., a0*, b0*, a1*, b1*, ...)`` sorts the items in the a arrays, using the b
arrays as scratch of the same length, and returns 1 when the sorted items ended in the b arrays.
"""

from __future__ import annotations

from typing import Callable, Sequence

from llvmlite import ir

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import I1
from graphjit.link.llvm.ops.search import while_loop

RUN = 16

# key_of(builder, extra args, loaded elements of one item) -> key; less(builder, extra args, key, key) -> i1
KeyOf = Callable[[ir.IRBuilder, Sequence[ir.Value], Sequence[ir.Value]], ir.Value]
Less = Callable[[ir.IRBuilder, Sequence[ir.Value], ir.Value, ir.Value], ir.Value]


def sort_kernel(module: ir.Module, name: str, elems: Sequence[ir.Type], extra: Sequence[ir.Type],
                key_of: KeyOf, less: Less) -> ir.Function:
    """The kernel sorting parallel arrays of element types elems (see the module docstring)."""
    pairs = [t for e in elems for t in (e.as_pointer(), e.as_pointer())]
    fn, new = kernel_function(module, name, ir.FunctionType(I1, [I64, *extra, *pairs]))
    if not new:
        return fn
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = ctx.builder
    n, args = fn.args[0], fn.args[1:1 + len(extra)]
    arrays = fn.args[1 + len(extra):]
    src = [ctx.alloca(e.as_pointer(), name=f"src{k}") for k, e in enumerate(elems)]
    dst = [ctx.alloca(e.as_pointer(), name=f"dst{k}") for k, e in enumerate(elems)]
    for k in range(len(elems)):
        b.store(arrays[2 * k], src[k])
        b.store(arrays[2 * k + 1], dst[k])
    sort = _Sorter(ctx, args, key_of, less)
    with ctx.for_range(n, step=I64(RUN), name="run") as lo:
        sort.insertion(arrays[0::2], lo, sort.smaller(b.add(lo, I64(RUN)), n))
    width, flip = ctx.alloca(I64, name="width"), ctx.alloca(I1, name="flip")
    b.store(I64(RUN), width)
    b.store(ir.Constant(I1, 0), flip)

    def one_pass() -> None:
        w = b.load(width)
        s, d = [b.load(p) for p in src], [b.load(p) for p in dst]
        with ctx.for_range(n, step=b.shl(w, I64(1)), name="pass") as lo:
            sort.merge(s, d, lo, sort.smaller(b.add(lo, w), n), sort.smaller(b.add(lo, b.shl(w, I64(1))), n))
        for k in range(len(elems)):
            b.store(d[k], src[k])
            b.store(s[k], dst[k])
        b.store(b.not_(b.load(flip)), flip)
        b.store(b.shl(w, I64(1)), width)

    while_loop(ctx, lambda: b.icmp_signed("<", b.load(width), n), one_pass, "passes")
    b.ret(b.load(flip))
    return fn


class _Sorter:
    """The two phases of the kernel, emitted into its body."""

    def __init__(self, ctx: LowerContext, args: Sequence[ir.Value], key_of: KeyOf, less: Less) -> None:
        self.ctx, self.b, self.args, self.key_of, self.less = ctx, ctx.builder, args, key_of, less

    def smaller(self, u: ir.Value, v: ir.Value) -> ir.Value:
        return self.b.select(self.b.icmp_signed("<", u, v), u, v)

    def load(self, arrays: Sequence[ir.Value], pos: ir.Value) -> list:
        return [self.b.load(self.b.gep(a, [pos])) for a in arrays]

    def insertion(self, arrays: Sequence[ir.Value], lo: ir.Value, hi: ir.Value) -> None:
        """Stable insertion sort of the items in [lo, hi)."""
        b, ctx = self.b, self.ctx
        p = ctx.alloca(I64, name="ins.p")
        with ctx.for_range(hi, start=b.add(lo, I64(1)), name="ins") as a:
            item = self.load(arrays, a)
            key = self.key_of(b, self.args, item)
            b.store(a, p)

            def shifts() -> ir.Value:
                cur = b.load(p)
                inside = b.icmp_signed(">", cur, lo)
                before = self.key_of(b, self.args, self.load(arrays, b.select(inside, b.sub(cur, I64(1)), lo)))
                return b.and_(inside, self.less(b, self.args, key, before))

            def shift() -> None:
                cur = b.load(p)
                prev = b.sub(cur, I64(1))
                for arr, v in zip(arrays, self.load(arrays, prev)):
                    b.store(v, b.gep(arr, [cur]))
                b.store(prev, p)

            while_loop(ctx, shifts, shift, "ins.shift")
            for arr, v in zip(arrays, item):
                b.store(v, b.gep(arr, [b.load(p)]))

    def merge(self, s: Sequence[ir.Value], d: Sequence[ir.Value], lo: ir.Value, mid: ir.Value, hi: ir.Value) -> None:
        """d[lo:hi] = the merge of the sorted s[lo:mid] and s[mid:hi] (the left item first on ties)."""
        b, ctx = self.b, self.ctx
        i = ctx.alloca(I64, name="mg.i")
        j = ctx.alloca(I64, name="mg.j")
        b.store(lo, i)
        b.store(mid, j)
        last_left, last_right = b.sub(mid, I64(1)), b.sub(hi, I64(1))
        with ctx.for_range(hi, start=lo, name="mg") as k:
            iv, jv = b.load(i), b.load(j)
            left = self.load(s, self.smaller(iv, last_left))
            right = self.load(s, self.smaller(jv, last_right))
            right_first = self.less(b, self.args, self.key_of(b, self.args, right), self.key_of(b, self.args, left))
            take = b.and_(b.icmp_signed("<", jv, hi), b.or_(b.icmp_signed(">=", iv, mid), right_first))
            for arr, lv, rv in zip(d, left, right):
                b.store(b.select(take, rv, lv), b.gep(arr, [k]))
            b.store(b.add(jv, b.zext(take, I64)), j)
            b.store(b.add(iv, b.zext(b.not_(take), I64)), i)


__all__ = ["RUN", "sort_kernel"]
