"""Native ``permutation`` and ``permuted``: numpy's Fisher-Yates shuffles with ``random_interval``.

numpy's ``Generator.shuffle`` of n items swaps item i with item ``random_interval(bitgen, i)`` for i = n-1 down to
1 (``_shuffle_raw`` with first = 1; ``random_interval(0)`` draws nothing, so ``permuted``'s first = 0 draws the
same).  ``permutation(n)`` shuffles ``arange(n)``; ``permutation(x, axis)`` shuffles ``arange(x.shape[axis])``
(1-d x: x itself, the same swaps) and takes x's sub-arrays in that order.  ``permuted(x, axis)`` copies x and
shuffles each 1-d slice along axis, the slices in C order of the other axes; axis None shuffles the C-order copy
as one flat array.  Items are swapped as raw bytes of the dtype's size, as numpy's memcpy does.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.random_permute import PermutationRV, PermutedRV

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8P
from graphjit.link.llvm.loops.rows import byte_ptr, load_as, nest
from graphjit.link.llvm.ops.random import can_lower_draw, note_long_draw, npr_function
from graphjit.link.llvm.ops.random_state import acquire, bitgen_pointer, drop_copy, generator_for, release
from graphjit.link.llvm.registry import lowerings


def _word(dtype: str) -> ir.IntType:
    return ir.IntType(8 * np.dtype(dtype).itemsize)


def fisher_yates(ctx: GraphContext, bitgen: ir.Value, n: ir.Value, base: ir.Value, stride: ir.Value,
                 word: ir.IntType) -> None:
    """numpy's _shuffle_raw(first=1) of n items of type word at byte pointer base, byte stride apart."""
    b = ctx.builder
    interval = npr_function(ctx, "random_interval", I64, [I64])
    with ctx.for_range(b.sub(n, I64(1)), name="fy") as t:
        i = b.sub(b.sub(n, I64(1)), t)
        j = b.call(interval, [bitgen, i])
        pi = b.bitcast(b.gep(base, [b.mul(i, stride)]), word.as_pointer())
        pj = b.bitcast(b.gep(base, [b.mul(j, stride)]), word.as_pointer())
        vi, vj = b.load(pi), b.load(pj)
        b.store(vi, pj)
        b.store(vj, pi)


def _copy(ctx: GraphContext, src: ir.Value, dst: ir.Value, shape: Sequence[ir.Value], word: ir.IntType) -> None:
    b = ctx.builder
    nd = len(shape)
    strides = [[ctx.stride(src, d) for d in range(nd)], [ctx.stride(dst, d) for d in range(nd)]]
    with nest(ctx, shape, [byte_ptr(ctx, src), byte_ptr(ctx, dst)], strides, name="cp") as (s, d):
        b.store(b.load(b.bitcast(s, word.as_pointer())), b.bitcast(d, word.as_pointer()))


def can_lower_permute(node: Apply) -> bool:
    """x of at least one dimension, or permutation's integer n; the draw usable natively."""
    x = node.inputs[1]
    return can_lower_draw(node) and (x.ndim >= 1 or isinstance(node.op, PermutationRV))


@lowerings.register(PermutationRV, applies=can_lower_permute, objects=True)
def lower_permutation(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.permutation: shuffle arange(n) (n = x, or x.shape[axis]), then take along axis."""
    b = ctx.builder
    x, xvar = inputs[1], node.inputs[1]
    axis = node.op.axis % max(xvar.ndim, 1)
    if xvar.ndim == 0:
        count = load_as(ctx, byte_ptr(ctx, x), xvar.type.dtype, "int64")
        n = b.select(b.icmp_signed("<", count, I64(0)), I64(0), count)       # np.arange(negative) is empty
    else:
        n = ctx.shape(x, axis)
    note_long_draw(ctx, node)
    shape = [n] if xvar.ndim == 0 else ctx.shapes(x, xvar.ndim)
    out = ctx.allocate(node, 1, shape)
    idx = out if xvar.ndim == 0 else ctx.temp_array(node, "int64", [n], "perm")
    data = b.bitcast(byte_ptr(ctx, idx), I64.as_pointer())
    with ctx.for_range(n, name="iota") as i:
        b.store(i, b.gep(data, [i]))
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    bitgen = bitgen_pointer(ctx, gen)
    taken = acquire(ctx, gen)
    fisher_yates(ctx, bitgen, n, b.bitcast(data, I8P), I64(8), I64)
    release(ctx, gen, taken)
    drop_copy(ctx, copy)
    if xvar.ndim > 0:
        word = _word(xvar.type.dtype)
        with ctx.loop_nest(shape, name="take") as index:
            src = list(index)
            src[axis] = b.load(b.gep(data, [index[axis]]))
            value = b.load(b.bitcast(ctx.element_ptr(x, src), word.as_pointer()))
            b.store(value, b.bitcast(ctx.element_ptr(out, index), word.as_pointer()))
    return [new_slot, out]


@lowerings.register(PermutedRV, applies=can_lower_permute, objects=True)
def lower_permuted(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.permuted: a copy of x, each slice along axis shuffled (axis None: the flat C-order copy)."""
    b = ctx.builder
    x, xvar = inputs[1], node.inputs[1]
    nd = xvar.ndim
    axis = None if node.op.axis is None else node.op.axis % nd
    word = _word(xvar.type.dtype)
    shape = ctx.shapes(x, nd)
    note_long_draw(ctx, node)
    out = ctx.allocate(node, 1, shape)
    _copy(ctx, x, out, shape, word)
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    bitgen = bitgen_pointer(ctx, gen)
    taken = acquire(ctx, gen)
    if axis is None:
        total = I64(1)
        for s in shape:
            total = b.mul(total, s)
        fisher_yates(ctx, bitgen, total, byte_ptr(ctx, out), I64(word.width // 8), word)
    else:
        others = [d for d in range(nd) if d != axis]
        strides = [[ctx.stride(out, d) for d in others]]
        with nest(ctx, [shape[d] for d in others], [byte_ptr(ctx, out)], strides, name="slice") as (base,):
            fisher_yates(ctx, bitgen, shape[axis], base, ctx.stride(out, axis), word)
    release(ctx, gen, taken)
    drop_copy(ctx, copy)
    return [new_slot, out]


__all__ = ["fisher_yates", "lower_permutation", "lower_permuted"]
