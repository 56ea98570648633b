"""A native draw's access to its numpy Generator: the ``bitgen_t*`` and the bit generator's lock, in IR.

The generator crosses the native entry as a ``PyObject*`` (its Type has the default object layout).  The draw
reads ``gen + bitgen_offset`` (the ``bitgen_t`` numpy's own methods pass) and takes the raw lock of the bit
generator's ``threading.RLock`` around the draws, as numpy's ``with self.lock`` does (jit/generator_abi.py finds
the offsets and checks the lock's layout).  No Python API call and no GIL needed: ``glue.rng.lock`` tries the
lock; when another thread holds it, it waits for it with the GIL released if this thread holds the GIL (that
thread may need the GIL to finish), and when this very thread owns the RLock (a draw inside ``with lock:``) it
does not take it again, as an RLock would not.

A draw that is not inplace draws from a copy (``generator_for``): ``gj_rng_copy``, a Python callback (ctypes
takes the GIL), makes it as perform does; the copy goes into the wrapper's slot of the new-generator output,
or is released after the draws when nothing reads it.
"""

from __future__ import annotations

from typing import Any, Optional

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.graph_context import GraphContext

from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I32, I64, I8P
from graphjit.link.llvm.jit.generator_abi import (COPY_SYMBOL, LOCK_COUNT_OFFSET, LOCK_OWNER_OFFSET, LOCK_RAW_OFFSET,
                                                  layout)
from graphjit.link.llvm.loops.rows import internal_function

I1 = ir.IntType(1)


def _field(b: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    return b.load(b.bitcast(b.gep(obj, [I64(offset)], inbounds=True), ty.as_pointer()))


def bitgen_pointer(ctx: LowerContext, gen: ir.Value) -> ir.Value:
    """The Generator's ``bitgen_t*`` (as i8*)."""
    offsets = layout()
    assert not isinstance(offsets, str), offsets
    return ctx.builder.gep(gen, [I64(offsets[0])], inbounds=True)


def _lock_function(ctx: LowerContext) -> ir.Function:
    """``i1 glue.rng.lock(i8* gen)``: take the bit generator's raw lock; true if taken (false: this thread owns it)."""
    fn, b, new = internal_function(ctx, "glue.rng.lock", I1, [I8P])
    if not new:
        return fn
    fn.attributes.add("noinline")
    c = LowerContext(b)
    lock = _field(b, fn.args[0], layout()[1], I8P)           # type: ignore[index]
    raw = _field(b, lock, LOCK_RAW_OFFSET, I8P)
    acquire = c.declare("PyThread_acquire_lock", ir.FunctionType(I32, [I8P, I32]))
    got = b.call(acquire, [raw, I32(0)])
    with b.if_then(b.icmp_signed("!=", got, I32(0)), likely=True):
        b.ret(I1(1))
    ident = b.call(c.declare("PyThread_get_thread_ident", ir.FunctionType(I64, [])), [])
    owner = _field(b, lock, LOCK_OWNER_OFFSET, I64)
    count = _field(b, lock, LOCK_COUNT_OFFSET, I64)
    mine = b.and_(b.icmp_unsigned("==", owner, ident), b.icmp_unsigned("!=", count, I64(0)))
    with b.if_then(mine):
        b.ret(I1(0))
    holds_gil = b.call(c.declare("PyGILState_Check", ir.FunctionType(I32, [])), [])
    with b.if_else(b.icmp_signed("!=", holds_gil, I32(0))) as (gil, no_gil):
        with gil:
            state = b.call(c.declare("PyEval_SaveThread", ir.FunctionType(I8P, [])), [])
            b.call(acquire, [raw, I32(1)])
            b.call(c.declare("PyEval_RestoreThread", ir.FunctionType(ir.VoidType(), [I8P])), [state])
        with no_gil:
            b.call(acquire, [raw, I32(1)])
    b.ret(I1(1))
    return fn


def acquire(ctx: LowerContext, gen: ir.Value) -> ir.Value:
    """Take the generator's lock (i1: whether release must give it back)."""
    return ctx.builder.call(_lock_function(ctx), [gen])


def release(ctx: LowerContext, gen: ir.Value, taken: ir.Value) -> None:
    """Give the lock back if acquire took it."""
    b = ctx.builder
    with b.if_then(taken, likely=True):
        lock = _field(b, gen, layout()[1], I8P)              # type: ignore[index]
        raw = _field(b, lock, LOCK_RAW_OFFSET, I8P)
        b.call(ctx.declare("PyThread_release_lock", ir.FunctionType(ir.VoidType(), [I8P])), [raw])


def copy_is_native(node: Apply) -> bool:
    """A non-inplace draw is lowered when its new generator is read by nothing but the graph's outputs, or in a
    scan step whose draws advance the loop's private copy (driver/scan.py sets ``generators_private``)."""
    fgraph = getattr(node, "fgraph", None)
    if getattr(fgraph, "generators_private", False):
        return True
    clients = fgraph.clients.get(node.outputs[0], []) if fgraph is not None else [("?", 0)]
    return all(client == "output" for client, _ in clients)


def own_copy(ctx: GraphContext, node: Apply, slot: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(a slot holding a new copy of the Generator in slot, the copy): its owner releases or hands it over."""
    b = ctx.builder
    COPY_SYMBOL.publish()
    new = ctx.call_external(COPY_SYMBOL.name, ir.FunctionType(I8P, [I8P]), [b.load(slot)])
    ctx.raise_if(b.icmp_unsigned("==", new, ir.Constant(I8P, None)), node, "RuntimeError",
                 f"{node.op}: copying the generator failed")
    held = ctx.alloca(I8P, name=ctx.name(node, "rng"))
    b.store(new, held)
    return held, new


def generator_for(ctx: GraphContext, node: Apply, slot: ir.Value) -> tuple[ir.Value, ir.Value, Optional[ir.Value]]:
    """(slot of the new generator, the Generator to draw from, a copy to release after the draws or None)."""
    b = ctx.builder
    private = getattr(ctx, "private_generators", None)
    if private is not None and node.inputs[0] in private:
        private.add(node.outputs[0])            # a scan's own copy: advanced in place, its next draw too
        return slot, b.load(slot), None
    if node.op.inplace:
        return slot, b.load(slot), None
    held, new = own_copy(ctx, node, slot)
    for j, out in enumerate(ctx.fgraph.outputs):
        if out is node.outputs[0] and j not in ctx.in_slot:      # the wrapper's slot owns the copy
            ctx.in_slot.add(j)
            slots = b.load(b.gep(ctx.rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
            b.store(new, b.gep(slots, [I32(j)], inbounds=True))
            return held, new, None
    return held, new, new


def drop_copy(ctx: GraphContext, copy: Optional[Any]) -> None:
    """Release a copy nothing reads any more (with the GIL)."""
    if copy is None:
        return
    state = ctx.call_external("PyGILState_Ensure", ir.FunctionType(I32, []), [])
    ctx.call_external("Py_DecRef", ir.FunctionType(ir.VoidType(), [I8P]), [copy])
    ctx.call_external("PyGILState_Release", ir.FunctionType(ir.VoidType(), [I32]), [state])
