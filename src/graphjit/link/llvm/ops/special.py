"""Lowerings of Softmax, LogSoftmax and LogSumExp (max-shifted, row by row) and TakeLabels.

Fast path: one reduced axis (or every axis of a C-contiguous input) and no dtype cast.  Each row goes through
an internal row function: a max pass (explicit vectors of ``maxnum``), an exp-and-sum pass (float64: explicit
vectors of fastmath's inline exp; float32: the vectorised ``call_math`` exp; a reassociated sum, storing exp for
softmax, prefetching the next row), then a scale pass; the row stays in L1 between passes.  Rows with a
non-unit stride use a strided variant of the same function.  Anything else (several axes, integer inputs,
non-contiguous input reduced over all axes) takes a scalar loop nest doing the same passes.

NaN/inf semantics follow the ops' ``perform``: the max ignores NaN (a NaN still reaches the sum, so the row
gives NaN either way); LogSoftmax/LogSumExp replace a non-finite max by 0; an empty softmax axis is an error.
"""

from __future__ import annotations

from typing import Any, Sequence

from llvmlite import ir

from graphjit.config import config
from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import compute_type
from graphjit.tensor.special import LogSoftmax, LogSumExp, Softmax, TakeLabels

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext, branch
from graphjit.link.llvm.ir.fastmath import emit_exp
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.loops.rows import (byte_ptr, fast, is_float, load_as, nest,
                         scatter_strides, store_as, strides_of, unit_stride)
from graphjit.link.llvm.loops.nest import PARALLEL_MIN_ITEMS
from graphjit.link.llvm.loops.loop_shape import c_contiguous
from graphjit.link.llvm.registry import lowerings
from graphjit.link.llvm.ir.threads import call_parallel

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.modules import kernel_function

SOFTMAX, LOG_SOFTMAX, LOGSUMEXP = "softmax", "log_softmax", "logsumexp"
_VECTOR_BYTES = 64
_CACHE_LINE = 64
_EXP_CHUNK = 64                  # elements per prefetching chunk of the vectoriser's exp pass
_MAX_VECTORS = 4                 # vector accumulators of the max pass (maxnum's latency hides behind four)
_EXP_VECTORS = 2                 # vectors per iteration of the explicit exp pass


# ---------------------------------------------------------------- scalar pieces shared by every path

def _maxnum(ctx: LowerContext, a: ir.Value, v: ir.Value) -> ir.Value:
    return ctx.call_intrinsic("maxnum", [a, v])


def _finite_or_zero(ctx: LowerContext, m: ir.Value) -> ir.Value:
    """m if finite else 0 (the shift LogSoftmax/LogSumExp use)."""
    b = ctx.builder
    absm = ctx.call_intrinsic("fabs", [m])
    finite = b.fcmp_ordered("<", absm, ir.Constant(m.type, float("inf")))
    return b.select(finite, m, ir.Constant(m.type, 0.0))


def _shift(ctx: LowerContext, kind: str, m: ir.Value) -> ir.Value:
    return m if kind == SOFTMAX else _finite_or_zero(ctx, m)


# ---------------------------------------------------------------- row functions

class _Row:
    """Element access of a row in a row function: contiguous (T*) or strided (i8* + byte stride)."""

    def __init__(self, ctx: LowerContext, ptr: ir.Value, stride: ir.Value | None, dtype: str) -> None:
        self.ctx, self.stride, self.dtype = ctx, stride, dtype
        self.ptr = ptr if stride is None else ctx.builder.bitcast(ptr, I8P)

    def at(self, i: ir.Value) -> ir.Value:
        """T* to element i."""
        b = self.ctx.builder
        if self.stride is None:
            return b.gep(self.ptr, [i], inbounds=True)
        raw = b.gep(self.ptr, [b.mul(i, self.stride)])
        return b.bitcast(raw, L.llvm_scalar_type(self.dtype).as_pointer())


