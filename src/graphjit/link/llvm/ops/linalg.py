"""Lowerings of graphjit.tensor.linalg: LAPACK through scipy's cython_lapack pointers (jit/lapack_library.py),
one kernel call per matrix of the (broadcast) batch, workspaces planned as cached temporaries.

LAPACK's info becomes numpy's LinAlgError (singular matrix, not positive definite, no convergence) through
the entry's error record, worded in Python with the op and the user's line; an op built with on_error='nan'
gets NaN results for that matrix instead.  float32, float64, complex64 and complex128 (the c/z routines; the
complex-only kernels are in linalg_complex.py); other dtypes never reach these ops (the tensor layer casts
to float64), except ExtractDiag and AllocDiag, which only move elements (any real dtype).
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.linalg import (AllocDiag, Cholesky, ChoSolve, CholInvDiag, Det, Eigh, EighGeneral, ExtractDiag,
                                    Inv, LU, LUFactor, LUSolve, QR, SlogDet, Solve, SolveTriangular, SVD)

from graphjit.link.llvm.ir.casts import compute_type
from graphjit.link.llvm.ir.layouts import I8P, I64
from graphjit.link.llvm.loops.rows import byte_ptr, load_as, nest, store_as
from graphjit.link.llvm.ops import linalg_complex as C, linalg_routines as R
from graphjit.link.llvm.ops.linalg_small import padded_groups, trsm_padded_cols
from graphjit.link.llvm.ops.shape import allocate_temp
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext


_LAPACK_DTYPES = ("float32", "float64", "complex64", "complex128")


def _float(node: Apply) -> bool:
    """float32/float64/complex64/complex128 matrices (integer pivots aside; float16 keeps perform)."""
    return all(v.type.dtype in _LAPACK_DTYPES for v in node.inputs + node.outputs
               if v.type.dtype not in ("int32", "int64"))


def _real_float(node: Apply) -> bool:
    """float32/float64 factors only (CholInvDiag serves the real Cholesky gradients)."""
    return _float(node) and not any(v.type.dtype.startswith("complex") for v in node.inputs + node.outputs)


def _rwork(ctx: GraphContext, node: Apply, dtype: str, size: ir.Value) -> ir.Value:
    """The complex drivers' real workspace of size elements (a null pointer for a real dtype)."""
    if not dtype.startswith("complex"):
        return ir.Constant(I8P, None)
    return _scratch(ctx, node, "float32" if dtype == "complex64" else "float64", [size], "rwork")


def _real(node: Apply) -> bool:
    """Every real dtype (ExtractDiag and AllocDiag only move elements: numpy.diagonal of any array)."""
    return all(np.dtype(v.type.dtype).kind in "biuf" and v.type.dtype != "float16"
               for v in node.inputs + node.outputs)


def _batch_shape(ctx: GraphContext, node: Apply, ops: Sequence[tuple[ir.Value, int, int]]) -> list:
    """The broadcast batch lengths of operands (struct, ndim, core ndim); ValueError if they clash."""
    b = ctx.builder
    nb = max(nd - core for _, nd, core in ops)
    out = []
    for j in range(nb):
        length = None
        for s, nd, core in ops:
            d = j - (nb - (nd - core))
            if d < 0:
                continue
            n = ctx.shape(s, d)
            if length is None:
                length = n
                continue
            bad = b.and_(b.icmp_signed("!=", n, length),
                         b.and_(b.icmp_signed("!=", n, I64(1)), b.icmp_signed("!=", length, I64(1))))
            ctx.raise_if(bad, node, "ValueError", f"{node.op}: batch dimensions cannot be broadcast together "
                         "(lengths %lld and %lld in batch dimension %lld)", [length, n, I64(j)])
            length = b.select(b.icmp_signed("==", length, I64(1)), n, length)
        out.append(length)
    return out


