"""Lowerings of the shape ops (Reshape, SumToShape, identity views, DeepCopyOp) and the helpers the other
structural lowerings (lower_alloc, lower_indexing) share: reading int inputs, copies with casts, temporaries,
C-contiguous strides.

Each lowering is registered for its op class (registry.lowerings); see docs/lowering.md for the contract.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir

from graphjit.gradient import GradientBlockOp
from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import cast_value, zero_value
from graphjit.link.ops import DeepCopyOp
from graphjit.tensor.elemwise_grad import SumToShape
from graphjit.tensor.shape import Reshape

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir import complex_math
from graphjit.link.llvm.ir.protocol import GJ_ERR_VALUE
from graphjit.link.llvm.ir.buffers import cache_global, obtain_lengths_helper
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.context import TRUE, LowerContext, branch, glue_function
from graphjit.link.llvm.loops.nest import strided_elementwise, emit_elementwise, load_value, store_value, strided_nest
from graphjit.link.llvm.loops.loop_shape import Operand, c_contiguous
from graphjit.link.llvm.ir.arith import product
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext


# ---------------------------------------------------------------- shared helpers

def load_int(ctx: LowerContext, arr: ir.Value, dtype: str, index: ir.Value | None = None) -> ir.Value:
    """Element [index] of an int vector (or the value of a 0-d int tensor) as i64 (sign/zero-extended)."""
    b = ctx.builder
    ptr = ctx.data(arr) if index is None else ctx.element_ptr(arr, [index])
    v = b.load(ptr)
    if v.type.width == 64:
        return v
    return b.zext(v, I64) if np.dtype(dtype).kind in "ub" else b.sext(v, I64)


def input_int(ctx: LowerContext, node: Apply, inputs: Sequence[ir.Value], i: int) -> ir.Value:
    """The 0-d integer input i of node as i64 (a constant when the input is one)."""
    var = node.inputs[i]
    data = getattr(var, "data", None)
    if data is not None and np.ndim(data) == 0:
        return I64(int(np.asarray(data)))
    return load_int(ctx, inputs[i], var.type.dtype)


def c_strides(ctx: LowerContext, shape: Sequence[ir.Value], dtype: str) -> list[ir.Value]:
    """Byte strides of a C-contiguous array of shape."""
    b = ctx.builder
    out, step = [], I64(L.itemsize(dtype))
    for n in reversed(shape):
        out.append(step)
        step = b.mul(step, b.select(b.icmp_signed(">", n, I64(1)), n, I64(1)))
    return out[::-1]


def offset_ptr(ctx: LowerContext, data: ir.Value, offset: ir.Value) -> ir.Value:
    """data advanced by offset bytes (same pointer type)."""
    b = ctx.builder
    return b.bitcast(b.gep(b.bitcast(data, I8P), [offset]), data.type)


def allocate_temp(ctx: GraphContext, node: Apply, dtype: str, shape: Sequence[ir.Value], what: str) -> ir.Value:
    """A fresh C-contiguous array in a temporary slot (never a graph output's own slot; GraphContext.temp_array)."""
    return ctx.temp_array(node, dtype, shape, what)


def copy_cast(ctx: GraphContext, node: Apply, src: ir.Value, src_dtype: str, dst: ir.Value, dst_dtype: str,
              shape: Sequence[ir.Value], tag: str) -> None:
    """dst[...] = src[...] cast to dst_dtype, any strides on both (a vectorised loop when both are contiguous)."""
    b = ctx.builder
    ndim = len(shape)
    op = Operand(src_dtype, (None,) * ndim, struct=src)

    def compute(c: LowerContext, values: list) -> ir.Value:
        return cast_value(c.builder, values[0], src_dtype, dst_dtype)

    branch(b, c_contiguous(ctx, dst, ndim, dst_dtype),
           lambda: emit_elementwise(ctx, ctx.name(node, tag), [op], compute, dst, dst_dtype, shape, node, False),
           lambda: strided_elementwise(ctx, [op], compute, dst, dst_dtype, shape))


def broadcast_view(ctx: GraphContext, node: Apply, y: ir.Value, y_dtype: str, y_ndim: int,
                   shape: Sequence[ir.Value]) -> ir.Value:
    """A view of y broadcast (stride 0) to shape; ValueError as numpy when it cannot be."""
    b = ctx.builder
    pad = len(shape) - y_ndim
    ys, yst = [I64(1)] * pad, [I64(0)] * pad
    for d in range(y_ndim):
        n, want = ctx.shape(y, d), shape[pad + d]
        bad = b.and_(b.icmp_signed("!=", n, I64(1)), b.icmp_signed("!=", n, want))
        ctx.raise_if(bad, node, "ValueError", "could not broadcast the value into the indexed part: "
                     "length %lld, not %lld, in dimension %lld", [n, want, I64(pad + d)])
        ys.append(want)
        yst.append(b.select(b.icmp_signed("==", n, I64(1)), I64(0), ctx.stride(y, d)))
    return ctx.view(y, y_dtype, ys, yst, ctx.data(y), name=ctx.name(node, "ybcast"))


def write_values(ctx: GraphContext, target: ir.Value, dtype: str, shape: Sequence[ir.Value], src: ir.Value,
                 src_dtype: str, combine: Callable | None) -> None:
    """target[...] = src[...] (or combine(target, src)), cast to dtype; any strides, same shape."""
    ndim = len(shape)
    ops = [Operand(src_dtype, (None,) * ndim, struct=src)]
    if combine is not None:
        ops.append(Operand(dtype, (None,) * ndim, struct=target))

    def compute(c: LowerContext, values: list) -> ir.Value:
        v = cast_value(c.builder, values[0], src_dtype, dtype)
        return v if combine is None else combine(c.builder, values[1], v, dtype)

    strided_elementwise(ctx, ops, compute, target, dtype, shape)


def add_values(b: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """numpy's x + y on compute values of dtype (bool: or)."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return b.fadd(x, y)
    if kind == "c":
        return complex_math.add(b, x, y)
    return b.or_(x, y) if kind == "b" else b.add(x, y)


def input_value(ctx: GraphContext, node: Apply, i: int) -> Any:
    """The lowered Value record (pointer + ownership) of input i of node."""
    return ctx.values.get(node.inputs[i])


# ---------------------------------------------------------------- identity views and copies

@lowerings.register(GradientBlockOp)
def lower_identity(ctx: LowerContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """The input itself (a view: view_map {0: [0]}); graph outputs get copied by the linker."""
    return [inputs[0]]


@lowerings.register(DeepCopyOp, complex=True)
def lower_deep_copy(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A fresh copy of a tensor."""
    var = node.inputs[0]
    shape = ctx.shapes(inputs[0], var.type.ndim)
    out = ctx.allocate(node, 0, shape)
    copy_cast(ctx, node, inputs[0], var.type.dtype, out, var.type.dtype, shape, "copy")
    return [out]


# ---------------------------------------------------------------- Reshape

def _reshape_lengths(ctx: GraphContext, node: Apply, x: ir.Value, shp: ir.Value) -> list[ir.Value]:
    """The new lengths with -1 resolved; ValueError as numpy on a bad shape or a size mismatch."""
    b = ctx.builder
    xvar, svar, ndim = node.inputs[0], node.inputs[1], node.op.ndim
    size = product(b, ctx.shapes(x, xvar.type.ndim))
    ctx.raise_if(b.icmp_signed("!=", ctx.shape(shp, 0), I64(ndim)), node, "ValueError",
                 f"the new shape has %lld entries, not {ndim}", [ctx.shape(shp, 0)])
    entries = [load_int(ctx, shp, svar.type.dtype, I64(d)) for d in range(ndim)]
    known, n_unknown = I64(1), I64(0)
    for d, e in enumerate(entries):
        ctx.raise_if(b.icmp_signed("<", e, I64(-1)), node, "ValueError",
                     "negative dimensions not allowed (entry %lld is %lld)", [I64(d), e])
        minus = b.icmp_signed("==", e, I64(-1))
        n_unknown = b.add(n_unknown, b.zext(minus, I64))
        known = b.mul(known, b.select(minus, I64(1), e))
    ctx.raise_if(b.icmp_signed(">", n_unknown, I64(1)), node, "ValueError",
                 "can only specify one unknown dimension (got %lld)", [n_unknown])
    has_unknown = b.icmp_signed("==", n_unknown, I64(1))
    safe = b.select(b.icmp_signed("==", known, I64(0)), I64(1), known)
    missing = b.sdiv(size, safe)
    bad_unknown = b.and_(has_unknown, b.or_(b.icmp_signed("==", known, I64(0)),
                                            b.icmp_signed("!=", b.srem(size, safe), I64(0))))
    bad_known = b.and_(b.not_(has_unknown), b.icmp_signed("!=", known, size))
    ctx.raise_if(b.or_(bad_unknown, bad_known), node, "ValueError",
                 "cannot reshape array of size %lld into a shape of %lld known elements "
                 "(%lld unknown entries)", [size, known, n_unknown])
    lengths = [b.select(b.icmp_signed("==", e, I64(-1)), missing, e) for e in entries]
    for d, s in enumerate(node.outputs[0].type.shape):
        if s is not None:
            lengths[d] = I64(s)
    return lengths


@lowerings.register(Reshape, complex=True)
def lower_reshape(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy.reshape: a view of a C-contiguous input, else a C-ordered copy."""
    b = ctx.builder
    x, shp = inputs
    xvar, dtype = node.inputs[0], node.inputs[0].type.dtype
    lengths = _reshape_lengths(ctx, node, x, shp)
    ndim = len(lengths)
    result = ctx.alloca(L.array_struct(dtype, ndim), name=ctx.name(node, "reshaped"))
    xshape = ctx.shapes(x, xvar.type.ndim)

    def contig() -> None:
        view = ctx.view(x, dtype, lengths, c_strides(ctx, lengths, dtype), ctx.data(x), name=ctx.name(node, "view"))
        b.store(b.load(view), result)

    def strided() -> None:
        tmp = allocate_temp(ctx, node, dtype, xshape, "copy")
        copy_cast(ctx, node, x, dtype, tmp, dtype, xshape, "copy")
        view = ctx.view(tmp, dtype, lengths, c_strides(ctx, lengths, dtype), ctx.data(tmp),
                        name=ctx.name(node, "copyview"))
        b.store(b.load(view), result)

    branch(b, c_contiguous(ctx, x, xvar.type.ndim, dtype), contig, strided)
    ctx.mark_contiguous(result)          # C strides over contiguous memory on both paths
    return [result]


# ---------------------------------------------------------------- SumToShape

@lowerings.register(SumToShape, complex=True)
def lower_sum_to_shape(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """g itself when its shape is the target's (a view); else g summed over the target's length-1 dims."""
    b = ctx.builder
    g, shp = inputs
    gvar, svar = node.inputs
    dtype, ndim = gvar.type.dtype, gvar.type.ndim
    want = [I64(s) if s is not None else load_int(ctx, shp, svar.type.dtype, I64(d))
            for d, s in enumerate(node.op.static_shape)]
    result = ctx.alloca(L.array_struct(dtype, ndim), name=ctx.name(node, "summed"))
    if getattr(ctx, "in_loop", False):          # an inner graph: its temporary is reused across iterations
        _sum_to_shape_in_loop(ctx, node, g, want, result, dtype, ndim)
        return [result]
    tmp, slot, spare = ctx.reserve_temp(dtype, ndim, ctx.name(node, "sum"))
    status = b.call(_sum_to_shape_site(ctx.module, ctx.rt.type, dtype, ndim),
                    [ctx.rt, g, *want, result, tmp, cache_global(ctx.module, slot), I32(slot), I32(spare),
                     I32(ctx.message(node, "ValueError", _SUM_TO_SHAPE_ERROR)), I32(ctx.node_index(node))])
    with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
        b.ret(status)
    return [result]


_SUM_TO_SHAPE_ERROR = "cannot reduce a gradient of length %lld to length %lld in dimension %lld"


def _sum_to_shape_in_loop(ctx: GraphContext, node: Apply, g: ir.Value, want: Sequence[ir.Value], result: ir.Value,
                          dtype: str, ndim: int) -> None:
    """SumToShape inside an inner graph: the checks inline, the sum into ctx.temp_array (a reused buffer)."""
    b = ctx.builder
    same = TRUE
    for d in range(ndim):
        n = ctx.shape(g, d)
        differs = b.icmp_signed("!=", n, want[d])
        ctx.raise_if(b.and_(differs, b.icmp_signed("!=", want[d], I64(1))), node, "ValueError",
                     _SUM_TO_SHAPE_ERROR, [n, want[d], I64(d)])
        same = b.and_(same, b.not_(differs))

    def reduce() -> None:
        tmp = ctx.temp_array(node, dtype, want, "sum")
        b.call(_sum_into(ctx.module, dtype, ndim), [g, tmp])
        b.store(b.load(tmp), result)

    branch(b, same, lambda: b.store(b.load(g), result), reduce)


def _sum_to_shape_site(module: ir.Module, rt_type: ir.Type, dtype: str, ndim: int) -> ir.Function:
    """``i32 glue.sum_to_shape_site.<dtype>.<ndim>(rt*, g*, i64 want..., result*, tmp*, i8** cache, i32 slot,
    i32 spare, i32 msg, i32 node)``: a SumToShape node in one call (its checks, g itself or g summed into the
    cached temporary tmp); 0, or the error code with the error set."""
    sty = L.array_struct(dtype, ndim).as_pointer()

    def build(fn: ir.Function) -> None:
        rt, g, *rest = fn.args
        want, (result, tmp, cache, slot, spare, msg, node) = rest[:ndim], rest[ndim:]
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")), rt)
        b = ctx.builder
        same = TRUE
        for d in range(ndim):
            n = ctx.shape(g, d)
            differs = b.icmp_signed("!=", n, want[d])
            ctx.error_if(b.and_(differs, b.icmp_signed("!=", want[d], I64(1))), GJ_ERR_VALUE, msg=msg,
                         node=node, args=[n, want[d], I64(d)])
            same = b.and_(same, b.not_(differs))
        with b.if_then(same, likely=True):
            b.store(b.load(g), result)
            b.ret(I32(0))
        status = b.call(obtain_lengths_helper(module, rt_type, ndim),
                        [rt, cache, slot, spare, b.bitcast(tmp, I8P), I64(L.itemsize(dtype)),
                         I32(L.type_num(dtype)), *want])
        with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
            b.ret(status)
        b.call(_sum_into(module, dtype, ndim), [g, tmp])
        b.store(b.load(tmp), result)
        b.ret(I32(0))

    fnty = ir.FunctionType(I32, [rt_type, sty] + [I64] * ndim + [sty, sty, I8P.as_pointer(), I32, I32, I32, I32])
    return glue_function(module, f"sum_to_shape_site.{dtype}.{ndim}", fnty, build)


def _sum_into(module: ir.Module, dtype: str, ndim: int) -> ir.Function:
    """``void glue.sum_to_shape.<dtype>.<ndim>(g*, out*)``: out (fresh) = g summed over out's length-1 dims."""
    sty = L.array_struct(dtype, ndim).as_pointer()

    def build(fn: ir.Function) -> None:
        g, out = fn.args
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        b = ctx.builder
        gshape, oshape = ctx.shapes(g, ndim), ctx.shapes(out, ndim)
        _zero_fill(ctx, out, dtype, product(b, oshape))
        ostrides = [b.select(b.icmp_signed("!=", gshape[d], oshape[d]), I64(0), ctx.stride(out, d))
                    for d in range(ndim)]
        bases = [b.bitcast(ctx.data(g), I8P), b.bitcast(ctx.data(out), I8P)]
        ptr_ty = L.llvm_scalar_type(dtype).as_pointer()
        with strided_nest(ctx, gshape, bases, [[ctx.stride(g, d) for d in range(ndim)], ostrides]) as (gp, op):
            target = b.bitcast(op, ptr_ty)
            b.store(add_values(b, b.load(target), b.load(b.bitcast(gp, ptr_ty)), dtype), target)
        b.ret_void()

    return glue_function(module, f"sum_to_shape.{dtype}.{ndim}", ir.FunctionType(ir.VoidType(), [sty, sty]),
                         build)


def _zero_fill(ctx: LowerContext, out: ir.Value, dtype: str, total: ir.Value) -> None:
    """Set the first total elements of a contiguous array to zero."""
    b = ctx.builder
    data = ctx.data(out)
    mem = L.llvm_scalar_type(dtype)
    zero = zero_value(dtype) if L.is_complex(dtype) else ir.Constant(mem, 0.0 if L.is_float(dtype) else 0)
    with ctx.for_range(total, name="zero") as i:
        b.store(zero, b.gep(data, [i], inbounds=True))


__all__ = ["load_int", "input_int", "c_strides", "offset_ptr", "allocate_temp", "copy_cast",
           "broadcast_view", "write_values", "add_values", "lower_identity", "lower_deep_copy", "lower_reshape",
           "lower_sum_to_shape", "store_value", "load_value"]
