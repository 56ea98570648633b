"""Lowering of Unique (numpy.unique): the input is copied into rows (one element per row for axis None, else one
slice along the axis, in C order of the other dimensions), a permutation of the rows is merge-sorted (stable,
bottom-up, NaN last), a counting pass finds the number of distinct rows, the outputs are allocated with it,
and a filling pass writes the values, first indices, inverse and counts. No Python round trip.

The sort is this module's own small kernel (a permutation sorted with a row comparator); a native sort op may
later share it.
"""

from __future__ import annotations

from typing import Callable, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.unique import Unique

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.nest import load_value
from graphjit.link.llvm.loops.rows import I1, byte_ptr, internal_function, nest, strides_of
from graphjit.link.llvm.ops.search import compare_dtype, counter, less, real_dtypes, same, while_loop
from graphjit.link.llvm.registry import lowerings


def _row_function(ctx: GraphContext, dtype: str, what: str, nan_equal: bool = False) -> ir.Function:
    """``i1 (T* rows, i64 m, i64 i, i64 j)``: what='less': row i sorts before row j (lexicographic, numpy's order);
    what='differ': some element of row i is not equal to row j's (NaNs equal when nan_equal)."""
    elem = L.llvm_scalar_type(dtype)
    name = f"glue.unique.{what}.{L.dtype_name(dtype)}{'.nan' if nan_equal else ''}"
    fn, b, new = internal_function(ctx, name, I1, [elem.as_pointer(), I64, I64, I64])
    if not new:
        return fn
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
        before = body.function.append_basic_block("check_after")
        b.cbranch(less(b, x, y, cdt), yes, before)
        b.position_at_end(before)
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


def _copy_rows(ctx: GraphContext, node: Apply, x: ir.Value, axis: int | None) -> tuple:
    """(rows, n, m): x copied into a contiguous scratch array of n rows of m elements."""
    b = ctx.builder
    dtype, ndim = node.inputs[0].type.dtype, node.inputs[0].type.ndim
    order = list(range(ndim)) if axis is None else [axis] + [d for d in range(ndim) if d != axis]
    lengths = [ctx.shape(x, d) for d in order]
    total = I64(1)
    for n_d in lengths:
        total = b.mul(total, n_d)
    n = total if axis is None else lengths[0]
    m = I64(1)
    if axis is not None:
        for n_d in lengths[1:]:
            m = b.mul(m, n_d)
    rows = ctx.temp_array(node, dtype, [total], "rows")
    data = ctx.data(rows)
    pos = counter(ctx, ctx.name(node, "pos"))
    sx = strides_of(ctx, x, ndim)
    with nest(ctx, lengths, [byte_ptr(ctx, x)], [[sx[d] for d in order]], name="uc") as (p,):
        k = b.load(pos)
        b.store(b.load(b.bitcast(p, data.type)), b.gep(data, [k]))
        b.store(b.add(k, I64(1)), pos)
    return data, n, m


def _merge_sort(ctx: GraphContext, node: Apply, rows: ir.Value, n: ir.Value, m: ir.Value, dtype: str) -> ir.Value:
    """An i64* to the row indices 0..n-1 in sorted order (stable: equal rows keep their order)."""
    b = ctx.builder
    perm = ctx.data(ctx.temp_array(node, "int64", [n], "perm"))
    spare = ctx.data(ctx.temp_array(node, "int64", [n], "merge"))
    with ctx.for_range(n, name="up") as i:
        b.store(i, b.gep(perm, [i]))
    src, dst = ctx.alloca(perm.type, name=ctx.name(node, "src")), ctx.alloca(perm.type, name=ctx.name(node, "dst"))
    b.store(perm, src)
    b.store(spare, dst)
    width = counter(ctx, ctx.name(node, "width"), I64(1))
    is_less = _row_function(ctx, dtype, "less")
    i, j, k = (counter(ctx, ctx.name(node, s)) for s in ("mi", "mj", "mk"))

    def smaller(u: ir.Value, v: ir.Value) -> ir.Value:
        return b.select(b.icmp_signed("<", u, v), u, v)

    def one_pass() -> None:
        w = b.load(width)
        s, d = b.load(src), b.load(dst)
        with ctx.for_range(n, step=b.shl(w, I64(1)), name="ms") as lo:
            mid, hi = smaller(b.add(lo, w), n), smaller(b.add(lo, b.shl(w, I64(1))), n)
            b.store(lo, i)
            b.store(mid, j)
            b.store(lo, k)

            def merge_one() -> None:
                iv, jv, kv = b.load(i), b.load(j), b.load(k)
                left = b.load(b.gep(s, [smaller(iv, b.sub(mid, I64(1)))]))
                right = b.load(b.gep(s, [smaller(jv, b.sub(hi, I64(1)))]))
                right_first = b.call(is_less, [rows, m, right, left])
                take = b.and_(b.icmp_signed("<", jv, hi), b.or_(b.icmp_signed(">=", iv, mid), right_first))
                b.store(b.select(take, right, left), b.gep(d, [kv]))
                b.store(b.add(jv, b.zext(take, I64)), j)
                b.store(b.add(iv, b.zext(b.not_(take), I64)), i)
                b.store(b.add(kv, I64(1)), k)

            while_loop(ctx, lambda: b.icmp_signed("<", b.load(k), hi), merge_one, ctx.name(node, "mg"))
        b.store(d, src)
        b.store(s, dst)
        b.store(b.shl(w, I64(1)), width)

    while_loop(ctx, lambda: b.icmp_signed("<", b.load(width), n), one_pass, ctx.name(node, "ms"))
    return b.load(src)