def _row_max(ctx: LowerContext, row: _Row, n: ir.Value, dtype: str) -> ir.Value:
    """maxnum over the row: _MAX_VECTORS vector accumulators on contiguous rows, then a scalar tail."""
    b, ty = ctx.builder, compute_type(dtype)
    neg_inf = ir.Constant(ty, float("-inf"))
    start = I64(0)
    m = ctx.alloca(ty, name="m")
    if row.stride is None:
        width = _VECTOR_BYTES // L.itemsize(dtype)
        vty = ir.VectorType(ty, width)
        accs = [ctx.alloca(vty, name=f"vacc{k}") for k in range(_MAX_VECTORS)]
        for acc in accs:
            b.store(ir.Constant(vty, [float("-inf")] * width), acc)
        start = b.and_(n, I64(-_MAX_VECTORS * width))
        with ctx.for_range(start, step=I64(_MAX_VECTORS * width), name="vm") as i:
            for k, acc in enumerate(accs):
                p = b.bitcast(row.at(b.add(i, I64(k * width))), vty.as_pointer())
                b.store(_maxnum(ctx, b.load(acc), b.load(p, align=L.itemsize(dtype))), acc)
        total = b.load(accs[0])
        for acc in accs[1:]:
            total = _maxnum(ctx, total, b.load(acc))
        b.store(ctx.call_intrinsic("vector.reduce.fmax", [total], overload=[vty], return_type=ty), m)
    else:
        b.store(neg_inf, m)
    with ctx.for_range(n, start=start, name="tm", vectorize=False) as i:   # a short tail, or strided
        b.store(_maxnum(ctx, b.load(m), b.load(row.at(i))), m)
    return b.load(m)


def _add_exps(ctx: LowerContext, src: _Row, dst: _Row | None, start: ir.Value, stop: ir.Value, m: ir.Value,
              s: ir.Value, name: str, **hints: Any) -> None:
    """s += exp(x[i] - m) for i in [start, stop), storing each exp into dst when given (hints: for_range's)."""
    b = ctx.builder
    with ctx.for_range(stop, start=start, name=name, **hints) as i:
        e = ctx.call_math("exp", [b.fsub(b.load(src.at(i)), m)])
        if dst is not None:
            b.store(e, dst.at(i))
        b.store(fast(b, "fadd", b.load(s), e), s)


def _prefetch(ctx: LowerContext, ptr: ir.Value) -> None:
    """Prefetch ptr's cache line for reading into all cache levels (never faults)."""
    i32 = ir.IntType(32)
    fn = ctx.declare("llvm.prefetch.p0", ir.FunctionType(ir.VoidType(), [I8P, i32, i32, i32]))
    ctx.builder.call(fn, [ctx.builder.bitcast(ptr, I8P), i32(0), i32(3), i32(1)])


