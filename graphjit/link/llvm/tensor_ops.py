"""Lowerings of the basic tensor ops (DimShuffle views, Shape, Shape_i, SpecifyShape, single Elemwise/CAReduce).

The ops' ``lower`` methods are one line each and call these; fused Elemwise/CAReduce never get here (the
linker fuses them itself), a lone call builds a one-node loop group.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from graphjit.graph.basic import Apply

from .fusion import LoopGroup, _group_inputs
from .layouts import I64
from .loops import store_value


def lower_loop_node(ctx: Any, node: Apply) -> list:
    """An Elemwise or CAReduce node as its own loop group."""
    from .lowering import lower_group
    if hasattr(node.op, "scalar_op") and node.op.__class__.__name__ == "Elemwise":
        group = LoopGroup([node], node.outputs[0], None)
    else:
        group = LoopGroup([], node.inputs[0], node)
    group.inputs = _group_inputs(group)
    lower_group(ctx, group)
    return [ctx.values[node.outputs[0]]]


def lower_dimshuffle(ctx: Any, node: Apply, x: ir.Value) -> list:
    """A view: permuted shape/strides, 'x' dims of length 1 and stride 0 (no copy)."""
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


def lower_shape(ctx: Any, node: Apply, x: ir.Value) -> list:
    """An int64 vector holding x's shape."""
    ndim = node.inputs[0].type.ndim
    out = ctx.allocate(node, 0, [I64(ndim)])
    data = ctx.data(out)
    for d in range(ndim):
        ctx.builder.store(ctx.shape(x, d), ctx.builder.gep(data, [I64(d)], inbounds=True))
    return [out]


def lower_shape_i(ctx: Any, node: Apply, x: ir.Value) -> list:
    """A 0-d int64 holding one length of x."""
    out = ctx.allocate(node, 0, [])
    store_value(ctx.builder, ctx.data(out), ctx.shape(x, node.op.i), "int64")
    return [out]


def lower_specify_shape(ctx: Any, node: Apply, x: ir.Value) -> list:
    """x itself, after checking the declared lengths (ValueError naming the op and the user's line)."""
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
