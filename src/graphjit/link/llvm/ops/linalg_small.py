"""A general solve of a small system emitted inline (no LAPACK call): LU with partial (row) pivoting, as ?gesv
computes it, on a C-ordered copy of a and the right-hand sides in the output.

For an n x n system with n <= SMALL_SOLVE_MAX the calls into ?getrf/?getrs cost more than the arithmetic (a
3 x 3 batch of 1e5: ~240 ns per system through LAPACK, benchmarks/vectorize.py); the loops here have trip
counts of n and run straight through. A pivot that is exactly zero is LAPACK's info > 0 (singular).
"""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir.context import splat
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import load_as, store_as

from graphjit.link.llvm.ops.linalg_kernels import Kernel

SMALL_SOLVE_MAX = 8


def small_gesv_kernel(module: ir.Module, dtype: str, nan: bool) -> ir.Function:
    """``i32 linalg.small_gesv.<dtype>[.nan](a, ars, acs, bp, brs, bcs, out, n, k, sa)``: a (any strides) copied
    into the scratch sa, b into out, then small_gesv; a function of the kernels module (the O3 pipeline,
    whatever the glue calling it gets)."""
    name = f"linalg.small_gesv.{dtype}{'.nan' if nan else ''}"
    mat = [I8P, I64, I64]
    fn, new = kernel_function(module, name, ir.FunctionType(I32, mat * 2 + [I8P, I64, I64, I8P]))
    if new:
        kk = Kernel(fn, dtype)
        a, ars, acs, bp, brs, bcs, out, n, k, sa = fn.args
        b, isz = kk.builder, kk.isz
        kk.copy(a, ars, acs, sa, b.mul(n, isz), isz, n, n)
        kk.copy(bp, brs, bcs, out, b.mul(k, isz), isz, n, k)
        small_gesv(kk, sa, out, n, k, nan)
    return fn


def small_gesv(kk: Kernel, sa: ir.Value, out: ir.Value, n: ir.Value, k: ir.Value, nan: bool) -> None:
    """Emit: solve sa x = out in place (sa: n x n C order, destroyed; out: n x k C order) and return 0, or
    return the 1-based column of the first zero pivot (out filled with NaN when nan)."""
    b, dt = kk.builder, kk.dtype
    zero = ir.Constant(kk.ty, 0.0)
    get = lambda base, i, j, cols: load_as(kk, kk.at(base, i, j, cols), dt, dt)  # noqa: E731
    put = lambda base, i, j, cols, v: store_as(kk, kk.at(base, i, j, cols), v, dt)  # noqa: E731
    best, where = kk.alloca(kk.ty), kk.alloca(I64)
    with kk.for_range(n, name="lu.c", unroll=False) as c:
        b.store(ir.Constant(kk.ty, -1.0), best)
        b.store(c, where)
        with kk.for_range(n, start=c, name="lu.p", unroll=False) as r:
            v = kk.call_intrinsic("fabs", [get(sa, r, c, n)])
            with b.if_then(b.fcmp_ordered(">", v, b.load(best))):
                b.store(v, best)
                b.store(r, where)
        p = b.load(where)
        pivot = get(sa, p, c, n)
        with kk.early_return(b.fcmp_ordered("==", pivot, zero), b.trunc(b.add(c, I64(1)), I32)):
            if nan:
                kk.fill(out, b.mul(n, k), float("nan"))
        with b.if_then(b.icmp_signed("!=", p, c)):
            _swap_rows(kk, sa, c, p, n)
            _swap_rows(kk, out, c, p, k)
        with kk.for_range(n, start=b.add(c, I64(1)), name="lu.r", unroll=False) as r:
            factor = b.fdiv(get(sa, r, c, n), pivot)
            with kk.for_range(n, start=b.add(c, I64(1)), name="lu.j", unroll=False) as j:
                put(sa, r, j, n, b.fsub(get(sa, r, j, n), b.fmul(factor, get(sa, c, j, n))))
            with kk.for_range(k, name="lu.b", unroll=False) as j:
                put(out, r, j, k, b.fsub(get(out, r, j, k), b.fmul(factor, get(out, c, j, k))))
    with kk.for_range(n, name="bs.i", unroll=False) as t:
        i = b.sub(b.sub(n, I64(1)), t)
        diag = get(sa, i, i, n)
        with kk.for_range(k, name="bs.j", unroll=False) as j:
            acc = kk.alloca(kk.ty)
            b.store(get(out, i, j, k), acc)
            with kk.for_range(n, start=b.add(i, I64(1)), name="bs.m", unroll=False) as m:
                b.store(b.fsub(b.load(acc), b.fmul(get(sa, i, m, n), get(out, m, j, k))), acc)
            put(out, i, j, k, b.fdiv(b.load(acc), diag))
    b.ret(I32(0))


