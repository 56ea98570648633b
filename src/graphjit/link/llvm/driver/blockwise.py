"""Blockwise lowered as a loop nest over the broadcast loop dimensions around its core graph, emitted inline
(driver/inner_graph.py, planned once per core graph): each iteration views the inputs at the loop offsets
(stride 0 along a broadcast loop dimension) and writes the outputs' rows through sinks. A core graph that cannot
be emitted inline, or an output core length known neither from the inputs nor statically, keeps the node on its
perform (the usual fallback)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.graph.fg import FunctionGraph
from graphjit.tensor.blockwise import Blockwise

from graphjit.link.llvm.driver.inner_graph import InnerPlan, copy_into, emit_inner, plan_inner
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.graph_context import GraphContext, Value
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.rows import byte_ptr, nest
from graphjit.link.llvm.registry import lowerings

_NO_PLAN = "no plan"
_PLANS: "OrderedDict[tuple, Any]" = OrderedDict()
_PLANS_MAX = 256


def core_plan(node: Apply) -> InnerPlan | None:
    """The node's core graph planned for inline emission (cached per op and input types), None if it cannot be."""
    types = tuple(v.type for v in node.inputs)
    key = (node.op, types)
    plan = _PLANS.get(key)
    if plan is None:
        core = node.op.core_graph(types)
        plan = plan_inner(FunctionGraph(core.inputs, core.outputs, clone=True))
        _PLANS[key] = plan if plan is not None else _NO_PLAN
        if len(_PLANS) > _PLANS_MAX:
            _PLANS.popitem(last=False)
    return None if plan is _NO_PLAN else plan


def _known_core(node: Apply) -> bool:
    """Every output core length is an input's named length or static."""
    op = node.op
    named = {n for core in op.inputs_sig for n in core}
    for out, names in zip(node.outputs, op.outputs_sig):
        tail = out.type.shape[out.type.ndim - len(names):]
        if any(n not in named and s is None for n, s in zip(names, tail)):
            return False
    return True


def can_lower_blockwise(node: Apply) -> bool:
    """Lowered when the core graph compiles inline and the output shapes are known before the loop."""
    return _known_core(node) and core_plan(node) is not None


