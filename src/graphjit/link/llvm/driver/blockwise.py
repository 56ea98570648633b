"""Blockwise lowered as a loop nest over the broadcast loop dimensions around its core graph, emitted inline
(driver/inner_graph.py, planned once per core graph): each iteration views the inputs at the loop offsets
(stride 0 along a broadcast loop dimension) and writes the outputs' rows through sinks. An output core length
known neither from the inputs nor statically is taken from the first iteration's result (its buffer obtained
then; an empty loop is a ValueError, as numpy.vectorize's). A core graph that cannot be emitted inline keeps the
node on its perform (the usual fallback)."""

from __future__ import annotations

from collections import OrderedDict
import contextlib
from typing import Any, Iterator, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.graph.fg import FunctionGraph
from graphjit.tensor.blockwise import Blockwise

from graphjit.link.llvm.driver.inner_graph import InnerPlan, Scratch, copy_into, emit_inner, plan_inner
from graphjit.link.llvm.ir.arith import product
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.graph_context import GraphContext, Value
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops.rows import advance, byte_ptr
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


def can_lower_blockwise(node: Apply) -> bool:
    """Lowered when the core graph compiles inline."""
    return core_plan(node) is not None


@contextlib.contextmanager
def _loop(ctx: GraphContext, lengths: Sequence[ir.Value], bases: Sequence[ir.Value],
          strides: Sequence[Sequence[ir.Value]], name: str) -> Iterator[tuple]:
    """Loops over lengths advancing bases[k] by strides[k][d]; yields (the byte pointers, the indices)."""
    with contextlib.ExitStack() as stack:
        ptrs, index = list(bases), []
        for d, n in enumerate(lengths):
            i = stack.enter_context(ctx.for_range(n, name=f"{name}{d}"))
            ptrs = [advance(ctx, p, i, st[d]) for p, st in zip(ptrs, strides)]
            index.append(i)
        yield ptrs, index


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
        op = str(self.op).replace("%", "%%")          # the message is a printf template
        self.ctx.raise_if(cond, self.node, "ValueError", f"{op}: {text}", list(args))

    def emit(self) -> list:
        ctx, b = self.ctx, self.b
        named = self._core_sizes()
        batch = self._loop_shape()
        outs, out_cores, sites = [], [], {}
        for j, (var, names) in enumerate(zip(self.node.outputs, self.op.outputs_sig)):
            static = var.type.shape[self.nb:]
            core = [named[n] if n in named else (None if s is None else I64(s)) for n, s in zip(names, static)]
            out_cores.append(core)
            if None in core:        # known after the first iteration only: a buffer obtained then
                sites[j] = (Scratch(ctx, ctx.name(self.node, f"out{j}"), var.type.dtype, var.type.ndim),
                            ctx.alloca(ir.IntType(1), name=ctx.name(self.node, f"out{j}.ready")))
                b.store(ir.Constant(ir.IntType(1), 0), sites[j][1])
                outs.append(sites[j][0].struct)
            else:
                outs.append(ctx.allocate(self.node, j, batch + core))
        in_strides = [self._loop_strides(k) for k in range(len(self.inputs))]
        in_views = [([ctx.shape(s, nd - c + d) for d in range(c)], [ctx.stride(s, nd - c + d) for d in range(c)])
                    for s, nd, c in zip(self.inputs, self.nds, self.cores)]
        bases = [byte_ptr(ctx, s) for s in self.inputs]
        with _loop(ctx, batch, bases, in_strides, ctx.name(self.node, "loop")) as (ptrs, index):
            views = [self._view(v.type.dtype, shp, st, p, f"in{k}")
                     for k, (v, (shp, st), p) in enumerate(zip(self.node.inputs, in_views, ptrs))]

            def sink(j: int, shape: Sequence[ir.Value]) -> ir.Value:
                if j in sites:
                    return self._late_row(j, sites[j], batch, index, list(shape))
                for d, (got, want) in enumerate(zip(shape, out_cores[j])):
                    self.fail_if(b.icmp_signed("!=", got, want), f"core output {j} has length %lld in its "
                                 f"core dimension {d}, the signature and inputs give %lld", [got, want])
                return self._row(j, outs[j], out_cores[j], self._row_ptr(outs[j], index))

            result = emit_inner(ctx, self.node, self.plan, views, sink, scope="core")
            for j, written in enumerate(result.written):
                if not written:
                    value = result.values[j]
                    shape = [ctx.shape(value, d) for d in range(len(out_cores[j]))]
                    copy_into(ctx, value, sink(j, shape), self.node.outputs[j].type.dtype, shape)
        for j, (_, ready) in sites.items():
            self.fail_if(b.not_(b.load(ready)), f"the core lengths of output {j} are known only from the core's "
                         "results, and the loop is empty (length %lld)", [product(b, batch) if batch else I64(1)])
            ctx.finalize(outs[j])
        return [Value(o, owns_parent=True) for o in outs]

    def _row_ptr(self, out: ir.Value, index: list) -> ir.Value:
        ptr = byte_ptr(self.ctx, out)
        for d, i in enumerate(index):
            ptr = advance(self.ctx, ptr, i, self.ctx.stride(out, d))
        return ptr

    def _late_row(self, j: int, site: tuple, batch: list, index: list, shape: list) -> ir.Value:
        """Output j's row when its core lengths come from the first iteration's result (later ones must match)."""
        b, ctx = self.b, self.ctx
        scratch, ready = site
        first = b.not_(b.load(ready))
        with b.if_then(first, likely=False):
            scratch.obtain(batch + shape)
            b.store(ir.Constant(ir.IntType(1), 1), ready)
        for d, got in enumerate(shape):
            want = ctx.shape(scratch.struct, self.nb + d)
            self.fail_if(b.icmp_signed("!=", got, want), f"core output {j} has length %lld in its core dimension "
                         f"{d}, %lld at the first loop index", [got, want])
        core = [ctx.shape(scratch.struct, self.nb + d) for d in range(len(shape))]
        return self._row(j, scratch.struct, core, self._row_ptr(scratch.struct, index))

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
