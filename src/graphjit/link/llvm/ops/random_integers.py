"""Native ``integers``: numpy's bounded-integer draws (numpy/random/_bounded_integers.pyx.in), chosen as numpy does.

Both bounds 0-d: numpy checks them against the dtype's range (in Python integers: here in i128), then fills the
whole sample with one ``random_bounded_<utype>_fill(off=low, rng=high-1-low)`` call.  Otherwise it checks
``low < high`` everywhere and draws per element with ``random_bounded_uint64`` (64-bit dtypes) or
``random_buffered_bounded_<utype>`` (smaller ones, whose 32-bit buffer lives across the elements), ``rng`` and
``off`` computed in the next wider type; always Lemire's method (``use_masked`` false, so the mask is unused).
A size with no element returns before any check, as numpy's does.  Array bounds whose dtype does not cast
safely to the sample's (numpy then checks each value's range in Python) keep perform.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.random import IntegersRV

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I32, I64, I8
from graphjit.link.llvm.loops.rows import byte_ptr, load_as, nest
from graphjit.link.llvm.ops.random import can_lower_draw, note_long_draw, npr_function, split_inputs
from graphjit.link.llvm.ops.random_loops import broadcast_param_shape, check_broadcast, each_element, sample_shape
from graphjit.link.llvm.ops.random_state import acquire, bitgen_pointer, drop_copy, generator_for, release
from graphjit.link.llvm.registry import lowerings

I128 = ir.IntType(128)
# sample dtype -> (numpy's unsigned C type name, its width)
_UTYPE = {"int64": ("uint64", 64), "uint64": ("uint64", 64), "int32": ("uint32", 32), "uint32": ("uint32", 32),
          "int16": ("uint16", 16), "uint16": ("uint16", 16), "int8": ("uint8", 8), "uint8": ("uint8", 8),
          "bool": ("bool", 8)}


def _bounds(dtype: str) -> tuple[int, int]:
    if dtype == "bool":
        return 0, 1
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _wide(ctx: GraphContext, ptr: ir.Value, dtype: str) -> ir.Value:
    """One bound as i128 (exact for every integer dtype)."""
    v = load_as(ctx, ptr, dtype, dtype)
    if v.type.width == 1:
        return ctx.builder.zext(v, I128)
    signed = np.dtype(dtype).kind == "i"
    return ctx.builder.sext(v, I128) if signed else ctx.builder.zext(v, I128)


def can_lower_integers(node: Apply) -> bool:
    """Native unless array bounds do not cast safely to the sample's dtype."""
    if not can_lower_draw(node):
        return False
    _, _, pvars = split_inputs(node, [None] * len(node.inputs))
    dtype = node.outputs[1].type.dtype
    if dtype not in _UTYPE or any(np.dtype(v.type.dtype).kind not in "biu" for v in pvars):
        return False
    if all(v.ndim == 0 for v in pvars):
        return all(v.type.dtype != "uint64" for v in pvars) or dtype == "uint64"
    return all(np.can_cast(v.type.dtype, dtype) for v in pvars)


