"""Lowerings of Sort, ArgSort, Partition, ArgPartition and TopK: one call of the per-lane sort kernel
(ops/sort_kernels.py) for every lane along the axis, reading and writing through the lanes' strides.

Partition and ArgPartition fully sort each lane (a sorted lane satisfies numpy's partition contract); TopK sorts
the lane ascending (kth < 0) or descending (kth > 0) and writes the first |kth| results. The kernel's scratch
(two key and two index buffers and the radix histograms, sized for one lane) is one cached temporary per node.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.sort import ArgPartition, ArgSort, Partition, Sort, TopK

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.rows import byte_ptr, load_as, nest, strides_of
from graphjit.link.llvm.ops.sort_kernels import MAX_LANE
from graphjit.link.llvm.ops.sort_lane import scratch_bytes, sort_kernel
from graphjit.link.llvm.registry import lowerings
from graphjit.tensor.lengths import static_int


def can_sort(node: Apply) -> bool:
    """Booleans, integers and float32/float64 (float16 and complex keep perform)."""
    dtype = node.inputs[0].type.dtype
    return np.dtype(dtype).kind in "biu" or dtype in ("float32", "float64")


def _lanes(ctx: GraphContext, node: Apply, x: ir.Value, outs: Sequence[Optional[ir.Value]], count: ir.Value,
           kernels: Sequence[ir.Function], pick: Optional[ir.Value] = None) -> None:
    """Call the kernel on every lane of x along the op's axis, writing the first count results into outs
    (values, indices; None for an output not made). pick (i1) chooses kernels[1] over kernels[0]."""
    b = ctx.builder
    ndim, axis, dtype = node.inputs[0].type.ndim, node.op.axis, node.inputs[0].type.dtype
    n = ctx.shape(x, axis)
    ctx.raise_if(b.icmp_signed(">", n, I64(MAX_LANE)), node, "ValueError",
                 f"{node.op}: lanes of %lld elements are longer than the native sort's limit ({MAX_LANE})", [n])
    with_idx = outs[1] is not None
    scratch = ctx.temp_array(node, "uint8", [scratch_bytes(b, dtype, n, with_idx)], "scratch")
    outer = [d for d in range(ndim) if d != axis]
    sx = strides_of(ctx, x, ndim)
    made = [o for o in outs if o is not None]
    so = [strides_of(ctx, o, ndim) for o in made]
    null = ir.Constant(ir.IntType(8).as_pointer(), None)
    with nest(ctx, [ctx.shape(x, d) for d in outer], [byte_ptr(ctx, x)] + [byte_ptr(ctx, o) for o in made],
              [[sx[d] for d in outer]] + [[s[d] for d in outer] for s in so], name="lane") as ptrs:
        it = iter(zip(ptrs[1:], so))
        args = [ptrs[0], sx[axis], n, count]
        for o in outs:
            if o is None:
                args += [null, I64(0)]
            else:
                p, s = next(it)
                args += [p, s[axis]]
        args.append(byte_ptr(ctx, scratch))
        if pick is None:
            b.call(kernels[0], args)
        else:
            with b.if_else(pick) as (second, first):
                with second:
                    b.call(kernels[1], args)
                with first:
                    b.call(kernels[0], args)


@lowerings.register(Sort, applies=can_sort)
def lower_sort(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Sort: the sorted lanes."""
    (x,) = inputs
    out = ctx.allocate(node, 0, ctx.shapes(x, node.inputs[0].type.ndim))
    kernel = sort_kernel(ctx, node.inputs[0].type.dtype, True, None, False)
    _lanes(ctx, node, x, [out, None], ctx.shape(x, node.op.axis), [kernel])
    return [out]


@lowerings.register(ArgSort, applies=can_sort)
def lower_argsort(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """ArgSort: the int64 permutation of every lane (stable)."""
    (x,) = inputs
    out = ctx.allocate(node, 0, ctx.shapes(x, node.inputs[0].type.ndim))
    kernel = sort_kernel(ctx, node.inputs[0].type.dtype, False, "int64", False)
    _lanes(ctx, node, x, [None, out], ctx.shape(x, node.op.axis), [kernel])
    return [out]


@lowerings.register(Partition, applies=can_sort)
def lower_partition(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Partition/ArgPartition: the lanes fully sorted, after numpy's bounds check of kth."""
    b = ctx.builder
    (x,) = inputs
    n = ctx.shape(x, node.op.axis)
    for k in node.op.kth:
        bad = b.or_(b.icmp_signed(">=", I64(k), n), b.icmp_signed("<", I64(k), b.sub(I64(0), n)))
        ctx.raise_if(bad, node, "ValueError", f"{node.op}: kth(={k}) out of bounds (%lld)", [n])
    out = ctx.allocate(node, 0, ctx.shapes(x, node.inputs[0].type.ndim))
    indices = isinstance(node.op, ArgPartition)
    kernel = sort_kernel(ctx, node.inputs[0].type.dtype, not indices, "int64" if indices else None, False)
    _lanes(ctx, node, x, [None, out] if indices else [out, None], n, [kernel])
    return [out]


@lowerings.register(TopK, applies=can_sort)
def lower_topk(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """TopK: the lanes sorted descending (kth > 0) or ascending (kth < 0), the first |kth| results kept."""
    b = ctx.builder
    x, kth = inputs
    op, ndim, dtype = node.op, node.inputs[0].type.ndim, node.inputs[0].type.dtype
    n = ctx.shape(x, op.axis)
    k = load_as(ctx, byte_ptr(ctx, kth), node.inputs[1].type.dtype, "int64")
    negative = b.icmp_signed("<", k, I64(0))
    count = b.select(negative, b.sub(I64(0), k), k)
    bad = b.or_(b.icmp_signed("==", k, I64(0)), b.icmp_signed(">", count, n))
    ctx.raise_if(bad, node, "ValueError", f"{op}: kth=%lld must be nonzero and at most the axis length (%lld)",
                 [k, n])
    shape = [count if d == op.axis else s for d, s in enumerate(ctx.shapes(x, ndim))]
    outs = [ctx.allocate(node, i, shape) for i in range(len(node.outputs))]
    values = outs[0] if op.return_values else None
    indices = outs[-1] if op.return_indices else None
    idx_dtype = op.idx_dtype if op.return_indices else None
    static = static_int(node.inputs[1])
    if static is not None:
        kernels, pick = [sort_kernel(ctx, dtype, op.return_values, idx_dtype, static > 0)], None
    else:
        kernels = [sort_kernel(ctx, dtype, op.return_values, idx_dtype, d) for d in (True, False)]
        pick = negative
    _lanes(ctx, node, x, [values, indices], count, kernels, pick)
    return outs
