"""Lowerings of Gemv (beta*y + alpha*op(A)@x) and Ger (A + alpha*outer(x, y)).

scipy's ``?gemv``/``?ger`` (through ``ctx.blas``) are called when the call is plain: no operand broadcast,
every length positive, the matrix row- or column-major (any leading dimension; the transposition flag
absorbs the layout), the vectors' strides positive multiples of the item size, everything within int32,
alpha (and Gemv's beta) nonzero -- BLAS skips the product or y for a zero factor, where numpy's
expression keeps the nan of 0 * inf -- and the size above a small threshold. Every other case (negative,
zero or odd strides, broadcasting, zero factors, tiny sizes) runs a native loop computing numpy's
expression directly, so BLAS never sees a zero dimension or an invalid increment.
"""

from __future__ import annotations

from typing import Optional, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import compute_type
from graphjit.tensor.blas_vector import Gemv, Ger

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I8P, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.ops.gemv_blocked import blocked_dtype, emit_column_blocks, emit_row_blocks
from graphjit.link.llvm.ops.blas import Mat, char_slot, i32_slot, blas_layout
from graphjit.link.llvm.loops.rows import I1, advance, byte_ptr, const, fast, load_as, store_as
from graphjit.link.llvm.ops.shape import copy_cast
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext

GEMV_MIN_ELEMS = 256     # rows * cols below this: the native loop (no BLAS call overhead)
GER_MIN_ELEMS = 256
# inside a loop body (a scan step, ctx.in_loop) a BLAS call per iteration costs more than the native loop up to here
IN_LOOP_MIN_ELEMS = 1 << 14


def _min_elems(ctx: LowerContext, default: int) -> int:
    return IN_LOOP_MIN_ELEMS if getattr(ctx, "in_loop", False) else default
_INT32_MAX = (1 << 31) - 1


def _load_scalar(ctx: LowerContext, arr: ir.Value, dtype: str) -> ir.Value:
    """The value of a 0-d array struct."""
    return load_as(ctx, byte_ptr(ctx, arr), dtype, dtype)


def _all(b: ir.IRBuilder, conds: Sequence[ir.Value]) -> ir.Value:
    out = ir.Constant(I1, 1)
    for c in conds:
        out = b.and_(out, c)
    return out


def _fits(b: ir.IRBuilder, values: Sequence[ir.Value]) -> ir.Value:
    return _all(b, [b.icmp_signed("<=", v, I64(_INT32_MAX)) for v in values])


def _increment(ctx: LowerContext, stride: ir.Value, dtype: str) -> tuple[ir.Value, ir.Value]:
    """(BLAS can take this vector stride, the increment in elements)."""
    b, isz = ctx.builder, I64(L.itemsize(dtype))
    ok = b.and_(b.icmp_signed(">", stride, I64(0)), b.icmp_signed("==", b.srem(stride, isz), I64(0)))
    inc = b.sdiv(stride, isz)
    return b.and_(ok, b.icmp_signed("<=", inc, I64(_INT32_MAX))), inc


def _value_slot(ctx: LowerContext, value: ir.Value, name: str) -> ir.Value:
    slot = ctx.alloca(value.type, name=name)
    ctx.builder.store(value, slot)
    return slot


def _nonzero(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))


def _broadcast_length(ctx: GraphContext, node: Apply, a: ir.Value, b_: ir.Value, text: str) -> ir.Value:
    """numpy's broadcast of two lengths; ValueError(text % (a, b)) when they clash."""
    b = ctx.builder
    one = I64(1)
    bad = _all(b, [b.icmp_signed("!=", a, b_), b.icmp_signed("!=", a, one), b.icmp_signed("!=", b_, one)])
    ctx.raise_if(bad, node, "ValueError", text, [a, b_])
    return b.select(b.icmp_signed("!=", a, one), a, b_)


def _pinned(b: ir.IRBuilder, length: ir.Value, stride: ir.Value) -> ir.Value:
    """The stride to walk a possibly broadcast operand with (0 when its length is 1)."""
    return b.select(b.icmp_signed("==", length, I64(1)), I64(0), stride)


# ---------------------------------------------------------------- Gemv