@lowerings.register(IntegersRV, applies=can_lower_integers, objects=True)
def lower_integers(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.integers (endpoint False, Lemire's method)."""
    b = ctx.builder
    size, params, pvars = split_inputs(node, inputs)
    ndims = [v.ndim for v in pvars]
    dtype = node.outputs[1].type.dtype
    utype, width = _UTYPE[dtype]
    uty = ir.IntType(width)
    shape = sample_shape(ctx, node, size, params, ndims)
    count = I64(1)
    for n in shape:
        count = b.mul(count, n)
    # numpy returns an empty sample of a given size before looking at the bounds
    live = b.icmp_signed("!=", count, I64(0)) if size is not None else ir.IntType(1)(1)
    scalar = all(n == 0 for n in ndims)
    if not scalar:
        check_broadcast(ctx, node, shape, params, ndims)
    lows, highs = (_scalar_bounds if scalar else _array_bounds)(ctx, node, params, pvars, live)
    note_long_draw(ctx, node)
    out = ctx.allocate(node, 1, shape)
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    bitgen = bitgen_pointer(ctx, gen)
    zero_u = I8(0)
    if scalar:
        fill = npr_function(ctx, f"random_bounded_{utype}_fill", ir.VoidType(), [uty, uty, I64, I8, uty.as_pointer()])
        off, rng = b.trunc(lows, uty), b.trunc(b.sub(b.sub(highs, I128(1)), lows), uty)
        taken = acquire(ctx, gen)
        b.call(fill, [bitgen, off, rng, count, zero_u, b.bitcast(byte_ptr(ctx, out), uty.as_pointer())])
        release(ctx, gen, taken)
        drop_copy(ctx, copy)
        return [new_slot, out]
    if width == 64:
        draw = npr_function(ctx, "random_bounded_uint64", uty, [uty, uty, uty, I8])
    else:
        draw = npr_function(ctx, f"random_buffered_bounded_{utype}", uty,
                            [uty, uty, uty, I8, I32.as_pointer(), I32.as_pointer()])
    bcnt, buf = ctx.alloca(I32, name=ctx.name(node, "bcnt")), ctx.alloca(I32, name=ctx.name(node, "buf"))
    b.store(I32(0), bcnt)
    b.store(I32(0), buf)
    taken = acquire(ctx, gen)
    with each_element(ctx, shape, [*params, out], [*ndims, len(shape)]) as (lo, hi, dst):
        low, high = _wide(ctx, lo, pvars[0].type.dtype), _wide(ctx, hi, pvars[1].type.dtype)
        off, rng = b.trunc(low, uty), b.trunc(b.sub(b.sub(high, I128(1)), low), uty)
        extra = [] if width == 64 else [bcnt, buf]
        value = b.call(draw, [bitgen, off, rng, ir.Constant(uty, 0), zero_u, *extra])
        b.store(value, b.bitcast(dst, uty.as_pointer()))
    release(ctx, gen, taken)
    drop_copy(ctx, copy)
    return [new_slot, out]


def _bounds_error(ctx: GraphContext, node: Apply, cond: ir.Value, low_nonzero: ir.Value) -> None:
    """numpy's format_bounds_error: 'high <= 0' when low is all zeros, else 'low >= high'."""
    b = ctx.builder
    ctx.raise_if(b.and_(cond, b.not_(low_nonzero)), node, "ValueError", f"{node.op}: high <= 0")
    ctx.raise_if(b.and_(cond, low_nonzero), node, "ValueError", f"{node.op}: low >= high")


def _scalar_bounds(ctx: GraphContext, node: Apply, params: Sequence[ir.Value], pvars: Sequence, live: ir.Value):
    """Both bounds 0-d: numpy's range checks in exact integers; (low, high) as i128."""
    b = ctx.builder
    dtype = node.outputs[1].type.dtype
    lb, ub = _bounds(dtype)
    low = _wide(ctx, byte_ptr(ctx, params[0]), pvars[0].type.dtype)
    high = _wide(ctx, byte_ptr(ctx, params[1]), pvars[1].type.dtype)
    last = b.sub(high, I128(1))
    ctx.raise_if(b.and_(live, b.icmp_signed("<", low, I128(lb))), node, "ValueError",
                 f"{node.op}: low is out of bounds for {dtype}")
    ctx.raise_if(b.and_(live, b.icmp_signed(">", last, I128(ub))), node, "ValueError",
                 f"{node.op}: high is out of bounds for {dtype}")
    _bounds_error(ctx, node, b.and_(live, b.icmp_signed(">", low, last)), b.icmp_signed("!=", low, I128(0)))
    return low, high


def _array_bounds(ctx: GraphContext, node: Apply, params: Sequence[ir.Value], pvars: Sequence, live: ir.Value):
    """Array bounds (cast safely to the sample's dtype): numpy's low < high check over their broadcast."""
    b = ctx.builder
    ndims = [v.ndim for v in pvars]
    nd = max(ndims)
    shape = broadcast_param_shape(ctx, params, ndims, nd)
    flags = [ctx.alloca(ir.IntType(1), name=ctx.name(node, w)) for w in ("cross", "lownz")]
    for f in flags:
        b.store(ir.IntType(1)(0), f)
    with each_element(ctx, shape, params, ndims, name="bnd") as (lo, hi):
        low, high = _wide(ctx, lo, pvars[0].type.dtype), _wide(ctx, hi, pvars[1].type.dtype)
        b.store(b.or_(b.load(flags[0]), b.icmp_signed(">=", low, high)), flags[0])
    lshape = ctx.shapes(params[0], ndims[0])
    strides = [ctx.stride(params[0], d) for d in range(ndims[0])]
    with nest(ctx, lshape, [byte_ptr(ctx, params[0])], [strides], name="lnz") as (lo,):
        nonzero = b.icmp_signed("!=", _wide(ctx, lo, pvars[0].type.dtype), I128(0))
        b.store(b.or_(b.load(flags[1]), nonzero), flags[1])
    _bounds_error(ctx, node, b.and_(live, b.load(flags[0])), b.load(flags[1]))
    return None, None


__all__ = ["lower_integers", "can_lower_integers"]
