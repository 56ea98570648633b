"""The kernels of the general advanced index (functions of the kernels module, compiled with the full pipeline;
the entry's glue may be compiled with light passes, so no long loop stays there).

``index_loop`` runs the gather (read) or the writes (set, inc) of a resolved index: its static layout (dtypes,
how many basic dimensions before and after the broadcast ones, the index arrays' dtypes and ranks) names the
kernel, so every graph of that layout shares it; the run-time lengths, strides and offsets come in one i64
parameter block, loaded once at the kernel's entry. The mask kernels count a boolean row and list the byte
offsets of its true elements. Indices reaching these kernels have been checked.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Sequence

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.loops.nest import load_value, store_value
from graphjit.link.llvm.ops.gather_kernels import define_kernel, load_index
from graphjit.link.llvm.ops.shape import add_values

I64P = I64.as_pointer()


@dataclass(frozen=True)
class LoopLayout:
    """The static shape of an index loop: kind ('read', 'set', 'inc'), the indexed dtype and the dense one (the
    output for a read, y for a write), the numbers of basic dimensions before / after the broadcast ones and of
    broadcast dimensions, and each index array's (dtype, ndim, mask: its values are byte offsets)."""

    kind: str
    dtype: str
    dense_dtype: str
    n_before: int
    n_broadcast: int
    n_after: int
    arrays: tuple

    @property
    def name(self) -> str:
        """The kernel's name."""
        arrays = "_".join(f"m{nd}" if mask else f"{dt}.{nd}" for dt, nd, mask in self.arrays)
        return (f"gj_advidx_{self.kind}_{self.dtype}_{self.dense_dtype}_{self.n_before}_{self.n_broadcast}_"
                f"{self.n_after}_{arrays}")


def index_loop(ctx: LowerContext, layout: LoopLayout, indexed: ir.Value, dense: ir.Value,
               arrays: Sequence[ir.Value], params: Sequence[ir.Value]) -> None:
    """Call the layout's kernel: indexed and dense are i8* data, arrays the index arrays' i8* data, params the
    i64 values in the order the kernel reads them (see _build)."""
    b = ctx.builder
    fn = define_kernel(ctx.module, layout.name, ir.VoidType(), [I8P, I8P, I8P.as_pointer(), I64P],
                 lambda k, *args: _build(k, layout, *args))
    block = ctx.alloca(ir.ArrayType(I64, max(len(params), 1)))
    for j, v in enumerate(params):
        b.store(v, b.gep(block, [I32(0), I32(j)]))
    ptrs = ctx.alloca(ir.ArrayType(I8P, max(len(arrays), 1)))
    for j, v in enumerate(arrays):
        b.store(v, b.gep(ptrs, [I32(0), I32(j)]))
    b.call(fn, [indexed, dense, b.gep(ptrs, [I32(0), I32(0)]), b.gep(block, [I32(0), I32(0)])])