def _row_sum_exp(ctx: LowerContext, src: _Row, dst: _Row | None, n: ir.Value, m: ir.Value) -> ir.Value:
    """sum(exp(x - m)) over the row, storing each exp into dst when given.

    A contiguous row prefetches the same lines of the next row of a C-contiguous matrix (x + n) as it goes:
    the next row's max pass then reads cache instead of waiting on memory while this row's exps compute.
    (Elsewhere the prefetches touch unrelated or unmapped lines: harmless.)  float64 with the inline exp goes
    through _vector_sum_exp; other rows in the vectoriser's chunks of _EXP_CHUNK elements.
    """
    b = ctx.builder
    s = ctx.alloca(m.type, name="s")
    b.store(ir.Constant(m.type, 0.0), s)
    if src.stride is not None:
        _add_exps(ctx, src, dst, I64(0), n, m, s, "e", vectorize=False)
        return b.load(s)
    if isinstance(m.type, ir.DoubleType) and config.inline_exp:
        _vector_sum_exp(ctx, src, dst, n, m, s)
        return b.load(s)
    with ctx.for_range(n, step=I64(_EXP_CHUNK), name="ec") as c:
        for k in range(0, _EXP_CHUNK, _CACHE_LINE // L.itemsize(src.dtype)):
            _prefetch(ctx, src.at(b.add(b.add(c, n), I64(k))))
        # the last chunk is the row's tail: one vectorised exp loop for both (a second one for the tail
        # doubled the row function's compile time)
        stop = b.add(c, I64(_EXP_CHUNK))
        stop = b.select(b.icmp_signed("<", stop, n), stop, n)
        _add_exps(ctx, src, dst, c, stop, m, s, "e", unroll=False)
    return b.load(s)


def _vector_sum_exp(ctx: LowerContext, src: _Row, dst: _Row | None, n: ir.Value, m: ir.Value, s: ir.Value) -> None:
    """s = sum(exp(x - m)) of a contiguous float64 row in explicit <8 x double> vectors, then a scalar tail.

    Written as vectors rather than left to the loop vectoriser so that the inline exp's table lookup is a
    vector lookup (one permute with fastmath's register table, no gather), and the partial sums stay in
    _EXP_VECTORS accumulators for the whole row.  Each iteration prefetches the same lines of the next row
    (see _row_sum_exp).  Same bits as the scalar form (test_fastmath)."""
    b, width = ctx.builder, _VECTOR_BYTES // 8
    vty = ir.VectorType(m.type, width)
    accs = [ctx.alloca(vty, name=f"eacc{k}") for k in range(_EXP_VECTORS)]
    for acc in accs:
        b.store(ir.Constant(vty, [0.0] * width), acc)
    mv = b.insert_element(ir.Constant(vty, ir.Undefined), m, I32(0))
    mv = b.shuffle_vector(mv, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(I32, width), [0] * width))
    stop = b.and_(n, I64(-_EXP_VECTORS * width))
    with ctx.for_range(stop, step=I64(_EXP_VECTORS * width), name="ve", vectorize=False, unroll=False) as i:
        for k, acc in enumerate(accs):
            at = b.add(i, I64(k * width))
            _prefetch(ctx, src.at(b.add(at, n)))
            e = emit_exp(b, b.fsub(b.load(b.bitcast(src.at(at), vty.as_pointer()), align=8), mv))
            if dst is not None:
                b.store(e, b.bitcast(dst.at(at), vty.as_pointer()), align=8)
            b.store(fast(b, "fadd", b.load(acc), e), acc)
    total = b.load(accs[0])
    for acc in accs[1:]:
        total = fast(b, "fadd", total, b.load(acc))
    b.store(ctx.call_intrinsic("vector.reduce.fadd", [ir.Constant(m.type, 0.0), total], overload=[vty],
                               return_type=m.type), s)
    _add_exps(ctx, src, dst, stop, n, m, s, "et", vectorize=False)


def _row_function(ctx: LowerContext, kind: str, dtype: str, strided: bool) -> ir.Function:
    """The internal row function: ``T f(i8* x, i64 xs, i8* out, i64 os, i64 n)`` (out unused by logsumexp)."""
    name = f"gj_{kind}_row_{dtype}{'_strided' if strided else ''}"
    ty = compute_type(dtype)
    fn, new = kernel_function(ctx.module, name, ir.FunctionType(ty, [I8P, I64, I8P, I64, I64]))
    if not new:
        return fn
    if not strided:
        fn.args[0].add_attribute("noalias")
        fn.args[2].add_attribute("noalias")
    rctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = rctx.builder
    x_arg, xs, o_arg, os_, n = fn.args
    tp = ty.as_pointer()
    src = _Row(rctx, b.bitcast(x_arg, tp), xs if strided else None, dtype)
    dst = _Row(rctx, b.bitcast(o_arg, tp), os_ if strided else None, dtype)
    m = _shift(rctx, kind, _row_max(rctx, src, n, dtype))
    s = _row_sum_exp(rctx, src, dst if kind == SOFTMAX else None, n, m)
    if kind == LOGSUMEXP:
        b.ret(b.fadd(rctx.call_math("log", [s]), m))
        return fn
    if kind == SOFTMAX:
        r = b.fdiv(ir.Constant(ty, 1.0), s)
        with rctx.for_range(n, name="w", vectorize=not strided) as i:
            b.store(b.fmul(b.load(dst.at(i)), r), dst.at(i))
    else:
        c = rctx.call_math("log", [s])
        with rctx.for_range(n, name="w", vectorize=not strided) as i:
            b.store(b.fsub(b.fsub(b.load(src.at(i)), m), c), dst.at(i))
    b.ret(ir.Constant(ty, 0.0))
    return fn


