"""Shared helpers of the axis-wise lowerings (softmax family, arg-reductions, scans, products): strided
loop nests over byte pointers, typed element access, and the small IR idioms they all use.

A *nest* walks some dimensions of an array (outermost first) and advances one byte pointer per operand by
that operand's stride in each dimension; a stride of 0 pins an operand (a reduced or broadcast dimension).
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

from llvmlite import ir

from graphjit.link.llvm.ir.casts import cast_value, compute_type

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.nest import load_value, store_value

I1 = ir.IntType(1)


def byte_ptr(ctx: LowerContext, arr: ir.Value) -> ir.Value:
    """The array's data pointer as i8*."""
    return ctx.data_bytes(arr)


def typed(ctx: LowerContext, ptr: ir.Value, dtype: str) -> ir.Value:
    """An i8* as a pointer to dtype's memory type."""
    return ctx.builder.bitcast(ptr, L.llvm_scalar_type(dtype).as_pointer())


def load_as(ctx: LowerContext, ptr: ir.Value, src: str, dst: str) -> ir.Value:
    """Load one element of dtype src at byte pointer ptr as a compute value of dtype dst."""
    return cast_value(ctx.builder, load_value(ctx.builder, typed(ctx, ptr, src), src), src, dst)


def store_as(ctx: LowerContext, ptr: ir.Value, value: ir.Value, dtype: str) -> None:
    """Store a compute value of dtype at byte pointer ptr."""
    store_value(ctx.builder, typed(ctx, ptr, dtype), value, dtype)


def advance(ctx: LowerContext, ptr: ir.Value, index: ir.Value, stride: ir.Value) -> ir.Value:
    """ptr + index * stride bytes."""
    b = ctx.builder
    return b.gep(ptr, [b.mul(index, stride)])


@contextlib.contextmanager
def nest(ctx: LowerContext, lengths: Sequence[ir.Value], bases: Sequence[ir.Value],
         strides: Sequence[Sequence[ir.Value]], name: str = "n") -> Iterator[list[ir.Value]]:
    """Loops over lengths advancing bases[k] by strides[k][d]; yields the current byte pointers."""
    with contextlib.ExitStack() as stack:
        ptrs = list(bases)
        for d, n in enumerate(lengths):
            i = stack.enter_context(ctx.for_range(n, name=f"{name}{d}"))
            ptrs = [advance(ctx, p, i, st[d]) for p, st in zip(ptrs, strides)]
        yield ptrs


def strides_of(ctx: LowerContext, arr: ir.Value, ndim: int) -> list[ir.Value]:
    """All strides (bytes) of an array struct."""
    return [ctx.stride(arr, d) for d in range(ndim)]


def scatter_strides(ctx: LowerContext, out: ir.Value, ndim: int, reduced: Sequence[int], keepdims: bool) -> list:
    """Strides of a reduction's output indexed by the input's dims (0 on reduced dims)."""
    strides, k = [], 0
    for d in range(ndim):
        if d in reduced:
            strides.append(I64(0))
            k += keepdims
        else:
            strides.append(ctx.stride(out, k))
            k += 1
    return strides


def fast(b: ir.IRBuilder, opname: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """A float binop marked reassoc/nsz (vectorisable reductions)."""
    instr = ir.instructions.Instruction(b.block, x.type, opname, (x, y), name="", flags=("reassoc", "nsz"))
    b._insert(instr)
    return instr


def const(dtype: str, value: float | int) -> ir.Constant:
    """A compute-type constant of dtype."""
    ty = compute_type(dtype)
    return ir.Constant(ty, float(value) if isinstance(ty, (ir.FloatType, ir.DoubleType)) else int(value))


def is_float(dtype: str) -> bool:
    """float32/float64 (float16 is not lowered by these helpers)."""
    return dtype in ("float32", "float64")


def internal_function(ctx: LowerContext, name: str, ret: ir.Type, args: Sequence[ir.Type],
                      noalias: Sequence[int] = ()) -> tuple[ir.Function, ir.IRBuilder, bool]:
    """An internal function of the module (reused if it exists); returns (fn, builder at entry, is_new)."""
    existing = ctx.module.globals.get(name)
    if existing is not None:
        return existing, None, False
    fn = ir.Function(ctx.module, ir.FunctionType(ret, list(args)), name)
    fn.linkage = "internal"
    for k in noalias:
        fn.args[k].add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry")), True


def unit_stride(ctx: LowerContext, stride: ir.Value, length: ir.Value, dtype: str) -> ir.Value:
    """i1: a row of length with this byte stride is contiguous (any stride when length <= 1)."""
    b = ctx.builder
    return b.or_(b.icmp_signed("==", stride, I64(L.itemsize(dtype))), b.icmp_signed("<=", length, I64(1)))


