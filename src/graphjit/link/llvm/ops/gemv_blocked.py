"""A row-blocked kernel for small Gemv products with unit-stride rows (a loop step's W @ h, H ~ 8-64).

One dot product per row pays a horizontal reduction (a chain of shuffles and adds) and reloads x for every row;
at H = 32 that overhead, not the multiply-adds, bounded a scan step. Here ROWS (8) rows are computed together: one
vector accumulator per row over the vector-wide part of the columns (x loaded once per chunk for all of them),
then the ROWS accumulators are reduced jointly (log2(width) shuffle+add levels for all rows at once, see
_joint_sum), the scalar column tail added per row. Sums are reassociated as in the one-row kernel; the vector
multiply-adds are fused where the target can (as BLAS's ?gemv, which numpy's dot calls, does).
"""

from __future__ import annotations

from typing import Optional, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import branch
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.rows import advance, fast, load_as, store_as

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ops.blas import Mat

ROWS = 8                 # rows per block of the row kernel (a power of two, at most the vector width)
COLUMN_VECTORS = 4       # output vectors per block of the column kernel
VECTOR_BYTES = 64        # one AVX-512 register; LLVM splits it on narrower targets
_I32 = ir.IntType(32)


def blocked_dtype(dtype: str) -> bool:
    """The kernel handles this dtype (real floating point)."""
    return dtype in ("float32", "float64")


def emit_row_blocks(ctx: GraphContext, node: Apply, a: Mat, rs: ir.Value, x: ir.Value, out: ir.Value, so: ir.Value,
                    n_out: ir.Value, y: Optional[tuple], alpha: ir.Value, beta: ir.Value, acc: ir.Value) -> ir.Value:
    """out[i] for i < n_out rounded down to ROWS (unit-stride rows of A and x); returns that row count."""
    b, dtype = ctx.builder, a.dtype
    sty = L.llvm_scalar_type(dtype)
    width = VECTOR_BYTES // L.itemsize(dtype)
    vty = ir.VectorType(sty, width)
    zero = ir.Constant(vty, [ir.Constant(sty, 0.0)] * width)
    blocked = b.mul(b.sdiv(n_out, I64(ROWS)), I64(ROWS))
    wide = b.mul(b.sdiv(a.cols, I64(width)), I64(width))
    accs = [ctx.alloca(vty, name=ctx.name(node, f"gemv.blk{k}")) for k in range(ROWS)]
    xt = b.bitcast(x, sty.as_pointer())
    unit = I64(L.itemsize(dtype))
    # no column tail and unit-stride out (and y): a block's results are stored as one vector, not row by row
    unit_rows = b.and_(b.icmp_signed("==", wide, a.cols), b.icmp_signed("==", so, unit))
    if y is not None:
        unit_rows = b.and_(unit_rows, b.icmp_signed("==", y[1], unit))
    with ctx.for_range(blocked, step=I64(ROWS), name=ctx.name(node, "gemv.rb")) as i0:
        rows = [b.bitcast(advance(ctx, a.ptr, b.add(i0, I64(k)), rs), sty.as_pointer()) for k in range(ROWS)]
        for slot in accs:
            b.store(zero, slot)
        with ctx.for_range(wide, step=I64(width), name=ctx.name(node, "gemv.cb"), vectorize=False) as j:
            xv = _vload(b, b.gep(xt, [j]), vty, dtype)
            for row, slot in zip(rows, accs):
                b.store(muladd(b, _vload(b, b.gep(row, [j]), vty, dtype), xv, b.load(slot)), slot)
        sums = _joint_sum(b, [b.load(slot) for slot in accs], width)

        def per_row() -> None:
            for k, row in enumerate(rows):
                b.store(b.extract_element(sums, ir.Constant(_I32, k)), acc)
                with ctx.for_range(a.cols, start=wide, name=ctx.name(node, "gemv.ct"), vectorize=False) as j:
                    prod = b.fmul(b.load(b.gep(row, [j])), b.load(b.gep(xt, [j])))
                    b.store(fast(b, "fadd", b.load(acc), prod), acc)
                i = b.add(i0, I64(k))
                value = b.fmul(alpha, b.load(acc))
                if y is not None:
                    yv = load_as(ctx, advance(ctx, y[0], i, y[1]), dtype, dtype)
                    value = b.fadd(b.fmul(beta, yv), value)
                store_as(ctx, advance(ctx, out, i, so), value, dtype)

        def whole_block() -> None:         # the same operations, the block's ROWS rows as one short vector
            rty = ir.VectorType(sty, ROWS)
            value = b.fmul(_splat(b, alpha, rty), _shuffle(b, sums, sums, range(ROWS)))
            if y is not None:
                yv = _vload(b, advance(ctx, y[0], i0, y[1]), rty, dtype)
                value = b.fadd(b.fmul(_splat(b, beta, rty), yv), value)
            b.store(value, b.bitcast(advance(ctx, out, i0, so), rty.as_pointer()), align=L.itemsize(dtype))

        branch(b, unit_rows, whole_block, per_row)
    return blocked


