"""Updates of shared variables written into the shared variable's own buffer (no new array per call).

An update ``W <- expr`` qualifies at compile time (``plan_inplace_updates``) when ``expr`` is the result of a fused
elementwise loop group (``W - lr * g``), read by nothing but the function's outputs, ``W`` is a shared variable
(never an explicit argument), no other output is ``W`` or a view of it (the caller would see it change), the
group reads ``W`` only as itself (not transposed, sliced or broadcast: element i of the result reads element i
of ``W``), no other in-place update group reads ``W``, and the graph has no Python fallback node.  Such groups
are emitted after every other node, so whatever else reads ``W`` has read it already.

At run time (``allocate_update``) the group writes into ``W``'s buffer when the caller's slots hold Python
objects (the CPython wrapper), ``W`` is writeable, C-contiguous and has exactly the result's shape, and no other
array operand of the group overlaps ``W``'s memory; the update output is then ``W``'s ndarray itself (the
Function stores it back into the container: same object, new values).  Otherwise it gets a fresh array, as
before.  So a user holding ``W.get_value(borrow=True)`` may see it change; ``get_value()`` returns a copy.
"""

from __future__ import annotations

from typing import Any, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.destroyhandler import storage_root

from . import layouts as L
from .buffers import py_slots
from .context import LowerContext, glue_function
from .fusion import LoopGroup, is_native_tensor
from .layouts import I8P, I32, I64
from .loops import Operand, c_contiguous
from .unbox import byte_extent, extents_meet

I1 = ir.IntType(1)


def _is_shared(var: Variable) -> bool:
    from graphjit.compile.sharedvalue import SharedVariable
    return isinstance(var, SharedVariable)


def update_signature(fgraph: Any) -> tuple:
    """What the in-place plan depends on beyond the graph's structure (for the in-memory map's key)."""
    return tuple((j, k, _is_shared(fgraph.inputs[k])) for j, k in sorted(fgraph.update_mapping.items()))


def _candidate(fgraph: Any, groups: dict, j: int, k: int) -> LoopGroup | None:
    """The group computing update output j of input k if it may write into k's buffer (static rules)."""
    out, target = fgraph.outputs[j], fgraph.inputs[k]
    if not (_is_shared(target) and is_native_tensor(target) and out.type == target.type):
        return None
    group = groups.get(out.owner) if out.owner is not None else None
    if group is None or group.reduce is not None or group.output is not out:
        return None
    if any(c != "output" for c, _ in fgraph.clients.get(out, [])) or fgraph.outputs.count(out) != 1:
        return None
    if any(i != j and storage_root(o) is target for i, o in enumerate(fgraph.outputs)):
        return None
    if any(v is not target and storage_root(v) is target for v in group.inputs):
        return None
    return group


def plan_inplace_updates(fgraph: Any, groups: dict, has_fallbacks: bool) -> dict[Apply, tuple]:
    """Anchor of each qualifying update group -> (output index, the shared input it overwrites, GemmUpdate or None).

    A GemmUpdate (update_gemm.py) defers the group's product too: its operands count among what the group reads.
    """
    from .update_gemm import match_gemm_update
    if has_fallbacks:
        return {}
    found = {}
    for j, k in sorted(fgraph.update_mapping.items()):
        group = _candidate(fgraph, groups, j, k)
        if group is not None:
            target = fgraph.inputs[k]
            gemm = match_gemm_update(fgraph, group, target)
            reads = list(group.inputs) + (list(gemm.dot.inputs) if gemm is not None else [])
            found[group.anchor] = (j, target, gemm, reads)
    plan = {}
    for anchor, (j, target, gemm, _) in found.items():
        others = [reads for a, (_, _, _, reads) in found.items() if a is not anchor]
        if not any(storage_root(v) is target for reads in others for v in reads):
            plan[anchor] = (j, target, gemm)
    return plan


# ---------------------------------------------------------------- run time

def _extent(ctx: Any, arr: ir.Value, ndim: int, dtype: str) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(lowest byte address, one past the highest, empty?) of a strided array."""
    return byte_extent(ctx.builder, ctx.data(arr), I64(L.itemsize(dtype)),
                       [ctx.shape(arr, d) for d in range(ndim)], [ctx.stride(arr, d) for d in range(ndim)])


def _writable_target(ctx: Any, w: ir.Value, dtype: str, ndim: int, shape: Sequence[ir.Value],
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


def _flags_writeable(ctx: Any, parent: ir.Value) -> ir.Value:
    b = ctx.builder
    ptr = b.bitcast(b.gep(parent, [I64(L.PYARRAY_OFFSETS["flags"])], inbounds=True), I32.as_pointer())
    return b.icmp_unsigned("!=", b.and_(b.load(ptr), I32(L.NPY_ARRAY_WRITEABLE)), I32(0))


def _incref_with_gil(ctx: Any, obj: ir.Value) -> None:
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


def target_writable(ctx: Any, w: ir.Value, target: Variable, shape: Sequence[ir.Value],
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


def adopt_target(ctx: Any, j: int, w: ir.Value) -> None:
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


def allocate_update(ctx: Any, j: int, target: Variable, operands: Sequence[Operand],
                    inputs: Sequence[Variable], shape: Sequence[ir.Value]) -> ir.Value:
    """Output j's struct: target's own buffer when allowed at run time, else a fresh array (module doc)."""
    b = ctx.builder
    w, out = ctx.value(target), ctx.out_args[j]
    others = [(op.struct, v) for op, v in zip(operands, inputs) if op.is_array and v is not target]
    with b.if_else(target_writable(ctx, w, target, shape, others), likely=True) as (inplace, fresh):
        with inplace:
            adopt_target(ctx, j, w)
        with fresh:
            ctx.allocate_array(j, out, target.type.dtype, list(shape))
    ctx.in_slot.add(j)
    return out