@lowerings.register(Blockwise, applies=can_lower_blockwise)
def lower_blockwise(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """The loop nest (see the module doc)."""
    return _BlockwiseLowering(ctx, node, list(inputs), core_plan(node)).emit()


class _BlockwiseLowering:
    def __init__(self, ctx: GraphContext, node: Apply, inputs: list, plan: InnerPlan):
        self.ctx, self.b, self.node, self.inputs, self.plan = ctx, ctx.builder, node, inputs, plan
        self.op = node.op
        self.nds = [v.type.ndim for v in node.inputs]
        self.cores = [len(c) for c in self.op.inputs_sig]
        self.nb = self.op.loop_ndim(self.nds)

    def fail_if(self, cond: ir.Value, text: str, args: Sequence[ir.Value]) -> None:
        self.ctx.raise_if(cond, self.node, "ValueError", f"{self.op}: {text}", list(args))

    def emit(self) -> list:
        ctx = self.ctx
        named = self._core_sizes()
        batch = self._loop_shape()
        outs, out_cores = [], []
        for j, (var, names) in enumerate(zip(self.node.outputs, self.op.outputs_sig)):
            static = var.type.shape[self.nb:]
            core = [named[n] if n in named else I64(s) for n, s in zip(names, static)]
            out_cores.append(core)
            outs.append(ctx.allocate(self.node, j, batch + core))
        in_strides = [self._loop_strides(k) for k in range(len(self.inputs))]
        out_strides = [[ctx.stride(o, d) for d in range(self.nb)] for o in outs]
        in_views = [([ctx.shape(s, nd - c + d) for d in range(c)], [ctx.stride(s, nd - c + d) for d in range(c)])
                    for s, nd, c in zip(self.inputs, self.nds, self.cores)]
        bases = [byte_ptr(ctx, s) for s in self.inputs] + [byte_ptr(ctx, o) for o in outs]
        with nest(ctx, batch, bases, in_strides + out_strides, name=ctx.name(self.node, "loop")) as ptrs:
            views = [self._view(v.type.dtype, shp, st, p, f"in{k}")
                     for k, (v, (shp, st), p) in enumerate(zip(self.node.inputs, in_views, ptrs))]
            rows = ptrs[len(self.inputs):]

            def sink(j: int, shape: Sequence[ir.Value]) -> ir.Value:
                for d, (got, want) in enumerate(zip(shape, out_cores[j])):
                    self.fail_if(self.b.icmp_signed("!=", got, want), f"core output {j} has length %lld in its "
                                 f"core dimension {d}, the signature and inputs give %lld", [got, want])
                return self._row(j, outs[j], out_cores[j], rows[j])

            result = emit_inner(ctx, self.node, self.plan, views, sink, scope="core")
            for j, written in enumerate(result.written):
                if not written:
                    value = result.values[j]
                    shape = [ctx.shape(value, d) for d in range(len(out_cores[j]))]
                    copy_into(ctx, value, sink(j, shape), self.node.outputs[j].type.dtype, shape)
        return [Value(o, owns_parent=True) for o in outs]

    def _core_sizes(self) -> dict:
        """name -> length of the named core dimensions, each checked against its other occurrences."""
        named, where = {}, {}
        for k, (s, nd, core) in enumerate(zip(self.inputs, self.nds, self.op.inputs_sig)):
            for d, name in enumerate(core):
                n = self.ctx.shape(s, nd - len(core) + d)
                if name not in named:
                    named[name], where[name] = n, k
                    continue
                self.fail_if(self.b.icmp_signed("!=", n, named[name]),
                             f"core dimension '{name}' has length %lld in input {where[name]} and %lld in "
                             f"input {k}", [named[name], n])
        return named

    def _loop_shape(self) -> list:
        """The broadcast loop lengths (numpy's rule; ValueError when two lengths clash)."""
        b, out = self.b, []
        for j in range(self.nb):
            length = None
            for s, nd, c in zip(self.inputs, self.nds, self.cores):
                d = j - (self.nb - (nd - c))
                if d < 0:
                    continue
                n = self.ctx.shape(s, d)
                if length is None:
                    length = n
                    continue
                bad = b.and_(b.icmp_signed("!=", n, length),
                             b.and_(b.icmp_signed("!=", n, I64(1)), b.icmp_signed("!=", length, I64(1))))
                self.fail_if(bad, "loop dimension %lld has lengths %lld and %lld, which cannot be broadcast "
                             "together", [I64(j), length, n])
                length = b.select(b.icmp_signed("==", length, I64(1)), n, length)
            out.append(length)
        return out

    def _loop_strides(self, k: int) -> list:
        """Input k's byte strides along the loop dimensions (0 where it is broadcast)."""
        s, nd, c, b = self.inputs[k], self.nds[k], self.cores[k], self.b
        static = self.node.inputs[k].type.shape
        out = []
        for j in range(self.nb):
            d = j - (self.nb - (nd - c))
            if d < 0 or static[d] == 1:
                out.append(I64(0))
            else:
                out.append(b.select(b.icmp_signed("==", self.ctx.shape(s, d), I64(1)), I64(0),
                                    self.ctx.stride(s, d)))
        return out

    def _view(self, dtype: str, shape: list, strides: list, ptr: ir.Value, what: str) -> ir.Value:
        data = self.b.bitcast(ptr, L.llvm_scalar_type(dtype).as_pointer())
        return self.ctx.view(None, dtype, shape, strides, data, name=self.ctx.name(self.node, what))

    def _row(self, j: int, out: ir.Value, core: list, ptr: ir.Value) -> ir.Value:
        """Output j's row at the current loop index (C-contiguous: the output buffer is)."""
        strides = [self.ctx.stride(out, self.nb + d) for d in range(len(core))]
        view = self._view(self.node.outputs[j].type.dtype, core, strides, ptr, f"out{j}.row")
        self.ctx.mark_contiguous(view)
        return view