def _swap_rows(kk: Kernel, base: ir.Value, r1: ir.Value, r2: ir.Value, cols: ir.Value) -> None:
    dt = kk.dtype
    with kk.for_range(cols, name="sw", unroll=False) as j:
        p1, p2 = kk.at(base, r1, j, cols), kk.at(base, r2, j, cols)
        v1, v2 = load_as(kk, p1, dt, dt), load_as(kk, p2, dt, dt)
        store_as(kk, p1, v2, dt)
        store_as(kk, p2, v1, dt)



SMALL_TRSM_MAX = 64     # n (rows of a): a triangular solve up to this size runs small_trsm, not ?trsm
TRSM_LANES = 8          # the vector of one column block: 8 float64 (one AVX-512 register) or 8 float32
TRSM_GROUP = 4          # column blocks solved side by side: independent accumulators keep the FMA units busy


def trsm_padded_cols(b: ir.IRBuilder, k: ir.Value) -> ir.Value:
    """k rounded up to whole column blocks, the row length of small_trsm's scratch: one block when k fits
    (a vector right-hand side), else whole groups of TRSM_GROUP blocks."""
    return b.select(b.icmp_signed("<=", k, I64(TRSM_LANES)), I64(TRSM_LANES), padded_groups(b, k))


def padded_groups(b: ir.IRBuilder, k: ir.Value) -> ir.Value:
    """k rounded up to whole groups of TRSM_GROUP blocks (small_potrf's scratch rows)."""
    width = TRSM_LANES * TRSM_GROUP
    return b.mul(b.sdiv(b.add(k, I64(width - 1)), I64(width)), I64(width))


def small_trsm_kernel(module: ir.Module, dtype: str, lower_m: bool, unit: bool, first: bool) -> ir.Function:
    """``void linalg.small_trsm.<dtype>.<L|U><unit><first>(m, mrs, mcs, bp, brs, bcs, out, n, k, s)``: out
    (n x k, C order) = M^-1 b, M (n x n, byte strides mrs/mcs: a transposed a is a's strides swapped) lower
    (lower_m) or upper triangular with a non-zero (the caller checked) or unit diagonal; b any strides (first),
    else b is out itself (a second solve); s: scratch of n x trsm_padded_cols(k).

    b is copied into s, its rows padded with zeros to whole vectors of TRSM_LANES; each block of row i is then
    one vector accumulating -M[i, j] * (block of row j) over the earlier rows j (in a register), scaled by
    1 / M[i, i] (as OpenBLAS's kernels do) and stored into s and out.  A ?trsm call costs 2-3 us at n = k = 30
    (OpenBLAS's level-3 driver), this well under 1 us.  A function of the kernels module (O3)."""
    name = f"linalg.small_trsm.{dtype}.{'L' if lower_m else 'U'}{int(unit)}{int(first)}"
    fnty = ir.FunctionType(ir.VoidType(), [I8P, I64, I64, I8P, I64, I64, I8P, I64, I64, I8P])
    fn, new = kernel_function(module, name, fnty)
    if not new:
        return fn
    kk = Kernel(fn, dtype)
    m, mrs, mcs, bp, brs, bcs, out, n, k, scratch = fn.args
    for arg in (m, out, scratch) if first else (m, scratch):
        arg.add_attribute("noalias")
    b, dt, ty, lanes = kk.builder, dtype, kk.ty, TRSM_LANES
    kp = trsm_padded_cols(b, k)
    pad = b.bitcast(scratch, ty.as_pointer())
    with kk.for_range(n, name="ts.in") as i:
        src = b.gep(bp, [b.mul(i, brs)])
        dst = b.gep(pad, [b.mul(i, kp)])
        with kk.for_range(k, name="ts.ic") as c:
            b.store(load_as(kk, b.gep(src, [b.mul(c, bcs)]), dt, dt), b.gep(dst, [c]))
        with kk.for_range(kp, start=k, name="ts.iz", vectorize=False) as c:
            b.store(ir.Constant(ty, 0.0), b.gep(dst, [c]))
    with b.if_else(b.icmp_signed("<=", k, I64(lanes))) as (one, many):
        with one:               # one block: two accumulators over alternate rows j halve the FMA chain
            _trsm_rows(kk, m, mrs, mcs, out, n, k, scratch, lower_m, unit, 1, 2)
        with many:
            _trsm_rows(kk, m, mrs, mcs, out, n, k, scratch, lower_m, unit, TRSM_GROUP, 1)
    b.ret_void()
    return fn