@contextlib.contextmanager
def _each(ctx: GraphContext, batch: list, ops: Sequence[tuple[ir.Value, int, int]]) -> Iterator[list]:
    """Loop over the batch; yields each operand's byte pointer (broadcast dims stay put)."""
    b = ctx.builder
    nb = len(batch)
    strides = []
    for s, nd, core in ops:
        row = []
        for j in range(nb):
            d = j - (nb - (nd - core))
            if d < 0:
                row.append(I64(0))
            else:
                row.append(b.select(b.icmp_signed("==", ctx.shape(s, d), I64(1)), I64(0), ctx.stride(s, d)))
        strides.append(row)
    with nest(ctx, batch, [byte_ptr(ctx, s) for s, _, _ in ops], strides, name="la") as ptrs:
        yield ptrs


def _square(ctx: GraphContext, node: Apply, a: ir.Value, nd: int, what: str = "a") -> ir.Value:
    n, m = ctx.shape(a, nd - 2), ctx.shape(a, nd - 1)
    ctx.raise_if(ctx.builder.icmp_signed("!=", n, m), node, "LinAlgError",
                 f"{node.op}: last 2 dimensions of {what} must be square (got %lld x %lld)", [n, m])
    return n


def _mat(ctx: GraphContext, a: ir.Value, nd: int) -> list:
    return [ctx.stride(a, nd - 2), ctx.stride(a, nd - 1)]


def _check(ctx: GraphContext, node: Apply, info: ir.Value, text: str, nan: bool) -> None:
    """LAPACK's info: > 0 is text's LinAlgError (unless nan), < 0 an internal error."""
    b = ctx.builder
    info = b.sext(info, I64)
    if not nan:
        ctx.raise_if(b.icmp_signed(">", info, I64(0)), node, "LinAlgError", f"{node.op}: {text}", [info, info])
    ctx.raise_if(b.icmp_signed("<", info, I64(0)), node, "RuntimeError",
                 f"{node.op}: LAPACK rejected argument %lld (a graphjit bug)", [b.neg(info)])


def _scratch(ctx: GraphContext, node: Apply, dtype: str, shape: list, what: str) -> ir.Value:
    return byte_ptr(ctx, allocate_temp(ctx, node, dtype, shape, what))


