"""Outputs written into the buffer of the graph input they destroy (an in-place update of a shared variable).

The rewrites decide what overwrites what (tensor/rewriting/update_inplace.py: an in-place Gemm or Elemwise chain
destroying W, whose result is W's update); the graph says so through destroy_map.  This module only plans the
memory: an output whose storage is a graph input's (``storage_root``) is written into that input's buffer when
(``plan_inplace_outputs``) it is computed by a fused elementwise group or an in-place Gemm, read by nothing but
the function's outputs, once; no other output is that input or a view of it; the writer reads the input only
as itself (not transposed, sliced or broadcast); no other such writer reads the input; and the graph has no
Python fallback node.  Writers are emitted after every other node (whatever else reads the input has read it),
their checks first, so a failing call changes no state.

At run time (``target_writable``) the result goes into the input's buffer when the caller's slots hold Python
objects (the CPython wrapper), the input is writeable, C-contiguous and has exactly the result's shape, and no
other array the writer reads overlaps its memory; the output is then the input's ndarray itself (the Function
stores it back into the container: same object, new values).  Otherwise it gets a fresh array.  So a user
holding ``W.get_value(borrow=True)`` may see it change; ``get_value()`` returns a copy.
"""

from __future__ import annotations

from typing import Any, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.destroyhandler import storage_root
from graphjit.tensor.blas_gemm import Gemm

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.buffers import py_slots
from graphjit.link.llvm.ir.context import LowerContext, glue_function
from graphjit.link.llvm.ir.layouts import I8P, I32, I64, is_native_tensor
from graphjit.link.llvm.loops.loop_shape import Operand, c_contiguous
from graphjit.link.llvm.cpython.unbox import byte_extent, extents_meet
from graphjit.link.llvm.ops.blas_gemm import check_product, check_target, emit_gemm_into
from graphjit.link.llvm.ops.shape import copy_cast

from graphjit.link.llvm.ir.graph_context import GraphContext

I1 = ir.IntType(1)


def _writer(fgraph: Any, groups: dict, out: Variable) -> tuple[Apply, list[Variable]] | None:
    """(the node emitting out, the variables it reads) if out is an elementwise group's or an in-place Gemm's."""
    node = out.owner
    group = groups.get(node) if node is not None else None
    if group is not None:
        if group.reduce is not None or group.output is not out:
            return None
        return group.anchor, list(group.inputs)
    if node is not None and isinstance(node.op, Gemm) and node.op.inplace:
        return node, list(node.inputs)
    return None


def _candidate(fgraph: Any, groups: dict, j: int) -> tuple[Apply, Variable, list[Variable]] | None:
    """(writer, the input it overwrites, what it reads) for output j, if it may be written in place (static rules)."""
    out = fgraph.outputs[j]
    target = storage_root(out)
    if target is out or target not in fgraph.inputs or not (is_native_tensor(target) and out.type == target.type):
        return None
    found = _writer(fgraph, groups, out)
    if found is None:
        return None
    if any(c != "output" for c, _ in fgraph.clients.get(out, [])) or fgraph.outputs.count(out) != 1:
        return None
    if any(i != j and storage_root(o) is target for i, o in enumerate(fgraph.outputs)):
        return None
    if any(v is not target and storage_root(v) is target for v in found[1]):
        return None
    return found[0], target, found[1]


def plan_inplace_outputs(fgraph: Any, order: Sequence[Apply], groups: dict, has_fallbacks: bool
                         ) -> dict[Apply, tuple[int, Variable, list[Variable]]]:
    """Writer node (a group's anchor or a Gemm) -> (output index, the input whose buffer it writes, the other
    graph inputs the writers after it read: its run-time check keeps off their memory too, as two shared
    variables may hold one buffer)."""
    if has_fallbacks:
        return {}
    found = {}
    for j in range(len(fgraph.outputs)):
        cand = _candidate(fgraph, groups, j)
        if cand is not None and cand[0] not in found:
            found[cand[0]] = (j, cand[1], cand[2])
    kept = {}
    for node, (j, target, _) in found.items():
        others = [reads for n, (_, _, reads) in found.items() if n is not node]
        if not any(storage_root(v) is target for reads in others for v in reads):
            kept[node] = (j, target)
    pending = [n for n in order if n in kept]
    plan = {}
    for i, node in enumerate(pending):
        j, target = kept[node]
        later = [v for n in pending[i + 1:] for v in found[n][2] if v in fgraph.inputs and is_native_tensor(v)]
        plan[node] = (j, target, [v for k, v in enumerate(later) if v is not target and v not in later[:k]])
    return plan