def _trsm_rows(kk: Kernel, m: ir.Value, mrs: ir.Value, mcs: ir.Value, out: ir.Value, n: ir.Value, k: ir.Value,
               scratch: ir.Value, lower_m: bool, unit: bool, group: int, chains: int) -> None:
    """small_trsm's solve on the padded scratch, group blocks side by side, each summed in chains
    accumulators over alternate rows j; results into the scratch and out."""
    b, dt, ty, lanes = kk.builder, kk.dtype, kk.ty, TRSM_LANES
    vty = ir.VectorType(ty, lanes)
    blocks = b.sdiv(trsm_padded_cols(b, k), I64(lanes))
    vec, rows = b.bitcast(scratch, vty.as_pointer()), b.bitcast(out, ty.as_pointer())
    accs = [[kk.alloca(vty) for _ in range(group)] for _ in range(chains)]
    zero = ir.Constant(vty, [ir.Constant(ty, 0.0)] * lanes)
    with kk.for_range(n, name="ts.t", unroll=False) as t:
        i = t if lower_m else b.sub(b.sub(n, I64(1)), t)
        mrow = b.gep(m, [b.mul(i, mrs)])
        start, stop = (I64(0), i) if lower_m else (b.add(i, I64(1)), n)
        scale = None if unit else b.fdiv(ir.Constant(ty, 1.0), load_as(kk, b.gep(mrow, [b.mul(i, mcs)]), dt, dt))
        orow = b.gep(rows, [b.mul(i, k)])
        with kk.for_range(b.sdiv(blocks, I64(group)), name="ts.g", unroll=False) as g:
            first_block = b.mul(g, I64(group))
            cell = b.gep(vec, [b.add(b.mul(i, blocks), first_block)])
            for c, chain in enumerate(accs):
                for q, acc in enumerate(chain):
                    b.store(b.load(b.gep(cell, [I64(q)]), align=8) if c == 0 else zero, acc)

            def step(j: ir.Value, chain: list) -> None:
                f = splat(b, b.fneg(load_as(kk, b.gep(mrow, [b.mul(j, mcs)]), dt, dt)), vty.count)
                xs = b.gep(vec, [b.add(b.mul(j, blocks), first_block)])
                for q, acc in enumerate(chain):
                    x = b.load(b.gep(xs, [I64(q)]), align=8)
                    b.store(kk.call_intrinsic("fmuladd", [f, x, b.load(acc)]), acc)
            whole = b.add(start, b.mul(b.sdiv(b.sub(stop, start), I64(chains)), I64(chains)))
            with kk.for_range(whole, start=start, step=I64(chains), name="ts.j", unroll=False) as j:
                for c, chain in enumerate(accs):
                    step(b.add(j, I64(c)), chain)
            with kk.for_range(stop, start=whole, name="ts.r", unroll=False, vectorize=False) as j:
                step(j, accs[0])
            for q in range(group):
                v = b.load(accs[0][q])
                for chain in accs[1:]:
                    v = b.fadd(v, b.load(chain[q]))
                if scale is not None:
                    v = b.fmul(v, splat(b, scale, vty.count))
                b.store(v, b.gep(cell, [I64(q)]), align=8)
                c0 = b.mul(b.add(first_block, I64(q)), I64(lanes))
                target = b.gep(orow, [c0])
                with b.if_else(b.icmp_signed("<=", b.add(c0, I64(lanes)), k), likely=True) as (full, part):
                    with full:
                        b.store(v, b.bitcast(target, vty.as_pointer()), align=8)
                    with part:
                        for lane in range(lanes - 1):
                            with b.if_then(b.icmp_signed("<", b.add(c0, I64(lane)), k)):
                                b.store(b.extract_element(v, I32(lane)), b.gep(target, [I64(lane)]))


SMALL_CHOLESKY_MAX = 64     # n: a Cholesky factorisation up to this size runs small_potrf, not ?potrf


