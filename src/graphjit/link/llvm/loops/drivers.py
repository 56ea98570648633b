"""Fused elementwise groups of a large graph: a per-group adapter and drivers shared by every group.

Inline, a 2-d elementwise group costs the entry ~200 instructions (broadcast checks, contiguity tests, a
thread dispatch, a row nest and a strided nest holding a copy of the scalar body), and the entry's size is
most of a large graph's compile time.  In a compact graph (``GraphContext.compact``) a group instead costs
two calls to glue shared by all groups of the same ndim, plus its own small adapter:

- ``glue.bshape.<ndim>(rt*, i8** structs, i32 n, i64* shape, i32 msg, i32 node)``: numpy's broadcast of
  the n array operands' shapes into shape, or a ValueError naming the node (returns its code);
- ``glue.ew.<ndim>(adapter*, i8** structs, i32 m, i64* itemsizes, i8* scalars, i32 flags)``: runs the adapter
  over the output struct (the last of the m): over the flat range when every array is C-contiguous with the
  full shape (on all threads above PARALLEL_MIN_ITEMS when flags has PARALLEL), else once per innermost row
  with each operand's row pointer and broadcast (0) or real inner stride: the adapter itself when every inner
  stride is the element size, else ``glue.strided`` (loops/gather.py: unit-stride chunks gathered and scattered
  around calls of the adapter); returns the adapter's status.  The operand count and element sizes are
  arguments, so one driver per ndim serves every group;
- the group's adapter ``glue.<name>.adapt(i64 start, i64 end, i8** ptrs, i64* strides, i8* scalars)``: its
  operands' pointers and hoisted scalars unpacked into a call of the group's vectorised kernel
  (loops.build_kernel) over [start, end); every stream has unit stride (strides is not read); 0 or a message
  index + 1 (as kernels do).  No copy of the fused body lives in the glue, and identical groups (one kernel)
  share one adapter.

Operands read once per row (static length 1 in the last dimension) are scalars of the row kernel, loaded by
the adapter from their row pointer, so such groups never take the flat path (flags without FLAT); their element
size is given as 0, like their inner stride, so "stride == size" is the test of a unit row for every operand.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Sequence

from llvmlite import ir

from graphjit.link.llvm.ir.casts import compute_type, zero_value

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_VALUE
from graphjit.link.llvm.ir.buffers import cache_global, obtain_helper
from graphjit.link.llvm.ir.context import (GLUE_PREFIX, LowerContext, error_setter, exit_if_failed, exit_with,
                                           glue_function)
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.ir.threads import call_parallel
from graphjit.link.llvm.loops.gather import strided_runner
from graphjit.link.llvm.loops.nest import PARALLEL_MIN_ITEMS, check_status, build_kernel, load_value
from graphjit.link.llvm.loops.loop_shape import SHORT_ROW, Operand, proven_lead
from graphjit.link.llvm.ir.arith import product

from graphjit.link.llvm.ir.graph_context import GraphContext

FLAT, PARALLEL = 1, 2
_I64P = I64.as_pointer()
ADAPTER_TYPE = ir.FunctionType(I32, [I64, I64, I8P.as_pointer(), _I64P, I8P])
# the group's rows adapter has the adapter's signature, read as (rows, row length, row-0 pointers, byte strides
# between rows, scalars)
ROWS_TYPE = ADAPTER_TYPE


def _generic_struct(ndim: int) -> ir.PointerType:
    # the array struct's layout does not depend on the dtype: read every operand as an int8 array
    return L.array_struct("int8", ndim).as_pointer()


def driven_shape(gctx: GraphContext, operands: Sequence[Operand], ndim: int, node: Any) -> tuple[ir.Value, list]:
    """(i8*[n+1] holding the array operands' structs, the broadcast shape): the shape via glue.bshape, or the
    lengths of the operand the graph proves the loop's (loop_shape.proven_lead: nothing to check)."""
    b = gctx.builder
    arrays = [o for o in operands if o.is_array]
    structs = gctx.alloca(ir.ArrayType(I8P, len(arrays) + 1), name=gctx.name(node, "structs"))
    for k, o in enumerate(arrays):
        b.store(gctx.as_bytes(o.struct), b.gep(structs, [I32(0), I32(k)], inbounds=True))
    lead = proven_lead(operands, ndim)
    if lead is not None:
        return structs, gctx.shapes(arrays[lead].struct, ndim)
    shape_slot = gctx.alloca(ir.ArrayType(I64, ndim), name=gctx.name(node, "bshape"))
    msg = _broadcast_message(gctx, node)
    status = b.call(_bshape(gctx.module, gctx.rt.type, ndim),
                    [gctx.rt, b.gep(structs, [I32(0), I32(0)], inbounds=True), I32(len(arrays)),
                     b.gep(shape_slot, [I32(0), I32(0)], inbounds=True), I32(msg), I32(gctx.node_index(node))])
    exit_if_failed(b, status)
    return structs, [b.load(b.gep(shape_slot, [I32(0), I32(d)], inbounds=True)) for d in range(ndim)]


def emit_driven(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable, out: ir.Value,
                out_dtype: str, structs: ir.Value, ndim: int, node: Any, parallel: bool,
                accumulate: Callable | None = None) -> None:
    """out[...] = compute(operands[...]) through the group's adapter and glue.ew (see the module doc); with
    accumulate, out[...] = accumulate(out[...], compute(...)) row by row (emit_driven_row_reduction)."""
    b = gctx.builder
    arrays = [o for o in operands if o.is_array]
    b.store(gctx.as_bytes(out), b.gep(structs, [I32(0), I32(len(arrays))], inbounds=True))
    adapter, rows, sizes, packed, flags = _driver_args(gctx, name, operands, compute, out_dtype, ndim, node,
                                                       parallel, accumulate)
    status = b.call(_driver(gctx.module, ndim),
                    [adapter, rows, b.gep(structs, [I32(0), I32(0)], inbounds=True), I32(len(arrays) + 1), sizes,
                     packed, I32(flags)])
    check_status(gctx, status, node)


def _driver_args(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable, out_dtype: str,
                 ndim: int, node: Any, parallel: bool,
                 accumulate: Callable | None = None) -> tuple[ir.Function, ir.Function, ir.Value, ir.Value, int]:
    """(the group's adapter, its rows adapter, its element sizes, its packed hoisted scalars, the driver's flags);
    an accumulating group runs row by row on one thread (its rows add into shared output rows)."""
    b = gctx.builder
    per_row = [o.is_array and ndim >= 2 and o.static_shape[-1] == 1 for o in operands]
    if all(r for o, r in zip(operands, per_row) if o.is_array):
        # an (n, 1) result: every operand has the loop's last length, so the group may run flat (one call)
        per_row = [False] * len(operands)
    packed: ir.Value = ir.Constant(I8P, None)
    sty = _scalars_type(operands)
    values = [o.scalar for o in operands if not o.is_array]
    if sty is not None and all(isinstance(v, ir.Constant) for v in values):
        packed = _constant_scalars(gctx.module, sty, values)
    elif sty is not None:
        slot = gctx.alloca(sty, name=gctx.name(node, "scalars"))
        for k, v in enumerate(values):
            b.store(v, b.gep(slot, [I32(0), I32(k)], inbounds=True))
        packed = b.bitcast(slot, I8P)
    flat = not any(per_row) and not _static_broadcast(operands)
    flags = 0 if accumulate is not None else (FLAT if flat else 0) | (PARALLEL if parallel else 0)
    adapter, rows = _adapter(gctx, name, operands, per_row, compute, out_dtype, ndim, accumulate,
                             None if flags & FLAT else _short_rows(operands, per_row))
    # a per-row operand's size is 0, as is its stride in a row: "stride == size" means unit for every operand
    sizes = tuple(0 if r else L.itemsize(o.dtype) for o, r in zip(operands, per_row) if o.is_array)
    return adapter, rows, _itemsizes(gctx.module, sizes + (L.itemsize(out_dtype),)), packed, flags


def emit_driven_temporary(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable,
                          temp: tuple[ir.Value, int, int], out_dtype: str, ndim: int, node: Any,
                          parallel: bool) -> None:
    """A group whose output is a temporary: broadcast shape, buffer and loop in one call of glue.group."""
    b = gctx.builder
    out, slot, spare = temp
    arrays = [gctx.as_bytes(o.struct) for o in operands if o.is_array]
    adapter, rows, sizes, packed, flags = _driver_args(gctx, name, operands, compute, out_dtype, ndim, node,
                                                       parallel)
    helper = _group(gctx.module, gctx.rt.type, ndim, len(arrays))
    # the broadcast of the operands [first, first + count): all of them, or the one proven to be the loop's
    lead = proven_lead(operands, ndim)
    first, count, msg = (0, len(arrays), _broadcast_message(gctx, node)) if lead is None else (lead, 1, 0)
    status = b.call(helper, [gctx.rt, adapter, rows, *arrays, cache_global(gctx.module, slot), I32(slot), I32(spare),
                             gctx.as_bytes(out), I64(L.itemsize(out_dtype)), I32(L.type_num(out_dtype)), sizes,
                             packed, I32(flags), I32(msg), I32(gctx.node_index(node)), I32(first), I32(count)])
    exit_if_failed(b, status)


def emit_driven_row_reduction(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable,
                              accumulate: Callable, out: ir.Value, out_dtype: str, shape: Sequence[ir.Value],
                              axes: Sequence[int], node: Any) -> None:
    """A reduction keeping the last axis, in a compact graph: out (fresh, C-contiguous, already holding the
    identity) accumulates every row of compute(operands) through glue.ew's row path, which sees out with the
    loop's shape and stride 0 along the reduced axes (so every row of a reduced axis adds into the same output
    row), and gathers strided rows (glue.strided).  Instead of a nest and a strided fallback in the entry."""
    b, ndim = gctx.builder, len(shape)
    kept = iter(range(ndim - len(axes)))
    strides = [I64(0) if d in axes else gctx.stride(out, next(kept)) for d in range(ndim)]
    rows = gctx.view(None, out_dtype, list(shape), strides, gctx.data(out), name=gctx.name(node, "rows"))
    arrays = [o for o in operands if o.is_array]
    structs = gctx.alloca(ir.ArrayType(I8P, len(arrays) + 1), name=gctx.name(node, "structs"))
    for k, o in enumerate(arrays):
        b.store(gctx.as_bytes(o.struct), b.gep(structs, [I32(0), I32(k)], inbounds=True))
    emit_driven(gctx, name, operands, compute, rows, out_dtype, structs, ndim, node, False, accumulate)


def _broadcast_message(gctx: GraphContext, node: Any) -> int:
    return gctx.message(node, "ValueError", "shape mismatch: operands could not be broadcast together "
                        "(lengths %lld and %lld in dimension %lld)")


def _group(module: ir.Module, rt_type: ir.Type, ndim: int, n: int) -> ir.Function:
    """``i32 glue.group.<ndim>.<n>(rt*, adapter*, rows*, i8* struct..., i8** cache, i32 slot, i32 spare, i8* out,
    i64 itemsize, i32 type_num, i64* itemsizes, i8* scalars, i32 flags, i32 msg, i32 node, i32 first, i32 count)``:
    glue.bshape of the array operands [first, first + count), the output buffer (ir/buffers.py's obtain), glue.ew;
    0 or the error code (set)."""
    def build(fn: ir.Function) -> None:
        rt, adapter, rows, *rest = fn.args
        structs_in, (cache, slot, spare, out, itemsize, type_num, sizes, packed, flags, msg, node, bfirst,
                     bcount) = rest[:n], rest[n:]
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        b = ctx.builder
        structs = b.alloca(ir.ArrayType(I8P, n + 1))
        shape = b.alloca(ir.ArrayType(I64, ndim))
        for k, s in enumerate([*structs_in, out]):
            b.store(s, b.gep(structs, [I32(0), I32(k)], inbounds=True))
        first, lengths = b.gep(structs, [I32(0), I32(0)], inbounds=True), b.gep(shape, [I32(0), I32(0)], inbounds=True)
        status = b.call(_bshape(module, rt_type, ndim),
                        [rt, b.gep(structs, [I32(0), bfirst], inbounds=True), bcount, lengths, msg, node])
        exit_if_failed(b, status)
        status = b.call(obtain_helper(module, rt_type),
                        [rt, cache, slot, spare, out, I32(ndim), lengths, itemsize, type_num])
        exit_if_failed(b, status)
        status = b.call(_driver(module, ndim), [adapter, rows, first, I32(n + 1), sizes, packed, flags])
        with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
            b.call(error_setter(module, rt_type), [rt, I32(GJ_ERR_VALUE), b.sub(status, I32(1)), node,
                                                    I64(0), I64(0), I64(0)])
            exit_with(b, I32(GJ_ERR_VALUE))
        b.ret(I32(0))

    args = ([rt_type, ADAPTER_TYPE.as_pointer(), ROWS_TYPE.as_pointer()] + [I8P] * n
            + [I8P.as_pointer(), I32, I32, I8P, I64, I32, _I64P, I8P, I32, I32, I32, I32, I32])
    return glue_function(module, f"group.{ndim}.{n}", ir.FunctionType(I32, args), build)


def _constant_scalars(module: ir.Module, sty: ir.LiteralStructType, values: list) -> ir.Value:
    """The hoisted scalars when all are constants: a private constant of the module (one per distinct value), not
    a stack slot filled at each call."""
    init = ir.Constant(sty, values)
    name = "gj.scalars." + hashlib.sha1(str(init).encode()).hexdigest()[:16]
    g = module.globals.get(name)
    if g is None:
        g = ir.GlobalVariable(module, sty, name)
        g.linkage, g.global_constant, g.initializer = "private", True, init
    return g.bitcast(I8P)


def _scalars_type(operands: Sequence[Operand]) -> ir.LiteralStructType | None:
    """The struct the entry packs the hoisted scalar operands into for the adapter (None: there are none)."""
    scalars = [compute_type(o.dtype) for o in operands if not o.is_array]
    return ir.LiteralStructType(scalars) if scalars else None


# ---------------------------------------------------------------- the group's adapter

def _static_broadcast(operands: Sequence[Operand]) -> bool:
    """An array operand has static length 1 where another has a static length above 1: never the flat path."""
    arrays = [o.static_shape for o in operands if o.is_array and o.static_shape]
    return any(s[d] == 1 and any(t[d] is not None and t[d] > 1 for t in arrays)
               for s in arrays for d in range(len(s)))


def _short_rows(operands: Sequence[Operand], per_row: Sequence[bool]) -> int | None:
    """The static row length of a group that only ever runs row by row, when it is short (2..SHORT_ROW): its
    kernel is then built for exactly that many elements, unrolled, rather than as a vector loop whose every
    call would go to the vector tail (a (100, 2) group's 100 rows: ~30 ns each through the tail)."""
    # an operand of unknown length has the loop's (or 1: glue.bshape checks it), so one static length decides
    lengths = {o.static_shape[-1] for o, r in zip(operands, per_row) if o.is_array and not r and o.static_shape}
    lengths -= {1, None}
    if len(lengths) != 1:
        return None
    (n,) = lengths
    return n if 2 <= n <= SHORT_ROW else None


def _adapter(gctx: GraphContext, name: str, operands: Sequence[Operand], per_row: Sequence[bool], compute: Callable,
             out_dtype: str, ndim: int, accumulate: Callable | None = None,
             trip: int | None = None) -> tuple[ir.Function, ir.Value]:
    """(``glue.<name>.adapt``: the group's kernel on unit strides (module doc), its rows adapter: a null pointer
    for a 1-d loop, which is one row); trip: every call's row length."""
    row_ops = [Operand(o.dtype, o.static_shape, scalar=zero_value(o.dtype)) if r else o
               for o, r in zip(operands, per_row)]
    kind = "rowacc" if accumulate is not None else "row" if any(per_row) else "contig"
    kernel = build_kernel(gctx, f"{name}.{kind}", row_ops, compute, out_dtype, None, accumulate, trip=trip)
    # identical groups share their kernel (build_kernel), and then their adapter: it is a function of the kernel
    # and of how each operand reaches it
    key = (kernel.name, tuple((o.dtype, o.is_array, r) for o, r in zip(operands, per_row)), out_dtype, ndim > 1)
    if key in gctx.adapters:
        return gctx.adapters[key]
    rows = (_rows_adapter(gctx, name, kernel, operands, per_row, out_dtype) if ndim > 1
            else ir.Constant(ROWS_TYPE.as_pointer(), None))
    fn = ir.Function(gctx.module, ADAPTER_TYPE, f"{GLUE_PREFIX}{name}.adapt")
    fn.linkage = "internal"
    start, end, ptrs, _, packed = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    hoisted = _hoisted_scalars(b, operands, packed)
    args = _kernel_args(b, operands, per_row, out_dtype, hoisted,
                        lambda j: b.load(b.gep(ptrs, [I32(j)], inbounds=True)), start)
    b.ret(b.call(kernel, [I64(0), b.sub(end, start)] + args))
    gctx.adapters[key] = fn, rows
    return fn, rows


def _rows_adapter(gctx: GraphContext, name: str, kernel: ir.Function, operands: Sequence[Operand],
                  per_row: Sequence[bool], out_dtype: str) -> ir.Function:
    """``i32 <name>.rows(i64 rows, i64 length, i8** ptrs, i64* steps, i8* scalars)``: the group's kernel over
    `rows` unit-stride rows, row r of operand k at ptrs[k] + r * steps[k] bytes; a function of the kernels
    module (O3), so glue.ew's row path is one call per 2-d slab rather than a pointer walk and an adapter call
    per row in light glue: a (100, 2) group 1.5 -> ~0.4 us.  0 or the kernel's first status."""
    fn, new = kernel_function(gctx.module, f"{name}.rows", ROWS_TYPE)
    if not new:
        return fn
    fn.gj_rides_with = kernel.name          # compiled in its kernel's bulk part (jit/bulk.py)
    nrows, length, ptrs, steps, packed = fn.args
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = ctx.builder
    hoisted = _hoisted_scalars(b, operands, packed)
    bases = [b.load(b.gep(ptrs, [I32(j)], inbounds=True)) for j in range(sum(o.is_array for o in operands) + 1)]
    step = [b.load(b.gep(steps, [I32(j)], inbounds=True)) for j in range(len(bases))]
    may_fail = getattr(kernel, "gj_may_fail", True)
    with ctx.for_range(nrows, name="row") as r:
        args = _kernel_args(b, operands, per_row, out_dtype, hoisted,
                            lambda j: b.gep(bases[j], [b.mul(r, step[j])]))
        status = b.call(kernel, [I64(0), length] + args)
        if may_fail:
            with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
                b.ret(status)
    b.ret(I32(0))
    return fn


def _hoisted_scalars(b: ir.IRBuilder, operands: Sequence[Operand], packed: ir.Value) -> list[ir.Value]:
    """The group's hoisted scalars, loaded from their packed struct (none: an empty list)."""
    sty = _scalars_type(operands)
    if sty is None:
        return []
    slot = b.bitcast(packed, sty.as_pointer())
    return [b.load(b.gep(slot, [I32(0), I32(k)], inbounds=True)) for k in range(len(sty.elements))]


def _kernel_args(b: ir.IRBuilder, operands: Sequence[Operand], per_row: Sequence[bool], out_dtype: str,
                 hoisted: Sequence[ir.Value], row_pointer: Callable[[int], ir.Value],
                 start: ir.Value | None = None) -> list[ir.Value]:
    """The kernel's arguments after its bounds: its streams, then its scalars (hoisted ones, and per-row
    operands' first element), then its output; row_pointer(j) is array operand j's (the output's: the last)
    row as i8*, streams and output offset by ``start`` elements when given."""
    def typed(j: int, dtype: str) -> ir.Value:
        return b.bitcast(row_pointer(j), L.llvm_scalar_type(dtype).as_pointer())

    def offset(p: ir.Value) -> ir.Value:
        return p if start is None else b.gep(p, [start])

    streams, scalars, hoist = [], [], iter(hoisted)
    for j, o, r in _array_slots(operands, per_row):
        if not o.is_array:
            scalars.append(next(hoist))
        elif r:
            scalars.append(load_value(b, typed(j, o.dtype), o.dtype))
        else:
            streams.append(offset(typed(j, o.dtype)))
    return streams + scalars + [offset(typed(sum(o.is_array for o in operands), out_dtype))]


def _array_slots(operands: Sequence[Operand], per_row: Sequence[bool]) -> list[tuple[int, Operand, bool]]:
    """(index among the array operands or -1, operand, read once per row) of each operand, in order."""
    slots, k = [], 0
    for o, r in zip(operands, per_row):
        slots.append((k if o.is_array else -1, o, r))
        k += o.is_array
    return slots


# ---------------------------------------------------------------- glue shared by every group of an ndim

def _bshape(module: ir.Module, rt_type: ir.Type, ndim: int) -> ir.Function:
    """``i32 glue.bshape.<ndim>(rt*, i8** structs, i32 n, i64* shape, i32 msg, i32 node)`` (module doc)."""
    def build(fn: ir.Function) -> None:
        rt, structs, n, shape, msg, node = fn.args
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        b = ctx.builder
        slot = ctx.alloca(I64, name="length")
        for d in range(ndim):
            b.store(I64(1), slot)
            with ctx.for_range(b.sext(n, I64), name="k") as k:
                c = ctx.shape(_struct_at(b, structs, k, ndim), d)
                length = b.load(slot)
                bad = b.and_(b.and_(b.icmp_signed("!=", c, I64(1)), b.icmp_signed("!=", length, I64(1))),
                             b.icmp_signed("!=", c, length))
                with b.if_then(bad, likely=False):
                    b.call(error_setter(module, rt_type), [rt, I32(GJ_ERR_VALUE), msg, node, length, c, I64(d)])
                    b.ret(I32(GJ_ERR_VALUE))
                b.store(b.select(b.icmp_signed("!=", c, I64(1)), c, length), slot)
            b.store(b.load(slot), b.gep(shape, [I32(d)], inbounds=True))
        b.ret(I32(0))

    fnty = ir.FunctionType(I32, [rt_type, I8P.as_pointer(), I32, _I64P, I32, I32])
    return glue_function(module, f"bshape.{ndim}", fnty, build)


def _struct_at(b: ir.IRBuilder, structs: ir.Value, k: ir.Value, ndim: int) -> ir.Value:
    return b.bitcast(b.load(b.gep(structs, [k], inbounds=True)), _generic_struct(ndim))


def _driver(module: ir.Module, ndim: int) -> ir.Function:
    """``i32 glue.ew.<ndim>(adapter*, rows*, i8** structs, i32 m, i64* itemsizes, i8* scalars, i32 flags)``: the
    m structs are the array operands then the output (module doc); unit-stride rows go to the rows adapter, one
    call per 2-d slab."""
    def build(fn: ir.Function) -> None:
        adapter, rows_adapter, structs, count, sizes, packed, flags = fn.args
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        b = ctx.builder
        m = b.sext(count, I64)
        ptrs, steps = b.alloca(I8P, size=m, name="ptrs"), b.alloca(I64, size=m, name="steps")
        outer = b.alloca(I64, size=m, name="outer")
        bases, bstrides = b.alloca(I8P, size=m, name="bases"), b.alloca(I64, size=b.mul(m, I64(ndim)))
        flat = ctx.alloca(ir.IntType(1), name="flat")
        shape = ctx.shapes(_struct_at(b, structs, b.sub(m, I64(1)), ndim), ndim)
        total = product(b, shape)
        with b.if_then(b.icmp_signed("==", total, I64(0)), likely=False):
            b.ret(I32(0))
        b.store(b.icmp_signed("!=", b.and_(flags, I32(FLAT)), I32(0)), flat)
        arena = _arena(ctx, ndim, total)
        with ctx.for_range(m, name="k") as k:
            arr = _struct_at(b, structs, k, ndim)
            size = b.load(b.gep(sizes, [k], inbounds=True))
            data = b.bitcast(ctx.data(arr), I8P)
            for d in range(ndim):
                s = b.select(b.icmp_signed("==", ctx.shape(arr, d), I64(1)), I64(0), ctx.stride(arr, d))
                b.store(s, b.gep(bstrides, [b.add(b.mul(k, I64(ndim)), I64(d))], inbounds=True))
            contiguous = _full_contiguous(ctx, arr, shape, size)
            if arena is not None:
                contiguous, data = _gathered(ctx, arena, arr, k, m, size, shape, total, contiguous, data, bstrides)
            b.store(b.and_(b.load(flat), contiguous), flat)
            b.store(data, b.gep(bases, [k], inbounds=True))
            b.store(size, b.gep(steps, [k], inbounds=True))
        call_args = [ptrs, steps, packed]
        with b.if_then(b.load(flat), likely=True):
            with ctx.for_range(m, name="f") as k:
                b.store(b.load(b.gep(bases, [k], inbounds=True)), b.gep(ptrs, [k], inbounds=True))
            many = b.and_(b.icmp_signed("!=", b.and_(flags, I32(PARALLEL)), I32(0)),
                          b.icmp_signed(">=", total, I64(PARALLEL_MIN_ITEMS)))
            with b.if_then(many, likely=False):
                b.ret(call_parallel(ctx, f"ew.{ndim}", None, [adapter] + call_args, total))
            b.ret(b.call(adapter, [I64(0), total] + call_args))
        inner = ndim - 1
        unit = ctx.alloca(ir.IntType(1), name="unit")
        b.store(ir.Constant(ir.IntType(1), 1), unit)
        with ctx.for_range(m, name="r") as k:           # rows: inner strides, broadcast ones 0
            at = b.add(b.mul(k, I64(ndim)), I64(inner))
            step = b.load(b.gep(bstrides, [at], inbounds=True))
            b.store(step, b.gep(steps, [k], inbounds=True))
            b.store(b.and_(b.load(unit), b.icmp_signed("==", step, b.load(b.gep(sizes, [k], inbounds=True)))),
                    unit)
        # rows of one element: the adapter reads ptrs[k][0], whatever the inner strides
        b.store(b.or_(b.load(unit), b.icmp_signed("==", shape[inner], I64(1))), unit)
        status_slot = ctx.alloca(I32, name="status")
        with b.if_then(b.load(unit), likely=True):      # one rows-adapter call per 2-d slab
            if inner == 0:                              # a 1-d loop is one row: the adapter itself
                with ctx.for_range(m, name="s") as k:
                    b.store(b.load(b.gep(bases, [k], inbounds=True)), b.gep(ptrs, [k], inbounds=True))
                b.ret(b.call(adapter, [I64(0), shape[inner], ptrs, steps, packed]))
            else:
                with ctx.loop_nest(shape[:inner - 1], name="slab") as index:
                    _row_pointers(ctx, m, ndim, index, bases, bstrides, ptrs)
                    with ctx.for_range(m, name="s") as k:
                        at = b.add(b.mul(k, I64(ndim)), I64(inner - 1))
                        b.store(b.load(b.gep(bstrides, [at], inbounds=True)), b.gep(outer, [k], inbounds=True))
                    status = b.call(rows_adapter, [shape[inner - 1], shape[inner], ptrs, outer, packed])
                    with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
                        b.ret(status)
                b.ret(I32(0))
        with ctx.loop_nest(shape[:inner], name="row") as index:
            _row_pointers(ctx, m, ndim, index, bases, bstrides, ptrs)
            b.store(b.call(strided_runner(module, ADAPTER_TYPE),     # loops/gather.py: unit-stride chunks
                           [adapter, I64(0), shape[inner], ptrs, steps, packed, count, sizes]), status_slot)
            status = b.load(status_slot)
            with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
                b.ret(status)
        b.ret(I32(0))

    fnty = ir.FunctionType(I32, [ADAPTER_TYPE.as_pointer(), ROWS_TYPE.as_pointer(), I8P.as_pointer(), I32, _I64P,
                                 I8P, I32])
    return glue_function(module, f"ew.{ndim}", fnty, build)


GATHER_BYTES = 1 << 15      # stack room of glue.ew for small operands copied into C order (_gathered)


def _arena(ctx: LowerContext, ndim: int, total: ir.Value) -> tuple | None:
    """(stack room of GATHER_BYTES, a slot of the bytes used, slots of _gathered's results) for _gathered; None
    for 1-d loops (a strided vector is one row: glue.strided gathers it as cheaply)."""
    if ndim < 2:
        return None
    room = ctx.alloca(ir.ArrayType(I8P.pointee, GATHER_BYTES), name="gather.room")
    used = ctx.alloca(I64, name="gather.used")
    ctx.builder.store(I64(0), used)
    return (ctx.builder.bitcast(room, I8P), used, ctx.alloca(I8P, name="gather.data"),
            ctx.alloca(ir.IntType(1), name="gather.ok"))


def _gathered(ctx: LowerContext, arena: tuple, arr: ir.Value, k: ir.Value, m: ir.Value, size: ir.Value,
              shape: Sequence[ir.Value], total: ir.Value, contiguous: ir.Value, data: ir.Value,
              bstrides: ir.Value) -> tuple[ir.Value, ir.Value]:
    """An input operand with the loop's full shape that is not C-contiguous (a transposed matrix, a strided
    view) and fits the arena's remaining room: copied there in C order by an O3 kernel (copy_c_order), its
    strides in bstrides now the copy's.  The group then runs flat or by unit-stride rows instead of gathering
    every row through glue.strided.  Returns (whether the operand is now C-contiguous with the full shape, its
    data pointer)."""
    b = ctx.builder
    room, used, slot_data, slot_ok = arena
    ndim = len(shape)
    b.store(data, slot_data)
    b.store(contiguous, slot_ok)
    with b.if_then(b.not_(contiguous), likely=False):     # the checks cost a C-contiguous operand nothing
        full = b.icmp_signed("!=", size, I64(0))          # per-row operands (size 0) stay as they are
        for d in range(ndim):
            full = b.and_(full, b.icmp_signed("==", ctx.shape(arr, d), shape[d]))
        bytes_ = b.mul(total, size)
        start = b.load(used)
        fits = b.icmp_signed("<=", b.add(start, bytes_), I64(GATHER_BYTES))
        want = b.and_(full, b.and_(fits, b.icmp_signed("<", k, b.sub(m, I64(1)))))
        with b.if_then(want):
            dst = b.gep(room, [start])
            strides = [ctx.stride(arr, d) for d in range(ndim)]
            b.call(copy_c_order(b.module, ndim), [data, dst, size, *shape, *strides])
            b.store(b.add(start, b.and_(b.add(bytes_, I64(63)), I64(-64))), used)
            expected = size
            for d in reversed(range(ndim)):
                at = b.gep(bstrides, [b.add(b.mul(k, I64(ndim)), I64(d))], inbounds=True)
                b.store(b.select(b.icmp_signed("==", shape[d], I64(1)), I64(0), expected), at)
                expected = b.mul(expected, shape[d])
            b.store(dst, slot_data)
            b.store(ir.Constant(ir.IntType(1), 1), slot_ok)
    return b.load(slot_ok), b.load(slot_data)


def copy_c_order(module: ir.Module, ndim: int) -> ir.Function:
    """``void copy.c.<ndim>(i8* src, i8* dst, i64 itemsize, i64 length..., i64 stride...)``: dst (C order) =
    src (any byte strides), elements of 1, 2, 4, 8 or 16 bytes; a function of the kernels module (O3)."""
    fnty = ir.FunctionType(ir.VoidType(), [I8P, I8P, I64] + [I64] * (2 * ndim))
    fn, new = kernel_function(module, f"copy.c.{ndim}", fnty)
    if not new:
        return fn
    src, dst, size, *rest = fn.args
    lengths, strides = rest[:ndim], rest[ndim:]
    dst.add_attribute("noalias")
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = ctx.builder
    for width in (8, 4, 16, 2, 1):
        ty = ir.IntType(8 * width)
        with b.if_then(b.icmp_signed("==", size, I64(width))):
            out = b.bitcast(dst, ty.as_pointer())
            with ctx.loop_nest(list(lengths), name=f"c{width}.") as index:
                p, flat = src, I64(0)
                for d, i in enumerate(index):
                    p = b.gep(p, [b.mul(i, strides[d])])
                    flat = b.add(b.mul(flat, lengths[d]), i)
                # numpy aligns a complex128 to 8 bytes only
                b.store(b.load(b.bitcast(p, ty.as_pointer()), align=min(width, 8)), b.gep(out, [flat]),
                        align=min(width, 8))
            b.ret_void()
    b.ret_void()
    return fn


def _row_pointers(ctx: LowerContext, m: ir.Value, ndim: int, index: Sequence[ir.Value], bases: ir.Value,
                  bstrides: ir.Value, ptrs: ir.Value) -> None:
    """ptrs[k] = bases[k] advanced by index (the outer dimensions' positions) along operand k's strides."""
    b = ctx.builder
    with ctx.for_range(m, name="p") as k:
        p = b.load(b.gep(bases, [k], inbounds=True))
        for d, i in enumerate(index):
            st = b.load(b.gep(bstrides, [b.add(b.mul(k, I64(ndim)), I64(d))], inbounds=True))
            p = b.gep(p, [b.mul(i, st)])
        b.store(p, b.gep(ptrs, [k], inbounds=True))


def _itemsizes(module: ir.Module, sizes: tuple[int, ...]) -> ir.Value:
    """A private constant i64 array of the operands' and output's element sizes (one per combination)."""
    name = "gj.itemsizes." + "_".join(map(str, sizes))
    g = module.globals.get(name)
    if g is None:
        ty = ir.ArrayType(I64, len(sizes))
        g = ir.GlobalVariable(module, ty, name)
        g.linkage, g.global_constant, g.initializer = "private", True, ir.Constant(ty, list(sizes))
    return g.gep([I32(0), I32(0)])


def _full_contiguous(ctx: LowerContext, arr: ir.Value, shape: Sequence[ir.Value], size: ir.Value) -> ir.Value:
    """i1: arr is C-contiguous (length-1 dimensions may have any stride) and has exactly shape."""
    b = ctx.builder
    ok, expected = ir.Constant(ir.IntType(1), 1), size
    for d in reversed(range(len(shape))):
        length, stride = ctx.shape(arr, d), ctx.stride(arr, d)
        ok = b.and_(ok, b.icmp_signed("==", length, shape[d]))
        ok = b.and_(ok, b.or_(b.icmp_signed("==", length, I64(1)), b.icmp_signed("==", stride, expected)))
        expected = b.mul(expected, length)
    return ok


__all__ = ["driven_shape", "emit_driven", "emit_driven_temporary"]