# ---------------------------------------------------------------- run time

def _extent(ctx: LowerContext, arr: ir.Value, ndim: int, dtype: str) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(lowest byte address, one past the highest, empty?) of a strided array."""
    return byte_extent(ctx.builder, ctx.data(arr), I64(L.itemsize(dtype)),
                       [ctx.shape(arr, d) for d in range(ndim)], [ctx.stride(arr, d) for d in range(ndim)])


def _writable_target(ctx: LowerContext, w: ir.Value, dtype: str, ndim: int, shape: Sequence[ir.Value],
                     others: Sequence[tuple[ir.Value, str, int]]) -> ir.Value:
    """i1: the result may be written into target's buffer w, its flags aside (see the module doc)."""
    b = ctx.builder
    parent = ctx.field(w, "parent")
    ok = b.and_(py_slots(ctx), b.icmp_unsigned("!=", parent, ir.Constant(I8P, None)))
    ok = b.and_(ok, c_contiguous(ctx, w, ndim, dtype))
    for d, n in enumerate(shape):
        ok = b.and_(ok, b.icmp_signed("==", ctx.shape(w, d), n))
    mine = _extent(ctx, w, ndim, dtype)
    for struct, other_dtype, other_ndim in others:
        ok = b.and_(ok, b.not_(extents_meet(b, mine, _extent(ctx, struct, other_ndim, other_dtype))))
    return ok


def _flags_writeable(ctx: LowerContext, parent: ir.Value) -> ir.Value:
    b = ctx.builder
    ptr = b.bitcast(b.gep(parent, [I64(L.PYARRAY_OFFSETS["flags"])], inbounds=True), I32.as_pointer())
    return b.icmp_unsigned("!=", b.and_(b.load(ptr), I32(L.NPY_ARRAY_WRITEABLE)), I32(0))


