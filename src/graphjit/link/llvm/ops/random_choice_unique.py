"""Native ``choice`` without replacement, numpy's Generator.choice(replace=False, shuffle=True) step for step.

Without ``p``: a population over 10000 of which more than 1/50 is taken is tail-shuffled (``arange(pop)``,
``_shuffle_int`` from ``pop - size`` down, the last ``size`` taken); otherwise Floyd's algorithm with numpy's
open-addressing hash set (``1 + mask`` slots, mask covering ``1.2 * size``), then ``_shuffle_int`` of the sample;
every index from ``random_bounded_uint64(0, i)``.  With ``p``: numpy's checks of p, "Fewer non-zero entries",
then rounds: ``random()`` for each missing index, p zeroed at the indices found, ``cdf = cumsum(p) / cdf[-1]``,
``searchsorted(side='right')``, the new indices kept in order of first appearance.

The ChoiceRV registration of random_choice.py (with replacement) is replaced here by one lowering for both.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.random import ChoiceRV

from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8
from graphjit.link.llvm.loops.rows import load_as
from graphjit.link.llvm.ops.random import _REAL, native_unavailable, note_long_draw, npr_function
from graphjit.link.llvm.ops.random_choice import (_check_p, _search_right, can_lower_choice, choice_population,
                                                  lower_choice, write_picks)
from graphjit.link.llvm.ops.random_state import (acquire, bitgen_pointer, copy_is_native, drop_copy, generator_for,
                                                 release)
from graphjit.link.llvm.registry import lowerings

DBL = ir.DoubleType()
EMPTY = I64(-1)          # numpy's empty hash slot, (uint64_t)-1


@contextlib.contextmanager
def while_loop(ctx: GraphContext, cond: Callable[[], ir.Value], name: str) -> Iterator[None]:
    """``while cond(): body`` (cond is emitted in the loop's head)."""
    b = ctx.builder
    head, body, end = (b.append_basic_block(f"{name}.{w}") for w in ("cond", "body", "end"))
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(cond(), body, end)
    b.position_at_end(body)
    yield
    b.branch(head)
    b.position_at_end(end)


def _bounded(ctx: GraphContext) -> ir.Function:
    return npr_function(ctx, "random_bounded_uint64", I64, [I64, I64, I64, I8])


def shuffle_int(ctx: GraphContext, bitgen: ir.Value, n: ir.Value, first: ir.Value, data: ir.Value) -> None:
    """numpy's _shuffle_int: for i = n-1 down to first, swap data[i] and data[random_bounded_uint64(0, i)]."""
    b = ctx.builder
    draw = _bounded(ctx)
    with ctx.for_range(b.sub(n, first), name="shuf") as t:
        i = b.sub(b.sub(n, I64(1)), t)
        j = b.call(draw, [bitgen, I64(0), i, I64(0), I8(0)])
        pi, pj = b.gep(data, [i]), b.gep(data, [j])
        vi, vj = b.load(pi), b.load(pj)
        b.store(vi, pj)
        b.store(vj, pi)


def _probe(ctx: GraphContext, table: ir.Value, mask: ir.Value, loc: ir.Value, stop: Callable[[ir.Value], ir.Value]):
    """Linear probing from loc & mask until stop(slot value); the final slot index (in an alloca)."""
    b = ctx.builder
    at = ctx.alloca(I64)
    b.store(b.and_(loc, mask), at)
    with while_loop(ctx, lambda: b.not_(stop(b.load(b.gep(table, [b.load(at)])))), "probe"):
        b.store(b.and_(b.add(b.load(at), I64(1)), mask), at)
    return b.load(at)


def _floyd(ctx: GraphContext, node: Apply, bitgen: ir.Value, pop: ir.Value, size: ir.Value, idx: ir.Value,
           table: ir.Value, mask: ir.Value) -> None:
    """numpy's Floyd sample of size distinct indices below pop into idx, with its hash set in table."""
    b = ctx.builder
    draw = _bounded(ctx)
    with ctx.for_range(b.add(mask, I64(1)), name="hinit") as k:
        b.store(EMPTY, b.gep(table, [k]))
    with ctx.for_range(size, name="floyd") as t:
        j = b.add(b.sub(pop, size), t)
        val = b.call(draw, [bitgen, I64(0), j, I64(0), I8(0)])
        loc = _probe(ctx, table, mask, val,
                     lambda v: b.or_(b.icmp_unsigned("==", v, EMPTY), b.icmp_unsigned("==", v, val)))
        fresh = b.icmp_unsigned("==", b.load(b.gep(table, [loc])), EMPTY)
        with b.if_else(fresh) as (new, taken):
            with new:
                b.store(val, b.gep(table, [loc]))
                b.store(val, b.gep(idx, [t]))
            with taken:
                loc2 = _probe(ctx, table, mask, j, lambda v: b.icmp_unsigned("==", v, EMPTY))
                b.store(j, b.gep(table, [loc2]))
                b.store(j, b.gep(idx, [t]))


def _without_p(ctx: GraphContext, node: Apply, bitgen: ir.Value, pop: ir.Value, size: ir.Value,
               idx: ir.Value) -> None:
    """numpy's choice(pop, size, replace=False) indices into idx (tail shuffle or Floyd, then the shuffle)."""
    b = ctx.builder
    tail = b.and_(b.icmp_signed(">", pop, I64(10000)), b.icmp_signed(">", size, b.sdiv(pop, I64(50))))
    set_size = b.fptoui(b.fmul(b.sitofp(size, DBL), DBL(1.2)), I64)
    mask = set_size
    for shift in (1, 2, 4, 8, 16, 32):
        mask = b.or_(mask, b.lshr(mask, I64(shift)))
    # only the branch taken gets its buffer's full length
    table = ctx.data(ctx.temp_array(node, "uint64", [b.select(tail, I64(1), b.add(mask, I64(1)))], "hash"))
    full = ctx.data(ctx.temp_array(node, "int64", [b.select(tail, pop, I64(0))], "pool"))
    with b.if_else(tail) as (shuffled, floyd):
        with shuffled:
            with ctx.for_range(pop, name="iota") as i:
                b.store(i, b.gep(full, [i]))
            first = b.sub(pop, size)
            shuffle_int(ctx, bitgen, pop, b.select(b.icmp_signed("<", first, I64(1)), I64(1), first), full)
            with ctx.for_range(size, name="tail") as t:
                b.store(b.load(b.gep(full, [b.add(first, t)])), b.gep(idx, [t]))
        with floyd:
            _floyd(ctx, node, bitgen, pop, size, idx, table, mask)
            shuffle_int(ctx, bitgen, size, I64(1), idx)


def _with_p(ctx: GraphContext, node: Apply, bitgen: ir.Value, p: ir.Value, p_dtype: str, pop: ir.Value,
            size: ir.Value, idx: ir.Value) -> None:
    """numpy's rounds of choice(..., replace=False, p): uniforms, cdf of the remaining p, first appearances."""
    b = ctx.builder
    weights = ctx.data(ctx.temp_array(node, "float64", [pop], "pw"))
    cdf = ctx.data(ctx.temp_array(node, "float64", [pop], "cdf"))
    xs = ctx.data(ctx.temp_array(node, "float64", [size], "u"))
    with ctx.for_range(pop, name="pw") as i:
        v = load_as(ctx, b.bitcast(ctx.element_ptr(p, [i]), ir.IntType(8).as_pointer()), p_dtype, "float64")
        b.store(v, b.gep(weights, [i]))
    uniform = npr_function(ctx, "random_standard_uniform", DBL, [])
    found = ctx.alloca(I64, name=ctx.name(node, "found"))
    b.store(I64(0), found)
    with while_loop(ctx, lambda: b.icmp_signed("<", b.load(found), size), "round"):
        start = b.load(found)
        missing = b.sub(size, start)
        with ctx.for_range(missing, name="u") as t:
            b.store(b.call(uniform, [bitgen]), b.gep(xs, [t]))
        acc = ctx.alloca(DBL)
        b.store(DBL(0.0), acc)
        with ctx.for_range(pop, name="cum") as i:
            s = b.fadd(b.load(acc), b.load(b.gep(weights, [i])))
            b.store(s, acc)
            b.store(s, b.gep(cdf, [i]))
        last = b.load(acc)
        with ctx.for_range(pop, name="norm") as i:
            ptr = b.gep(cdf, [i])
            b.store(b.fdiv(b.load(ptr), last), ptr)
        with ctx.for_range(missing, name="pick") as t:
            k = _search_right(ctx, cdf, pop, b.load(b.gep(xs, [t])))
            weight = b.gep(weights, [k])
            # an index found already has weight 0 (found in an earlier round: numpy zeroed it; in this one: a repeat)
            with b.if_then(b.fcmp_ordered("!=", b.load(weight), DBL(0.0))):
                b.store(DBL(0.0), weight)
                n = b.load(found)
                b.store(k, b.gep(idx, [n]))
                b.store(b.add(n, I64(1)), found)


def _check_nonzero(ctx: GraphContext, node: Apply, p: ir.Value, p_dtype: str, pop: ir.Value, size: ir.Value):
    b = ctx.builder
    count = ctx.alloca(I64, name=ctx.name(node, "nz"))
    b.store(I64(0), count)
    with ctx.for_range(pop, name="nz") as i:
        v = load_as(ctx, b.bitcast(ctx.element_ptr(p, [i]), ir.IntType(8).as_pointer()), p_dtype, "float64")
        b.store(b.add(b.load(count), b.zext(b.fcmp_ordered(">", v, DBL(0.0)), I64)), count)
    ctx.raise_if(b.icmp_signed("<", b.load(count), size), node, "ValueError",
                 f"{node.op}: Fewer non-zero entries in p than size")


def lower_choice_unique(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.choice(a, size, replace=False, p)."""
    b = ctx.builder
    params, pvars, shape, count, drawing, pop = choice_population(ctx, node, inputs)
    a, a_var = params[0], pvars[0]
    if node.op.has_p:
        _check_p(ctx, node, params[1], pvars[1].type.dtype, pop)
    ctx.raise_if(b.icmp_signed(">", count, pop), node, "ValueError",
                 f"{node.op}: Cannot take a larger sample than population when replace is False")
    if node.op.has_p:
        _check_nonzero(ctx, node, params[1], pvars[1].type.dtype, pop, count)
    note_long_draw(ctx, node)
    out = ctx.allocate(node, 1, shape)
    idx = ctx.data(ctx.temp_array(node, "int64", [count], "idx"))
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    bitgen = bitgen_pointer(ctx, gen)
    taken = acquire(ctx, gen)
    if node.op.has_p:
        _with_p(ctx, node, bitgen, params[1], pvars[1].type.dtype, pop, count, idx)
    else:
        _without_p(ctx, node, bitgen, pop, count, idx)
    release(ctx, gen, taken)
    drop_copy(ctx, copy)
    write_picks(ctx, node, out, idx, a, a_var, count)
    return [new_slot, out]


def can_lower_any_choice(node: Apply) -> bool:
    """With or without replacement: real dtypes, numpy's archive usable, the new generator read by outputs only."""
    op = node.op
    if op.replace:
        return can_lower_choice(node)
    return ((op.inplace or copy_is_native(node)) and native_unavailable() is None
            and all(v.type.dtype in _REAL for v in node.inputs[1:] + node.outputs[1:]))


def lower_any_choice(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.choice, with or without replacement."""
    return (lower_choice if node.op.replace else lower_choice_unique)(ctx, node, inputs)


lowerings.register(ChoiceRV, applies=can_lower_any_choice, objects=True)(lower_any_choice)

__all__ = ["lower_any_choice", "can_lower_any_choice", "shuffle_int", "while_loop"]
