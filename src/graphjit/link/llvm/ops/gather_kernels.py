"""The kernels of 1-d indexing (functions of the kernels module, compiled with the full pipeline): the bounds test
of an index vector, the gather ``out[i] = x[idx[i]]`` and the scatter ``t[idx[i]] (+)= y[i]``.

Indices reaching a gather or a scatter have been checked (``any_out_of_bounds``): the loops only wrap negative
ones, so they have no exit and LLVM can vectorise the gather. Strides are in bytes (any layout).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I8P, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.loops.nest import load_value, store_value

I1 = ir.IntType(1)


def define_kernel(module: ir.Module, name: str, ret: ir.Type, args: list, build: Callable) -> ir.Function:
    """The kernel `name` of module's kernels module, its body built by build(LowerContext, *args) when new."""
    fn, new = kernel_function(module, name, ir.FunctionType(ret, args))
    if new:
        kctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        build(kctx, *fn.args)
    return fn


def _at(b: ir.IRBuilder, base: ir.Value, i: ir.Value, stride: ir.Value | None, dtype: str) -> ir.Value:
    """A typed pointer to element i of a vector at base (i8*): strided in bytes, contiguous when stride is None."""
    ty = L.llvm_scalar_type(dtype).as_pointer()
    if stride is None:
        return b.gep(b.bitcast(base, ty), [i], inbounds=True)
    return b.bitcast(b.gep(base, [b.mul(i, stride)]), ty)


def _loops(k: LowerContext, count: ir.Value, stride: ir.Value, dtype: str, body: Callable, **kw) -> None:
    """body(i, stride or None) in a loop over count: a contiguous copy of the loop (stride == itemsize), which
    LLVM vectorises, and a strided one."""
    b = k.builder
    contiguous = b.icmp_signed("==", stride, I64(L.itemsize(dtype)))
    with b.if_else(contiguous) as (then, otherwise):
        with then:
            with k.for_range(count, name="c", **kw) as i:
                body(i, None)
        with otherwise:
            with k.for_range(count, name="s", **kw) as i:
                body(i, stride)


def load_index(b: ir.IRBuilder, ptr: ir.Value, dtype: str) -> ir.Value:
    """An integer index element as i64 (zero-extended when unsigned)."""
    v = b.load(ptr)
    if v.type.width == 64:
        return v
    return b.zext(v, I64) if np.dtype(dtype).kind == "u" else b.sext(v, I64)


def _wrap(b: ir.IRBuilder, v: ir.Value, n: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", v, I64(0)), b.add(v, n), v)


def any_out_of_bounds(ctx: LowerContext, idx: ir.Value, istride: ir.Value, m: ir.Value, n: ir.Value,
                      idtype: str) -> ir.Value:
    """i1: whether some of the m indices at idx (i8*, byte stride) is outside [-n, n) (uint64: outside [0, n))."""
    def build(k: LowerContext, p: ir.Value, s: ir.Value, count: ir.Value, length: ir.Value) -> None:
        b = k.builder
        acc = k.alloca(I1)
        b.store(ir.Constant(I1, 0), acc)
        def body(i: ir.Value, st: ir.Value | None) -> None:
            v = load_index(b, _at(b, p, i, st, idtype), idtype)
            bad = b.icmp_unsigned(">=", v if idtype == "uint64" else _wrap(b, v, length), length)
            b.store(b.or_(b.load(acc), bad), acc)

        _loops(k, count, s, idtype, body)
        b.ret(b.load(acc))

    fn = define_kernel(ctx.module, f"gj_index_bad_{idtype}", I1, [I8P, I64, I64, I64], build)
    return ctx.builder.call(fn, [idx, istride, m, n])


def gather(ctx: LowerContext, x: ir.Value, xs: ir.Value, idx: ir.Value, istride: ir.Value, out: ir.Value,
           m: ir.Value, n: ir.Value, dtype: str, idtype: str) -> None:
    """out[i] = x[idx[i]] for i < m (checked indices; out contiguous, typed)."""
    def build(k: LowerContext, xp: ir.Value, xst: ir.Value, p: ir.Value, s: ir.Value, o: ir.Value,
              count: ir.Value, length: ir.Value) -> None:
        b = k.builder
        def body(i: ir.Value, st: ir.Value | None) -> None:
            j = _wrap(b, load_index(b, _at(b, p, i, st, idtype), idtype), length)
            b.store(b.load(_at(b, xp, j, xst, dtype)), b.gep(o, [i], inbounds=True))

        _loops(k, count, s, idtype, body)
        b.ret_void()

    ptr = L.llvm_scalar_type(dtype).as_pointer()
    fn = define_kernel(ctx.module, f"gj_gather1_{dtype}_{idtype}", ir.VoidType(), [I8P, I64, I8P, I64, ptr, I64, I64],
                 build)
    fn.args[4].add_attribute("noalias")
    ctx.builder.call(fn, [x, xs, idx, istride, out, m, n])


def scatter(ctx: LowerContext, t: ir.Value, ts: ir.Value, idx: ir.Value, istride: ir.Value, y: ir.Value,
            ys: ir.Value, m: ir.Value, n: ir.Value, dtype: str, ydtype: str, idtype: str,
            combine: Callable | None, checked: bool) -> ir.Value:
    """t[idx[i]] = y[i] (or combine(t[idx[i]], y[i])) for i < m, in order. checked: stops at the first index
    out of bounds and returns its position (the caller raises; what was written is its own copy), else -1."""
    def build(k: LowerContext, tp: ir.Value, tst: ir.Value, p: ir.Value, s: ir.Value, yp: ir.Value,
              yst: ir.Value, count: ir.Value, length: ir.Value) -> None:
        b = k.builder

        def body(i: ir.Value, st: ir.Value | None) -> None:
            v = load_index(b, _at(b, p, i, st, idtype), idtype)
            j = _wrap(b, v, length)
            if checked:
                bad = b.icmp_unsigned(">=", v if idtype == "uint64" else j, length)
                with b.if_then(bad, likely=False):
                    b.ret(i)
            dst = _at(b, tp, j, tst, dtype)
            v = cast_value(b, load_value(b, _at(b, yp, i, yst, ydtype), ydtype), ydtype, dtype)
            store_value(b, dst, v if combine is None else combine(b, load_value(b, dst, dtype), v, dtype), dtype)

        _loops(k, count, s, idtype, body, vectorize=False)
        b.ret(I64(-1))

    kind = ("set" if combine is None else "inc") + ("_checked" if checked else "")
    fn = define_kernel(ctx.module, f"gj_scatter1_{kind}_{dtype}_{ydtype}_{idtype}", I64,
                 [I8P, I64, I8P, I64, I8P, I64, I64, I64], build)
    return ctx.builder.call(fn, [t, ts, idx, istride, y, ys, m, n])


__all__ = ["define_kernel", "any_out_of_bounds", "gather", "scatter", "load_index"]
