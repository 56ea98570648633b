"""Lowerings of Dot, Matmul (batched, broadcast batch dims) and TensorDot.

Every product is reduced to matrix products ``C (m x n, C-contiguous) = A (m x k) @ B (k x n)`` on strided
matrix descriptors.  float32/float64 (and complex64/complex128: ``cgemm``/``zgemm``) products with both operands
row- or column-major (any leading dimension) call scipy's ``?gemm`` through ``ctx.blas``; row-major C is computed as
``C^T = B^T A^T`` in column-major terms,
the transposition flags absorbing each operand's layout.  Other layouts (negative or non-unit inner strides),
mixed or integer dtypes and tiny products use a native loop.  BLAS never sees a zero dimension.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import cast_value, compute_type, zero_value
from graphjit.link.llvm.ir import complex_math
from graphjit.scalar import math as smath
from graphjit.tensor.blas import Dot, Matmul, TensorDot

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext, glue_function
from graphjit.link.llvm.ir.layouts import I8, I8P, I32, I64
from graphjit.link.llvm.loops.nest import Reduce
from graphjit.link.llvm.loops.loop_shape import Operand
from graphjit.link.llvm.loops.rows import I1, advance, byte_ptr, fast, load_as, nest, store_as, strides_of
from graphjit.link.llvm.loops.reduce import emit_reduction
from graphjit.link.llvm.ops.blas_small import small_gemm, small_gemm_applies
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext

BLAS_MIN_FLOPS = 4096            # m*n*k below this: a native loop (no BLAS call overhead)
_INT32_MAX = (1 << 31) - 1


class Mat(NamedTuple):
    """A strided matrix: i8* data, lengths, byte strides, dtype (a NamedTuple: cheaper to define than a dataclass,
    in every cold compile)."""

    ptr: ir.Value
    rows: ir.Value
    cols: ir.Value
    rs: ir.Value
    cs: ir.Value
    dtype: str


def blas_layout(ctx: LowerContext, m: Mat) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """(row-major ok, its ld, column-major ok, its ld) in elements, as BLAS wants them."""
    b, isz = ctx.builder, I64(L.itemsize(m.dtype))
    le1 = lambda v: b.icmp_signed("<=", v, I64(1))  # noqa: E731
    whole = lambda s: b.icmp_signed("==", b.srem(s, isz), I64(0))  # noqa: E731
    one = lambda v: b.select(le1(v), I64(1), v)  # noqa: E731
    rm = b.and_(b.or_(le1(m.cols), b.icmp_signed("==", m.cs, isz)),
                b.or_(le1(m.rows), b.and_(whole(m.rs), b.icmp_signed(">=", m.rs, b.mul(one(m.cols), isz)))))
    cm = b.and_(b.or_(le1(m.rows), b.icmp_signed("==", m.rs, isz)),
                b.or_(le1(m.cols), b.and_(whole(m.cs), b.icmp_signed(">=", m.cs, b.mul(one(m.rows), isz)))))
    ld_rm = b.select(le1(m.rows), one(m.cols), b.sdiv(m.rs, isz))
    ld_cm = b.select(le1(m.cols), one(m.rows), b.sdiv(m.cs, isz))
    return rm, ld_rm, cm, ld_cm


def i32_slot(ctx: LowerContext, value: ir.Value, name: str) -> ir.Value:
    """An i32 stack slot holding value (BLAS takes its integers by pointer)."""
    slot = ctx.alloca(I32, name=name)
    ctx.builder.store(ctx.builder.trunc(value, I32), slot)
    return slot


def char_slot(ctx: LowerContext, is_trans: ir.Value, name: str) -> ir.Value:
    """A char stack slot holding 'T' if is_trans else 'N' (BLAS's trans argument, by pointer)."""
    slot = ctx.alloca(I8, name=name)
    ctx.builder.store(ctx.builder.select(is_trans, I8(ord("T")), I8(ord("N"))), slot)
    return slot


def call_gemm(ctx: LowerContext, gemm: ir.Function, a: Mat, b_: Mat, c: Mat, m: ir.Value, n: ir.Value, k: ir.Value,
          la: tuple, lb: tuple, alpha: ir.Value | None = None, beta: ir.Value | None = None) -> None:
    """C^T (n x m) = alpha * B^T A^T + beta * C^T through gemm (the ?gemm the graph's context declared); la/lb:
    the operands' blas_layout results (one of each is ok); alpha, beta: 1 and 0 unless given."""
    b = ctx.builder
    ty = compute_type(c.dtype)
    a_rm, a_ld_rm, _, a_ld_cm = la
    b_rm, b_ld_rm, _, b_ld_cm = lb
    transa = char_slot(ctx, b.not_(b_rm), "gemm.transa")
    transb = char_slot(ctx, b.not_(a_rm), "gemm.transb")
    lda = b.select(b_rm, b_ld_rm, b_ld_cm)
    ldb = b.select(a_rm, a_ld_rm, a_ld_cm)
    alpha_slot, beta_slot = ctx.alloca(ty, name="gemm.alpha"), ctx.alloca(ty, name="gemm.beta")
    b.store(_scalar(ty, 1.0) if alpha is None else alpha, alpha_slot)
    b.store(_scalar(ty, 0.0) if beta is None else beta, beta_slot)
    args = [transa, transb, i32_slot(ctx, n, "gemm.m"), i32_slot(ctx, m, "gemm.n"),
            i32_slot(ctx, k, "gemm.k"), alpha_slot, b_.ptr, i32_slot(ctx, lda, "gemm.lda"), a.ptr,
            i32_slot(ctx, ldb, "gemm.ldb"), beta_slot, c.ptr, i32_slot(ctx, n, "gemm.ldc")]
    b.call(gemm, [b.bitcast(v, I8P) for v in args])


def _scalar(ty: ir.Type, v: float) -> ir.Constant:
    """v in a float type, or v + 0j in a complex one."""
    if isinstance(ty, ir.LiteralStructType):
        return ir.Constant(ty, [ir.Constant(ty.elements[0], v), ir.Constant(ty.elements[0], 0.0)])
    return ir.Constant(ty, v)


def _combine(b: ir.IRBuilder, dtype: str, acc: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
    kind = np.dtype(dtype).kind
    if kind == "f":
        return b.fadd(acc, b.fmul(x, y))
    if kind == "c":
        return complex_math.add(b, acc, complex_math.mul_plain(b, x, y))
    if kind == "b":
        return b.or_(acc, b.and_(x, y))
    return b.add(acc, b.mul(x, y))


def _native(ctx: LowerContext, a: Mat, b_: Mat, c: Mat, m: ir.Value, n: ir.Value, k: ir.Value) -> None:
    """C = A @ B by loops (i, p, j) in C's dtype: zero C, then add a[i,p] * b[p,:] into each row."""
    b, dt = ctx.builder, c.dtype
    zero = zero_value(dt)
    with nest(ctx, [m, n], [c.ptr], [[c.rs, c.cs]], name="mz") as (cp,):
        store_as(ctx, cp, zero, dt)
    with ctx.for_range(m, name="mi") as i:
        arow, crow = advance(ctx, a.ptr, i, a.rs), advance(ctx, c.ptr, i, c.rs)
        with ctx.for_range(k, name="mp") as p:
            av = load_as(ctx, advance(ctx, arow, p, a.cs), a.dtype, dt)
            brow = advance(ctx, b_.ptr, p, b_.rs)
            with ctx.for_range(n, name="mj") as j:
                cp = advance(ctx, crow, j, c.cs)
                bv = load_as(ctx, advance(ctx, brow, j, b_.cs), b_.dtype, dt)
                store_as(ctx, cp, _combine(b, dt, load_as(ctx, cp, dt, dt), av, bv), dt)


def emit_matprod(ctx: GraphContext, a: Mat, b_: Mat, c: Mat) -> None:
    """C = A @ B (C fresh, row-major; A.cols == B.rows already checked) by a call to the shared product."""
    dtypes = (a.dtype, b_.dtype, c.dtype)
    gemm = ctx.blas(_GEMM[c.dtype]) if _blas_dtypes(*dtypes) else None
    fn = glue_function(ctx.module, "matprod." + ".".join(dtypes), _MATPROD_TYPE,
                       lambda f: _build_matprod(f, dtypes, gemm))
    ctx.builder.call(fn, [a.ptr, a.rows, a.cols, a.rs, a.cs, b_.ptr, b_.cols, b_.rs, b_.cs, c.ptr, c.rs, c.cs])


# (a, rows, cols, rs, cs, b, cols, rs, cs, c, rs, cs): one definition per dtype triple instead of the
# layout checks, the gemm call and the loop repeated at every product of a graph.
_MATPROD_TYPE = ir.FunctionType(ir.VoidType(), [I8P, I64, I64, I64, I64, I8P, I64, I64, I64, I8P, I64, I64])


def can_lower_product(node: Apply) -> bool:
    """Real dtypes other than float16, or one complex dtype throughout (mixed complex products keep perform)."""
    dtypes = {v.type.dtype for v in node.inputs + node.outputs}
    if any(np.dtype(d).kind == "c" for d in dtypes):
        return len(dtypes) == 1
    return all(np.dtype(d).kind in "biuf" and d != "float16" for d in dtypes)


_GEMM = {"float64": "dgemm", "float32": "sgemm", "complex128": "zgemm", "complex64": "cgemm"}


def _blas_dtypes(a: str, b: str, c: str) -> bool:
    return c in _GEMM and a == b == c


def _mats(args: Sequence[ir.Value], dtypes: tuple[str, str, str]) -> tuple[Mat, Mat, Mat]:
    pa, m, k, ars, acs, pb, n, brs, bcs, pc, crs, ccs = args
    return (Mat(pa, m, k, ars, acs, dtypes[0]), Mat(pb, k, n, brs, bcs, dtypes[1]),
            Mat(pc, m, n, crs, ccs, dtypes[2]))


def _build_matprod(fn: ir.Function, dtypes: tuple[str, str, str], gemm: ir.Function | None) -> None:
    """The product's body: gemm when dtypes and layouts allow and the product is not tiny, else the loop."""
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = ctx.builder
    a, b_, c = _mats(fn.args, dtypes)
    m, k, n = a.rows, a.cols, b_.cols
    loop = glue_function(ctx.module, "matprod_loop." + ".".join(dtypes), _MATPROD_TYPE,
                         lambda f: _build_loop(f, dtypes))
    nonempty = b.and_(b.icmp_signed(">", m, I64(0)), b.icmp_signed(">", n, I64(0)))
    with b.if_then(nonempty):
        if dtypes[2] in ("float32", "float64") and dtypes[0] == dtypes[1] == dtypes[2]:
            with b.if_then(small_gemm_applies(b, m, n, k)):        # blas_small.py: registers, no ?gemm call
                b.call(small_gemm(ctx.module, dtypes[2]), [a.ptr, m, k, a.rs, a.cs, b_.ptr, n, b_.rs, b_.cs, c.ptr,
                                                           c.rs])
                b.ret_void()
        if gemm is None:
            b.call(loop, fn.args)
        else:
            la, lb = blas_layout(ctx, a), blas_layout(ctx, b_)
            ok = b.and_(b.or_(la[0], la[2]), b.or_(lb[0], lb[2]))
            small = b.icmp_signed("<", b.mul(b.mul(m, n), k), I64(BLAS_MIN_FLOPS))
            fits = ir.Constant(I1, 1)
            for v in (m, n, k, la[1], la[3], lb[1], lb[3]):
                fits = b.and_(fits, b.icmp_signed("<=", v, I64(_INT32_MAX)))
            use = b.and_(b.and_(ok, fits), b.not_(small))
            use = b.and_(use, b.icmp_signed(">", k, I64(0)))
            with b.if_else(use, likely=True) as (then, other):
                with then:
                    call_gemm(ctx, gemm, a, b_, c, m, n, k, la, lb)
                with other:
                    b.call(loop, fn.args)
    b.ret_void()


def _build_loop(fn: ir.Function, dtypes: tuple[str, str, str]) -> None:
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    a, b_, c = _mats(fn.args, dtypes)
    if dtypes[0] == dtypes[1] == dtypes[2] and np.dtype(dtypes[2]).kind == "f":
        _unit_stride_paths(ctx, a, b_, c)
    else:
        _native(ctx, a, b_, c, a.rows, b_.cols, a.cols)
    ctx.builder.ret_void()


def _unit_stride_paths(ctx: LowerContext, a: Mat, b_: Mat, c: Mat) -> None:
    """Small float products (matrix-vector ones in loops: a scan step's W @ h) on unit-stride operands, in loops
    LLVM vectorises: row dot products, column axpys, or the (i, p, j) order over contiguous rows; else _native."""
    b = ctx.builder
    unit = I64(L.itemsize(c.dtype))
    m, n, k = a.rows, b_.cols, a.cols
    is_unit = lambda v: b.icmp_signed("==", v, unit)  # noqa: E731
    vec = b.icmp_signed("==", n, I64(1))
    dots = b.and_(vec, b.and_(is_unit(a.cs), is_unit(b_.rs)))
    axpy = b.and_(vec, b.and_(is_unit(a.rs), is_unit(c.rs)))
    rows = b.and_(is_unit(b_.cs), is_unit(c.cs))
    ty = L.llvm_scalar_type(c.dtype).as_pointer()
    typed = lambda p: b.bitcast(p, ty)  # noqa: E731
    zero = ir.Constant(compute_type(c.dtype), 0.0)
    with b.if_else(dots) as (then, other):
        with then:
            bp = typed(b_.ptr)
            with ctx.for_range(m, name="dot.i") as i:
                ap = typed(advance(ctx, a.ptr, i, a.rs))
                acc = ctx.alloca(zero.type, name="dot.acc")
                b.store(zero, acc)
                with ctx.for_range(k, name="dot.p") as p:
                    prod = b.fmul(b.load(b.gep(ap, [p])), b.load(b.gep(bp, [p])))
                    b.store(fast(b, "fadd", b.load(acc), prod), acc)
                b.store(b.load(acc), typed(advance(ctx, c.ptr, i, c.rs)))
        with other:
            with b.if_else(axpy) as (then2, other2):
                with then2:
                    cp = typed(c.ptr)
                    with ctx.for_range(m, name="axpy.z") as i:
                        b.store(zero, b.gep(cp, [i]))
                    with ctx.for_range(k, name="axpy.p") as p:
                        bv = b.load(typed(advance(ctx, b_.ptr, p, b_.rs)))
                        ap = typed(advance(ctx, a.ptr, p, a.cs))
                        with ctx.for_range(m, name="axpy.i") as i:
                            cell = b.gep(cp, [i])
                            b.store(b.fadd(b.load(cell), b.fmul(b.load(b.gep(ap, [i])), bv)), cell)
                with other2:
                    with b.if_else(rows) as (then3, other3):
                        with then3:
                            _row_order(ctx, a, b_, c, typed, zero)
                        with other3:
                            _native(ctx, a, b_, c, m, n, k)


def _row_order(ctx: LowerContext, a: Mat, b_: Mat, c: Mat, typed, zero: ir.Constant) -> None:
    """C = A @ B in the (i, p, j) order with unit-stride rows of B and C (the j loop vectorises)."""
    b = ctx.builder
    m, n, k = a.rows, b_.cols, a.cols
    with ctx.for_range(m, name="rows.i") as i:
        crow = typed(advance(ctx, c.ptr, i, c.rs))
        with ctx.for_range(n, name="rows.z") as j:
            b.store(zero, b.gep(crow, [j]))
        arow = advance(ctx, a.ptr, i, a.rs)
        with ctx.for_range(k, name="rows.p") as p:
            av = b.load(typed(advance(ctx, arow, p, a.cs)))
            brow = typed(advance(ctx, b_.ptr, p, b_.rs))
            with ctx.for_range(n, name="rows.j") as j:
                cell = b.gep(crow, [j])
                b.store(b.fadd(b.load(cell), b.fmul(av, b.load(b.gep(brow, [j])))), cell)


# ---------------------------------------------------------------- Dot

def _as_mat(ctx: LowerContext, arr: ir.Value, ndim: int, dtype: str, vector_as_row: bool) -> Mat:
    """A 1-d or 2-d array struct as a matrix (a vector is 1 x k or k x 1)."""
    ptr = byte_ptr(ctx, arr)
    if ndim == 2:
        return Mat(ptr, ctx.shape(arr, 0), ctx.shape(arr, 1), ctx.stride(arr, 0), ctx.stride(arr, 1), dtype)
    n, s = ctx.shape(arr, 0), ctx.stride(arr, 0)
    if vector_as_row:
        return Mat(ptr, I64(1), n, I64(0), s, dtype)
    return Mat(ptr, n, I64(1), s, I64(0), dtype)


def _out_mat(ctx: LowerContext, out: ir.Value, m: ir.Value, n: ir.Value, dtype: str) -> Mat:
    isz = I64(L.itemsize(dtype))
    return Mat(byte_ptr(ctx, out), m, n, ctx.builder.mul(n, isz), isz, dtype)


def _check_inner(ctx: GraphContext, node: Apply, a: Mat, b_: Mat, what: str) -> None:
    ctx.raise_if(ctx.builder.icmp_signed("!=", a.cols, b_.rows), node, "ValueError",
                 f"{node.op}: {what}: a is (%lld, %lld) but b has %lld rows (shapes not aligned)",
                 [a.rows, a.cols, b_.rows])


@lowerings.register(Dot, applies=can_lower_product, complex=True)
def lower_dot(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy.dot of 1-d/2-d operands."""
    x, y = inputs
    (vx, vy), dtype = node.inputs, node.outputs[0].type.dtype
    a = _as_mat(ctx, x, vx.type.ndim, vx.type.dtype, True)
    b_ = _as_mat(ctx, y, vy.type.ndim, vy.type.dtype, False)
    _check_inner(ctx, node, a, b_, "cannot multiply")
    if vx.type.ndim == vy.type.ndim == 1 and np.dtype(dtype).kind in "biuf":
        return [_vector_dot(ctx, node, x, y, a.cols)]
    shape = ([a.rows] if vx.type.ndim == 2 else []) + ([b_.cols] if vy.type.ndim == 2 else [])
    out = ctx.allocate(node, 0, shape)
    emit_matprod(ctx, a, b_, _out_mat(ctx, out, a.rows, b_.cols, dtype))
    return [out]


def _vector_dot(ctx: GraphContext, node: Apply, x: ir.Value, y: ir.Value, n: ir.Value) -> ir.Value:
    """The dot of two vectors as one fused multiply-and-sum reduction (vectorised, several memory streams,
    a strided path for other layouts), not a 1 x n by n x 1 gemm: OpenBLAS packs both operands for that, about
    25x slower than numpy's ddot at 1e6 elements.  Integer and bool vectors are numpy's too (bool: any(x & y))."""
    (vx, vy), dtype = node.inputs, node.outputs[0].type.dtype
    kind = np.dtype(dtype).kind

    def compute(kctx: LowerContext, values: list) -> ir.Value:
        b = kctx.builder
        p, q = (cast_value(b, v, t, dtype) for v, t in zip(values, (vx.type.dtype, vy.type.dtype)))
        return b.fmul(p, q) if kind == "f" else b.and_(p, q) if kind == "b" else b.mul(p, q)

    compute.key = ("dot", vx.type.dtype, vy.type.dtype, dtype)  # type: ignore[attr-defined]
    operands = [Operand(vx.type.dtype, vx.type.shape, struct=x), Operand(vy.type.dtype, vy.type.shape, struct=y)]
    out = ctx.allocate(node, 0, [])
    emit_reduction(ctx, ctx.name(node, "dot"), operands, compute, Reduce(smath.add, (0,), dtype, dtype, dtype, node),
                   out, [n], node)
    return out


# ---------------------------------------------------------------- Matmul

def _batch_plan(ctx: GraphContext, node: Apply, x: ir.Value, y: ir.Value, nb: int) -> tuple[list, list, list]:
    """Out batch lengths and the operands' batch strides (0 where broadcast); ValueError on a clash."""
    b = ctx.builder
    (vx, vy) = node.inputs
    bx, by = max(vx.type.ndim - 2, 0), max(vy.type.ndim - 2, 0)
    lengths, sx, sy = [], [], []
    for d in range(nb):
        dx, dy = d - (nb - bx), d - (nb - by)
        lx = ctx.shape(x, dx) if dx >= 0 else I64(1)
        ly = ctx.shape(y, dy) if dy >= 0 else I64(1)
        bad = b.and_(b.icmp_signed("!=", lx, ly),
                     b.and_(b.icmp_signed("!=", lx, I64(1)), b.icmp_signed("!=", ly, I64(1))))
        ctx.raise_if(bad, node, "ValueError", f"{node.op}: batch dimensions do not broadcast: "
                     "lengths %lld and %lld in batch dimension %lld", [lx, ly, I64(d)])
        lengths.append(b.select(b.icmp_signed("!=", lx, I64(1)), lx, ly))
        sx.append(b.select(b.icmp_signed("==", lx, I64(1)), I64(0), ctx.stride(x, dx)) if dx >= 0 else I64(0))
        sy.append(b.select(b.icmp_signed("==", ly, I64(1)), I64(0), ctx.stride(y, dy)) if dy >= 0 else I64(0))
    return lengths, sx, sy


def _core_mat(ctx: LowerContext, arr: ir.Value, ndim: int, dtype: str, ptr: ir.Value, is_left: bool) -> Mat:
    """The last two dims of arr (a 1-d operand promoted as numpy.matmul does) at ptr."""
    if ndim == 1:
        m = _as_mat(ctx, arr, 1, dtype, is_left)
        return Mat(ptr, m.rows, m.cols, m.rs, m.cs, dtype)
    r, c = ndim - 2, ndim - 1
    return Mat(ptr, ctx.shape(arr, r), ctx.shape(arr, c), ctx.stride(arr, r), ctx.stride(arr, c), dtype)


@lowerings.register(Matmul, applies=can_lower_product, complex=True)
def lower_matmul(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy.matmul: a matrix product per batch index, batch dimensions broadcast."""
    x, y = inputs
    (vx, vy), vo = node.inputs, node.outputs[0]
    dtype, nx, ny = vo.type.dtype, vx.type.ndim, vy.type.ndim
    tail = (1 if nx > 1 else 0) + (1 if ny > 1 else 0)
    nb = vo.type.ndim - tail
    lengths, sx, sy = _batch_plan(ctx, node, x, y, nb)
    a0 = _core_mat(ctx, x, nx, vx.type.dtype, byte_ptr(ctx, x), True)
    b0 = _core_mat(ctx, y, ny, vy.type.dtype, byte_ptr(ctx, y), False)
    _check_inner(ctx, node, a0, b0, "core dimensions do not match")
    shape = lengths + ([a0.rows] if nx > 1 else []) + ([b0.cols] if ny > 1 else [])
    out = ctx.allocate(node, 0, shape)
    so = strides_of(ctx, out, vo.type.ndim)[:nb]
    with nest(ctx, lengths, [a0.ptr, b0.ptr, byte_ptr(ctx, out)], [sx, sy, so], name="batch") as ptrs:
        a = Mat(ptrs[0], a0.rows, a0.cols, a0.rs, a0.cs, a0.dtype)
        b_ = Mat(ptrs[1], b0.rows, b0.cols, b0.rs, b0.cs, b0.dtype)
        c = _out_mat(ctx, out, a0.rows, b0.cols, dtype)
        emit_matprod(ctx, a, b_, Mat(ptrs[2], c.rows, c.cols, c.rs, c.cs, dtype))
    return [out]


# ---------------------------------------------------------------- TensorDot

@lowerings.register(TensorDot, applies=can_lower_product, complex=True)
def lower_tensordot(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy.tensordot by loop nests: free axes of a, free axes of b, then the summed axes."""
    b = ctx.builder
    x, y = inputs
    (vx, vy), dtype = node.inputs, node.outputs[0].type.dtype
    ax, ay = node.op.axes
    for i, j in zip(ax, ay):
        lx, ly = ctx.shape(x, i), ctx.shape(y, j)
        ctx.raise_if(b.icmp_signed("!=", lx, ly), node, "ValueError",
                     f"{node.op}: summed axes differ in length: %lld (axis {i} of a) and %lld (axis {j} of b)",
                     [lx, ly])
    fx = [d for d in range(vx.type.ndim) if d not in ax]
    fy = [d for d in range(vy.type.ndim) if d not in ay]
    out = ctx.allocate(node, 0, [ctx.shape(x, d) for d in fx] + [ctx.shape(y, d) for d in fy])
    sx, sy = strides_of(ctx, x, vx.type.ndim), strides_of(ctx, y, vy.type.ndim)
    so = strides_of(ctx, out, len(fx) + len(fy))
    ty = compute_type(dtype)
    acc = ctx.alloca(ty, name=ctx.name(node, "acc"))
    zero = zero_value(dtype)
    with nest(ctx, [ctx.shape(x, d) for d in fx], [byte_ptr(ctx, x), byte_ptr(ctx, out)],
              [[sx[d] for d in fx], so[:len(fx)]], name="tdx") as (xp, op):
        with nest(ctx, [ctx.shape(y, d) for d in fy], [byte_ptr(ctx, y), op],
                  [[sy[d] for d in fy], so[len(fx):]], name="tdy") as (yp, cp):
            b.store(zero, acc)
            with nest(ctx, [ctx.shape(x, d) for d in ax], [xp, yp], [[sx[d] for d in ax], [sy[d] for d in ay]],
                      name="tds") as (p, q):
                xv, yv = load_as(ctx, p, vx.type.dtype, dtype), load_as(ctx, q, vy.type.dtype, dtype)
                b.store(_combine(b, dtype, b.load(acc), xv, yv), acc)
            store_as(ctx, cp, b.load(acc), dtype)
    return [out]
