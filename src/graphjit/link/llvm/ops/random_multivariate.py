"""Native ``dirichlet`` and ``multinomial``: numpy's Generator methods, one core vector per batch element in C order.

``dirichlet(alpha)``: numpy checks ``alpha < 0`` (a 1-d alpha once; a batched one row by row, as perform draws each
row with its own call), then per vector: when every alpha is below 0.1 (no NaN), the stick-breaking with
``random_beta(alpha[j], sum(alpha[j+1:]))`` (stopping where the rest of alpha is 0), else ``random_standard_gamma``
per entry normalised by ``1 / sum``.  ``multinomial(n, pvals)``: numpy's checks (a non-empty last axis, pvals in
[0, 1], the Kahan sum of each row but its last entry at most 1 + 1e-12, n not negative), then
``random_multinomial(n, counts, pvals row, d, binomial_t)`` per batch element into a zeroed row.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.random_multivariate import DirichletRV, MultinomialRV

from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8P
from graphjit.link.llvm.loops.rows import byte_ptr, load_as, nest, store_as
from graphjit.link.llvm.ops.random import _REAL, native_unavailable, note_long_draw, npr_function, split_inputs
from graphjit.link.llvm.ops.random_hand_discrete import BINOMIAL_T
from graphjit.link.llvm.ops.random_loops import check_broadcast, check_param, each_element
from graphjit.link.llvm.ops.random_state import (acquire, bitgen_pointer, copy_is_native, drop_copy, generator_for,
                                                 release)
from graphjit.link.llvm.registry import lowerings

DBL = ir.DoubleType()
I1 = ir.IntType(1)


def batch_shape(ctx: GraphContext, node: Apply, size: Optional[ir.Value], params: Sequence[ir.Value],
                ndims: Sequence[int]) -> list[ir.Value]:
    """The batch lengths: size's (checked non-negative), else the broadcast of the parameters' batch axes."""
    b = ctx.builder
    static = node.outputs[1].type.shape[:-1]
    shape = []
    for d, s in enumerate(static):
        if size is not None:
            n = I64(s) if s is not None else ctx.load_element(size, [I64(d)])
            ctx.raise_if(b.icmp_signed("<", n, I64(0)), node, "ValueError",
                         f"{node.op}: negative dimensions are not allowed (size has %lld)", [n])
        else:
            n = I64(1)
            for p, k in zip(params, ndims):
                if d >= len(static) - k:
                    length = ctx.shape(p, d - (len(static) - k))
                    n = b.select(b.icmp_signed("!=", length, I64(1)), length, n)
            n = I64(s) if s is not None else n
        shape.append(n)
    return shape


def can_lower_batched(node: Apply) -> bool:
    """Real dtypes, numpy's archive usable, the new generator read by outputs only (or inplace), parameters' batch
    axes no more than the sample's (else numpy's error, from perform)."""
    op, nb = node.op, node.outputs[1].ndim - 1
    _, _, pvars = split_inputs(node, [None] * len(node.inputs))
    return ((op.inplace or copy_is_native(node)) and native_unavailable() is None
            and all(v.type.dtype in _REAL for v in node.inputs[1:] + node.outputs[1:])
            and all(v.ndim - c <= nb for v, c in zip(pvars, op.core_ndims)))


def _element(ctx: GraphContext, row: ir.Value, j: ir.Value, stride: ir.Value) -> ir.Value:
    return ctx.builder.gep(row, [ctx.builder.mul(j, stride)])


def _store_row(ctx: GraphContext, src: ir.Value, count: ir.Value, src_dtype: str, dst: ir.Value, stride: ir.Value,
               out_dtype: str) -> None:
    """Emit: the count values of src (a contiguous src_dtype buffer) into the output row dst, cast to out_dtype."""
    b = ctx.builder
    with ctx.for_range(count, name="dst") as j:
        v = cast_value(b, b.load(b.gep(src, [j])), src_dtype, out_dtype)
        store_as(ctx, _element(ctx, dst, j, stride), v, out_dtype)


def _check_alpha(ctx: GraphContext, node: Apply, row: ir.Value, k: ir.Value, stride: ir.Value, dtype: str) -> None:
    b = ctx.builder
    bad = ctx.alloca(I1, name=ctx.name(node, "neg"))
    b.store(I1(0), bad)
    with ctx.for_range(k, name="achk") as j:
        v = load_as(ctx, _element(ctx, row, j, stride), dtype, "float64")
        b.store(b.or_(b.load(bad), b.fcmp_ordered("<", v, DBL(0.0))), bad)
    ctx.raise_if(b.load(bad), node, "ValueError", f"{node.op}: alpha < 0")


class _Alpha:
    """One alpha vector as numpy's dirichlet sees it: k doubles, their sums from the right, the algorithm."""

    def __init__(self, ctx: GraphContext, node: Apply, k: ir.Value) -> None:
        self.k = k
        self.alpha, self.csum = (ctx.data(ctx.temp_array(node, "float64", [k], w)) for w in ("alpha", "csum"))
        self.small, self.total = ctx.alloca(I1), ctx.alloca(DBL)

    def load(self, ctx: GraphContext, row: ir.Value, stride: ir.Value, dtype: str) -> None:
        """Read alpha from row (strided, any dtype); the stick-breaking when every alpha < 0.1 (a NaN: no)."""
        b, k = ctx.builder, self.k
        b.store(b.icmp_signed(">", k, I64(0)), self.small)
        b.store(DBL(0.0), self.total)
        with ctx.for_range(k, name="rsum") as t:
            j = b.sub(b.sub(k, I64(1)), t)
            a = load_as(ctx, _element(ctx, row, j, stride), dtype, "float64")
            b.store(a, b.gep(self.alpha, [j]))
            b.store(b.and_(b.load(self.small), b.fcmp_ordered("<", a, DBL(0.1))), self.small)
            b.store(b.fadd(b.load(self.total), a), self.total)
            b.store(b.load(self.total), b.gep(self.csum, [j]))