# ---------------------------------------------------------------- drivers

def _reduced_axes(node: Apply, kind: str) -> tuple[int, ...]:
    op, ndim = node.op, node.inputs[0].type.ndim
    if kind == LOGSUMEXP:
        return op._axes(ndim)
    return tuple(range(ndim)) if op.axis is None else (op.axis % ndim,)


def _out_shape(ctx: LowerContext, node: Apply, x: ir.Value, kind: str, reduced: Sequence[int]) -> list:
    ndim = node.inputs[0].type.ndim
    shape = ctx.shapes(x, ndim)
    if kind != LOGSUMEXP:
        return shape
    if node.op.keepdims:
        return [I64(1) if d in reduced else s for d, s in enumerate(shape)]
    return [s for d, s in enumerate(shape) if d not in reduced]


def _out_strides(ctx: LowerContext, node: Apply, out: ir.Value, kind: str, reduced: Sequence[int]) -> list:
    ndim = node.inputs[0].type.ndim
    if kind != LOGSUMEXP:
        return strides_of(ctx, out, ndim)
    return scatter_strides(ctx, out, ndim, reduced, node.op.keepdims)


def _call_row(ctx: LowerContext, kind: str, dtype: str, xp: ir.Value, xs: ir.Value, op: ir.Value, os_: ir.Value,
              n: ir.Value, unit: bool = False) -> None:
    """One row through the contiguous or the strided row function; logsumexp stores its result at op.

    unit: the rows are known to be unit-stride (buffers the entry allocated): no strided function."""
    b = ctx.builder
    if unit:
        result = b.call(_row_function(ctx, kind, dtype, False), [xp, xs, op, os_, n])
    else:
        contiguous = unit_stride(ctx, xs, n, dtype)
        if kind != LOGSUMEXP:
            contiguous = b.and_(contiguous, unit_stride(ctx, os_, n, dtype))
        slot = ctx.alloca(compute_type(dtype), name="row_result")
        with b.if_else(contiguous, likely=True) as (then, other):
            with then:
                b.store(b.call(_row_function(ctx, kind, dtype, False), [xp, xs, op, os_, n]), slot)
            with other:
                b.store(b.call(_row_function(ctx, kind, dtype, True), [xp, xs, op, os_, n]), slot)
        result = b.load(slot)
    if kind == LOGSUMEXP:
        store_as(ctx, op, result, dtype)


def _single_axis_rows(ctx: GraphContext, kind: str, dtype: str, x: ir.Value, out: ir.Value, out_strides: list,
                      axis: int, ndim: int, xb: ir.Value, ob: ir.Value) -> None:
    """Every row along axis through the row functions (a matrix's rows on all cores when it is large)."""
    outer = [d for d in range(ndim) if d != axis]
    xs = strides_of(ctx, x, ndim)
    unit = axis == ndim - 1 and ctx.known_contiguous(x) and (kind == LOGSUMEXP or ctx.known_contiguous(out))
    if ndim == 2 and getattr(ctx, "parallel", False):
        _parallel_rows(ctx, kind, dtype, [xb, xs[outer[0]], xs[axis], ob, out_strides[outer[0]],
                                          out_strides[axis], ctx.shape(x, axis)], ctx.shape(x, outer[0]), unit)
        return
    with nest(ctx, [ctx.shape(x, d) for d in outer], [xb, ob],
              [[xs[d] for d in outer], [out_strides[d] for d in outer]], name="row") as (xp, op):
        _call_row(ctx, kind, dtype, xp, xs[axis], op, out_strides[axis], ctx.shape(x, axis), unit)


def _rows_kernel(ctx: LowerContext, kind: str, dtype: str, unit: bool) -> ir.Function:
    """Internal ``i32 k(start, end, xb, x_row_stride, xs, ob, o_row_stride, os, n)``: rows [start, end)."""
    name = f"gj_{kind}_rows_{dtype}" + ("_unit" if unit else "")
    fn, new = kernel_function(ctx.module, name,
                              ir.FunctionType(ir.IntType(32), [I64, I64, I8P, I64, I64, I8P, I64, I64, I64]))
    if not new:
        return fn
    kctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = kctx.builder
    start, end, xb, xr, xs, ob, orow, os_, n = fn.args
    with kctx.for_range(end, start=start, name="r") as r:
        _call_row(kctx, kind, dtype, b.gep(xb, [b.mul(r, xr)]), xs, b.gep(ob, [b.mul(r, orow)]), os_, n, unit)
    b.ret(ir.Constant(ir.IntType(32), 0))
    return fn