def _incref_with_gil(ctx: LowerContext, obj: ir.Value) -> None:
    """Py_IncRef(obj), taking the GIL around it when the native entry runs without it."""
    b = ctx.builder
    flags = b.load(b.gep(ctx.rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
    nogil = b.icmp_unsigned("!=", b.and_(flags, I64(L.RT_FLAG_GIL_RELEASED)), I64(0))
    state = ctx.alloca(I32, name="update.gil_state")
    with b.if_then(nogil, likely=False):
        b.store(ctx.call_external("PyGILState_Ensure", ir.FunctionType(I32, []), []), state)
    ctx.call_external("Py_IncRef", ir.FunctionType(ir.VoidType(), [I8P]), [obj])
    with b.if_then(nogil, likely=False):
        ctx.call_external("PyGILState_Release", ir.FunctionType(ir.VoidType(), [I32]), [b.load(state)])


def target_writable(ctx: LowerContext, w: ir.Value, target: Variable, shape: Sequence[ir.Value],
                    others: Sequence[tuple[ir.Value, Variable]]) -> ir.Value:
    """i1: a result of this shape may be written into target's buffer w (every run-time rule of the module doc).

    One call of ``glue.writable.<target>.<others>``, shared by the updates of the same types (and by a gemm
    update's fused and separate paths): inline, the checks were ~70 instructions per update.
    """
    b = ctx.builder
    dtype, ndim = target.type.dtype, target.type.ndim
    kinds = tuple((v.type.dtype, v.type.ndim) for _, v in others)
    fn = _writable_helper(ctx.module, ctx.rt.type, dtype, ndim, kinds)
    return b.call(fn, [ctx.rt, w, *shape, *(b.bitcast(struct, I8P) for struct, _ in others)])


def _writable_helper(module: ir.Module, rt_type: ir.Type, dtype: str, ndim: int,
                     kinds: tuple[tuple[str, int], ...]) -> ir.Function:
    """``i1 glue.writable.<dtype><ndim>.<other dtype><ndim>...(rt*, w*, i64 length..., i8* other...)``."""
    def build(fn: ir.Function) -> None:
        rt, w, *rest = fn.args
        shape, others = rest[:ndim], rest[ndim:]
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")), rt)
        b = ctx.builder
        structs = [(b.bitcast(o, L.array_struct(dt, nd).as_pointer()), dt, nd) for o, (dt, nd) in zip(others, kinds)]
        with b.if_then(b.not_(_writable_target(ctx, w, dtype, ndim, shape, structs)), likely=False):
            b.ret(ir.Constant(I1, 0))
        b.ret(_flags_writeable(ctx, ctx.field(w, "parent")))      # parent != NULL checked

    name = "writable." + ".".join(f"{dt}{nd}" for dt, nd in ((dtype, ndim), *kinds))
    fnty = ir.FunctionType(I1, [rt_type, L.array_struct(dtype, ndim).as_pointer()] + [I64] * ndim
                           + [I8P] * len(kinds))
    return glue_function(module, name, fnty, build)


def adopt_target(ctx: GraphContext, j: int, w: ir.Value) -> None:
    """Output j is target's own ndarray: its struct, and a new reference in slot j (``glue.adopt.<type>``)."""
    out = ctx.out_args[j]

    def build(fn: ir.Function) -> None:
        rt, slot, src, dst = fn.args
        hctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")), rt)
        b = hctx.builder
        b.store(b.load(src), dst)
        parent = hctx.field(src, "parent")
        _incref_with_gil(hctx, parent)
        slots = b.load(b.gep(rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
        b.store(parent, b.gep(slots, [slot], inbounds=True))
        b.ret_void()

    fnty = ir.FunctionType(ir.VoidType(), [ctx.rt.type, I32, w.type, out.type])
    fn = glue_function(ctx.module, f"adopt.{_type_name(w)}", fnty, build)
    ctx.builder.call(fn, [ctx.rt, I32(j), w, out])


def _type_name(struct: ir.Value) -> str:
    """'<element type>.<ndim>' of an array struct pointer ('double.2'): its data pointer's LLVM type, its ndim."""
    sty = struct.type.pointee
    return f"{sty.elements[4].pointee}.{sty.elements[5].count}"


def allocate_update(ctx: GraphContext, j: int, target: Variable, operands: Sequence[Operand],
                    inputs: Sequence[Variable], shape: Sequence[ir.Value], later: Sequence[Variable] = ()) -> ir.Value:
    """Output j's struct: target's own buffer when allowed at run time, else a fresh array (module doc)."""
    b = ctx.builder
    w, out = ctx.value(target), ctx.out_args[j]
    others = [(op.struct, v) for op, v in zip(operands, inputs) if op.is_array and v is not target]
    others += [(ctx.value(v), v) for v in later if v not in inputs]
    with b.if_else(target_writable(ctx, w, target, shape, others), likely=True) as (inplace, fresh):
        with inplace:
            adopt_target(ctx, j, w)
        with fresh:
            ctx.allocate_array(j, out, target.type.dtype, list(shape))
    ctx.in_slot.add(j)
    return out


def emit_gemm_in_place(ctx: LowerContext, node: Apply, j: int, target: Variable, later: Sequence[Variable] = ()
                       ) -> ir.Value:
    """Graph output j of an in-place Gemm: accumulated into target's buffer when allowed at run time
    (target_writable: also off the memory of later, what the writers after it read), else into
    a fresh array holding z.  Returns output j's struct."""
    b, dtype = ctx.builder, node.outputs[0].type.dtype
    inputs = [ctx.value(v) for v in node.inputs]
    a, b_ = check_product(ctx, node, inputs)
    m, n = a.rows, b_.cols
    z, out = inputs[0], ctx.out_args[j]
    check_target(ctx, node, z, m, n)
    others = list(zip(inputs[2:4], node.inputs[2:4])) + [(ctx.value(v), v) for v in later
                                                          if v not in node.inputs]
    with b.if_else(target_writable(ctx, z, target, [m, n], others), likely=True) as (inplace, fresh):
        with inplace:
            emit_gemm_into(ctx, node, inputs, z)
            adopt_target(ctx, j, z)
        with fresh:
            ctx.allocate_array(j, out, dtype, [m, n])
            copy_cast(ctx, node, z, dtype, out, dtype, [m, n], "gemm.z")
            emit_gemm_into(ctx, node, inputs, out)
    ctx.in_slot.add(j)
    return out
