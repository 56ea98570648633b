"""IfElse as a native branch: the regions only one branch needs (graph/branch_schedule.py) are emitted in that branch's
block of an LLVM ``if``/``else``; the outputs are the taken branch's values, merged through one array struct."""

from __future__ import annotations

from typing import Callable, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.destroyhandler import storage_root
from graphjit.ifelse import IfElse

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.buffers import take_or_allocate
from graphjit.link.llvm.ir.graph_context import GraphContext, Value
from graphjit.link.llvm.loops.nest import copy_array, load_value
from graphjit.link.llvm.registry import branch_lowerings, lowerings


def _truth(gctx: GraphContext, cond: Variable) -> ir.Value:
    """i1: the condition's one element is nonzero (NaN is true, as Python's bool)."""
    b = gctx.builder
    dtype = cond.type.dtype
    v = load_value(b, gctx.data(gctx.value(cond)), dtype)
    if dtype == "bool":
        return v
    if isinstance(v.type, (ir.FloatType, ir.DoubleType)):
        return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
    return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))


def _owned(gctx: GraphContext, node: Apply, src: Variable) -> bool:
    """src's buffer may become the output's: a fresh value of its own node, read by node once and by nothing
    else (never an input, a constant, a view, a stack temporary or a graph output)."""
    if src.owner is None or isinstance(src, Constant) or storage_root(src) is not src or src in gctx.stack.vars:
        return False        # a stack temporary (ir/stack_temps.py) has no parent array to hand over
    value = gctx.values.get(src)
    if value is None or not value.owns_parent:
        return False
    clients = gctx.fgraph.clients.get(src, ())
    return len(clients) == 1 and clients[0][0] is node


def _branch_value(gctx: GraphContext, node: Apply, i: int, src: Variable, k: int) -> ir.Value:
    """The struct output i takes from branch k: src's own when it is owned, else a fresh copy of it."""
    ptr = gctx.value(src)
    if _owned(gctx, node, src):
        return ptr
    out = node.outputs[i]
    dtype, ndim = out.type.dtype, out.type.ndim
    shape = gctx.shapes(ptr, ndim)
    scratch = getattr(gctx, "temp_array", None)     # a context that owns its scratch buffers (a loop body's)
    if scratch is not None:
        struct = scratch(node, dtype, shape, f"branch{k}.out{i}")
    else:
        struct, slot, spare = gctx.reserve_temp(dtype, ndim, gctx.name(node, f"branch{k}.out{i}"))
        take_or_allocate(gctx, slot, spare, struct, L.dtype_name(dtype), shape)
        gctx.settle(struct)
    copy_array(gctx, ptr, struct, dtype, shape)
    return struct


@branch_lowerings.register(IfElse)
def lower_ifelse_branches(gctx: GraphContext, node: Apply, regions: Sequence[Callable[[], None]]) -> list:
    """if cond: region 0 and the then values, else: region 1 and the else values; outputs merged."""
    b = gctx.builder
    merged = [gctx.alloca(L.array_struct(o.type.dtype, o.type.ndim), name=gctx.name(node, f"out{i}"))
              for i, o in enumerate(node.outputs)]
    cond = _truth(gctx, node.inputs[0])
    positions = node.op.lazy_branches(node)
    with b.if_else(cond) as (then, otherwise):
        for k, block in enumerate((then, otherwise)):
            with block:
                regions[k]()
                gctx.current_node = node
                for i, p in enumerate(positions[k]):
                    src = _branch_value(gctx, node, i, node.inputs[p], k)
                    b.store(b.load(src), merged[i])
    return [Value(m, owns_parent=True) for m in merged]


@lowerings.register(IfElse)
def lower_ifelse(gctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """An IfElse whose branch values are all computed already (no region): the same branch, nothing to emit."""
    return lower_ifelse_branches(gctx, node, [lambda: None, lambda: None])
