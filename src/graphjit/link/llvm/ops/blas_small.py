"""A small real matrix product in registers: C (m x n, C order) = A (m x k) @ B (k x n), any strides.

At GP sizes (30 x 30 x 30) a ?gemm call costs ~1.4 us (OpenBLAS's level-3 driver, packing included); the
arithmetic is 27,000 multiply-adds.  Here B is copied into a stack buffer whose rows are padded with zeros to
whole vectors (the small triangular solves' layout, linalg_small.py), and two rows of C at a time are each a
group of vector accumulators (8 lanes, up to 4 blocks) summing A[i, p] * (row p of B) over p: no load or
store of C inside the loop, two independent FMA chains per block.  ~0.4 us at 30 x 30 x 30.
"""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir.casts import compute_type
from graphjit.link.llvm.ir.context import LowerContext, splat
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import load_as
from graphjit.link.llvm.ops.linalg_small import TRSM_GROUP, TRSM_LANES, trsm_padded_cols

SMALL_GEMM_MAX = 64         # m, n and k: a product within this runs small_gemm (B's copy: at most 32 KiB)
_LANES, _GROUP = TRSM_LANES, TRSM_GROUP      # B's padded rows: the small triangular solves' layout


def small_gemm_applies(b: ir.IRBuilder, m: ir.Value, n: ir.Value, k: ir.Value) -> ir.Value:
    """i1: the product fits small_gemm (every length within SMALL_GEMM_MAX, n above 1: a matrix-vector product
    keeps the dot-product loops)."""
    fits = b.icmp_signed(">", n, I64(1))
    for v in (m, n, k):
        fits = b.and_(fits, b.icmp_signed("<=", v, I64(SMALL_GEMM_MAX)))
    return fits


def small_gemm(module: ir.Module, dtype: str) -> ir.Function:
    """``void blas.small_gemm.<dtype>(a, m, k, ars, acs, b, n, brs, bcs, c, crs)`` (byte strides; C's column
    stride is the item size): C = A @ B for float32/float64, lengths within SMALL_GEMM_MAX; a function of the
    kernels module (O3)."""
    fnty = ir.FunctionType(ir.VoidType(), [I8P, I64, I64, I64, I64, I8P, I64, I64, I64, I8P, I64])
    fn, new = kernel_function(module, f"blas.small_gemm.{dtype}", fnty)
    if not new:
        return fn
    a, m, k, ars, acs, bp, n, brs, bcs, c, crs = fn.args
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b, ty = ctx.builder, compute_type(dtype)
    one_block = b.icmp_signed("<=", n, I64(_LANES))
    npad = trsm_padded_cols(b, n)
    buf = b.alloca(ty, size=I64(SMALL_GEMM_MAX * SMALL_GEMM_MAX), name="bpad")
    buf.align = 64
    with ctx.for_range(k, name="sg.bp") as p:
        src, dst = b.gep(bp, [b.mul(p, brs)]), b.gep(buf, [b.mul(p, npad)])
        with ctx.for_range(n, name="sg.bj") as j:
            b.store(load_as(ctx, b.gep(src, [b.mul(j, bcs)]), dtype, dtype), b.gep(dst, [j]))
        with ctx.for_range(npad, start=n, name="sg.bz", vectorize=False) as j:
            b.store(ir.Constant(ty, 0.0), b.gep(dst, [j]))
    with b.if_else(one_block) as (one, many):
        with one:
            _rows(ctx, dtype, a, m, k, ars, acs, buf, npad, n, c, crs, 1)
        with many:
            _rows(ctx, dtype, a, m, k, ars, acs, buf, npad, n, c, crs, _GROUP)
    b.ret_void()
    return fn


def _rows(ctx: LowerContext, dtype: str, a: ir.Value, m: ir.Value, k: ir.Value, ars: ir.Value, acs: ir.Value,
          buf: ir.Value, npad: ir.Value, n: ir.Value, c: ir.Value, crs: ir.Value, group: int) -> None:
    """Rows i and i + 1 of C (the last row twice when m is odd), group blocks of 8 columns at a time."""
    b, ty = ctx.builder, compute_type(dtype)
    vty = ir.VectorType(ty, _LANES)
    vec = b.bitcast(buf, vty.as_pointer())
    blocks = b.sdiv(npad, I64(_LANES))
    zero = ir.Constant(vty, [ir.Constant(ty, 0.0)] * _LANES)
    accs = [[ctx.alloca(vty) for _ in range(group)] for _ in range(2)]
    with ctx.for_range(m, step=I64(2), name="sg.i", unroll=False) as i:
        last = b.sub(m, I64(1))
        rows = [i, b.select(b.icmp_signed("<", i, last), b.add(i, I64(1)), last)]
        arows = [b.gep(a, [b.mul(r, ars)]) for r in rows]
        with ctx.for_range(b.sdiv(blocks, I64(group)), name="sg.g", unroll=False) as g:
            first = b.mul(g, I64(group))
            for chain in accs:
                for acc in chain:
                    b.store(zero, acc)
            with ctx.for_range(k, name="sg.p", unroll=False) as p:
                xs = b.gep(vec, [b.add(b.mul(p, blocks), first)])
                # rows of B's copy start at whole vectors: 64 bytes for float64, 32 for float32
                xv = [b.load(b.gep(xs, [I64(q)]), align=_LANES * (8 if dtype == "float64" else 4))
                      for q in range(group)]
                for arow, chain in zip(arows, accs):
                    f = splat(b, load_as(ctx, b.gep(arow, [b.mul(p, acs)]), dtype, dtype), _LANES)
                    for x, acc in zip(xv, chain):
                        b.store(ctx.call_intrinsic("fmuladd", [f, x, b.load(acc)]), acc)
            for r, chain in zip(rows, accs):
                crow = b.bitcast(b.gep(c, [b.mul(r, crs)]), ty.as_pointer())
                for q, acc in enumerate(chain):
                    _store_block(ctx, b.load(acc), crow, b.mul(b.add(first, I64(q)), I64(_LANES)), n)


def _store_block(ctx: LowerContext, v: ir.Value, row: ir.Value, c0: ir.Value, n: ir.Value) -> None:
    """The block of columns [c0, c0 + 8) of a row, its lanes past n left out."""
    b = ctx.builder
    target = b.gep(row, [c0])
    with b.if_else(b.icmp_signed("<=", b.add(c0, I64(_LANES)), n), likely=True) as (full, part):
        with full:
            b.store(v, b.bitcast(target, v.type.as_pointer()), align=8)
        with part:
            for lane in range(_LANES - 1):
                with b.if_then(b.icmp_signed("<", b.add(c0, I64(lane)), n)):
                    b.store(b.extract_element(v, I32(lane)), b.gep(target, [I64(lane)]))
