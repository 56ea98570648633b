"""Lowerings of the basic tensor ops (DimShuffle views, Shape, Shape_i, SpecifyShape, MatchShape, single
Elemwise/CAReduce).

Fused Elemwise/CAReduce never get here (the linker fuses them itself); a lone one builds a one-node loop group.
"""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from graphjit.tensor.shape import Shape, Shape_i, SpecifyShape
from graphjit.tensor.shape_base import MatchShape

from graphjit.link.llvm.driver.native_entry import lower_group
from graphjit.link.llvm.loops.fusion import LoopGroup, group_inputs, fusable_elemwise, lowerable_careduce
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.nest import store_value
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext


def _lower_group(ctx: GraphContext, group: LoopGroup, node: Apply) -> list:
    group.inputs = group_inputs(group)
    lower_group(ctx, group)
    return [ctx.values[node.outputs[0]]]


@lowerings.register(Elemwise, applies=fusable_elemwise, complex=True)
def lower_elemwise(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """An Elemwise node as its own loop group (one loop nest)."""
    return _lower_group(ctx, LoopGroup([node], node.outputs[0], None), node)


@lowerings.register(CAReduce, applies=lowerable_careduce, complex=True)
def lower_careduce(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A CAReduce node as its own loop group (one loop nest with vectorised accumulators)."""
    return _lower_group(ctx, LoopGroup([], node.inputs[0], node), node)


@lowerings.register(DimShuffle, complex=True)
def lower_dimshuffle(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A view: permuted shape/strides, 'x' dims of length 1 and stride 0 (no copy)."""
    x = inputs[0]
    op = node.op
    dtype = node.inputs[0].type.dtype
    shape, strides = [], []
    for d in op.new_order:
        if d == "x":
            shape.append(I64(1))
            strides.append(I64(0))
        else:
            shape.append(ctx.shape(x, d))
            strides.append(ctx.stride(x, d))
    return [ctx.view(x, dtype, shape, strides, ctx.data(x), name=ctx.name(node, "view"))]


@lowerings.register(Shape, complex=True)
def lower_shape(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """An int64 vector holding x's shape."""
    x = inputs[0]
    ndim = node.inputs[0].type.ndim
    out = ctx.allocate(node, 0, [I64(ndim)])
    data = ctx.data(out)
    for d in range(ndim):
        ctx.builder.store(ctx.shape(x, d), ctx.builder.gep(data, [I64(d)], inbounds=True))
    return [out]


@lowerings.register(Shape_i, complex=True)
def lower_shape_i(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A 0-d int64 holding one length of x."""
    x = inputs[0]
    out = ctx.allocate(node, 0, [])
    store_value(ctx.builder, ctx.data(out), ctx.shape(x, node.op.i), "int64")
    return [out]


@lowerings.register(SpecifyShape, complex=True)
def lower_specify_shape(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x itself, after checking the declared lengths (ValueError naming the op and the user's line)."""
    x = inputs[0]
    b = ctx.builder
    for d, want in enumerate(node.op.shape):
        if want is None:
            continue
        got = ctx.shape(x, d)
        what = node.op.what.replace("%", "%%") + ": " if node.op.what else ""
        ctx.raise_if(b.icmp_signed("!=", got, I64(want)), node, "ValueError",
                     f"{what}expected shape {node.op.shape} (None = any): dimension %lld has length %lld, "
                     "not %lld", [I64(d), got, I64(want)])
    return [x]


@lowerings.register(MatchShape, complex=True)        # reads only the shape
def lower_match_shape(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """x itself, after checking its lengths against the shape vector (ValueError naming both values)."""
    x, want = inputs
    b = ctx.builder
    names = [n.replace("%", "%%") for n in node.op.names]
    for d in range(node.inputs[0].type.ndim):
        got = ctx.shape(x, d)
        length = b.load(ctx.element_ptr(want, [I64(d)]))
        ctx.raise_if(b.icmp_signed("!=", got, length), node, "ValueError",
                     f"{names[0]} has length %lld in dimension %lld, but {names[1]} has length %lld",
                     [got, I64(d), length])
    return [x]
