"""Native ``binomial`` and ``negative_binomial``: numpy's Generator methods, which ``c_draw`` cannot describe.

``binomial(n, p)``: numpy checks p (``bounded_0_1``) then n (``non_negative``), and calls
``random_binomial(bitgen, p, n, &binomial_t)`` per element: the C argument order is (p, n) and the last argument
is numpy's ``binomial_t`` cache (a memo of the per-(n, p) setup: the numbers do not depend on its content, so
the draw keeps its own, zeroed).  ``negative_binomial(n, p)``: numpy checks n (``positive_not_nan``), p
(``bounded_gt_0_1``), then that the Poisson rate ``(1 - p) / p * (n + 10 sqrt(n))`` stays under numpy's bound
over the parameters' broadcast, and calls ``random_negative_binomial(bitgen, n, p)`` per element.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.random_discrete import BinomialRV, NegativeBinomialRV

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8P
from graphjit.link.llvm.loops.rows import load_as
from graphjit.link.llvm.ops.random import can_lower_draw, emit_element_draws, npr_function, split_inputs
from graphjit.link.llvm.ops.random_loops import POISSON_LAM_MAX, broadcast_param_shape, check_param, each_element
from graphjit.link.llvm.registry import lowerings

DBL = ir.DoubleType()
BINOMIAL_T = ir.ArrayType(I64, 17)      # numpy's binomial_t: an int flag (padded) and 16 eight-byte fields
Draw = Callable[[GraphContext, ir.Value, list], ir.Value]


def emit_int_draws(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], load_types: Sequence[str],
                   draw: Draw) -> list:
    """The sample's shape and allocation, the lock, draw(ctx, bitgen, values) -> int64 per element, cast, unlock."""
    return emit_element_draws(ctx, node, inputs, load_types,
                              lambda bitgen: (lambda values: draw(ctx, bitgen, values)), "int64")


def _checks(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], order: Sequence[tuple[int, str, str]]) -> None:
    _, params, pvars = split_inputs(node, inputs)
    scalar = all(v.ndim == 0 for v in pvars)
    for i, name, cons in order:
        check_param(ctx, node, params[i], pvars[i].type.dtype, pvars[i].ndim, name, cons, scalar)


def can_lower_binomial(node: Apply) -> bool:
    """n of a signed integer dtype (numpy converts it to int64), the draw usable natively."""
    return can_lower_draw(node) and np.dtype(node.inputs[-2].type.dtype).kind in "bi"


@lowerings.register(BinomialRV, applies=can_lower_binomial, objects=True)
def lower_binomial(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.binomial(n, p): its checks, then random_binomial(p, n, cache) per element."""
    _checks(ctx, node, inputs, [(1, "p", "bounded_0_1"), (0, "n", "non_negative")])
    cache = ctx.alloca(BINOMIAL_T, name=ctx.name(node, "binomial_t"))
    ctx.builder.store(ir.Constant(BINOMIAL_T, None), cache)
    fn = npr_function(ctx, "random_binomial", I64, [DBL, I64, I8P])

    def draw(c: GraphContext, bitgen: ir.Value, values: list) -> ir.Value:
        return c.builder.call(fn, [bitgen, values[1], values[0], c.builder.bitcast(cache, I8P)])
    return emit_int_draws(ctx, node, inputs, ("int64", "float64"), draw)


def _check_rate(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> None:
    """numpy's bound on the Poisson rate (1 - p) / p * (n + 10 sqrt(n)), over the parameters' broadcast."""
    b = ctx.builder
    _, params, pvars = split_inputs(node, inputs)
    ndims = [v.ndim for v in pvars]
    shape = broadcast_param_shape(ctx, params, ndims, max(ndims))
    bad = ctx.alloca(ir.IntType(1), name=ctx.name(node, "lam"))
    b.store(ir.IntType(1)(0), bad)
    with each_element(ctx, shape, params, ndims, name="lam") as (pn, pp):
        n = load_as(ctx, pn, pvars[0].type.dtype, "float64")
        p = load_as(ctx, pp, pvars[1].type.dtype, "float64")
        width = b.fadd(n, b.fmul(DBL(10.0), ctx.call_intrinsic("sqrt", [n])))
        lam = b.fmul(b.fdiv(b.fsub(DBL(1.0), p), p), width)
        b.store(b.or_(b.load(bad), b.fcmp_ordered(">", lam, DBL(POISSON_LAM_MAX))), bad)
    ctx.raise_if(b.load(bad), node, "ValueError",
                 f"{node.op}: n too large or p too small, see Generator.negative_binomial Notes")


@lowerings.register(NegativeBinomialRV, applies=can_lower_draw, objects=True)
def lower_negative_binomial(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.negative_binomial(n, p): its checks, then random_negative_binomial(n, p) per element."""
    _checks(ctx, node, inputs, [(0, "n", "positive_not_nan"), (1, "p", "bounded_gt_0_1")])
    _check_rate(ctx, node, inputs)
    fn = npr_function(ctx, "random_negative_binomial", I64, [DBL, DBL])

    def draw(c: GraphContext, bitgen: ir.Value, values: list) -> ir.Value:
        return c.builder.call(fn, [bitgen, *values])
    return emit_int_draws(ctx, node, inputs, ("float64", "float64"), draw)


__all__ = ["emit_int_draws", "lower_binomial", "lower_negative_binomial"]
