"""Lowerings of Nonzero and Bincount, and the helpers the searching and sorting lowerings share (numpy's order
with NaN last, strided walks, loops). Nonzero's and Bincount's lengths depend on the data: a counting pass over
the input, then ctx.allocate with that length, then a filling pass; no Python round trip. SearchSorted:
ops/searchsorted.py; Unique: ops/unique.py.

Every pass walks its operands by their strides (any layout: Fortran order, negative strides, zero-size).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.search import Bincount, Nonzero

from graphjit.link.llvm.ir.casts import compute_type
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8P
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.rows import advance, byte_ptr, load_as, strides_of
from graphjit.link.llvm.registry import lowerings


def real_dtypes(node: Apply) -> bool:
    """Real dtypes other than float16 (complex and float16 keep perform)."""
    return all(np.dtype(v.type.dtype).kind in "biuf" and v.type.dtype != "float16"
               for v in node.inputs + node.outputs)


def compare_dtype(dtype: str) -> str:
    """The dtype values of dtype are ordered in (bool as uint8: False < True)."""
    return "uint8" if dtype == "bool" else dtype


def less(b: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """i1: x sorts before y in numpy's order (NaN after every number, NaNs tied)."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        nan_y = b.and_(b.fcmp_unordered("uno", y, y), b.fcmp_ordered("ord", x, x))
        return b.or_(b.fcmp_ordered("<", x, y), nan_y)
    return (b.icmp_signed if kind == "i" else b.icmp_unsigned)("<", x, y)


def same(b: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str, nan_equal: bool) -> ir.Value:
    """i1: x == y (and, if nan_equal, NaN equals NaN: numpy.unique's equal_nan)."""
    if np.dtype(dtype).kind != "f":
        return b.icmp_unsigned("==", x, y)
    eq = b.fcmp_ordered("==", x, y)
    if not nan_equal:
        return eq
    return b.or_(eq, b.and_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y)))


def nonzero_test(ctx: LowerContext, ptr: ir.Value, dtype: str) -> ir.Value:
    """i1: the element at byte pointer ptr is not zero (NaN is not zero)."""
    return load_as(ctx, ptr, dtype, "bool")


@contextlib.contextmanager
def walk(ctx: GraphContext, arrays: Sequence[ir.Value], ndim: int, name: str
         ) -> Iterator[tuple[list[ir.Value], list[ir.Value]]]:
    """C-order loops over the first array's shape; yields (byte pointer of each array, the indices)."""
    with contextlib.ExitStack() as stack:
        ptrs = [byte_ptr(ctx, a) for a in arrays]
        strides = [strides_of(ctx, a, ndim) for a in arrays]
        indices = []
        for d in range(ndim):
            i = stack.enter_context(ctx.for_range(ctx.shape(arrays[0], d), name=f"{name}{d}"))
            indices.append(i)
            ptrs = [advance(ctx, p, i, st[d]) for p, st in zip(ptrs, strides)]
        yield ptrs, indices


def while_loop(ctx: LowerContext, cond: Callable[[], ir.Value], body: Callable[[], None], name: str) -> None:
    """while cond(): body() (both emit at the builder's position; state lives in allocas)."""
    b = ctx.builder
    head, loop, end = (b.append_basic_block(f"{name}.{s}") for s in ("cond", "body", "end"))
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(cond(), loop, end)
    b.position_at_end(loop)
    body()
    b.branch(head)
    b.position_at_end(end)


def counter(ctx: GraphContext, name: str, start: ir.Value = I64(0)) -> ir.AllocaInstr:
    """An i64 stack slot set to start."""
    slot = ctx.alloca(I64, name=name)
    ctx.builder.store(start, slot)
    return slot


def _kernel(ctx: GraphContext, name: str, ret: ir.Type, args: list) -> tuple[ir.Function, LowerContext | None]:
    """(the kernel, a context at its entry when its body is still to be built, else None)."""
    fn, new = kernel_function(ctx.module, name, ir.FunctionType(ret, args))
    return fn, (LowerContext(ir.IRBuilder(fn.append_basic_block("entry"))) if new else None)