@lowerings.register(Cholesky, applies=_float, complex=True)
def lower_cholesky(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?potrf per matrix into the output (the other triangle zeroed)."""
    (a,), op = inputs, node.op
    nd, dtype = node.inputs[0].ndim, node.outputs[0].type.dtype
    n = _square(ctx, node, a, nd)
    batch = [ctx.shape(a, d) for d in range(nd - 2)]
    out = ctx.allocate(node, 0, batch + [n, n])
    fn = R.potrf(ctx.module, dtype, op.lower_tri, op.on_error == "nan")
    rs, cs = _mat(ctx, a, nd)
    if not op.lower_tri:
        rs, cs = cs, rs        # U = (cholesky of the lower triangle)^T: factor a^T's upper one, read transposed
    scratch = _scratch(ctx, node, dtype, [n, padded_groups(ctx.builder, n)], "scratch")   # linalg_small.py
    with _each(ctx, batch, [(a, nd, 2), (out, nd, 2)]) as (pa, po):
        info = ctx.builder.call(fn, [pa, rs, cs, po, n, scratch])
        _check(ctx, node, info, "matrix is not positive definite (leading minor of order %lld)",
               op.on_error == "nan")
    return [out]


def _solve_common(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> tuple:
    """(a, b structs, ndims, n, k, batch, out, b's strides) of a solve node."""
    a, bb = inputs[0], inputs[-1]
    nda, ndb, op = node.inputs[0].ndim, node.inputs[-1].ndim, node.op
    n = _square(ctx, node, a, nda)
    kb = ctx.shape(bb, ndb - op.b_ndim)
    ctx.raise_if(ctx.builder.icmp_signed("!=", kb, n), node, "ValueError",
                 f"{op}: a has %lld rows but b has %lld", [n, kb])
    k = I64(1) if op.b_ndim == 1 else ctx.shape(bb, ndb - 1)
    batch = _batch_shape(ctx, node, [(a, nda, 2), (bb, ndb, op.b_ndim)])
    out = ctx.allocate(node, 0, batch + ([n] if op.b_ndim == 1 else [n, k]))
    bst = [ctx.stride(bb, ndb - 1), I64(0)] if op.b_ndim == 1 else _mat(ctx, bb, ndb)
    return a, bb, nda, ndb, n, k, batch, out, bst


def _lower_trsm(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], calls: tuple, unit: bool,
                check: bool, nan: bool) -> list:
    a, bb, nda, ndb, n, k, batch, out, bst = _solve_common(ctx, node, inputs)
    op, dtype = node.op, node.outputs[0].type.dtype
    # a^T (a_layout) or the small kernel's padded right-hand sides (linalg_small.small_trsm_kernel)
    kp = trsm_padded_cols(ctx.builder, k)
    scratch = _scratch(ctx, node, dtype, [n, ctx.builder.select(ctx.builder.icmp_signed("<", kp, n), n, kp)],
                       "scratch")
    fn = R.trsm(ctx.module, dtype, op.lower_tri, calls, unit, check, nan)
    with _each(ctx, batch, [(a, nda, 2), (bb, ndb, op.b_ndim), (out, len(batch) + op.b_ndim, op.b_ndim)]) as p:
        info = ctx.builder.call(fn, [p[0], *_mat(ctx, a, nda), p[1], *bst, p[2], n, k, scratch])
        _check(ctx, node, info, "singular matrix (a zero on the diagonal, row %lld)", nan)
    return [out]


@lowerings.register(SolveTriangular, applies=_float, complex=True)
def lower_solve_triangular(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?trsm from the right on the row-major right-hand side (a zero diagonal is LinAlgError, as scipy)."""
    op = node.op
    return _lower_trsm(ctx, node, inputs, (op.trans,), op.unit_diagonal, not op.unit_diagonal,
                       op.on_error == "nan")


@lowerings.register(ChoSolve, applies=_float, complex=True)
def lower_cho_solve(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Two ?trsm: c^-1 then c^-H (lower), or c^-H then c^-1 (upper); c^-H is c^-T for a real c."""
    calls = (0, 2) if node.op.lower_tri else (2, 0)
    return _lower_trsm(ctx, node, inputs, calls, False, False, False)


@lowerings.register(Solve, applies=_float, complex=True)
def lower_solve(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?getrf + ?getrs ('gen', 'sym' folded from the upper or lower triangle) or ?potrf + ?potrs ('pos')."""
    a, bb, nda, ndb, n, k, batch, out, bst = _solve_common(ctx, node, inputs)
    op, dtype = node.op, node.outputs[0].type.dtype
    nan = op.on_error == "nan"
    sa = _scratch(ctx, node, dtype, [n, n], "factor")
    ipiv = _scratch(ctx, node, "int32", [n], "ipiv")
    sb = _scratch(ctx, node, dtype, [k, n], "rhs") if op.b_ndim == 2 else ir.Constant(I8P, None)
    fn = R.solve(ctx.module, dtype, op.assume_a, op.b_ndim == 1, nan, op.lower_tri)
    if batch and op.assume_a == "gen":
        ctx.hot_glue = True     # a loop of small solves (linalg_small.py): its glue gets O3, twice as fast
    text = ("matrix is not positive definite (leading minor of order %lld)" if op.assume_a == "pos"
            else "singular matrix (U[%lld, %lld] is zero, counting from 1)")
    with _each(ctx, batch, [(a, nda, 2), (bb, ndb, op.b_ndim), (out, len(batch) + op.b_ndim, op.b_ndim)]) as p:
        info = ctx.builder.call(fn, [p[0], *_mat(ctx, a, nda), p[1], *bst, p[2], n, k, sa, ipiv, sb])
        _check(ctx, node, info, text, nan)
    return [out]


@lowerings.register(Inv, applies=_float, complex=True)
def lower_inv(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?getrf + ?getri in the output (a workspace of 64 n elements)."""
    (a,), op = inputs, node.op
    nd, dtype = node.inputs[0].ndim, node.outputs[0].type.dtype
    b = ctx.builder
    n = _square(ctx, node, a, nd)
    batch = [ctx.shape(a, d) for d in range(nd - 2)]
    out = ctx.allocate(node, 0, batch + [n, n])
    ipiv = _scratch(ctx, node, "int32", [n], "ipiv")
    lwork = b.select(b.icmp_signed("<", n, I64(1)), I64(1), b.mul(n, I64(64)))
    work = _scratch(ctx, node, dtype, [lwork], "work")
    fn = R.inv(ctx.module, dtype, op.on_error == "nan")
    with _each(ctx, batch, [(a, nd, 2), (out, nd, 2)]) as (pa, po):
        info = b.call(fn, [pa, *_mat(ctx, a, nd), po, n, ipiv, work, lwork])
        _check(ctx, node, info, "singular matrix (U[%lld, %lld] is zero, counting from 1)", op.on_error == "nan")
    return [out]


def _lower_det(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], log: bool) -> list:
    (a,) = inputs
    nd, dtype = node.inputs[0].ndim, node.inputs[0].type.dtype
    n = _square(ctx, node, a, nd)
    batch = [ctx.shape(a, d) for d in range(nd - 2)]
    outs = [ctx.allocate(node, i, batch) for i in range(len(node.outputs))]
    sa = _scratch(ctx, node, dtype, [n, n], "factor")
    ipiv = _scratch(ctx, node, "int32", [n], "ipiv")
    fn = R.det(ctx.module, dtype, log)
    with _each(ctx, batch, [(a, nd, 2)] + [(o, nd - 2, 0) for o in outs]) as p:
        second = p[2] if log else ir.Constant(I8P, None)
        ctx.builder.call(fn, [p[0], *_mat(ctx, a, nd), n, sa, ipiv, p[1], second])
    return outs


@lowerings.register(Det, applies=_float, complex=True)
def lower_det(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?getrf, then the product of U's diagonal with the permutation's sign (0 when singular)."""
    return _lower_det(ctx, node, inputs, False)


@lowerings.register(SlogDet, applies=_float, complex=True)
def lower_slogdet(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?getrf, then the sign and the sum of log|U_ii| ((0, -inf) when singular)."""
    return _lower_det(ctx, node, inputs, True)


def _eigen_outputs(ctx: GraphContext, node: Apply, batch: list, n: ir.Value) -> tuple:
    """The eigenvalue (batch + [n]) and eigenvector (batch + [n, n]) outputs of an eigen node."""
    return ctx.allocate(node, 0, batch + [n]), ctx.allocate(node, 1, batch + [n, n])


def _heevd_rwork(ctx: GraphContext, node: Apply, dtype: str, n: ir.Value) -> list:
    """[rwork, lrwork] of ?heevd / ?hegvd (1 + 5n + 2n^2 reals; their work needs 2n + n^2, less than
    ?syevd's), or [] for a real dtype."""
    if not dtype.startswith("complex"):
        return []
    b = ctx.builder
    lrwork = b.add(b.add(I64(1), b.mul(n, I64(5))), b.mul(I64(2), b.mul(n, n)))
    return [_rwork(ctx, node, dtype, lrwork), lrwork]


def _syevd_workspaces(ctx: GraphContext, node: Apply, dtype: str, n: ir.Value) -> tuple:
    """(work, lwork, iwork, liwork): ?syevd's (and ?sygvd's) documented workspace sizes, as planned scratch."""
    b = ctx.builder
    lwork = b.add(b.add(I64(1), b.mul(n, I64(6))), b.mul(I64(2), b.mul(n, n)))
    liwork = b.add(I64(3), b.mul(n, I64(5)))
    return (_scratch(ctx, node, dtype, [lwork], "work"), lwork, _scratch(ctx, node, "int32", [liwork], "iwork"),
            liwork)


@lowerings.register(Eigh, applies=_float, complex=True)
def lower_eigh(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?syevd (divide and conquer, as numpy) with its documented workspaces; ?heevd for a complex a."""
    (a,), op = inputs, node.op
    nd, dtype = node.inputs[0].ndim, node.inputs[0].type.dtype
    b = ctx.builder
    n = _square(ctx, node, a, nd)
    batch = [ctx.shape(a, d) for d in range(nd - 2)]
    w, v = _eigen_outputs(ctx, node, batch, n)
    sa = _scratch(ctx, node, dtype, [n, n], "factor")
    work, lwork, iwork, liwork = _syevd_workspaces(ctx, node, dtype, n)
    extra = _heevd_rwork(ctx, node, dtype, n)
    fn = (C.heevd if extra else R.eigh)(ctx.module, dtype, op.UPLO == "U")
    with _each(ctx, batch, [(a, nd, 2), (w, nd - 1, 1), (v, nd, 2)]) as (pa, pw, pv):
        info = b.call(fn, [pa, *_mat(ctx, a, nd), pw, pv, n, sa, work, lwork, iwork, liwork, *extra])
        _check(ctx, node, info, "eigenvalues did not converge (%lld)", False)
    return [w, v]


@lowerings.register(EighGeneral, applies=_float, complex=True)
def lower_eigh_general(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?sygvd with ?syevd's workspaces; b not positive definite is LinAlgError (numpy's family)."""
    (a, bm), op = inputs, node.op
    nda, ndb, dtype = node.inputs[0].ndim, node.inputs[1].ndim, node.inputs[0].type.dtype
    b = ctx.builder
    n = _square(ctx, node, a, nda)
    nb = _square(ctx, node, bm, ndb, "b")
    ctx.raise_if(b.icmp_signed("!=", n, nb), node, "ValueError", f"{op}: a is %lld x %lld but b %lld x %lld",
                 [n, n, nb, nb])
    batch = _batch_shape(ctx, node, [(a, nda, 2), (bm, ndb, 2)])
    w, v = _eigen_outputs(ctx, node, batch, n)
    sa = _scratch(ctx, node, dtype, [n, n], "factor")
    sb = _scratch(ctx, node, dtype, [n, n], "metric")
    work, lwork, iwork, liwork = _syevd_workspaces(ctx, node, dtype, n)
    extra = _heevd_rwork(ctx, node, dtype, n)
    fn = (C.hegvd if extra else R.eigh_general)(ctx.module, dtype, op.UPLO == "U")
    nd = len(batch) + 2
    with _each(ctx, batch, [(a, nda, 2), (bm, ndb, 2), (w, nd - 1, 1), (v, nd, 2)]) as (pa, pb, pw, pv):
        info = b.sext(b.call(fn, [pa, *_mat(ctx, a, nda), pb, *_mat(ctx, bm, ndb), pw, pv, n, sa, sb, work, lwork,
                                  iwork, liwork, *extra]), I64)
        ctx.raise_if(b.icmp_signed(">", info, n), node, "LinAlgError",
                     f"{op}: b is not positive definite (leading minor of order %lld)", [b.sub(info, n)])
        ctx.raise_if(b.icmp_signed(">", info, I64(0)), node, "LinAlgError",
                     f"{op}: eigenvalues did not converge (%lld)", [info])
        ctx.raise_if(b.icmp_signed("<", info, I64(0)), node, "RuntimeError",
                     f"{op}: LAPACK rejected argument %lld (a graphjit bug)", [b.neg(info)])
    return [w, v]


@lowerings.register(CholInvDiag, applies=_real_float)
def lower_chol_inv_diag(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?trtri, rows scaled by sqrt|w|, ?lauum (twice when w has negative entries), mirrored."""
    l, w = inputs
    nd, dtype = node.inputs[0].ndim, node.outputs[0].type.dtype
    n = _square(ctx, node, l, nd, "L")
    nw = ctx.shape(w, nd - 2)
    ctx.raise_if(ctx.builder.icmp_signed("!=", nw, n), node, "ValueError",
                 f"{node.op}: w has %lld elements for a %lld x %lld factor", [nw, n, n])
    batch = _batch_shape(ctx, node, [(l, nd, 2), (w, nd - 1, 1)])
    out = ctx.allocate(node, 0, batch + [n, n])
    sa = _scratch(ctx, node, dtype, [n, n], "negative")
    fn = R.chol_inv_diag(ctx.module, dtype)
    with _each(ctx, batch, [(l, nd, 2), (w, nd - 1, 1), (out, len(batch) + 2, 2)]) as (pl, pw, po):
        info = ctx.builder.call(fn, [pl, *_mat(ctx, l, nd), pw, ctx.stride(w, nd - 2), po, n, sa])
        _check(ctx, node, info, "singular factor (a zero on the diagonal, row %lld counting from 1)", False)
    return [out]


@lowerings.register(ExtractDiag, applies=_real)
def lower_extract_diag(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A view: the batch strides, then row stride + column stride."""
    (x,) = inputs
    b, nd, dtype = ctx.builder, node.inputs[0].ndim, node.inputs[0].type.dtype
    n, m = ctx.shape(x, nd - 2), ctx.shape(x, nd - 1)
    k = b.select(b.icmp_signed("<", n, m), n, m)
    shape = [ctx.shape(x, d) for d in range(nd - 2)] + [k]
    strides = [ctx.stride(x, d) for d in range(nd - 2)] + [b.add(*_mat(ctx, x, nd))]
    return [ctx.view(x, dtype, shape, strides, ctx.data(x), name=ctx.name(node, "diag"))]


@lowerings.register(AllocDiag, applies=_real)
def lower_alloc_diag(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Zeros with v on the diagonal."""
    v, pn, pm = inputs
    b, nd, dtype = ctx.builder, node.inputs[0].ndim, node.outputs[0].type.dtype
    n, m = ctx.load_element(pn, []), ctx.load_element(pm, [])
    k = ctx.shape(v, nd - 1)
    want = b.select(b.icmp_signed("<", n, m), n, m)
    ctx.raise_if(b.or_(b.icmp_signed("!=", k, want), b.icmp_signed("<", want, I64(0))), node, "ValueError",
                 f"{node.op}: diagonal of length %lld does not fit a %lld x %lld matrix", [k, n, m])
    batch = [ctx.shape(v, d) for d in range(nd - 1)]
    out = ctx.allocate(node, 0, batch + [n, m])
    zero = ir.Constant(compute_type(dtype), 0)
    osh = batch + [n, m]
    ost = [ctx.stride(out, d) for d in range(nd + 1)]
    with nest(ctx, osh, [byte_ptr(ctx, out)], [ost], name="az") as (p,):
        store_as(ctx, p, zero, dtype)
    dst = ost[:-2] + [b.add(ost[-2], ost[-1])]
    with nest(ctx, batch + [k], [byte_ptr(ctx, v), byte_ptr(ctx, out)],
              [[ctx.stride(v, d) for d in range(nd)], dst], name="ad") as (pv, po):
        store_as(ctx, po, load_as(ctx, pv, dtype, dtype), dtype)
    return [out]



@lowerings.register(LUFactor, applies=_float, complex=True)
def lower_lu_factor(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?getrf of a (copied column-major), the factors read back row-major, 0-based int32 pivots."""
    (a,) = inputs
    nd, dtype = node.inputs[0].ndim, node.outputs[0].type.dtype
    n = _square(ctx, node, a, nd)
    batch = [ctx.shape(a, d) for d in range(nd - 2)]
    lu = ctx.allocate(node, 0, batch + [n, n])
    piv = ctx.allocate(node, 1, batch + [n])
    sa = _scratch(ctx, node, dtype, [n, n], "factor")
    fn = R.lu_factor(ctx.module, dtype)
    with _each(ctx, batch, [(a, nd, 2), (lu, nd, 2), (piv, nd - 1, 1)]) as (pa, pl, pp):
        ctx.builder.call(fn, [pa, *_mat(ctx, a, nd), pl, pp, n, sa])
    return [lu, piv]


def _float_int32_pivots(node: Apply) -> bool:
    """float32/float64/complex64/complex128 matrices with int32 pivots (lu_factor's)."""
    return _float(node) and node.inputs[1].type.dtype == "int32"


@lowerings.register(LUSolve, applies=_float_int32_pivots, complex=True)
def lower_lu_solve(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?getrs with the factors copied column-major and the pivots made 1-based."""
    lu, piv, bb = inputs
    op, dtype = node.op, node.outputs[0].type.dtype
    ndl, ndb = node.inputs[0].ndim, node.inputs[2].ndim
    n = _square(ctx, node, lu, ndl, "lu")
    np_ = ctx.shape(piv, ndl - 2)
    kb = ctx.shape(bb, ndb - op.b_ndim)
    b = ctx.builder
    ctx.raise_if(b.or_(b.icmp_signed("!=", kb, n), b.icmp_signed("!=", np_, n)), node, "ValueError",
                 f"{op}: lu has %lld rows, piv %lld entries and b %lld rows", [n, np_, kb])
    k = I64(1) if op.b_ndim == 1 else ctx.shape(bb, ndb - 1)
    batch = _batch_shape(ctx, node, [(lu, ndl, 2), (piv, ndl - 1, 1), (bb, ndb, op.b_ndim)])
    out = ctx.allocate(node, 0, batch + ([n] if op.b_ndim == 1 else [n, k]))
    bst = [ctx.stride(bb, ndb - 1), I64(0)] if op.b_ndim == 1 else _mat(ctx, bb, ndb)
    sa = _scratch(ctx, node, dtype, [n, n], "factor")
    ipiv = _scratch(ctx, node, "int32", [n], "ipiv")
    sb = _scratch(ctx, node, dtype, [k, n], "rhs") if op.b_ndim == 2 else ir.Constant(I8P, None)
    fn = R.lu_solve(ctx.module, dtype, op.trans, op.b_ndim == 1)
    ops = [(lu, ndl, 2), (piv, ndl - 1, 1), (bb, ndb, op.b_ndim), (out, len(batch) + op.b_ndim, op.b_ndim)]
    with _each(ctx, batch, ops) as (pl, pp, pb, po):
        b.call(fn, [pl, *_mat(ctx, lu, ndl), pp, ctx.stride(piv, ndl - 2), pb, *bst, po, n, k, sa, ipiv, sb])
    return [out]


def _rect_dims(ctx: GraphContext, a: ir.Value, nd: int) -> tuple:
    """(m, n, min(m, n), max(m, n), batch lengths) of a stack of m x n matrices."""
    b = ctx.builder
    m, n = ctx.shape(a, nd - 2), ctx.shape(a, nd - 1)
    less = b.icmp_signed("<", m, n)
    return m, n, b.select(less, m, n), b.select(less, n, m), [ctx.shape(a, d) for d in range(nd - 2)]


@lowerings.register(SVD, applies=_float, complex=True)
def lower_svd(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?gesdd (divide and conquer, as numpy) with a workspace of its documented size plus blocking room (and
    for a complex a the real rwork: 5 mn^2 + 7 mn covers LAPACK's bound for every jobz)."""
    (a,), op = inputs, node.op
    nd, dtype = node.inputs[0].ndim, node.inputs[0].type.dtype
    b = ctx.builder
    m, n, mn, mx, batch = _rect_dims(ctx, a, nd)
    jobz = "N" if not op.compute_uv else ("A" if op.full_matrices else "S")
    if op.compute_uv:
        cu, cv = (m, n) if op.full_matrices else (mn, mn)
        u = ctx.allocate(node, 0, batch + [m, cu])
        s = ctx.allocate(node, 1, batch + [mn])
        vh = ctx.allocate(node, 2, batch + [cv, n])
    else:
        s = ctx.allocate(node, 0, batch + [mn])
        u = vh = None
    sa = _scratch(ctx, node, dtype, [m, n], "factor")
    lwork = b.add(b.add(b.mul(I64(4), b.mul(mn, mn)), b.mul(I64(8), mn)), b.mul(I64(65), b.add(mx, I64(1))))
    work = _scratch(ctx, node, dtype, [lwork], "work")
    iwork = _scratch(ctx, node, "int32", [b.add(b.mul(I64(8), mn), I64(1))], "iwork")
    lrwork = b.add(b.add(b.mul(I64(5), b.mul(mn, mn)), b.mul(I64(7), mn)),
                   b.add(b.mul(I64(2), b.mul(mx, mn)), I64(1)))
    rwork = _rwork(ctx, node, dtype, lrwork)
    fn = R.svd(ctx.module, dtype, jobz)
    ops = [(a, nd, 2), (s, nd - 1, 1)] + ([(u, nd, 2), (vh, nd, 2)] if op.compute_uv else [])
    null = ir.Constant(I8P, None)
    with _each(ctx, batch, ops) as p:
        pu, pv = (p[2], p[3]) if op.compute_uv else (null, null)
        info = b.call(fn, [p[0], *_mat(ctx, a, nd), p[1], pu, pv, m, n, sa, work, lwork, iwork, rwork])
        _check(ctx, node, info, "SVD did not converge (%lld)", False)
    return [u, s, vh] if op.compute_uv else [s]


@lowerings.register(QR, applies=_float, complex=True)
def lower_qr(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?geqrf and ?orgqr (?ungqr when complex; as numpy), workspaces of 64 (m + n) elements."""
    (a,), op = inputs, node.op
    nd, dtype = node.inputs[0].ndim, node.inputs[0].type.dtype
    b = ctx.builder
    m, n, mn, mx, batch = _rect_dims(ctx, a, nd)
    rows = m if op.mode == "complete" else mn
    if op.mode == "r":
        r = ctx.allocate(node, 0, batch + [rows, n])
        q = None
    else:
        q = ctx.allocate(node, 0, batch + [m, m if op.mode == "complete" else mn])
        r = ctx.allocate(node, 1, batch + [rows, n])
    sa = _scratch(ctx, node, dtype, [m, mx], "factor")
    tau = _scratch(ctx, node, dtype, [b.add(mn, I64(1))], "tau")
    lwork = b.add(b.mul(I64(64), b.add(m, n)), I64(1))
    work = _scratch(ctx, node, dtype, [lwork], "work")
    fn = R.qr(ctx.module, dtype, op.mode)
    ops = [(a, nd, 2), (r, nd, 2)] + ([(q, nd, 2)] if q is not None else [])
    with _each(ctx, batch, ops) as p:
        pq = p[2] if q is not None else ir.Constant(I8P, None)
        info = b.call(fn, [p[0], *_mat(ctx, a, nd), pq, p[1], m, n, sa, tau, work, lwork])
        _check(ctx, node, info, "QR failed (%lld)", False)
    return [r] if q is None else [q, r]


@lowerings.register(LU, applies=_float, complex=True)
def lower_lu(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?getrf of the m x n matrix, then P (from the interchanges), unit-lower L and U written out (permute_l:
    L's rows permuted in place of P; P real for a complex a)."""
    (a,), op = inputs, node.op
    nd, dtype = node.inputs[0].ndim, node.inputs[0].type.dtype
    m, n, mn, mx, batch = _rect_dims(ctx, a, nd)
    shapes = ([] if op.permute_l else [[m, m]]) + [[m, mn], [mn, n]]
    outs = [ctx.allocate(node, i, batch + s) for i, s in enumerate(shapes)]
    sa = _scratch(ctx, node, dtype, [m, n], "factor")
    ipiv = _scratch(ctx, node, "int32", [mn], "ipiv")
    perm = _scratch(ctx, node, "int32", [m], "perm")
    fn = R.lu(ctx.module, dtype, op.permute_l)
    with _each(ctx, batch, [(a, nd, 2)] + [(o, nd, 2) for o in outs]) as ptrs:
        pa, rest = ptrs[0], ptrs[1:]
        pp, pl, pu = ([ir.Constant(I8P, None)] + rest) if op.permute_l else rest
        ctx.builder.call(fn, [pa, *_mat(ctx, a, nd), pp, pl, pu, m, n, sa, ipiv, perm])
    return outs