def _dirichlet_row(ctx: GraphContext, bitgen: ir.Value, alpha: _Alpha, val: ir.Value) -> None:
    """numpy's two algorithms for one vector into val (k doubles)."""
    b, k = ctx.builder, alpha.k
    beta = npr_function(ctx, "random_beta", DBL, [DBL, DBL])
    gamma = npr_function(ctx, "random_standard_gamma", DBL, [DBL])
    with b.if_else(b.load(alpha.small)) as (stick, normalised):
        with stick:
            with ctx.for_range(k, name="zero") as j:
                b.store(DBL(0.0), b.gep(val, [j]))
            with b.if_then(b.fcmp_ordered(">", b.load(alpha.total), DBL(0.0))):
                acc, live = ctx.alloca(DBL), ctx.alloca(I1)
                b.store(DBL(1.0), acc)
                b.store(I1(1), live)
                with ctx.for_range(b.sub(k, I64(1)), name="stick") as j:
                    with b.if_then(b.load(live)):
                        rest = b.load(b.gep(alpha.csum, [b.add(j, I64(1))]))
                        v = b.call(beta, [bitgen, b.load(b.gep(alpha.alpha, [j])), rest])
                        b.store(b.fmul(b.load(acc), v), b.gep(val, [j]))
                        b.store(b.fmul(b.load(acc), b.fsub(DBL(1.0), v)), acc)
                        b.store(b.fcmp_unordered("!=", rest, DBL(0.0)), live)
                b.store(b.load(acc), b.gep(val, [b.sub(k, I64(1))]))
        with normalised:
            acc = ctx.alloca(DBL)
            b.store(DBL(0.0), acc)
            with ctx.for_range(k, name="gam") as j:
                g = b.call(gamma, [bitgen, b.load(b.gep(alpha.alpha, [j]))])
                b.store(g, b.gep(val, [j]))
                b.store(b.fadd(b.load(acc), g), acc)
            inv = b.fdiv(DBL(1.0), b.load(acc))
            with ctx.for_range(k, name="scale") as j:
                ptr = b.gep(val, [j])
                b.store(b.fmul(b.load(ptr), inv), ptr)


