"""Lowering of Eig (numpy.linalg.eig of real matrices): LAPACK's ``?geev`` per matrix of the batch, its real
results assembled into the op's complex eigenvalues and eigenvectors.

``?geev`` returns the eigenvalues as (wr, wi) and the right eigenvectors as real columns: a real eigenvalue's
vector is its column j; a complex pair (wi[j] > 0, then its conjugate at j + 1) shares columns j and j + 1 as
``vr[:, j] ± i vr[:, j + 1]``. The vectors are LAPACK's (unit 2-norm, largest component real), as numpy's.
The workspace is 68n (``?geev`` needs 4n; the rest lets its blocked Hessenberg reduction run at full block
size). An inf or NaN in the matrix is numpy's LinAlgError, before LAPACK runs.  A complex matrix goes
through ``?geev``'s complex form (``cgeev``/``zgeev``): complex eigenvalues straight into the output, complex
eigenvector columns transposed into place, the n-element ``wr`` scratch serving as its 2n-real ``rwork``.
"""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.linalg.eigen import Eig

from graphjit.link.llvm.ir.complex_math import pack
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.loops.rows import advance, load_as, store_as
from graphjit.link.llvm.ops.linalg import _check, _each, _eigen_outputs, _mat, _scratch, _square
from graphjit.link.llvm.ops.linalg_kernels import Kernel, kernel
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext

_COMPLEX = {"float64": "complex128", "float32": "complex64"}
_WORK_PER_N = 68


def _applies(node: Apply) -> bool:
    """A float32/float64/complex64/complex128 input with outputs of the matching complex dtype."""
    a = node.inputs[0].type.dtype
    want = _COMPLEX.get(a, a)
    return want in ("complex64", "complex128") and all(o.type.dtype == want for o in node.outputs)


def _finite(k: Kernel, x: ir.Value) -> ir.Value:
    """|x| < inf (both parts of a complex x)."""
    b, inf = k.builder, ir.Constant(k.real_ty, float("inf"))
    xs = [b.extract_value(x, 0), b.extract_value(x, 1)] if k.complex else [x]
    ok = [b.fcmp_ordered("<", k.call_intrinsic("fabs", [v]), inf) for v in xs]
    return ok[0] if len(ok) == 1 else b.and_(*ok)


def _assemble(k: Kernel, wr: ir.Value, wi: ir.Value, vr: ir.Value, w: ir.Value, v: ir.Value, n: ir.Value) -> None:
    """w[j] = wr[j] + i wi[j]; v[:, j] from vr's columns (module doc); v C-contiguous, vr column-major."""
    b, dt, isz = k.builder, k.dtype, k.isz
    csz = b.mul(isz, I64(2))
    zero = ir.Constant(k.ty, 0.0)
    with k.for_range(n, name="eig.j") as j:
        re_w = load_as(k, advance(k, wr, j, isz), dt, dt)
        im_w = load_as(k, advance(k, wi, j, isz), dt, dt)
        store_as(k, advance(k, w, j, csz), pack(b, re_w, im_w), _COMPLEX[dt])
        first, second = b.fcmp_ordered(">", im_w, zero), b.fcmp_ordered("<", im_w, zero)
        re_col = b.select(second, b.sub(j, I64(1)), j)
        im_col = b.select(first, b.add(j, I64(1)), j)
        with k.for_range(n, name="eig.i") as i:
            re = load_as(k, advance(k, vr, b.add(i, b.mul(re_col, n)), isz), dt, dt)
            im = load_as(k, advance(k, vr, b.add(i, b.mul(im_col, n)), isz), dt, dt)
            im = b.select(first, im, b.select(second, b.fneg(im), zero))
            store_as(k, advance(k, v, b.add(b.mul(i, n), j), csz), pack(b, re, im), _COMPLEX[dt])


def eig_kernel(module: ir.Module, dtype: str) -> ir.Function:
    """(a, ars, acs, w, v, n, sa, wr, wi, vr, work, lwork) -> info."""
    def build(k: Kernel, args: list) -> None:
        a, ars, acs, w, v, n, sa, wr, wi, vr, work, lwork = args
        b = k.builder
        with k.early_return(b.icmp_signed("<=", n, I64(0))):
            pass
        k.copy(a, ars, acs, sa, k.isz, b.mul(n, k.isz), n, n)        # column-major: a itself
        finite = k.alloca(ir.IntType(1))
        b.store(ir.IntType(1)(1), finite)
        with k.for_range(b.mul(n, n), name="eig.f") as i:
            x = load_as(k, advance(k, sa, i, k.isz), k.dtype, k.dtype)
            b.store(b.and_(b.load(finite), _finite(k, x)), finite)
        with k.early_return(b.not_(b.load(finite)), b.trunc(b.add(n, I64(1)), I32)):
            pass                        # numpy refuses infs and NaNs before LAPACK sees them
        info = k.alloca(I32)
        if k.complex:                   # w straight into the output; wr (n complex) is the 2n-real rwork
            k.call("geev", [k.char("N"), k.char("V"), k.i32(n), sa, k.i32(n), w, vr, k.i32(1), vr, k.i32(n),
                            work, k.i32(lwork), wr, info])
        else:
            k.call("geev", [k.char("N"), k.char("V"), k.i32(n), sa, k.i32(n), wr, wi, vr, k.i32(1), vr, k.i32(n),
                            work, k.i32(lwork), info])
        with k.early_return(b.icmp_signed("!=", b.load(info), I32(0)), b.load(info)):
            pass
        if k.complex:
            k.copy(vr, k.isz, b.mul(n, k.isz), v, b.mul(n, k.isz), k.isz, n, n)
        else:
            _assemble(k, wr, wi, vr, w, v, n)
        b.ret(I32(0))
    mat = [I8P, I64, I64]
    return kernel(module, "eig", dtype, mat + [I8P, I8P, I64, I8P, I8P, I8P, I8P, I8P, I64], build)


@lowerings.register(Eig, applies=_applies, complex=True)
def lower_eig(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """?geev per matrix (right eigenvectors only)."""
    (a,) = inputs
    nd, dtype = node.inputs[0].ndim, node.inputs[0].type.dtype
    b = ctx.builder
    n = _square(ctx, node, a, nd)
    batch = [ctx.shape(a, d) for d in range(nd - 2)]
    w, v = _eigen_outputs(ctx, node, batch, n)
    sa = _scratch(ctx, node, dtype, [n, n], "factor")
    vr = _scratch(ctx, node, dtype, [n, n], "vectors")
    wr = _scratch(ctx, node, dtype, [n], "wr")
    wi = _scratch(ctx, node, dtype, [n], "wi")
    lwork = b.add(b.mul(n, I64(_WORK_PER_N)), I64(1))
    work = _scratch(ctx, node, dtype, [lwork], "work")
    fn = eig_kernel(ctx.module, dtype)
    with _each(ctx, batch, [(a, nd, 2), (w, nd - 1, 1), (v, nd, 2)]) as (pa, pw, pv):
        info = b.call(fn, [pa, *_mat(ctx, a, nd), pw, pv, n, sa, wr, wi, vr, work, lwork])
        ctx.raise_if(b.icmp_signed("==", b.sext(info, I64), b.add(n, I64(1))), node, "LinAlgError",
                     f"{node.op}: array must not contain infs or NaNs")
        _check(ctx, node, info, "eigenvalues did not converge (%lld)", False)
    return [w, v]