def _parallel_rows(ctx: GraphContext, kind: str, dtype: str, args: list, rows: ir.Value, unit: bool) -> None:
    """The rows kernel over [0, rows): split across threads (GOMP_parallel) above PARALLEL_MIN_ITEMS items."""
    b = ctx.builder
    kernel = _rows_kernel(ctx, kind, dtype, unit)
    big = b.and_(b.icmp_signed(">=", b.mul(rows, args[-1]), I64(PARALLEL_MIN_ITEMS)),
                 b.icmp_signed(">", rows, I64(1)))
    with b.if_else(big) as (threaded, serial):
        with threaded:
            call_parallel(ctx, ctx.name(ctx.current_node, "rows"), kernel, args, rows, align=1)
        with serial:
            b.call(kernel, [I64(0), rows] + args)


def _generic(ctx: LowerContext, kind: str, in_dtype: str, dtype: str, x: ir.Value, out_strides: list,
             reduced: Sequence[int], ndim: int, xb: ir.Value, ob: ir.Value) -> None:
    """Any axes, any layout, any input dtype: the same three passes as scalar loop nests."""
    b, ty = ctx.builder, compute_type(dtype)
    kept = [d for d in range(ndim) if d not in reduced]
    xs = strides_of(ctx, x, ndim)
    red_len = [ctx.shape(x, d) for d in reduced]
    red_x, red_o = [xs[d] for d in reduced], [out_strides[d] for d in reduced]
    m_slot, s_slot = ctx.alloca(ty, name="gm"), ctx.alloca(ty, name="gs")
    with nest(ctx, [ctx.shape(x, d) for d in kept], [xb, ob],
              [[xs[d] for d in kept], [out_strides[d] for d in kept]], name="k") as (xp, op):
        b.store(ir.Constant(ty, float("-inf")), m_slot)
        b.store(ir.Constant(ty, 0.0), s_slot)
        with nest(ctx, red_len, [xp], [red_x], name="gmax") as (p,):
            b.store(_maxnum(ctx, b.load(m_slot), load_as(ctx, p, in_dtype, dtype)), m_slot)
        m = _shift(ctx, kind, b.load(m_slot))
        with nest(ctx, red_len, [xp, op], [red_x, red_o], name="gexp") as (p, q):
            e = ctx.call_math("exp", [b.fsub(load_as(ctx, p, in_dtype, dtype), m)])
            if kind == SOFTMAX:
                store_as(ctx, q, e, dtype)
            b.store(b.fadd(b.load(s_slot), e), s_slot)
        s = b.load(s_slot)
        if kind == LOGSUMEXP:
            store_as(ctx, op, b.fadd(ctx.call_math("log", [s]), m), dtype)
        else:
            _generic_write(ctx, kind, in_dtype, dtype, red_len, xp, op, red_x, red_o, m, s)


def _generic_write(ctx: LowerContext, kind: str, in_dtype: str, dtype: str, red_len: list, xp: ir.Value,
                   op: ir.Value, red_x: list, red_o: list, m: ir.Value, s: ir.Value) -> None:
    b = ctx.builder
    r = b.fdiv(ir.Constant(s.type, 1.0), s) if kind == SOFTMAX else ctx.call_math("log", [s])
    with nest(ctx, red_len, [xp, op], [red_x, red_o], name="gw") as (p, q):
        if kind == SOFTMAX:
            store_as(ctx, q, b.fmul(load_as(ctx, q, dtype, dtype), r), dtype)
        else:
            store_as(ctx, q, b.fsub(b.fsub(load_as(ctx, p, in_dtype, dtype), m), r), dtype)