def _row_loop(kctx: LowerContext, p: ir.Value, stride: ir.Value, n: ir.Value, item: int,
              body: Callable[[ir.Value, ir.Value], None]) -> None:
    """body(index, byte pointer) over a strided row: a unit-stride loop the vectoriser can take, or the strided one."""
    b = kctx.builder
    with b.if_else(b.icmp_signed("==", stride, I64(item))) as (unit, other):
        for step in (unit, other):
            with step:
                st = I64(item) if step is unit else stride
                with kctx.for_range(n, name="row") as i:
                    body(i, advance(kctx, p, i, st))


def _count_kernel(ctx: GraphContext, dtype: str) -> ir.Function:
    """``i64 (i8* row, i64 stride, i64 n)``: how many elements of the row are nonzero."""
    fn, kctx = _kernel(ctx, f"nonzero_count_{dtype}", I64, [I8P, I64, I64])
    if kctx is not None:
        b = kctx.builder
        total = kctx.alloca(I64, name="total")
        b.store(I64(0), total)
        _row_loop(kctx, *fn.args, np.dtype(dtype).itemsize,
                  lambda i, p: b.store(b.add(b.load(total), b.zext(nonzero_test(kctx, p, dtype), I64)), total))
        b.ret(b.load(total))
    return fn


def _fill_kernel(ctx: GraphContext, dtype: str) -> ir.Function:
    """``i64 (i8* row, i64 stride, i64 n, i64* dst, i64 room, i64 k)``: the index of each nonzero element of the
    row written at dst[k], k counting on. No branch on the data: every element writes its index at dst[k] and k
    moves on past a nonzero one; the loop stops once k reaches room (the rest of the row is zeros)."""
    fn, kctx = _kernel(ctx, f"nonzero_fill_{dtype}", I64, [I8P, I64, I64, I64.as_pointer(), I64, I64])
    if kctx is not None:
        b = kctx.builder
        row, stride, n, dst, room, k0 = fn.args
        i, k = kctx.alloca(I64, name="i"), kctx.alloca(I64, name="k")
        b.store(k0, k)
        item = np.dtype(dtype).itemsize
        with b.if_else(b.icmp_signed("==", stride, I64(item))) as (unit, other):
            for variant in (unit, other):
                with variant:
                    st = I64(item) if variant is unit else stride
                    b.store(I64(0), i)

                    def put(st: ir.Value = st) -> None:
                        iv, kv = b.load(i), b.load(k)
                        b.store(iv, b.gep(dst, [kv]))
                        b.store(b.add(kv, b.zext(nonzero_test(kctx, advance(kctx, row, iv, st), dtype), I64)), k)
                        b.store(b.add(iv, I64(1)), i)

                    while_loop(kctx, lambda: b.and_(b.icmp_signed("<", b.load(i), n),
                                                    b.icmp_signed("<", b.load(k), room)), put, "fill")
        b.ret(b.load(k))
    return fn