@lowerings.register(Unique, applies=real_dtypes)
def lower_unique(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Sort the rows, count the distinct ones, allocate, then fill values / index / inverse / counts."""
    b = ctx.builder
    (x,) = inputs
    op, dtype, ndim = node.op, node.inputs[0].type.dtype, node.inputs[0].type.ndim
    axis = op.slice_axis(node)
    rows, n, m = _copy_rows(ctx, node, x, axis)
    order = _merge_sort(ctx, node, rows, n, m, dtype)
    differ = _row_function(ctx, dtype, "differ", nan_equal=axis is None)

    def starts_group(kv: ir.Value) -> ir.Value:
        prev = b.load(b.gep(order, [b.sub(kv, I64(1))]))
        cur = b.load(b.gep(order, [kv]))
        first = b.icmp_signed("==", kv, I64(0))
        return b.select(first, ir.Constant(I1, 1), b.call(differ, [rows, m, prev, cur]))

    count = counter(ctx, ctx.name(node, "groups"))
    with ctx.for_range(n, name="ug") as kv:
        b.store(b.add(b.load(count), b.zext(starts_group(kv), I64)), count)
    u = b.load(count)
    if axis is None:
        values = ctx.allocate(node, 0, [u])
    else:
        values = ctx.allocate(node, 0, [u if d == axis else ctx.shape(x, d) for d in range(ndim)])
    outs, k = [values], 1
    index = inverse = counts = None
    if op.return_index:
        index, k = ctx.allocate(node, k, [u]), k + 1
        outs.append(index)
    if op.return_inverse:
        inv_shape = ctx.shapes(x, ndim) if axis is None else [n]
        inverse, k = ctx.allocate(node, k, inv_shape), k + 1
        outs.append(inverse)
    if op.return_counts:
        counts = ctx.allocate(node, k, [u])
        outs.append(counts)
    _fill(ctx, node, (rows, n, m, order, axis), starts_group, values, index, inverse, counts)
    return outs


def _fill(ctx: GraphContext, node: Apply, sorted_rows: tuple, starts_group: Callable[[ir.Value], ir.Value],
          values: ir.Value,
          index: ir.Value | None, inverse: ir.Value | None, counts: ir.Value | None) -> None:
    """The filling pass: group g of equal rows gets its row, its first row index and its size."""
    b = ctx.builder
    rows, n, m, order, axis = sorted_rows
    dtype, ndim = node.inputs[0].type.dtype, node.inputs[0].type.ndim
    group = counter(ctx, ctx.name(node, "g"), I64(-1))
    others = [d for d in range(ndim) if d != axis] if axis is not None else []
    item = L.itemsize(dtype)
    with ctx.for_range(n, name="uf") as kv:
        j = b.load(b.gep(order, [kv]))
        with b.if_then(starts_group(kv)):
            g = b.add(b.load(group), I64(1))
            b.store(g, group)
            if axis is None:
                b.store(b.load(b.gep(rows, [j])), b.gep(ctx.data(values), [g]))
            else:
                _write_slice(ctx, values, rows, j, m, g, axis, others, item)
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


def _write_slice(ctx: GraphContext, values: ir.Value, rows: ir.Value, j: ir.Value, m: ir.Value, g: ir.Value,
                 axis: int, others: list, item: int) -> None:
    """values[..., g, ...] (g on axis) = row j of rows (the other dimensions in C order)."""
    b = ctx.builder
    lengths = [ctx.shape(values, d) for d in others]
    src_strides, step = [], I64(item)
    for n_d in reversed(lengths):
        src_strides.insert(0, step)
        step = b.mul(step, n_d)
    src = b.gep(b.bitcast(rows, L.I8.as_pointer()), [b.mul(b.mul(j, m), I64(item))])
    dst = b.gep(byte_ptr(ctx, values), [b.mul(g, ctx.stride(values, axis))])
    with nest(ctx, lengths, [src, dst], [src_strides, [ctx.stride(values, d) for d in others]], name="uw") as (p, q):
        b.store(b.load(b.bitcast(p, rows.type)), b.bitcast(q, rows.type))


__all__ = ["lower_unique"]