def _call_gemv(ctx: GraphContext, a: Mat, la: tuple, x: ir.Value, incx: ir.Value, out: ir.Value, incy: ir.Value,
               alpha: ir.Value, beta: ir.Value, dtype: str) -> None:
    """out = alpha*A@x + beta*out through ?gemv; a row-major A is the column-major A^T with trans 'T'."""
    b = ctx.builder
    rm, ld_rm, _, ld_cm = la
    m, n = b.select(rm, a.cols, a.rows), b.select(rm, a.rows, a.cols)
    args = [char_slot(ctx, rm, "gemv.trans"), i32_slot(ctx, m, "gemv.m"), i32_slot(ctx, n, "gemv.n"),
            _value_slot(ctx, alpha, "gemv.alpha"), a.ptr, i32_slot(ctx, b.select(rm, ld_rm, ld_cm), "gemv.lda"),
            x, i32_slot(ctx, incx, "gemv.incx"), _value_slot(ctx, beta, "gemv.beta"), out,
            i32_slot(ctx, incy, "gemv.incy")]
    fn = ctx.blas("dgemv" if dtype == "float64" else "sgemv")
    b.call(fn, [b.bitcast(v, I8P) for v in args])


def _native_gemv(ctx: GraphContext, node: Apply, a: Mat, x: ir.Value, sx: ir.Value, out: ir.Value, so: ir.Value,
                 n_out: ir.Value, y: Optional[tuple], alpha: ir.Value, beta: ir.Value) -> None:
    """out[i] = beta*y[i] + alpha*sum_j A[i, j]*x[j], a one-row product and a length-1 y broadcast."""
    b, dtype = ctx.builder, a.dtype
    acc = ctx.alloca(compute_type(dtype), name=ctx.name(node, "gemv.acc"))
    rs = _pinned(b, a.rows, a.rs)
    unit = I64(L.itemsize(dtype))
    rows_fast = _all(b, [b.icmp_signed("==", a.cs, unit), b.icmp_signed("==", sx, unit)])
    cols = [b.icmp_signed("==", rs, unit), b.icmp_signed("==", so, unit), b.icmp_signed("==", n_out, a.rows)]
    if y is not None:      # the columns are summed into out first: y must be another buffer (not in place)
        cols.append(b.icmp_unsigned("!=", y[0], out))
    with b.if_else(rows_fast, likely=True) as (fast_rows, general):
        with fast_rows:        # contiguous rows and x: unit-stride dot products LLVM vectorises (a loop's W @ h)
            _gemv_rows(ctx, node, a, rs, x, out, so, n_out, y, alpha, beta, acc)
        with general:
            with b.if_else(_all(b, cols), likely=True) as (fast_cols, other):
                with fast_cols:    # contiguous columns (W.T @ d): unit-stride column axpys
                    _gemv_columns(ctx, node, a, x, sx, out, n_out, y, alpha, beta)
                with other:
                    _strided_gemv(ctx, node, a, rs, x, sx, out, so, n_out, y, alpha, beta, acc)


def _gemv_columns(ctx: GraphContext, node: Apply, a: Mat, x: ir.Value, sx: ir.Value, out: ir.Value,
                  n_out: ir.Value, y: Optional[tuple], alpha: ir.Value, beta: ir.Value) -> None:
    """_native_gemv over unit-stride columns of A into a unit-stride out: out = sum_j A[:, j] * alpha x[j]."""
    b, dtype = ctx.builder, a.dtype
    ty = L.llvm_scalar_type(dtype).as_pointer()
    ot = b.bitcast(out, ty)
    start = emit_column_blocks(ctx, node, a, x, sx, out, n_out, alpha) if blocked_dtype(dtype) else None
    with ctx.for_range(n_out, start=start, name=ctx.name(node, "gemv.z")) as i:
        b.store(const(dtype, 0), b.gep(ot, [i]))
    with ctx.for_range(a.cols, name=ctx.name(node, "gemv.k")) as j:
        xv = b.fmul(alpha, load_as(ctx, advance(ctx, x, j, sx), dtype, dtype))
        col = b.bitcast(advance(ctx, a.ptr, j, a.cs), ty)
        with ctx.for_range(n_out, start=start, name=ctx.name(node, "gemv.a")) as i:
            cell = b.gep(ot, [i])
            b.store(b.fadd(b.load(cell), b.fmul(b.load(b.gep(col, [i])), xv)), cell)
    if y is not None:
        with ctx.for_range(n_out, name=ctx.name(node, "gemv.y")) as i:
            cell = b.gep(ot, [i])
            yv = load_as(ctx, advance(ctx, y[0], i, y[1]), dtype, dtype)
            b.store(b.fadd(b.fmul(beta, yv), b.load(cell)), cell)