@lowerings.register(Nonzero, applies=real_dtypes)
def lower_nonzero(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Count the nonzero elements, allocate (ndim, count), then write each one's indices (C order): a kernel per
    innermost row writes the last index row, the outer indices are filled in after it."""
    b = ctx.builder
    (a,) = inputs
    dtype, ndim = node.inputs[0].type.dtype, node.inputs[0].type.ndim
    last = ndim - 1
    row_args = [ctx.stride(a, last), ctx.shape(a, last)]
    count = counter(ctx, ctx.name(node, "count"))
    with walk(ctx, [a], last, "nzc") as ((p,), _):
        b.store(b.add(b.load(count), b.call(_count_kernel(ctx, dtype), [p, *row_args])), count)
    total = b.load(count)
    out = ctx.allocate(node, 0, [I64(ndim), total])
    data = ctx.data(out)
    k = counter(ctx, ctx.name(node, "k"))
    with walk(ctx, [a], last, "nzf") as ((p,), idx):
        k0 = b.load(k)
        k1 = b.call(_fill_kernel(ctx, dtype), [p, *row_args, b.gep(data, [b.mul(I64(last), total)]), total, k0])
        b.store(k1, k)
        for d, i in enumerate(idx):
            with ctx.for_range(k1, start=k0, name=f"nzo{d}") as t:
                b.store(i, b.gep(data, [b.add(b.mul(I64(d), total), t)]))
    return [out]


def _scan_kernel(ctx: GraphContext, dtype: str) -> ir.Function:
    """``i64 (i8* x, i64 stride, i64 n, i64* lowest)``: the largest value (-1 if none); *lowest = min(0, values)."""
    fn, kctx = _kernel(ctx, f"bincount_scan_{dtype}", I64, [I8P, I64, I64, I64.as_pointer()])
    if kctx is not None:
        b = kctx.builder
        x, stride, n, lowest = fn.args
        top, low = kctx.alloca(I64, name="top"), kctx.alloca(I64, name="low")
        b.store(I64(-1), top)
        b.store(I64(0), low)

        def scan(i: ir.Value, p: ir.Value) -> None:
            v = load_as(kctx, p, dtype, "int64")
            t, lo = b.load(top), b.load(low)
            b.store(b.select(b.icmp_signed(">", v, t), v, t), top)
            b.store(b.select(b.icmp_signed("<", v, lo), v, lo), low)

        _row_loop(kctx, x, stride, n, np.dtype(dtype).itemsize, scan)
        b.store(b.load(low), lowest)
        b.ret(b.load(top))
    return fn


def _add_kernel(ctx: GraphContext, dtype: str, wdt: str | None) -> ir.Function:
    """``void (i8* x, i64 stride, i64 n, i8* w, i64 w stride, T* out)``: out[x[i]] += 1 (or += w[i])."""
    odt = "int64" if wdt is None else "float64"
    fn, kctx = _kernel(ctx, f"bincount_add_{dtype}_{wdt}", ir.VoidType(),
                       [I8P, I64, I64, I8P, I64, compute_type(odt).as_pointer()])
    if kctx is not None:
        b = kctx.builder
        x, stride, n, w, sw, out = fn.args
        with kctx.for_range(n, name="add") as i:
            slot = b.gep(out, [load_as(kctx, advance(kctx, x, i, stride), dtype, "int64")])
            if wdt is None:
                b.store(b.add(b.load(slot), I64(1)), slot)
            else:
                b.store(b.fadd(b.load(slot), load_as(kctx, advance(kctx, w, i, sw), wdt, "float64")), slot)
        b.ret_void()
    return fn


@lowerings.register(Bincount, applies=real_dtypes)
def lower_bincount(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Check and find the largest value, allocate max(largest + 1, minlength) zeros, then count / add weights."""
    b = ctx.builder
    x = inputs[0]
    w = inputs[1] if len(inputs) > 1 else None
    xdt, odt = node.inputs[0].type.dtype, node.outputs[0].type.dtype
    n, sx = ctx.shape(x, 0), ctx.stride(x, 0)
    if w is not None:
        ctx.raise_if(b.icmp_signed("!=", ctx.shape(w, 0), n), node, "ValueError",
                     "The weights and list don't have the same length (%lld and %lld).", [ctx.shape(w, 0), n])
    low = ctx.alloca(I64, name=ctx.name(node, "low"))
    top = b.call(_scan_kernel(ctx, xdt), [byte_ptr(ctx, x), sx, n, low])
    ctx.raise_if(b.icmp_signed("<", b.load(low), I64(0)), node, "ValueError",
                 "'list' argument must have no negative elements (found %lld)", [b.load(low)])
    length = b.add(b.select(b.icmp_signed(">", top, I64(node.op.minlength - 1)), top,
                            I64(node.op.minlength - 1)), I64(1))
    out = ctx.allocate(node, 0, [length])
    data = ctx.data(out)
    zero = ir.Constant(compute_type(odt), 0.0 if odt == "float64" else 0)
    with ctx.for_range(length, name="bcz") as i:
        b.store(zero, b.gep(data, [i]))
    wargs = [ir.Constant(I8P, None), I64(0)] if w is None else [byte_ptr(ctx, w), ctx.stride(w, 0)]
    wdt = None if w is None else node.inputs[1].type.dtype
    b.call(_add_kernel(ctx, xdt, wdt), [byte_ptr(ctx, x), sx, n, *wargs, data])
    return [out]


__all__ = ["real_dtypes", "compare_dtype", "less", "same", "walk", "while_loop", "counter", "nonzero_test"]