def emit_column_blocks(ctx: GraphContext, node: Apply, a: Mat, x: ir.Value, sx: ir.Value, out: ir.Value,
                       n_out: ir.Value, alpha: ir.Value) -> ir.Value:
    """out[i] = sum_j A[i, j] * alpha x[j] for i < n_out rounded down to COLUMN_VECTORS vectors (unit-stride
    columns of A, unit-stride out; the caller adds beta*y); returns that row count.

    COLUMN_VECTORS vector accumulators stay in registers over all columns (the column-at-a-time loop loads and
    stores out once per column). Two sets of them, for the even and the odd columns, summed at the end: one set
    is a chain of dependent multiply-adds, each waiting for the previous one (4 cycles), where the core can start
    two per cycle.
    """
    b, dtype = ctx.builder, a.dtype
    sty = L.llvm_scalar_type(dtype)
    width = VECTOR_BYTES // L.itemsize(dtype)
    vty = ir.VectorType(sty, width)
    zero = ir.Constant(vty, [ir.Constant(sty, 0.0)] * width)
    span = COLUMN_VECTORS * width
    blocked = b.mul(b.sdiv(n_out, I64(span)), I64(span))
    paired = b.and_(a.cols, I64(-2))
    sets = [[ctx.alloca(vty, name=ctx.name(node, f"gemv.cblk{s}.{k}")) for k in range(COLUMN_VECTORS)]
            for s in range(2)]
    ot = b.bitcast(out, sty.as_pointer())

    def column(block: ir.Value, j: ir.Value, accs: list) -> None:
        xv = _splat(b, b.fmul(alpha, load_as(ctx, advance(ctx, x, j, sx), dtype, dtype)), vty)
        col = b.bitcast(advance(ctx, block, j, a.cs), sty.as_pointer())
        for k, slot in enumerate(accs):        # constant offsets from one pointer: few live registers
            part = _vload(b, b.gep(col, [I64(k * width)]), vty, dtype)
            b.store(muladd(b, part, xv, b.load(slot)), slot)

    with ctx.for_range(blocked, step=I64(span), name=ctx.name(node, "gemv.ib")) as i0:
        block = b.bitcast(b.gep(b.bitcast(a.ptr, sty.as_pointer()), [i0]), a.ptr.type)
        for slot in sets[0] + sets[1]:
            b.store(zero, slot)
        with ctx.for_range(paired, step=I64(2), name=ctx.name(node, "gemv.jb"), vectorize=False) as j:
            column(block, j, sets[0])
            column(block, b.add(j, I64(1)), sets[1])
        with ctx.for_range(a.cols, start=paired, name=ctx.name(node, "gemv.jt"), vectorize=False) as j:
            column(block, j, sets[0])
        for k, (even, odd) in enumerate(zip(*sets)):
            cell = b.bitcast(b.gep(ot, [b.add(i0, I64(k * width))]), vty.as_pointer())
            b.store(b.fadd(b.load(even), b.load(odd)), cell, align=L.itemsize(dtype))
    return blocked


def muladd(b: ir.IRBuilder, x: ir.Value, y: ir.Value, acc: ir.Value) -> ir.Value:
    """acc + x*y as one fused multiply-add where the target has one (llvm.fmuladd; else a multiply and an add):
    BLAS's ?gemv, what numpy's dot calls, fuses them too."""
    ty = acc.type
    scalar = ty.element if isinstance(ty, ir.VectorType) else ty
    name = "llvm.fmuladd." + (f"v{ty.count}" if isinstance(ty, ir.VectorType) else "") + \
        ("f64" if isinstance(scalar, ir.DoubleType) else "f32")
    fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(ty, [ty, ty, ty]), name)
    return b.call(fn, [x, y, acc])


def _splat(b: ir.IRBuilder, v: ir.Value, vty: ir.VectorType) -> ir.Value:
    one = b.insert_element(ir.Constant(vty, ir.Undefined), v, ir.Constant(_I32, 0))
    return b.shuffle_vector(one, one, ir.Constant(ir.VectorType(_I32, vty.count), [0] * vty.count))


def _vload(b: ir.IRBuilder, ptr: ir.Value, vty: ir.VectorType, dtype: str) -> ir.Value:
    return b.load(b.bitcast(ptr, vty.as_pointer()), align=L.itemsize(dtype))


def _halves(groups: int, size: int, offset: int) -> tuple[list, list]:
    """Indices of the first and of the second half of each of `groups` groups of `size` lanes."""
    lo = [offset + g * size + i for g in range(groups) for i in range(size // 2)]
    hi = [offset + g * size + size // 2 + i for g in range(groups) for i in range(size // 2)]
    return lo, hi


def _shuffle(b: ir.IRBuilder, v: ir.Value, w: ir.Value, mask: Sequence[int]) -> ir.Value:
    return b.shuffle_vector(v, w, ir.Constant(ir.VectorType(_I32, len(mask)), list(mask)))


def _joint_sum(b: ir.IRBuilder, vecs: list, width: int) -> ir.Value:
    """A vector whose lane k is the sum of vecs[k]'s lanes (len(vecs) a power of two <= width).

    Pairing (v, w) adds each group's halves of both into one vector (v's groups, then w's, half as wide), until
    one vector holds len(vecs) groups; then each group's halves are added within it until one lane per group.
    """
    groups, size = 1, width
    while len(vecs) > 1:
        lo_v, hi_v = _halves(groups, size, 0)
        lo_w, hi_w = _halves(groups, size, width)
        vecs = [fast(b, "fadd", _shuffle(b, v, w, lo_v + lo_w), _shuffle(b, v, w, hi_v + hi_w))
                for v, w in zip(vecs[0::2], vecs[1::2])]
        groups, size = groups * 2, size // 2
    v = vecs[0]
    while size > 1:
        lo, hi = _halves(groups, size, 0)
        v = fast(b, "fadd", _shuffle(b, v, v, lo), _shuffle(b, v, v, hi))
        size //= 2
    return v


__all__ = ["emit_row_blocks", "emit_column_blocks", "blocked_dtype", "muladd", "ROWS", "COLUMN_VECTORS",
           "VECTOR_BYTES"]
