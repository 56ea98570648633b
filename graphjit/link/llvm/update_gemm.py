"""``W <- W - s * dot(A, B)`` as one ``?gemm`` writing into ``W``'s buffer (``alpha = -s``, ``beta = 1``).

An in-place update group (inplace_updates.py) of the form ``W +/- dot(A, B)`` or ``W +/- s * dot(A, B)`` (``s`` a
one-element constant or tensor of W's dtype; the product read by nothing else) is emitted together with its
product, after every other node.  At run time, when W may be overwritten (inplace_updates' checks), neither A
nor B overlaps W, the lengths agree and BLAS takes the layouts, ``gemm`` accumulates straight into W: no
temporary product, no zero fill (beta = 0 makes OpenBLAS clear C first), no second pass over W.  Otherwise the
product and the group are lowered as usual (the product's own checks raise its usual errors).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.link.llvm.scalar_cast import compute_type
from graphjit.scalar import math as smath
from graphjit.scalar.basic import ScalarOp

from . import layouts as L
from .fusion import LoopGroup
from .layouts import I8, I8P, I32, I64

I1 = ir.IntType(1)
_INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class GemmUpdate:
    """The product of an update group, the sign of its term and its scale (None: 1)."""

    dot: Apply
    sign: float
    scale: Variable | None


def _scalar_op(node: Apply | None, scalar_op: ScalarOp) -> bool:
    op = getattr(node, "op", None)
    return getattr(op, "scalar_op", None) is scalar_op


def _one_element(var: Variable, dtype: str) -> bool:
    return (var.type.dtype == dtype or isinstance(var, Constant)) and all(s == 1 for s in var.type.shape)


def _product(fgraph: Any, term: Variable, group: LoopGroup, dtype: str) -> tuple[Apply, Variable | None] | None:
    """(Dot node, scale) if term is dot(A, B) or s * dot(A, B) inside the group, the product read only there."""
    from graphjit.tensor.blas import Dot
    scale = None
    if term.owner is not None and term.owner in group.nodes and _scalar_op(term.owner, smath.mul):
        x, y = term.owner.inputs
        if _one_element(x, dtype) and y.owner is not None and isinstance(y.owner.op, Dot):
            scale, term = x, y
        elif _one_element(y, dtype) and x.owner is not None and isinstance(x.owner.op, Dot):
            scale, term = y, x
        else:
            return None
    dot = term.owner
    if dot is None or not isinstance(dot.op, Dot) or term.type.dtype != dtype:
        return None
    if any(v.type.ndim != 2 or v.type.dtype != dtype for v in dot.inputs):
        return None
    if any(c == "output" or c not in group.nodes for c, _ in fgraph.clients.get(term, [])):
        return None
    return dot, scale


def match_gemm_update(fgraph: Any, group: LoopGroup, target: Variable) -> GemmUpdate | None:
    """The GemmUpdate of an in-place update group of target, if it has that form (module doc)."""
    dtype = target.type.dtype
    root = group.root.owner
    if dtype not in ("float32", "float64") or target.type.ndim != 2 or len(group.nodes) > 2:
        return None
    if _scalar_op(root, smath.sub) and root.inputs[0] is target:
        sign, term = -1.0, root.inputs[1]
    elif _scalar_op(root, smath.add) and target in root.inputs:
        sign, term = 1.0, root.inputs[1 - root.inputs.index(target)]
    else:
        return None
    found = _product(fgraph, term, group, dtype)
    if found is None or set(group.nodes) - {root, term.owner}:
        return None
    return GemmUpdate(found[0], sign, found[1])


# ---------------------------------------------------------------- run time

def _layout(ctx: Any, arr: ir.Value, dtype: str) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(row-major?, column-major?, leading dimension in elements for the layout that holds)."""
    b, isz = ctx.builder, I64(L.itemsize(dtype))
    rows, cols = ctx.shape(arr, 0), ctx.shape(arr, 1)
    rs, cs = ctx.stride(arr, 0), ctx.stride(arr, 1)
    le1 = lambda v: b.icmp_signed("<=", v, I64(1))  # noqa: E731
    whole = lambda s: b.icmp_signed("==", b.srem(s, isz), I64(0))  # noqa: E731
    at_least = lambda s, n: b.icmp_signed(">=", s, b.mul(b.select(le1(n), I64(1), n), isz))  # noqa: E731
    rm = b.and_(b.or_(le1(cols), b.icmp_signed("==", cs, isz)),
                b.or_(le1(rows), b.and_(whole(rs), at_least(rs, cols))))
    cm = b.and_(b.or_(le1(rows), b.icmp_signed("==", rs, isz)),
                b.or_(le1(cols), b.and_(whole(cs), at_least(cs, rows))))
    ld_rm = b.select(le1(rows), b.select(le1(cols), I64(1), cols), b.sdiv(rs, isz))
    ld_cm = b.select(le1(cols), b.select(le1(rows), I64(1), rows), b.sdiv(cs, isz))
    return rm, cm, b.select(rm, ld_rm, ld_cm)