def lower_softmax_like(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], kind: str) -> list:
    """Softmax, LogSoftmax or LogSumExp of inputs[0] (kind: 'softmax', 'log_softmax', 'logsumexp')."""
    b = ctx.builder
    (x,) = inputs
    in_dtype, dtype = node.inputs[0].type.dtype, node.outputs[0].type.dtype
    ndim = node.inputs[0].type.ndim
    reduced = _reduced_axes(node, kind)
    # an empty reduced axis: softmax/log_softmax write nothing (an empty output), logsumexp gives -inf
    out = ctx.allocate(node, 0, _out_shape(ctx, node, x, kind, reduced))
    out_strides = _out_strides(ctx, node, out, kind, reduced)
    xb, ob = byte_ptr(ctx, x), byte_ptr(ctx, out)
    same = in_dtype == dtype
    if same and len(reduced) == 1:
        _single_axis_rows(ctx, kind, dtype, x, out, out_strides, reduced[0], ndim, xb, ob)
    elif same and len(reduced) == ndim and ndim > 1:
        nitems = ctx.field(x, "nitems")
        itemsize = I64(L.itemsize(dtype))
        branch(b, c_contiguous(ctx, x, ndim, dtype),
               lambda: _call_row(ctx, kind, dtype, xb, itemsize, ob, itemsize, nitems),
               lambda: _generic(ctx, kind, in_dtype, dtype, x, out_strides, reduced, ndim, xb, ob))
    else:
        _generic(ctx, kind, in_dtype, dtype, x, out_strides, reduced, ndim, xb, ob)
    return [out]


def can_lower_softmax_like(node: Apply) -> bool:
    """float32/float64 outputs only (float16 keeps perform)."""
    return is_float(node.outputs[0].type.dtype)


@lowerings.register(Softmax, applies=can_lower_softmax_like)
def lower_softmax(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Softmax: max, exp-and-sum (storing exp), scale passes per row."""
    return lower_softmax_like(ctx, node, inputs, SOFTMAX)


@lowerings.register(LogSoftmax, applies=can_lower_softmax_like)
def lower_log_softmax(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """LogSoftmax: max, exp-and-sum, shift passes per row."""
    return lower_softmax_like(ctx, node, inputs, LOG_SOFTMAX)


@lowerings.register(LogSumExp, applies=can_lower_softmax_like)
def lower_logsumexp(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """LogSumExp: max and exp-and-sum passes per row."""
    return lower_softmax_like(ctx, node, inputs, LOGSUMEXP)


# ---------------------------------------------------------------- TakeLabels

@lowerings.register(TakeLabels)
def lower_take_labels(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """out[i] = x[i, labels[i]], checking the row count (ValueError) and every label (IndexError)."""
    b = ctx.builder
    x, labels = inputs
    dtype, ldtype = node.inputs[0].type.dtype, node.inputs[1].type.dtype
    rows, cols, n_lab = ctx.shape(x, 0), ctx.shape(x, 1), ctx.shape(labels, 0)
    ctx.raise_if(b.icmp_signed("!=", rows, n_lab), node, "ValueError",
                 f"{node.op}: %lld rows but %lld labels", [rows, n_lab])
    out = ctx.allocate(node, 0, [rows])
    mem = L.llvm_scalar_type(dtype).as_pointer()
    lab_ty = L.llvm_scalar_type(ldtype)
    with ctx.for_range(rows, name="tl") as i:
        raw = b.load(ctx.element_ptr(labels, [i]))
        if raw.type.width < 64:
            raw = b.zext(raw, I64) if ldtype.startswith("u") else b.sext(raw, I64)
        elif lab_ty.width > 64:
            raw = b.trunc(raw, I64)
        ctx.raise_if(b.icmp_unsigned(">=", raw, cols), node, "IndexError",
                     f"{node.op}: labels must lie in [0, %lld), got %lld at row %lld", [cols, raw, i])
        v = b.load(b.bitcast(ctx.element_ptr(x, [i, raw]), mem))
        b.store(v, b.gep(ctx.data(out), [i], inbounds=True))
    return [out]


__all__ = ["lower_softmax_like", "can_lower_softmax_like", "lower_take_labels"]
