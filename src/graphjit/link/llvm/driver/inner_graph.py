"""Inner graphs: a FunctionGraph emitted inline inside another node's lowering (a scan body, later ifelse
branches and OpFromGraph), so the loop or branch runs in the fused native function with no call into Python.

Stable API (the contract other lowerings build on):

``plan = plan_inner(fgraph) -> InnerPlan | None``
    Decides, once per inner graph, whether every node can be compiled inline: fused elementwise groups, registered
    lowerings and ``Op.lower`` hooks, on native tensors only. ``None`` means "keep the owner's Python perform" (the
    owner's lowering says so through its ``applies`` predicate, so the linker emits the usual fallback call and
    FallbackWarning). Nodes that destroy an input are refused; lowerings needing a temporary of their own call
    ``ctx.temp_array`` (a scratch buffer here), never ``reserve_temp`` directly.

``result = emit_inner(ctx, owner, plan, inputs, sinks=None, scope="body") -> InnerResult``
    Emits the plan's nodes at ``ctx.builder``'s position, following the lazy schedule (graph/branch_schedule.py): an
    ``ifelse`` emits the nodes only one branch needs inside that branch's block, so each iteration runs only the
    taken branch's nodes. ``inputs`` holds one array-struct pointer per inner input
    (views the caller built: a sequence's row, a state, an outer value). ``sinks(i, shape)``, when given, returns
    the struct inner output ``i`` is written into (a row of the caller's preallocated buffer; the sink checks the
    shape and raises itself), or None. ``result.values[i]`` is the struct holding output i; ``result.written[i]``
    says whether it went into the sink; otherwise the caller copies it (``copy_into``).
    The emitted code may run many times per call (inside a loop): each temporary is a *scratch* buffer obtained
    once per call and reused while its length fits (``scratch_array``): no allocation per iteration.

``scratch_array(ctx, name, dtype, shape) -> ir.Value``
    A C-contiguous array struct of shape for the current iteration; the first use in a call takes the site's
    cached buffer (ir/buffers.py) or allocates, later uses only refill lengths and strides unless the buffer must
    grow. Usable at top level too. Its fields are not final (they change between iterations).

``copy_into(ctx, src, dst, dtype, shape)``: dst[...] = src[...] (any strides).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from llvmlite import ir

from graphjit.config import config
from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.branch_schedule import Branch, Schedule, flatten, lazy_schedule
from graphjit.tensor.random import RandomGeneratorType
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.buffers import take_or_allocate
from graphjit.link.llvm.ir.context import glue_function
from graphjit.link.llvm.ir.layouts import I32, I64, I64P, I8P, is_native_tensor
from graphjit.link.llvm.ir.stack_temps import StackBudget
from graphjit.link.llvm.ir.tanh import emit_tanh
from graphjit.link.llvm.driver.native_entry import lower_group, node_is_lowered, lower_node
from graphjit.link.llvm.ir.graph_context import GraphContext, Value
from graphjit.link.llvm.loops.fusion import LoopGroup, plan_groups
from graphjit.link.llvm.loops.nest import copy_array
from graphjit.link.llvm.ir.arith import product
from graphjit.link.llvm.registry import branch_lowerings

Sink = Callable[[int, Sequence[ir.Value]], Optional[ir.Value]]

# lowerings that reserve raw temporaries themselves (reserve_temp + an obtain at the site: inside a loop each
# iteration would leak the previous buffer); Reshape and SumToShape go through temp_array / in_loop instead
_RAW_TEMPORARIES: tuple = ()


@dataclass
class InnerPlan:
    """What emit_inner needs: the inner graph, its order and fused groups."""

    fgraph: Any
    order: list[Apply]
    groups: dict[Apply, LoopGroup] = field(default_factory=dict)
    schedule: Schedule = field(default_factory=list)     # order with each ifelse's branch regions (graph/branch_schedule.py)


def plan_inner(fgraph: Any, generators: bool = False) -> InnerPlan | None:
    """The plan of fgraph, or None when a node cannot be compiled inline (see the module doc).

    generators: inputs and outputs may also be random generators (a Scan's generator states: its lowering
    carries a private copy that the step's draws advance in place)."""
    if not all(is_native_tensor(v) or (generators and isinstance(v.type, RandomGeneratorType))
               for v in list(fgraph.inputs) + list(fgraph.outputs)):
        return None
    order = fgraph.toposort()
    groups = plan_groups(fgraph, order)
    for node in order:
        if getattr(node.op, "destroy_map", None):
            return None
        if node in groups:
            continue
        if (_RAW_TEMPORARIES and isinstance(node.op, _RAW_TEMPORARIES)) or not node_is_lowered(node, groups):
            return None
    return InnerPlan(fgraph, order, groups, lazy_schedule(fgraph, order))


@dataclass
class InnerResult:
    """The structs of the inner outputs and whether each went into its sink."""

    values: list[ir.Value]
    written: list[bool]


class InnerContext(GraphContext):
    """A GraphContext for an inner graph, sharing the outer one's module, runtime, messages, buffers and kernels.

    Messages name the owner node (the inner graph's nodes are not in the outer order); allocations go to the
    caller's sinks or to scratch buffers.
    """

    def __init__(self, outer: GraphContext, owner: Apply, plan: InnerPlan, sinks: Sink | None, scope: str):
        self.outer, self.owner, self.scope = outer, owner, scope
        self.builder, self.rt = outer.builder, outer.rt
        self.fgraph, self.order = plan.fgraph, list(plan.order)
        self.index = {n: i for i, n in enumerate(self.order)}
        self.values: dict[Variable, Value] = {}
        self.messages, self.message_nodes = outer.messages, outer.message_nodes
        self.out_args, self.n_out = [], outer.n_out
        self.parallel, self.compact = False, False
        self.current_node = None
        self.in_slot: set[int] = set()
        self.stack = StackBudget()          # disabled: an inner graph's temporaries are scratch buffers
        self.buffer_slots = outer.buffer_slots
        self.kernels, self.parallel_bodies = outer.kernels, outer.parallel_bodies
        self.adapters = outer.adapters
        self._final, self._fields, self._contiguous = outer._final, outer._fields, outer._contiguous
        self.sinks = sinks
        self.sink_of = {}
        for j, var in enumerate(plan.fgraph.outputs):
            self.sink_of.setdefault(var, j)
        self.written = [False] * len(plan.fgraph.outputs)

    # counters live in the outer context
    n_temp = property(lambda self: self.outer.n_temp, lambda self, v: setattr(self.outer, "n_temp", v))
    uses_blas = property(lambda self: self.outer.uses_blas, lambda self, v: setattr(self.outer, "uses_blas", v))
    hot_glue = property(lambda self: self.outer.hot_glue, lambda self, v: setattr(self.outer, "hot_glue", v))
    releases_gil = property(lambda self: self.outer.releases_gil,
                            lambda self, v: setattr(self.outer, "releases_gil", v))
    _n_const = property(lambda self: self.outer._n_const, lambda self, v: setattr(self.outer, "_n_const", v))

    def node_index(self, node: Apply | None) -> int:
        """Inner nodes report as their owner."""
        return self.outer.node_index(self.owner)

    def name(self, node: Apply, what: str) -> str:
        """owner's name, the scope, the node's inner position."""
        return self.outer.name(self.owner, f"{self.scope}.n{self.index.get(node, -1)}.{what}")

    def allocate(self, node: Apply, i: int, shape: Sequence[ir.Value]) -> ir.Value:
        """The sink of an inner output (once), else a scratch buffer."""
        var = node.outputs[i]
        j = self.sink_of.get(var)
        if j is not None and self.sinks is not None and not self.written[j]:
            struct = self.sinks(j, list(shape))
            if struct is not None:
                self.written[j] = True
                return struct
        return scratch_array(self, self.name(node, f"out{i}"), var.type.dtype, list(shape))

    in_loop = True      # lowerings that keep their own temporaries use temp_array (ops/shape.py's SumToShape)

    def temp_array(self, node: Apply, dtype: str, shape: Sequence[ir.Value], what: str) -> ir.Value:
        """A scratch buffer reused across iterations."""
        return scratch_array(self, self.name(node, what), dtype, list(shape))

    def call_math(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        """LowerContext.call_math; a scalar float64 tanh is inline (ir/tanh.py): in a loop-carried recurrence
        nothing vectorises it and libm's costs ~120 ns (with config.inline_exp, as the inline exp it uses)."""
        if name == "tanh" and isinstance(args[0].type, ir.DoubleType) and config.inline_exp:
            return emit_tanh(self.builder, args[0])
        return super().call_math(name, args)

    def temporary(self, node: Apply, i: int) -> None:
        """No cached temporaries inside an inner graph (compact groups are off)."""
        return None

    def reserve_temp(self, dtype: str, ndim: int, name: str) -> tuple[ir.Value, int, int]:
        """Refused: plan_inner keeps nodes needing it out of inner graphs."""
        raise NotImplementedError("raw temporaries inside an inner graph (plan_inner refuses these nodes)")


def emit_inner(ctx: GraphContext, owner: Apply, plan: InnerPlan, inputs: Sequence[ir.Value],
               sinks: Sink | None = None, scope: str = "body", private: Sequence[Variable] = ()) -> InnerResult:
    """Emit plan's nodes at ctx.builder's position over the input structs; see the module doc.

    private: the inner generator inputs the owner holds a copy of (draws from them advance it in place)."""
    ictx = InnerContext(ctx, owner, plan, sinks, scope)
    ictx.private_generators = set(private)
    ctx.hot_glue = True             # the body may run per iteration: the glue it calls gets the full pipeline
    for var, ptr in zip(plan.fgraph.inputs, inputs):
        ictx.values[var] = Value(ptr, owns_parent=False)
    _emit_schedule(ictx, plan.groups, plan.schedule or plan.order)
    ctx.current_node = owner
    return InnerResult([ictx.value(v) for v in plan.fgraph.outputs], list(ictx.written))


def _emit_schedule(ictx: InnerContext, groups: dict, schedule: Schedule) -> None:
    """Emit a schedule's nodes in order; a branching node with a branch lowering (ifelse) emits its regions in
    its own conditional blocks (as native_entry does for the outer graph)."""
    branched: set = set()
    for item in schedule:
        if not isinstance(item, Branch):
            if item not in branched:
                _emit_node(ictx, groups, item)
            continue
        node = item.node
        entry = branch_lowerings.lookup(type(node.op))
        if entry is None:
            for region in item.regions:
                _emit_schedule(ictx, groups, region)
            continue
        for sub in [n for r in item.regions for n in flatten(r)] + [node]:
            for var in sub.inputs:      # constants filled before the branch: every block sees them
                if isinstance(var, Constant):
                    ictx.value(var)
        ictx.current_node = node
        outs = entry.impl(ictx, node, [functools.partial(_emit_schedule, ictx, groups, r) for r in item.regions])
        for var, ptr in zip(node.outputs, outs):
            ictx.values[var] = ptr if isinstance(ptr, Value) else Value(ptr)
            ictx.finalize(ictx.values[var].ptr)
        branched.add(node)


def _emit_node(ictx: InnerContext, groups: dict, node: Apply) -> None:
    group = groups.get(node)
    if group is not None:
        if node is group.anchor:
            lower_group(ictx, group)
    else:
        lower_node(ictx, node)
    for var in node.outputs:
        if var in ictx.values:
            ictx.finalize(ictx.values[var].ptr)


def copy_into(ctx: GraphContext, src: ir.Value, dst: ir.Value, dtype: str, shape: Sequence[ir.Value]) -> None:
    """dst[...] = src[...] (any strides, equal shapes)."""
    copy_array(ctx, src, dst, dtype, list(shape))


# ---------------------------------------------------------------- scratch buffers

def _root(ctx: GraphContext) -> GraphContext:
    while isinstance(ctx, InnerContext):
        ctx = ctx.outer
    return ctx


def _entry_alloca(ctx: GraphContext, ty: ir.Type, init: ir.Constant, name: str) -> ir.AllocaInstr:
    """A stack slot initialised at the top of the function's entry block (once per call)."""
    b = ctx.builder
    with b.goto_entry_block():
        entry = b.block
        if entry.instructions:
            b.position_before(entry.instructions[0])
        slot = b.alloca(ty, name=name)
        b.store(init, slot)
    return slot


class Scratch:
    """One scratch site: a cached-buffer slot and a capacity initialised once per call (see scratch_array)."""

    def __init__(self, ctx: GraphContext, name: str, dtype: str, ndim: int):
        self.ctx, self.name, self.dtype, self.ndim = ctx, name, dtype, ndim
        self.struct, self.slot, self.spare = GraphContext.reserve_temp(_root(ctx), dtype, ndim, name)
        self.cap = _entry_alloca(ctx, I64, I64(-1), f"{name}.cap")

    def obtain(self, shape: Sequence[ir.Value]) -> ir.Value:
        """Emit: make the struct a C-contiguous array of shape (first use: cached or fresh buffer; later: reuse
        while it fits, else a bigger one)."""
        ctx, b, name = self.ctx, self.ctx.builder, self.name
        nitems = product(b, shape)
        have = b.load(self.cap)
        first, pick, grow, refill, done = (b.append_basic_block(f"{name}.{w}")
                                           for w in ("first", "pick", "grow", "refill", "done"))
        b.cbranch(b.icmp_signed("<", have, I64(0)), first, pick)
        b.position_at_end(pick)
        b.cbranch(b.icmp_signed(">", nitems, have), grow, refill)
        b.position_at_end(first)
        take_or_allocate(ctx, self.slot, self.spare, self.struct, L.dtype_name(self.dtype), list(shape))
        b.store(nitems, self.cap)
        b.branch(done)
        b.position_at_end(grow)
        _regrow(ctx, self.slot, self.struct, self.dtype, shape)
        b.store(nitems, self.cap)
        b.branch(done)
        b.position_at_end(refill)
        _refill(ctx, self.struct, self.dtype, shape, nitems)
        b.branch(done)
        b.position_at_end(done)
        ctx.mark_contiguous(self.struct)
        return self.struct


def scratch_array(ctx: GraphContext, name: str, dtype: str, shape: Sequence[ir.Value]) -> ir.Value:
    """See the module doc: a reusable C-contiguous buffer of shape (per call: obtained once, regrown if needed)."""
    return Scratch(ctx, name, dtype, len(shape)).obtain(shape)


def _refill(ctx: GraphContext, struct: ir.Value, dtype: str, shape: Sequence[ir.Value], nitems: ir.Value) -> None:
    b = ctx.builder
    words = b.bitcast(struct, I64P)          # {meminfo, parent, nitems, itemsize, data, shape[n], strides[n]}
    b.store(nitems, b.gep(words, [I64(2)], inbounds=True))
    stride = I64(L.itemsize(dtype))
    n = len(shape)
    for d in reversed(range(n)):
        b.store(shape[d], b.gep(words, [I64(5 + d)], inbounds=True))
        b.store(stride, b.gep(words, [I64(5 + n + d)], inbounds=True))
        stride = b.mul(stride, shape[d])


def _regrow(ctx: GraphContext, slot: int, struct: ir.Value, dtype: str, shape: Sequence[ir.Value]) -> None:
    """Release the slot's buffer (it held a smaller array) and allocate one of shape into the slot."""
    b = ctx.builder
    release = _release_helper(ctx.module, ctx.rt.type)
    b.call(release, [ctx.rt, I32(slot)])
    ctx.allocate_array(slot, struct, dtype, list(shape))


def _release_helper(module: ir.Module, rt_type: ir.Type) -> ir.Function:
    """``void glue.inner.release(rt*, i32 slot)``: Py_DecRef the ndarray in rt->slots[slot] (taking the GIL when
    the entry released it) and clear the slot; only when the slots own numpy arrays (RT_FLAG_PY_SLOTS)."""
    def build(fn: ir.Function) -> None:
        rt, slot = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        from_py = fn.append_basic_block("py")
        out = fn.append_basic_block("out")
        flags = b.load(b.gep(rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
        b.cbranch(b.icmp_unsigned("!=", b.and_(flags, I64(L.RT_FLAG_PY_SLOTS)), I64(0)), from_py, out)
        b.position_at_end(from_py)
        slots = b.load(b.gep(rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
        cell = b.gep(slots, [slot], inbounds=True)
        obj = b.load(cell)
        nogil = b.icmp_unsigned("!=", b.and_(flags, I64(L.RT_FLAG_GIL_RELEASED)), I64(0))
        ensure = _declare(module, "PyGILState_Ensure", ir.FunctionType(I32, []))
        release = _declare(module, "PyGILState_Release", ir.FunctionType(ir.VoidType(), [I32]))
        decref = _declare(module, "Py_DecRef", ir.FunctionType(ir.VoidType(), [I8P]))
        state = b.alloca(I32)
        b.store(I32(0), state)
        with b.if_then(nogil, likely=False):
            b.store(b.call(ensure, []), state)
        b.call(decref, [obj])
        with b.if_then(nogil, likely=False):
            b.call(release, [b.load(state)])
        b.store(ir.Constant(I8P, None), cell)
        b.branch(out)
        b.position_at_end(out)
        b.ret_void()

    return glue_function(module, "inner.release", ir.FunctionType(ir.VoidType(), [rt_type, I32]), build)


def _declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fnty, name)


__all__ = ["InnerPlan", "InnerResult", "InnerContext", "Scratch", "plan_inner", "emit_inner", "scratch_array",
           "copy_into"]