def _gemv_rows(ctx: GraphContext, node: Apply, a: Mat, rs: ir.Value, x: ir.Value, out: ir.Value, so: ir.Value,
               n_out: ir.Value, y: Optional[tuple], alpha: ir.Value, beta: ir.Value, acc: ir.Value) -> None:
    """_native_gemv over unit-stride rows of A and x (typed pointers: the inner loop vectorises)."""
    b, dtype = ctx.builder, a.dtype
    ty = L.llvm_scalar_type(dtype).as_pointer()
    xt = b.bitcast(x, ty)
    start = emit_row_blocks(ctx, node, a, rs, x, out, so, n_out, y, alpha, beta, acc) if blocked_dtype(dtype) else None
    with ctx.for_range(n_out, start=start, name=ctx.name(node, "gemv.r")) as i:
        row = b.bitcast(advance(ctx, a.ptr, i, rs), ty)
        b.store(const(dtype, 0), acc)
        with ctx.for_range(a.cols, name=ctx.name(node, "gemv.c")) as j:
            b.store(fast(b, "fadd", b.load(acc), b.fmul(b.load(b.gep(row, [j])), b.load(b.gep(xt, [j])))), acc)
        value = b.fmul(alpha, b.load(acc))
        if y is not None:
            yv = load_as(ctx, advance(ctx, y[0], i, y[1]), dtype, dtype)
            value = b.fadd(b.fmul(beta, yv), value)
        store_as(ctx, advance(ctx, out, i, so), value, dtype)


def _strided_gemv(ctx: GraphContext, node: Apply, a: Mat, rs: ir.Value, x: ir.Value, sx: ir.Value, out: ir.Value,
                  so: ir.Value, n_out: ir.Value, y: Optional[tuple], alpha: ir.Value, beta: ir.Value,
                  acc: ir.Value) -> None:
    """_native_gemv on any strides."""
    b, dtype = ctx.builder, a.dtype
    with ctx.for_range(n_out, name=ctx.name(node, "gemv.i")) as i:
        row = advance(ctx, a.ptr, i, rs)
        b.store(const(dtype, 0), acc)
        with ctx.for_range(a.cols, name=ctx.name(node, "gemv.j")) as j:
            av = load_as(ctx, advance(ctx, row, j, a.cs), dtype, dtype)
            xv = load_as(ctx, advance(ctx, x, j, sx), dtype, dtype)
            b.store(fast(b, "fadd", b.load(acc), b.fmul(av, xv)), acc)
        value = b.fmul(alpha, b.load(acc))
        if y is not None:
            yv = load_as(ctx, advance(ctx, y[0], i, y[1]), dtype, dtype)
            value = b.fadd(b.fmul(beta, yv), value)
        store_as(ctx, advance(ctx, out, i, so), value, dtype)


