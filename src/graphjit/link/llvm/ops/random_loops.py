"""The loops a native draw is made of: the sample's shape, parameters broadcast to it, numpy's parameter checks.

numpy's ``cont``/``disc`` helpers (numpy/random/_common.pyx) check each parameter (``check_constraint`` on the
values when every parameter is 0-d, else ``check_array_constraint`` on each array: the texts differ, "is NaN"
against "contains NaNs"), then fill the sample in C order, the parameters broadcast to it.  These helpers emit
the same, with numpy's messages.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.rows import advance, byte_ptr, load_as, nest

I1 = ir.IntType(1)
DBL = ir.DoubleType()
POISSON_LAM_MAX = float(np.random.Generator._poisson_lam_max)

# constraint -> [(fails(b, value) -> i1, scalar message, array message)], checked in order (numpy's ConstraintType);
# the array form of "poisson" checks the upper bound first (numpy's order)
Pred = Callable[[ir.IRBuilder, ir.Value], ir.Value]


def _not(b: ir.IRBuilder, op: str, v: ir.Value, c: float) -> ir.Value:
    return b.not_(b.fcmp_ordered(op, v, DBL(c)))


def _nan(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.fcmp_unordered("uno", v, v)


def _negative(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    sign = b.icmp_signed("<", b.bitcast(v, I64), I64(0))           # signbit, so -0.0 counts (numpy's)
    return b.and_(sign, b.not_(_nan(b, v)))


CHECKS: dict[str, list[tuple[Pred, str, str]]] = {
    "non_negative": [(_negative, "{n} < 0", "{n} < 0")],
    "positive": [(lambda b, v: b.fcmp_ordered("<=", v, DBL(0)), "{n} <= 0", "{n} <= 0")],
    "positive_not_nan": [(_nan, "{n} must not be NaN", "{n} must not be NaN"),
                         (lambda b, v: b.fcmp_ordered("<=", v, DBL(0)), "{n} <= 0", "{n} <= 0")],
    "bounded_0_1": [(lambda b, v: b.or_(_not(b, ">=", v, 0), _not(b, "<=", v, 1)),
                     "{n} < 0, {n} > 1 or {n} is NaN", "{n} < 0, {n} > 1 or {n} contains NaNs")],
    "bounded_gt_0_1": [(lambda b, v: b.or_(_not(b, ">", v, 0), _not(b, "<=", v, 1)),
                        "{n} <= 0, {n} > 1 or {n} contains NaNs", "{n} <= 0, {n} > 1 or {n} contains NaNs")],
    "bounded_lt_0_1": [(lambda b, v: b.or_(_not(b, ">=", v, 0), _not(b, "<", v, 1)),
                        "{n} < 0, {n} >= 1 or {n} is NaN", "{n} < 0, {n} >= 1 or {n} contains NaNs")],
    "gt_1": [(lambda b, v: _not(b, ">", v, 1), "{n} <= 1 or {n} is NaN", "{n} <= 1 or {n} contains NaNs")],
    "gte_1": [(lambda b, v: _not(b, ">=", v, 1), "{n} < 1 or {n} is NaN", "{n} < 1 or {n} contains NaNs")],
    "poisson": [(lambda b, v: _not(b, ">=", v, 0), "{n} < 0 or {n} is NaN", "{n} < 0 or {n} contains NaNs"),
                (lambda b, v: _not(b, "<=", v, POISSON_LAM_MAX), "{n} value too large", "{n} value too large")],
}


def check_param(ctx: GraphContext, node: Apply, struct: ir.Value, dtype: str, ndim: int, name: str,
                constraint: Optional[str], scalar: bool) -> None:
    """numpy's check of one parameter (every element, as double): ValueError with numpy's message."""
    if constraint is None:
        return
    rules = CHECKS[constraint]
    if not scalar and constraint == "poisson":
        rules = rules[::-1]
    b = ctx.builder
    shape = ctx.shapes(struct, ndim)
    strides = [ctx.stride(struct, d) for d in range(ndim)]
    for fails, scalar_text, array_text in rules:
        bad = ctx.alloca(I1, name=ctx.name(node, "bad"))
        b.store(I1(0), bad)
        with nest(ctx, shape, [byte_ptr(ctx, struct)], [strides], name="chk") as (ptr,):
            b.store(b.or_(b.load(bad), fails(b, load_as(ctx, ptr, dtype, "float64"))), bad)
        text = (scalar_text if scalar else array_text).format(n=name)
        ctx.raise_if(b.load(bad), node, "ValueError", f"{node.op}: {text}")


def broadcast_param_shape(ctx: GraphContext, params: Sequence[ir.Value], ndims: Sequence[int], nd: int) -> list:
    """The run-time broadcast of the parameters' shapes over nd dims (each length: the last one not 1)."""
    b = ctx.builder
    shape = []
    for d in range(nd):
        n = I64(1)
        for p, k in zip(params, ndims):
            if d >= nd - k:
                length = ctx.shape(p, d - (nd - k))
                n = b.select(b.icmp_signed("!=", length, I64(1)), length, n)
        shape.append(n)
    return shape