@lowerings.register(DirichletRV, applies=can_lower_batched, objects=True)
def lower_dirichlet(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.dirichlet, one vector per batch element (an unbatched alpha read once)."""
    b = ctx.builder
    size, (alpha,), (avar,) = split_inputs(node, inputs)
    nb, dtype = avar.ndim - 1, avar.type.dtype
    batch = batch_shape(ctx, node, size, [alpha], [nb])
    check_broadcast(ctx, node, batch, [alpha], [nb])
    k, stride = ctx.shape(alpha, nb), ctx.stride(alpha, nb)
    if nb == 0:
        _check_alpha(ctx, node, byte_ptr(ctx, alpha), k, stride, dtype)
    else:
        with each_element(ctx, batch, [alpha], [nb], name="arow") as (row,):
            _check_alpha(ctx, node, row, k, stride, dtype)
    note_long_draw(ctx, node)
    out = ctx.allocate(node, 1, [*batch, k])
    out_dtype = node.outputs[1].type.dtype
    vector = _Alpha(ctx, node, k)
    if nb == 0:
        vector.load(ctx, byte_ptr(ctx, alpha), stride, dtype)
    val = ctx.data(ctx.temp_array(node, "float64", [k], "val"))
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    bitgen = bitgen_pointer(ctx, gen)
    out_stride = ctx.stride(out, len(batch))
    taken = acquire(ctx, gen)
    with each_element(ctx, batch, [alpha, out], [nb, len(batch)], name="dir") as (row, dst):
        if nb > 0:
            vector.load(ctx, row, stride, dtype)
        _dirichlet_row(ctx, bitgen, vector, val)
        _store_row(ctx, val, k, "float64", dst, out_stride, out_dtype)
    release(ctx, gen, taken)
    drop_copy(ctx, copy)
    return [new_slot, out]


def _pvals_rows(ctx: GraphContext, node: Apply, pvals: ir.Value, pvar) -> tuple[ir.Value, ir.Value]:
    """pvals as a C-contiguous float64 copy (numpy's PyArray_FROM_OTF) and d, after numpy's checks of pvals."""
    b = ctx.builder
    nd = pvar.ndim
    d = ctx.shape(pvals, nd - 1)
    ctx.raise_if(b.icmp_signed("==", d, I64(0)), node, "ValueError", f"{node.op}: pvals must have at least 1 "
                 "dimension and the last dimension of pvals must be greater than 0.")
    check_param(ctx, node, pvals, pvar.type.dtype, nd, "pvals", "bounded_0_1", False)
    shape = ctx.shapes(pvals, nd)
    copy = ctx.temp_array(node, "float64", shape, "pvals")
    strides = [[ctx.stride(pvals, j) for j in range(nd)], [ctx.stride(copy, j) for j in range(nd)]]
    total = ctx.alloca(DBL, name=ctx.name(node, "ptotal"))
    b.store(DBL(0.0), total)
    with nest(ctx, shape, [byte_ptr(ctx, pvals), byte_ptr(ctx, copy)], strides, name="pcp") as (src, dst):
        v = load_as(ctx, src, pvar.type.dtype, "float64")
        store_as(ctx, dst, v, "float64")
        b.store(b.fadd(b.load(total), v), total)
    rows = I64(1)
    for n in shape[:-1]:
        rows = b.mul(rows, n)
    data = ctx.data(copy)
    over = ctx.alloca(I1, name=ctx.name(node, "over"))
    b.store(I1(0), over)
    with ctx.for_range(rows, name="prow") as r:
        row = b.gep(data, [b.mul(r, d)])
        s, c = ctx.alloca(DBL), ctx.alloca(DBL)
        b.store(b.load(row), s)
        b.store(DBL(0.0), c)
        with ctx.for_range(b.sub(d, I64(1)), start=I64(1), name="kahan") as i:   # numpy's kahan_sum(row, d - 1)
            y = b.fsub(b.load(b.gep(row, [i])), b.load(c))
            t = b.fadd(b.load(s), y)
            b.store(b.fsub(b.fsub(t, b.load(s)), y), c)
            b.store(t, s)
        head = b.select(b.icmp_signed(">", d, I64(1)), b.load(s), DBL(0.0))
        b.store(b.or_(b.load(over), b.fcmp_ordered(">", head, DBL(1.0 + 1e-12))), over)
    sl = "[:-1]" if nd == 1 else "[...,:-1]"
    if pvar.type.dtype == "float64":
        ctx.raise_if(b.load(over), node, "ValueError", f"{node.op}: sum(pvals{sl}) > 1.0")
    else:
        near = b.fcmp_ordered("<", b.load(total), DBL(1.0001))
        ctx.raise_if(b.and_(b.load(over), near), node, "ValueError",
                     f"{node.op}: sum(pvals{sl}.astype(np.float64)) > 1.0. The pvals array is cast to 64-bit "
                     "floating point prior to checking the sum. Precision changes when casting may cause problems "
                     "even if the sum of the original pvals is valid.")
        ctx.raise_if(b.load(over), node, "ValueError", f"{node.op}: sum(pvals{sl}) > 1.0")
    return copy, d


def can_lower_multinomial(node: Apply) -> bool:
    """n of a signed integer dtype (numpy converts it to int64), batch axes no more than the sample's."""
    return can_lower_batched(node) and np.dtype(node.inputs[-2].type.dtype).kind in "bi"


@lowerings.register(MultinomialRV, applies=can_lower_multinomial, objects=True)
def lower_multinomial(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.multinomial: its checks, then random_multinomial per batch element."""
    b = ctx.builder
    size, (n, pvals), (nvar, pvar) = split_inputs(node, inputs)
    ndims = [nvar.ndim, pvar.ndim - 1]
    rows, d = _pvals_rows(ctx, node, pvals, pvar)
    check_param(ctx, node, n, nvar.type.dtype, nvar.ndim, "n", "non_negative", nvar.ndim == 0 and pvar.ndim == 1)
    batch = batch_shape(ctx, node, size, [n, pvals], ndims)
    check_broadcast(ctx, node, batch, [n, pvals], ndims)
    note_long_draw(ctx, node)
    out = ctx.allocate(node, 1, [*batch, d])
    out_dtype = node.outputs[1].type.dtype
    counts = ctx.data(ctx.temp_array(node, "int64", [d], "counts"))
    cache = ctx.alloca(BINOMIAL_T, name=ctx.name(node, "binomial_t"))
    b.store(ir.Constant(BINOMIAL_T, None), cache)
    draw = npr_function(ctx, "random_multinomial", ir.VoidType(), [I64, I64.as_pointer(), DBL.as_pointer(), I64, I8P])
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    bitgen = bitgen_pointer(ctx, gen)
    out_stride = ctx.stride(out, len(batch))
    taken = acquire(ctx, gen)
    with each_element(ctx, batch, [n, rows, out], [*ndims, len(batch)], name="mn") as (pn, prow, dst):
        with ctx.for_range(d, name="zero") as j:
            b.store(I64(0), b.gep(counts, [j]))
        trials = load_as(ctx, pn, nvar.type.dtype, "int64")
        b.call(draw, [bitgen, trials, counts, b.bitcast(prow, DBL.as_pointer()), d, b.bitcast(cache, I8P)])
        _store_row(ctx, counts, d, "int64", dst, out_stride, out_dtype)
    release(ctx, gen, taken)
    drop_copy(ctx, copy)
    return [new_slot, out]


__all__ = ["batch_shape", "lower_dirichlet", "lower_multinomial"]
