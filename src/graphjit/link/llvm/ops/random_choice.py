"""Native ``choice`` with replacement, numpy's Generator.choice algorithm step for step.

Without ``p``: numpy's checks of ``a``, then ``integers(0, pop_size, size)`` (one ``random_bounded_uint64_fill``
call) and ``a[idx]``.  With ``p``: numpy's checks of ``p`` (its Kahan sum for NaN and the tolerance
``max(sqrt(eps64), sqrt(eps of p's dtype))``, no negative entry), ``cdf = cumsum(p) / cdf[-1]``, one
``random_standard_uniform`` per element (``Generator.random``) and ``searchsorted(cdf, u, side='right')``.
Without replacement numpy shuffles (or hashes, for a small sample of a large population): that keeps perform.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply, Variable

from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8
from graphjit.link.llvm.loops.rows import byte_ptr, load_as, store_as
from graphjit.link.llvm.ops.random import _REAL, native_unavailable, note_long_draw, npr_function, split_inputs
from graphjit.link.llvm.ops.random_loops import sample_shape
from graphjit.link.llvm.ops.random_state import acquire, bitgen_pointer, copy_is_native, drop_copy, generator_for, release

DBL = ir.DoubleType()


def can_lower_choice(node: Apply) -> bool:
    """With replacement, real dtypes, numpy's archive usable, the new generator read by graph outputs only."""
    op = node.op
    return (op.replace and (op.inplace or copy_is_native(node)) and native_unavailable() is None
            and all(v.type.dtype in _REAL for v in node.inputs[1:] + node.outputs[1:]))


def _check_p(ctx: GraphContext, node: Apply, p: ir.Value, p_dtype: str, pop: ir.Value) -> None:
    """numpy's checks of p: length, NaN (in its Kahan sum), negative entries, the sum's distance to 1."""
    b = ctx.builder
    n = ctx.shape(p, 0)
    ctx.raise_if(b.icmp_signed("!=", n, pop), node, "ValueError", f"{node.op}: a and p must have same size")
    total, comp, negative = (ctx.alloca(DBL, name=ctx.name(node, w)) for w in ("psum", "pcomp", "pneg"))
    for slot in (total, comp, negative):
        b.store(DBL(0.0), slot)
    with ctx.for_range(n, name="p") as i:
        v = load_as(ctx, b.bitcast(ctx.element_ptr(p, [i]), ir.IntType(8).as_pointer()), p_dtype, "float64")
        y = b.fsub(v, b.load(comp))                       # Kahan: numpy's kahan_sum
        t = b.fadd(b.load(total), y)
        b.store(b.fsub(b.fsub(t, b.load(total)), y), comp)
        b.store(t, total)
        neg = b.fcmp_ordered("<", v, DBL(0.0))
        b.store(b.select(neg, DBL(1.0), b.load(negative)), negative)
    s = b.load(total)
    ctx.raise_if(b.fcmp_unordered("uno", s, s), node, "ValueError", f"{node.op}: Probabilities contain NaN")
    ctx.raise_if(b.fcmp_ordered("!=", b.load(negative), DBL(0.0)), node, "ValueError",
                 f"{node.op}: Probabilities are not non-negative")
    atol = max(float(np.sqrt(np.finfo(np.float64).eps)), float(np.sqrt(np.finfo(p_dtype).eps)))
    far = b.fcmp_ordered(">", ctx.call_intrinsic("fabs", [b.fsub(s, DBL(1.0))]), DBL(atol))
    ctx.raise_if(far, node, "ValueError", f"{node.op}: Probabilities do not sum to 1. See Notes section of "
                 "docstring for more information.")


def _cdf(ctx: GraphContext, node: Apply, p: ir.Value, p_dtype: str, pop: ir.Value) -> ir.Value:
    """cumsum(p) / its last element, as numpy computes it (float64, sequential)."""
    b = ctx.builder
    cdf = ctx.temp_array(node, "float64", [pop], "cdf")
    data = ctx.data(cdf)
    acc = ctx.alloca(DBL, name=ctx.name(node, "cum"))
    b.store(DBL(0.0), acc)
    with ctx.for_range(pop, name="cum") as i:
        v = load_as(ctx, b.bitcast(ctx.element_ptr(p, [i]), ir.IntType(8).as_pointer()), p_dtype, "float64")
        s = b.fadd(b.load(acc), v)
        b.store(s, acc)
        b.store(s, b.gep(data, [i]))
    last = b.load(acc)
    with ctx.for_range(pop, name="norm") as i:
        ptr = b.gep(data, [i])
        b.store(b.fdiv(b.load(ptr), last), ptr)
    return data