def small_potrf_kernel(module: ir.Module, dtype: str, upper_out: bool) -> ir.Function:
    """``i32 linalg.small_potrf.<dtype>.<L|U>(a, ars, acs, out, n, s)``: the Cholesky factor of a's lower
    triangle (byte strides ars/acs: a^T's strides give the upper one) into out (n x n, C order): L, or L^T
    (upper_out), the other triangle zero; s: scratch of n x padded_groups(n).  Returns 0, or LAPACK's
    info (j + 1 where the leading minor of order j + 1 is not positive definite; out untouched).

    Row j of U = L^T (row-major rows of s, padded with zeros to whole column groups) is a's column j less
    U[p, j] * (row p of U) for every earlier row p, the same register-held vector groups as small_trsm,
    then scaled by 1 / sqrt of its diagonal (LAPACK's ?potf2 order of operations per row).  ~4x faster than
    ?potrf at n = 30; a function of the kernels module (O3)."""
    name = f"linalg.small_potrf.{dtype}.{'U' if upper_out else 'L'}"
    fn, new = kernel_function(module, name, ir.FunctionType(I32, [I8P, I64, I64, I8P, I64, I8P]))
    if not new:
        return fn
    kk = Kernel(fn, dtype)
    a, ars, acs, out, n, scratch = fn.args
    for arg in (a, out, scratch):
        arg.add_attribute("noalias")
    b, dt, ty = kk.builder, dtype, kk.ty
    lanes, zero = TRSM_LANES, ir.Constant(ty, 0.0)
    vty = ir.VectorType(ty, lanes)
    npad = padded_groups(b, n)
    blocks = b.sdiv(npad, I64(lanes))
    groups = b.sdiv(blocks, I64(TRSM_GROUP))
    s, vec = b.bitcast(scratch, ty.as_pointer()), b.bitcast(scratch, vty.as_pointer())
    rows = b.bitcast(out, ty.as_pointer())
    at = lambda i, c: b.gep(s, [b.add(b.mul(i, npad), c)])  # noqa: E731
    with kk.for_range(n, name="pf.in") as j:             # s[j, c] = a[c, j] for c >= j, else 0
        col = b.gep(a, [b.mul(j, acs)])
        with kk.for_range(j, name="pf.iz", vectorize=False) as c:
            b.store(zero, at(j, c))
        with kk.for_range(n, start=j, name="pf.ic") as c:
            b.store(load_as(kk, b.gep(col, [b.mul(c, ars)]), dt, dt), at(j, c))
        with kk.for_range(npad, start=n, name="pf.ip", vectorize=False) as c:
            b.store(zero, at(j, c))
    accs = [kk.alloca(vty) for _ in range(TRSM_GROUP)]
    with kk.for_range(n, name="pf.j", unroll=False) as j:
        first_group = b.sdiv(j, I64(lanes * TRSM_GROUP))
        with kk.for_range(groups, start=first_group, name="pf.g", unroll=False) as g:
            first_block = b.mul(g, I64(TRSM_GROUP))
            cell = b.gep(vec, [b.add(b.mul(j, blocks), first_block)])
            for q, acc in enumerate(accs):
                b.store(b.load(b.gep(cell, [I64(q)]), align=8), acc)
            with kk.for_range(j, name="pf.p", unroll=False) as p:
                f = splat(b, b.fneg(b.load(at(p, j))), vty.count)
                xs = b.gep(vec, [b.add(b.mul(p, blocks), first_block)])
                for q, acc in enumerate(accs):
                    x = b.load(b.gep(xs, [I64(q)]), align=8)
                    b.store(kk.call_intrinsic("fmuladd", [f, x, b.load(acc)]), acc)
            for q, acc in enumerate(accs):
                b.store(b.load(acc), b.gep(cell, [I64(q)]), align=8)
        d = b.load(at(j, j))
        with kk.early_return(b.not_(b.fcmp_ordered(">", d, zero)), b.trunc(b.add(j, I64(1)), I32)):
            pass
        root = kk.call_intrinsic("sqrt", [d])
        inverse = b.fdiv(ir.Constant(ty, 1.0), root)
        with kk.for_range(n, start=b.add(j, I64(1)), name="pf.s") as c:
            p = at(j, c)
            b.store(b.fmul(b.load(p), inverse), p)
        b.store(root, at(j, j))
    with kk.for_range(n, name="pf.oi") as i:              # out[i, c]: U[i, c] (upper) or U[c, i] (lower)
        with kk.for_range(n, name="pf.oc") as c:
            keep = b.icmp_signed(">=" if upper_out else "<=", c, i)
            v = b.load(at(i, c) if upper_out else at(c, i))
            b.store(b.select(keep, v, zero), b.gep(rows, [b.add(b.mul(i, n), c)]))
    b.ret(I32(0))
    return fn