def sample_shape(ctx: GraphContext, node: Apply, size: Optional[ir.Value], params: Sequence[ir.Value],
                 ndims: Sequence[int]) -> list[ir.Value]:
    """The sample's lengths: size's values (checked non-negative), else the parameters' broadcast (checked)."""
    b = ctx.builder
    static = node.outputs[1].type.shape
    if size is not None:
        shape = []
        for d, s in enumerate(static):
            n = I64(s) if s is not None else ctx.load_element(size, [I64(d)])
            ctx.raise_if(b.icmp_signed("<", n, I64(0)), node, "ValueError",
                         f"{node.op}: negative dimensions are not allowed (size has %lld)", [n])
            shape.append(n)
        return shape
    broadcast = broadcast_param_shape(ctx, params, ndims, len(static))
    shape = [I64(s) if s is not None else n for s, n in zip(static, broadcast)]
    return shape


def check_broadcast(ctx: GraphContext, node: Apply, shape: Sequence[ir.Value], params: Sequence[ir.Value],
                    ndims: Sequence[int]) -> None:
    """Every parameter broadcasts to the sample's shape (numpy's 'shape mismatch' ValueError otherwise)."""
    b = ctx.builder
    nd = len(shape)
    for k, (p, pn) in enumerate(zip(params, ndims)):
        for j in range(pn):
            length, out = ctx.shape(p, j), shape[nd - pn + j]
            bad = b.and_(b.icmp_signed("!=", length, I64(1)), b.icmp_signed("!=", length, out))
            ctx.raise_if(bad, node, "ValueError",
                         f"{node.op}: shape mismatch: parameter {k + 1} (length %lld in its dimension {j}) cannot be "
                         f"broadcast to the sample's shape (length %lld there)", [length, out])


def broadcast_strides(ctx: GraphContext, p: ir.Value, pn: int, nd: int) -> list[ir.Value]:
    """p's byte strides over the sample's dimensions (0 where p is broadcast)."""
    b = ctx.builder
    out = []
    for d in range(nd):
        if d < nd - pn:
            out.append(I64(0))
            continue
        j = d - (nd - pn)
        one = b.icmp_signed("==", ctx.shape(p, j), I64(1))
        out.append(b.select(one, I64(0), ctx.stride(p, j)))
    return out


def each_element(ctx: GraphContext, shape: Sequence[ir.Value], arrays: Sequence[ir.Value], ndims: Sequence[int],
                 name: str = "draw") -> "nest":
    """Loops over shape in C order yielding a byte pointer into each array (broadcast)."""
    nd = len(shape)
    bases = [byte_ptr(ctx, a) for a in arrays]
    strides = [broadcast_strides(ctx, a, n, nd) for a, n in zip(arrays, ndims)]
    return nest(ctx, shape, bases, strides, name=name)


__all__ = ["CHECKS", "check_param", "sample_shape", "check_broadcast", "each_element", "advance"]