@lowerings.register(Gemv)
def lower_gemv(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """beta*y + alpha*op(A)@x (y optional), numpy's broadcasting of y against the product."""
    b, op = ctx.builder, node.op
    dtype = node.outputs[0].type.dtype
    y, alpha_arr, arr, x, beta_arr = op.split(inputs)
    r, c = (1, 0) if op.trans else (0, 1)
    a = Mat(byte_ptr(ctx, arr), ctx.shape(arr, r), ctx.shape(arr, c), ctx.stride(arr, r), ctx.stride(arr, c), dtype)
    nx = ctx.shape(x, 0)
    ctx.raise_if(b.icmp_signed("!=", nx, a.cols), node, "ValueError",
                 f"{op}: x has %lld elements but op(A) has %lld columns (%lld rows)", [nx, a.cols, a.rows])
    alpha = _load_scalar(ctx, alpha_arr, dtype)
    beta = _load_scalar(ctx, beta_arr, dtype) if op.with_y else const(dtype, 0)
    conds = [b.icmp_signed(">", a.rows, I64(0)), b.icmp_signed(">", a.cols, I64(0)), _nonzero(b, alpha)]
    if op.with_y:
        ny = ctx.shape(y, 0)
        n_out = _broadcast_length(ctx, node, ny, a.rows,
                                  f"{op}: y has %lld elements but op(A) has %lld rows (they do not broadcast)")
        if op.inplace:
            ctx.raise_if(b.icmp_signed("!=", ny, n_out), node, "ValueError",
                         f"{op}: y of length %lld cannot hold the result of length %lld", [ny, n_out])
        out = y if op.inplace else ctx.allocate(node, 0, [n_out])
        conds += [b.icmp_signed("==", ny, a.rows), _nonzero(b, beta)]
    else:
        n_out = a.rows
        out = ctx.allocate(node, 0, [n_out])
    ok_x, incx = _increment(ctx, ctx.stride(x, 0), dtype)
    ok_o, inco = _increment(ctx, ctx.stride(out, 0), dtype)
    la = blas_layout(ctx, a)
    conds += [ok_x, ok_o, b.or_(la[0], la[2]), _fits(b, [a.rows, a.cols, la[1], la[3]]),
              b.icmp_signed(">=", b.mul(a.rows, a.cols), I64(_min_elems(ctx, GEMV_MIN_ELEMS)))]
    out_ptr, x_ptr = byte_ptr(ctx, out), byte_ptr(ctx, x)
    with b.if_else(_all(b, conds), likely=True) as (then, other):
        with then:
            if op.with_y and not op.inplace:
                copy_cast(ctx, node, y, dtype, out, dtype, [n_out], "gemv.y")
            _call_gemv(ctx, a, la, x_ptr, incx, out_ptr, inco, alpha, beta, dtype)
        with other:
            yv = (byte_ptr(ctx, y), _pinned(b, ny, ctx.stride(y, 0))) if op.with_y else None
            _native_gemv(ctx, node, a, x_ptr, ctx.stride(x, 0), out_ptr, ctx.stride(out, 0), n_out, yv,
                         alpha, beta)
    return [out]


# ---------------------------------------------------------------- Ger

def _call_ger(ctx: GraphContext, out: Mat, lo: tuple, x: tuple, y: tuple, alpha: ir.Value, dtype: str) -> None:
    """out += alpha*outer(x, y) through ?ger; a row-major out is the column-major out^T += alpha*y x^T."""
    b = ctx.builder
    rm, ld_rm, _, ld_cm = lo
    (xp, incx), (yp, incy) = x, y
    args = [i32_slot(ctx, b.select(rm, out.cols, out.rows), "ger.m"),
            i32_slot(ctx, b.select(rm, out.rows, out.cols), "ger.n"), _value_slot(ctx, alpha, "ger.alpha"),
            b.select(rm, yp, xp), i32_slot(ctx, b.select(rm, incy, incx), "ger.incx"),
            b.select(rm, xp, yp), i32_slot(ctx, b.select(rm, incx, incy), "ger.incy"),
            out.ptr, i32_slot(ctx, b.select(rm, ld_rm, ld_cm), "ger.lda")]
    fn = ctx.blas("dger" if dtype == "float64" else "sger")
    b.call(fn, [b.bitcast(v, I8P) for v in args])


def _native_ger(ctx: GraphContext, node: Apply, out: Mat, a: Optional[Mat], x: tuple, y: tuple, alpha: ir.Value) -> None:
    """out[i, j] = A[i, j] + alpha*(x[i]*y[j]), every operand walked with 0 strides where it broadcasts: one call
    of the O3 kernel _ger_kernel (the loops emitted in a large graph's light glue ran ~5x slower)."""
    b = ctx.builder
    (xp, nx, sx), (yp, ny, sy) = x, y
    args = [out.ptr, out.rows, out.cols, out.rs, out.cs, xp, _pinned(b, nx, sx), yp, _pinned(b, ny, sy), alpha]
    if a is not None:
        args += [a.ptr, _pinned(b, a.rows, a.rs), _pinned(b, a.cols, a.cs)]
    b.call(_ger_kernel(ctx.module, out.dtype, a is not None), args)


def _ger_kernel(module: ir.Module, dtype: str, with_a: bool) -> ir.Function:
    """``void ger.<dtype>[.a](out, rows, cols, ors, ocs, x, sx, y, sy, alpha[, a, ars, acs])`` (byte strides, 0
    where broadcast): unit-stride rows of out, y (and A) in a loop LLVM vectorises, else a strided nest."""
    ty = compute_type(dtype)
    args = [I8P, I64, I64, I64, I64, I8P, I64, I8P, I64, ty] + ([I8P, I64, I64] if with_a else [])
    fn, new = kernel_function(module, f"ger.{dtype}{'.a' if with_a else ''}", ir.FunctionType(ir.VoidType(), args))
    if not new:
        return fn
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = ctx.builder
    optr, rows, cols, ors, ocs, xp, sx, yp, sy, alpha = fn.args[:10]
    a = fn.args[10:] if with_a else None
    unit = I64(L.itemsize(dtype))
    conds = [b.icmp_signed("==", ocs, unit), b.icmp_signed("==", sy, unit)]
    if a is not None:
        conds.append(b.icmp_signed("==", a[2], unit))
    ptr_ty = L.llvm_scalar_type(dtype).as_pointer()
    with b.if_else(_all(b, conds), likely=True) as (fast_rows, general):
        with fast_rows:        # unit-stride rows of out, A and y: the inner loop vectorises (a loop's gradient)
            yt = b.bitcast(yp, ptr_ty)
            with ctx.for_range(rows, name="ger.r") as i:
                xv = b.fmul(alpha, load_as(ctx, advance(ctx, xp, i, sx), dtype, dtype))
                orow = b.bitcast(advance(ctx, optr, i, ors), ptr_ty)
                arow = b.bitcast(advance(ctx, a[0], i, a[1]), ptr_ty) if a is not None else None
                with ctx.for_range(cols, name="ger.c") as j:
                    value = b.fmul(xv, b.load(b.gep(yt, [j])))
                    if arow is not None:
                        value = b.fadd(b.load(b.gep(arow, [j])), value)
                    b.store(value, b.gep(orow, [j]))
        with general:
            with ctx.for_range(rows, name="ger.i") as i:
                xv = load_as(ctx, advance(ctx, xp, i, sx), dtype, dtype)
                orow = advance(ctx, optr, i, ors)
                arow = advance(ctx, a[0], i, a[1]) if a is not None else None
                with ctx.for_range(cols, name="ger.j") as j:
                    yv = load_as(ctx, advance(ctx, yp, j, sy), dtype, dtype)
                    value = b.fmul(alpha, b.fmul(xv, yv))
                    if a is not None:
                        value = b.fadd(load_as(ctx, advance(ctx, arow, j, a[2]), dtype, dtype), value)
                    store_as(ctx, advance(ctx, orow, j, ocs), value, dtype)
    b.ret_void()
    return fn


def _matrix_of(ctx: LowerContext, arr: ir.Value, dtype: str) -> Mat:
    return Mat(byte_ptr(ctx, arr), ctx.shape(arr, 0), ctx.shape(arr, 1), ctx.stride(arr, 0), ctx.stride(arr, 1),
               dtype)


@lowerings.register(Ger)
def lower_ger(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A + alpha*outer(x, y) (A optional), numpy's broadcasting of A against the outer product."""
    b, op = ctx.builder, node.op
    dtype = node.outputs[0].type.dtype
    arr, alpha_arr, x, y = op.split(inputs)
    m, n = ctx.shape(x, 0), ctx.shape(y, 0)
    alpha = _load_scalar(ctx, alpha_arr, dtype)
    a = _matrix_of(ctx, arr, dtype) if op.with_a else None
    if a is None:
        om, on = m, n
    else:
        om = _broadcast_length(ctx, node, a.rows, m, f"{op}: A has %lld rows but x has %lld elements "
                               "(they do not broadcast)")
        on = _broadcast_length(ctx, node, a.cols, n, f"{op}: A has %lld columns but y has %lld elements "
                               "(they do not broadcast)")
    if op.inplace:
        ctx.raise_if(b.or_(b.icmp_signed("!=", a.rows, om), b.icmp_signed("!=", a.cols, on)), node, "ValueError",
                     f"{op}: A of shape (%lld, %lld) cannot hold the result of shape (%lld, ...)",
                     [a.rows, a.cols, om])
    out_arr = arr if op.inplace else ctx.allocate(node, 0, [om, on])
    out = _matrix_of(ctx, out_arr, dtype)
    xs, ys = (byte_ptr(ctx, x), m, ctx.stride(x, 0)), (byte_ptr(ctx, y), n, ctx.stride(y, 0))
    if a is None:
        _native_ger(ctx, node, out, None, xs, ys, alpha)
        return [out_arr]
    ok_x, incx = _increment(ctx, xs[2], dtype)
    ok_y, incy = _increment(ctx, ys[2], dtype)
    lo = blas_layout(ctx, out)
    conds = [b.icmp_signed("==", a.rows, m), b.icmp_signed("==", a.cols, n), b.icmp_signed(">", m, I64(0)),
             b.icmp_signed(">", n, I64(0)), _nonzero(b, alpha), ok_x, ok_y, b.or_(lo[0], lo[2]),
             _fits(b, [m, n, lo[1], lo[3]]), b.icmp_signed(">=", b.mul(m, n), I64(_min_elems(ctx, GER_MIN_ELEMS)))]
    with b.if_else(_all(b, conds), likely=True) as (then, other):
        with then:
            if not op.inplace:
                copy_cast(ctx, node, arr, dtype, out_arr, dtype, [om, on], "ger.a")
            _call_ger(ctx, out, lo, (xs[0], incx), (ys[0], incy), alpha, dtype)
        with other:
            _native_ger(ctx, node, out, a, xs, ys, alpha)
    return [out_arr]
