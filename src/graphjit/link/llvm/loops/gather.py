"""The strided fallback of every group adapter: gather operands into unit-stride chunks, run the adapter, scatter.

A group's adapter (loops/drivers.py) calls its vectorised kernel on unit-stride operands.  Any other row (a
transposed or reversed operand, a broadcast one) used to run a strided copy of the group's fused scalar body
inside the adapter: one copy of the body per group in the entry's glue, whose math intrinsics also sent the glue
module's O0 codegen from fast-isel to SelectionDAG.  Instead the driver calls the function built here, shared
by every group of the graph:

``i32 glue.strided(adapter*, i64 start, i64 end, i8** ptrs, i64* strides, i8* scalars, i32 m, i64* itemsizes)``

runs the adapter over [start, end) in chunks of CHUNK elements: each of the m operands (the last is the
output) whose stride is not its element size is copied into a contiguous stack chunk (the output also back out
of it: an accumulating kernel reads it), the others are used in place (an operand read once per row has size and stride 0), and the
adapter is called on the chunk.  Elementwise groups read element i only to write element i, so an output aliasing an input
(an in-place group) still sees each input before it is overwritten.  Returns the adapter's first non-zero
status (a message index + 1), else 0.
"""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir.context import LowerContext, glue_function
from graphjit.link.llvm.ir.layouts import I8P, I32, I64

CHUNK = 128           # elements per chunk: m * 2 KiB of stack, and the kernel still runs whole vectors
_WIDTHS = (16, 8, 4, 2, 1)  # element sizes (bytes) of every supported dtype (16: complex128)
_SLOT = CHUNK * max(_WIDTHS)


def strided_runner(module: ir.Module, adapter_type: ir.FunctionType) -> ir.Function:
    """``glue.strided`` of module (module doc), built once per module."""
    def build(fn: ir.Function) -> None:
        adapter, start, end, ptrs, strides, packed, count, sizes = fn.args
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        b = ctx.builder
        copy = _copier(module)
        m = b.sext(count, I64)
        chunks = b.bitcast(b.alloca(I64, size=b.mul(m, I64(_SLOT // 8)), name="chunks"), I8P)
        cur = b.alloca(I8P, size=m, name="cur")
        out = b.sub(m, I64(1))
        n = b.sub(end, start)
        with ctx.for_range(n, step=I64(CHUNK), name="c") as c0:
            rest = b.sub(n, c0)
            length = b.select(b.icmp_signed("<", rest, I64(CHUNK)), rest, I64(CHUNK))
            at = b.add(start, c0)
            with ctx.for_range(m, name="k") as k:
                src, step, size, tmp = _operand(b, ptrs, strides, sizes, chunks, k, at)
                unit = b.icmp_signed("==", step, size)
                b.store(b.select(unit, src, tmp), b.gep(cur, [k], inbounds=True))
                # the output too: an accumulating kernel (a driven row reduction) reads it
                with b.if_then(b.not_(unit), likely=False):
                    b.call(copy, [src, step, tmp, size, size, length])
            status = b.call(adapter, [I64(0), length, cur, sizes, packed])
            with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
                b.ret(status)
            dst, step, size, tmp = _operand(b, ptrs, strides, sizes, chunks, out, at)
            with b.if_then(b.icmp_signed("!=", step, size), likely=False):
                b.call(copy, [tmp, size, dst, step, size, length])
        b.ret(I32(0))

    fnty = ir.FunctionType(I32, [adapter_type.as_pointer(), I64, I64, I8P.as_pointer(), I64.as_pointer(), I8P,
                                 I32, I64.as_pointer()])
    return glue_function(module, "strided", fnty, build)


def _operand(b: ir.IRBuilder, ptrs: ir.Value, strides: ir.Value, sizes: ir.Value, chunks: ir.Value,
             k: ir.Value, at: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """(operand k's address of element at, its stride, its element size, its stack chunk)."""
    step = b.load(b.gep(strides, [k], inbounds=True))
    src = b.gep(b.load(b.gep(ptrs, [k], inbounds=True)), [b.mul(at, step)])
    tmp = b.gep(chunks, [b.mul(k, I64(_SLOT))], inbounds=True)
    return src, step, b.load(b.gep(sizes, [k], inbounds=True)), tmp


def _copier(module: ir.Module) -> ir.Function:
    """``void glue.strided.copy(i8* src, i64 src_step, i8* dst, i64 dst_step, i64 size, i64 n)``: n elements of
    size bytes from src to dst (byte strides), copied as integers."""
    def build(fn: ir.Function) -> None:
        src, src_step, dst, dst_step, size, length = fn.args
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        b = ctx.builder
        for width in _WIDTHS:
            ty = ir.IntType(8 * width).as_pointer()
            with b.if_then(b.icmp_signed("==", size, I64(width))):
                with ctx.for_range(length, name=f"copy{width}", vectorize=False) as i:
                    # numpy aligns a complex128 to 8 bytes only
                    v = b.load(b.bitcast(b.gep(src, [b.mul(i, src_step)]), ty), align=min(width, 8))
                    b.store(v, b.bitcast(b.gep(dst, [b.mul(i, dst_step)]), ty), align=min(width, 8))
        b.ret_void()

    fnty = ir.FunctionType(ir.VoidType(), [I8P, I64, I8P, I64, I64, I64])
    return glue_function(module, "strided.copy", fnty, build)