def _search_right(ctx: GraphContext, cdf: ir.Value, n: ir.Value, u: ir.Value) -> ir.Value:
    """The number of cdf entries <= u (searchsorted side='right'), by bisection."""
    b = ctx.builder
    lo, hi = ctx.alloca(I64), ctx.alloca(I64)
    b.store(I64(0), lo)
    b.store(n, hi)
    cond = b.append_basic_block("bisect.cond")
    body = b.append_basic_block("bisect.body")
    end = b.append_basic_block("bisect.end")
    b.branch(cond)
    b.position_at_end(cond)
    b.cbranch(b.icmp_signed("<", b.load(lo), b.load(hi)), body, end)
    b.position_at_end(body)
    mid = b.add(b.load(lo), b.ashr(b.sub(b.load(hi), b.load(lo)), I64(1)))
    le = b.fcmp_ordered("<=", b.load(b.gep(cdf, [mid])), u)
    b.store(b.select(le, b.add(mid, I64(1)), b.load(lo)), lo)
    b.store(b.select(le, b.load(hi), mid), hi)
    b.branch(cond)
    b.position_at_end(end)
    return b.load(lo)


def choice_population(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> tuple:
    """(params, their variables, sample shape, element count, whether any is drawn, population size), with
    numpy's checks of a."""
    b = ctx.builder
    size, params, pvars = split_inputs(node, inputs)
    a, a_var = params[0], pvars[0]
    shape = sample_shape(ctx, node, size, params, [0] * len(params)) if size is not None else []
    count = I64(1)
    for n in shape:
        count = b.mul(count, n)
    drawing = b.icmp_signed("!=", count, I64(0))
    if a_var.ndim == 0:
        pop = load_as(ctx, byte_ptr(ctx, a), a_var.type.dtype, "int64")
        ctx.raise_if(b.and_(drawing, b.icmp_signed("<=", pop, I64(0))), node, "ValueError",
                     f"{node.op}: a must be a positive integer unless no samples are taken")
    else:
        pop = ctx.shape(a, 0)
        ctx.raise_if(b.and_(drawing, b.icmp_signed("==", pop, I64(0))), node, "ValueError",
                     f"{node.op}: a cannot be empty unless no samples are taken")
    return params, pvars, shape, count, drawing, pop


def write_picks(ctx: GraphContext, node: Apply, out: ir.Value, idx: ir.Value, a: ir.Value, a_var: Variable,
                count: ir.Value) -> None:
    """out[i] = idx[i] (a an int) or a[idx[i]], cast to the sample's dtype."""
    b = ctx.builder
    out_dtype = node.outputs[1].type.dtype
    dst = b.bitcast(byte_ptr(ctx, out), ir.IntType(8).as_pointer())
    size_of = np.dtype(out_dtype).itemsize
    with ctx.for_range(count, name="pick") as i:
        k = b.load(b.gep(idx, [i]))
        if a_var.ndim == 0:
            value = cast_value(b, k, "int64", out_dtype)
        else:
            src = b.bitcast(ctx.element_ptr(a, [k]), ir.IntType(8).as_pointer())
            value = load_as(ctx, src, a_var.type.dtype, out_dtype)
        store_as(ctx, b.gep(dst, [b.mul(i, I64(size_of))]), value, out_dtype)


def lower_choice(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.choice(a, size, replace=True, p) (registered in random_choice_unique.py with the
    replace=False case)."""
    b = ctx.builder
    params, pvars, shape, count, drawing, pop = choice_population(ctx, node, inputs)
    a, a_var = params[0], pvars[0]
    cdf = None
    if node.op.has_p:
        _check_p(ctx, node, params[1], pvars[1].type.dtype, pop)
        cdf = _cdf(ctx, node, params[1], pvars[1].type.dtype, pop)
    note_long_draw(ctx, node)
    out = ctx.allocate(node, 1, shape)
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    bitgen = bitgen_pointer(ctx, gen)
    if cdf is None:
        idx = ctx.temp_array(node, "int64", [count], "idx")
        fill = npr_function(ctx, "random_bounded_uint64_fill", ir.VoidType(),
                            [I64, I64, I64, I8, I64.as_pointer()])
        taken = acquire(ctx, gen)
        with b.if_then(drawing):            # numpy's integers returns before drawing for an empty size
            b.call(fill, [bitgen, I64(0), b.sub(pop, I64(1)), count, I8(0), ctx.data(idx)])
        release(ctx, gen, taken)
    else:
        uniform = npr_function(ctx, "random_standard_uniform", DBL, [])
        taken = acquire(ctx, gen)
        idx = ctx.temp_array(node, "int64", [count], "idx")
        with ctx.for_range(count, name="u") as i:
            b.store(_search_right(ctx, cdf, pop, b.call(uniform, [bitgen])), b.gep(ctx.data(idx), [i]))
        release(ctx, gen, taken)
    drop_copy(ctx, copy)
    write_picks(ctx, node, out, ctx.data(idx), a, a_var, count)
    return [new_slot, out]
