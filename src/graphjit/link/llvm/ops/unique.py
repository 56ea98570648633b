"""Lowering of Unique (numpy.unique). Axis None: the elements are copied out (C order) and their positions sorted
by the sorting ops' stable kernel (ops/sort_lane.py; NaNs last); with an axis: the slices along it are copied out
as rows (the other dimensions in C order) and a permutation of them is sorted with a row comparator
(ops/merge_sort.py's stable kernel).
A counting pass finds the number of groups of equal items, the outputs are allocated with it, and a filling pass
writes the values, first indices, inverse and counts. No Python round trip.
"""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.unique import Unique

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.nest import load_value
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import I1, byte_ptr, nest, strides_of
from graphjit.link.llvm.ops.merge_sort import sort_kernel
from graphjit.link.llvm.ops.sort_kernels import MAX_LANE
from graphjit.link.llvm.ops.sort_lane import scratch_bytes, sort_kernel as lane_sort_kernel
from graphjit.link.llvm.ops.search import compare_dtype, counter, less, real_dtypes, same
from graphjit.link.llvm.registry import lowerings


def _row_function(module: ir.Module, dtype: str, what: str, nan_equal: bool = False) -> ir.Function:
    """Kernel ``i1 (T* rows, i64 m, i64 i, i64 j)``: what='less': row i sorts before row j (lexicographic, numpy's
    order); what='differ': some element of row i is not equal to row j's (NaNs equal when nan_equal)."""
    elem = L.llvm_scalar_type(dtype)
    name = f"unique_{what}_{L.dtype_name(dtype)}{'_nan' if nan_equal else ''}"
    fn, new = kernel_function(module, name, ir.FunctionType(I1, [elem.as_pointer(), I64, I64, I64]))
    if not new:
        return fn
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    rows, m, i, j = fn.args
    cdt = compare_dtype(dtype)
    head, body, step, yes, no = (fn.append_basic_block(s) for s in ("head", "body", "step", "yes", "no"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(I64, name="k")
    k.add_incoming(I64(0), entry)
    b.cbranch(b.icmp_signed("<", k, m), body, no)
    b.position_at_end(body)
    x = cast_value(b, load_value(b, b.gep(rows, [b.add(b.mul(i, m), k)]), dtype), dtype, cdt)
    y = cast_value(b, load_value(b, b.gep(rows, [b.add(b.mul(j, m), k)]), dtype), dtype, cdt)
    if what == "less":
        after = fn.append_basic_block("after")
        b.cbranch(less(b, x, y, cdt), yes, after)
        b.position_at_end(after)
        b.cbranch(less(b, y, x, cdt), no, step)
    else:
        b.cbranch(same(b, x, y, cdt, nan_equal), step, yes)
    b.position_at_end(step)
    k.add_incoming(b.add(k, I64(1)), step)
    b.branch(head)
    for block, value in ((yes, 1), (no, 0)):
        b.position_at_end(block)
        b.ret(ir.Constant(I1, value))
    return fn


def _copy(ctx: GraphContext, node: Apply, x: ir.Value, order: list, dst: ir.Value) -> None:
    """x's elements, walked over the dimensions in order, into the contiguous buffer dst."""
    b = ctx.builder
    ndim = node.inputs[0].type.ndim
    pos = counter(ctx, ctx.name(node, "pos"))
    sx = strides_of(ctx, x, ndim)
    with nest(ctx, [ctx.shape(x, d) for d in order], [byte_ptr(ctx, x)], [[sx[d] for d in order]], name="uc") as (p,):
        k = b.load(pos)
        b.store(b.load(b.bitcast(p, dst.type)), b.gep(dst, [k]))
        b.store(b.add(k, I64(1)), pos)


class _Sorted:
    """The sorted items: group starts, original positions, and the unique value written for a group."""

    def __init__(self, ctx: GraphContext, node: Apply, x: ir.Value, axis: int | None) -> None:
        self.ctx, self.node, self.axis = ctx, node, axis
        b = ctx.builder
        self.dtype, ndim = node.inputs[0].type.dtype, node.inputs[0].type.ndim
        elem = L.llvm_scalar_type(self.dtype)
        order = list(range(ndim)) if axis is None else [axis] + [d for d in range(ndim) if d != axis]
        total = I64(1)
        for d in order:
            total = b.mul(total, ctx.shape(x, d))
        n = total if axis is None else ctx.shape(x, axis)
        self.values = ctx.data(ctx.temp_array(node, self.dtype, [total], "values"))
        _copy(ctx, node, x, order, self.values)
        perm = ctx.data(ctx.temp_array(node, "int64", [n], "perm"))
        if axis is None:
            self.n, self.m = total, I64(1)
            ctx.raise_if(b.icmp_signed(">", total, I64(MAX_LANE)), node, "ValueError",
                         f"{node.op}: %lld elements are more than the native sort takes ({MAX_LANE})", [total])
            scratch = ctx.temp_array(node, "uint8", [scratch_bytes(b, self.dtype, total, True)], "scratch")
            i8p = L.I8.as_pointer()
            null = ir.Constant(i8p, None)
            b.call(lane_sort_kernel(ctx, self.dtype, False, "int64", False),
                   [b.bitcast(self.values, i8p), I64(L.itemsize(self.dtype)), total, total, null, I64(0),
                    b.bitcast(perm, i8p), I64(8), byte_ptr(ctx, scratch)])
            self.order = perm
        else:
            self.n = ctx.shape(x, axis)
            self.m = self._other_length(x, order)
            with ctx.for_range(self.n, name="up") as i:
                b.store(i, b.gep(perm, [i]))
            spare = ctx.data(ctx.temp_array(node, "int64", [self.n], "perm2"))
            dtype = self.dtype
            fn = sort_kernel(ctx.module, f"unique_rowsort_{L.dtype_name(dtype)}", [I64], [elem.as_pointer(), I64],
                             lambda b_, args, v: v[0],
                             lambda b_, args, u, v: b_.call(_row_function(b_.function.module, dtype, "less"),
                                                            [args[0], args[1], u, v]))
            flip = b.call(fn, [self.n, self.values, self.m, perm, spare])
            self.order = b.select(flip, spare, perm)
            self.differ = _row_function(ctx.module, dtype, "differ")

    def _other_length(self, x: ir.Value, order: list) -> ir.Value:
        m = I64(1)
        for d in order[1:]:
            m = self.ctx.builder.mul(m, self.ctx.shape(x, d))
        return m

    def position(self, kv: ir.Value) -> ir.Value:
        """The original position (flat C index, or index along the axis) of the kv-th sorted item."""
        return self.ctx.builder.load(self.ctx.builder.gep(self.order, [kv]))

    def starts_group(self, kv: ir.Value) -> ir.Value:
        """i1: the kv-th sorted item differs from the one before it (or is the first)."""
        b = self.ctx.builder
        first = b.icmp_signed("==", kv, I64(0))
        prev = b.select(first, kv, b.sub(kv, I64(1)))      # never item -1
        if self.axis is None:       # numpy's equal_nan: NaNs are one group (sorted last, together)
            u, v = (b.load(b.gep(self.values, [self.position(k)])) for k in (prev, kv))
            return b.or_(first, b.not_(same(b, u, v, self.dtype, True)))
        return b.or_(first, b.call(self.differ, [self.values, self.m, self.position(prev), self.position(kv)]))


@lowerings.register(Unique, applies=real_dtypes)
def lower_unique(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Sort, count the distinct items, allocate, then fill values / index / inverse / counts."""
    b = ctx.builder
    (x,) = inputs
    op, ndim = node.op, node.inputs[0].type.ndim
    axis = op.slice_axis(node)
    items = _Sorted(ctx, node, x, axis)
    count = counter(ctx, ctx.name(node, "groups"))
    with ctx.for_range(items.n, name="ug") as kv:
        b.store(b.add(b.load(count), b.zext(items.starts_group(kv), I64)), count)
    u = b.load(count)
    if axis is None:
        values = ctx.allocate(node, 0, [u])
    else:
        values = ctx.allocate(node, 0, [u if d == axis else ctx.shape(x, d) for d in range(ndim)])
    outs = [values]
    extra = {}
    for flag, what in ((op.return_index, "index"), (op.return_inverse, "inverse"), (op.return_counts, "counts")):
        if flag:
            shape = (ctx.shapes(x, ndim) if axis is None else [items.n]) if what == "inverse" else [u]
            extra[what] = ctx.allocate(node, len(outs), shape)
            outs.append(extra[what])
    _fill(ctx, node, items, values, extra)
    return outs


def _fill(ctx: GraphContext, node: Apply, items: _Sorted, values: ir.Value, extra: dict) -> None:
    """The filling pass: group g of equal items gets its value, its first position and its size."""
    b = ctx.builder
    group = counter(ctx, ctx.name(node, "g"), I64(-1))
    index, inverse, counts = (extra.get(k) for k in ("index", "inverse", "counts"))
    with ctx.for_range(items.n, name="uf") as kv:
        j = items.position(kv)
        with b.if_then(items.starts_group(kv)):
            g = b.add(b.load(group), I64(1))
            b.store(g, group)
            if items.axis is None:
                b.store(b.load(b.gep(items.values, [j])), b.gep(ctx.data(values), [g]))
            else:
                _write_slice(ctx, node, values, items, j, g)
            if index is not None:
                b.store(j, b.gep(ctx.data(index), [g]))
            if counts is not None:
                b.store(I64(0), b.gep(ctx.data(counts), [g]))
        g = b.load(group)
        if inverse is not None:
            b.store(g, b.gep(ctx.data(inverse), [j]))
        if counts is not None:
            slot = b.gep(ctx.data(counts), [g])
            b.store(b.add(b.load(slot), I64(1)), slot)


def _write_slice(ctx: GraphContext, node: Apply, values: ir.Value, items: _Sorted, j: ir.Value, g: ir.Value) -> None:
    """values[..., g, ...] (g on the axis) = row j of the rows (the other dimensions in C order)."""
    b = ctx.builder
    axis, item = items.axis, L.itemsize(items.dtype)
    others = [d for d in range(node.inputs[0].type.ndim) if d != axis]
    lengths = [ctx.shape(values, d) for d in others]
    src_strides, step = [], I64(item)
    for n_d in reversed(lengths):
        src_strides.insert(0, step)
        step = b.mul(step, n_d)
    src = b.gep(b.bitcast(items.values, L.I8.as_pointer()), [b.mul(b.mul(j, items.m), I64(item))])
    dst = b.gep(byte_ptr(ctx, values), [b.mul(g, ctx.stride(values, axis))])
    with nest(ctx, lengths, [src, dst], [src_strides, [ctx.stride(values, d) for d in others]], name="uw") as (p, q):
        b.store(b.load(b.bitcast(p, items.values.type)), b.bitcast(q, items.values.type))


__all__ = ["lower_unique"]