@contextlib.contextmanager
def _nest(k: LowerContext, shape: Sequence[ir.Value], name: str) -> Iterator[list]:
    """Plain nested loops (not vectorised, not unrolled: the loads are gathers, and compile time counts)."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(k.for_range(n, name=f"{name}{d}", unroll=False, vectorize=False))
               for d, n in enumerate(shape)]


def _build(k: LowerContext, layout: LoopLayout, xp: ir.Value, dp: ir.Value, aptrs: ir.Value,
           params: ir.Value) -> None:
    b = k.builder
    count = iter(range(1 << 20))

    def take(n: int) -> list:
        return [b.load(b.gep(params, [I64(next(count))])) for _ in range(n)]

    nb, nB, na = layout.n_before, layout.n_broadcast, layout.n_after
    (offset,) = take(1)
    before_len, before_stride = take(nb), take(nb)
    bshape = take(nB)
    after_len, after_stride = take(na), take(na)
    dense_stride = take(nb + nB + na)
    arrays = []
    for j, (dtype, ndim, mask) in enumerate(layout.arrays):
        strides = take(ndim)
        length, stride = (None, None) if mask else take(2)
        arrays.append((b.load(b.gep(aptrs, [I64(j)])), dtype, ndim, mask, strides, length, stride))
    with _nest(k, before_len + bshape, "o") as idx:
        off = offset
        for i, s in zip(idx[:nb], before_stride):
            off = b.add(off, b.mul(i, s))
        for data, dtype, ndim, mask, strides, length, stride in arrays:
            pos = I64(0)
            for i, s in zip(idx[nb + nB - ndim:], strides):
                pos = b.add(pos, b.mul(i, s))
            ptr = b.bitcast(b.gep(data, [pos]), L.llvm_scalar_type(dtype).as_pointer())
            v = load_index(b, ptr, dtype)
            if not mask:
                v = b.mul(b.select(b.icmp_signed("<", v, I64(0)), b.add(v, length), v), stride)
            off = b.add(off, v)
        doff = I64(0)
        for i, s in zip(idx, dense_stride):
            doff = b.add(doff, b.mul(i, s))
        with _nest(k, after_len, "a") as inner:
            ioff, dof = off, doff
            for i, s, t in zip(inner, after_stride, dense_stride[nb + nB:]):
                ioff, dof = b.add(ioff, b.mul(i, s)), b.add(dof, b.mul(i, t))
            _element(b, layout, b.gep(xp, [ioff]), b.gep(dp, [dof]))
    b.ret_void()


def _element(b: ir.IRBuilder, layout: LoopLayout, at_x: ir.Value, at_dense: ir.Value) -> None:
    """One element: read x into the dense side, or write (set / add) the dense value into x."""
    xptr = b.bitcast(at_x, L.llvm_scalar_type(layout.dtype).as_pointer())
    dptr = b.bitcast(at_dense, L.llvm_scalar_type(layout.dense_dtype).as_pointer())
    if layout.kind == "read":
        b.store(b.load(xptr), dptr)
        return
    v = cast_value(b, load_value(b, dptr, layout.dense_dtype), layout.dense_dtype, layout.dtype)
    if layout.kind == "inc":
        v = add_values(b, load_value(b, xptr, layout.dtype), v, layout.dtype)
    store_value(b, xptr, v, layout.dtype)


def mask_row_count(ctx: LowerContext, data: ir.Value, stride: ir.Value, n: ir.Value) -> ir.Value:
    """The number of true elements of a boolean row (i8* data, byte stride, length n)."""
    def build(k: LowerContext, p: ir.Value, s: ir.Value, length: ir.Value) -> None:
        b = k.builder
        acc = k.alloca(I64)
        b.store(I64(0), acc)
        with k.for_range(length, name="k") as i:
            hit = b.icmp_unsigned("!=", b.load(b.gep(p, [b.mul(i, s)])), ir.Constant(ir.IntType(8), 0))
            b.store(b.add(b.load(acc), b.zext(hit, I64)), acc)
        b.ret(b.load(acc))

    fn = define_kernel(ctx.module, "gj_mask_count", I64, [I8P, I64, I64], build)
    return ctx.builder.call(fn, [data, stride, n])


def mask_row_fill(ctx: LowerContext, data: ir.Value, stride: ir.Value, n: ir.Value, out: ir.Value,
                  base: ir.Value, step: ir.Value) -> ir.Value:
    """Write base + j * step at out (i64*) for each true element j of a boolean row; the number written."""
    def build(k: LowerContext, p: ir.Value, s: ir.Value, length: ir.Value, o: ir.Value, first: ir.Value,
              st: ir.Value) -> None:
        b = k.builder
        pos = k.alloca(I64)
        b.store(I64(0), pos)
        with k.for_range(length, name="k") as i:
            hit = b.icmp_unsigned("!=", b.load(b.gep(p, [b.mul(i, s)])), ir.Constant(ir.IntType(8), 0))
            with b.if_then(hit):
                at = b.load(pos)
                b.store(b.add(first, b.mul(i, st)), b.gep(o, [at]))
                b.store(b.add(at, I64(1)), pos)
        b.ret(b.load(pos))

    fn = define_kernel(ctx.module, "gj_mask_fill", I64, [I8P, I64, I64, I64P, I64, I64], build)
    return ctx.builder.call(fn, [data, stride, n, out, base, step])


__all__ = ["LoopLayout", "index_loop", "mask_row_count", "mask_row_fill"]