def _slot(ctx: Any, ty: ir.Type, value: ir.Value, name: str) -> ir.Value:
    slot = ctx.alloca(ty, name=name)
    ctx.builder.store(value, slot)
    return slot


def _scale_value(ctx: Any, spec: GemmUpdate, dtype: str) -> ir.Value:
    ty = compute_type(dtype)
    if spec.scale is None:
        return ir.Constant(ty, spec.sign)
    if isinstance(spec.scale, Constant):
        return ir.Constant(ty, spec.sign * float(np.asarray(spec.scale.data).reshape(())))
    b = ctx.builder
    value = b.load(ctx.data(ctx.value(spec.scale)))
    return b.fneg(value) if spec.sign < 0 else value


def _emit_gemm(ctx: Any, spec: GemmUpdate, w: ir.Value, a: ir.Value, bm: ir.Value, la: tuple, lb: tuple,
               dtype: str) -> None:
    """W (m x n, C order) += alpha * A @ B, as W^T = alpha * B^T A^T + W^T in BLAS' column-major terms."""
    b = ctx.builder
    ty = compute_type(dtype)
    m, k, n = ctx.shape(a, 0), ctx.shape(a, 1), ctx.shape(bm, 1)
    i32 = lambda v, name: _slot(ctx, I32, b.trunc(v, I32), name)  # noqa: E731
    trans = lambda rm, name: _slot(ctx, I8, b.select(rm, I8(ord("N")), I8(ord("T"))), name)  # noqa: E731
    args = [trans(lb[0], "ugemm.transa"), trans(la[0], "ugemm.transb"), i32(n, "ugemm.m"), i32(m, "ugemm.n"),
            i32(k, "ugemm.k"), _slot(ctx, ty, _scale_value(ctx, spec, dtype), "ugemm.alpha"), ctx.data(bm),
            i32(lb[2], "ugemm.lda"), ctx.data(a), i32(la[2], "ugemm.ldb"), _slot(ctx, ty, ir.Constant(ty, 1.0),
            "ugemm.beta"), ctx.data(w), i32(n, "ugemm.ldc")]
    fn = ctx.blas("dgemm" if dtype == "float64" else "sgemm")
    b.call(fn, [b.bitcast(v, I8P) for v in args])


def emit_gemm_update(ctx: Any, j: int, target: Variable, group: LoopGroup, spec: GemmUpdate,
                     lower_rest: Callable[[], None]) -> None:
    """gemm into target's buffer when allowed at run time, else lower_rest() (the product, then the group)."""
    from .inplace_updates import adopt_target, target_writable
    b = ctx.builder
    dtype = target.type.dtype
    a_var, b_var = spec.dot.inputs
    a, bm, w = ctx.value(a_var), ctx.value(b_var), ctx.value(target)
    m, k, k2, n = ctx.shape(a, 0), ctx.shape(a, 1), ctx.shape(bm, 0), ctx.shape(bm, 1)
    ok = b.icmp_signed("==", k, k2)
    for v in (m, n, k):
        ok = b.and_(ok, b.and_(b.icmp_signed(">", v, I64(0)), b.icmp_signed("<=", v, I64(_INT32_MAX))))
    la, lb = _layout(ctx, a, dtype), _layout(ctx, bm, dtype)
    for lay in (la, lb):
        ok = b.and_(ok, b.and_(b.or_(lay[0], lay[1]), b.icmp_signed("<=", lay[2], I64(_INT32_MAX))))
    ok = b.and_(ok, target_writable(ctx, w, target, [m, n], [(a, a_var), (bm, b_var)]))
    with b.if_else(ok, likely=True) as (fused, separate):
        with fused:
            _emit_gemm(ctx, spec, w, a, bm, la, lb, dtype)
            adopt_target(ctx, j, w)
        with separate:
            lower_rest()
    ctx.in_slot.add(j)
