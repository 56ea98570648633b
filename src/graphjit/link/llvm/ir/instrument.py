"""Debugging instrumentation of a native entry: NaN/Inf/big checks, Python hooks per unit, profiling counters.

A *unit* is what the entry emits at one place of the toposort: a fused loop group, a lowered node or a fallback
node (link/node_hooks.py).  With an Instrumentation the driver (ir/native_entry.py) wraps every unit:

* ``profile``: two reads of the monotonic clock (``clock_gettime``, one call into the vDSO, ~20 ns) around the
  unit, the difference added to ``counters[2 * index]`` and 1 to ``counters[2 * index + 1]``, index being the
  unit's anchor position; the last pair counts the whole entry.  ``counters`` is an int64 array, a hidden
  argument the Function owns (so no Python runs on this path, and threads calling one Function add into the
  same counters: profile one thread at a time).
* ``guard`` (a bit set of node_hooks.GUARD_*): after the unit, one call of ``glue.guard.<dtype>.<nd>`` per float
  output scans it natively; if it finds a forbidden value, the cold path calls back into Python
  (``gj_node_callback``) with the unit's inputs and outputs, which words the NanGuardError (the node inside a
  fused group that produced the value, its inputs' shapes, the user's line) and the entry returns it.
* ``hooks``: a call into Python before and after every unit with its inputs and outputs (DebugMode's per-node
  check, MonitorMode).

The instrumentation is part of the graph's structural signature: an instrumented Function is its own compiled
variant, and a plain one carries none of this code.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.jit import binding as _binding
from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.link.node_hooks import BIG_THRESHOLD, GUARD_BIG, GUARD_INF, GUARD_NAN, unit_guard_error

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext, glue_function
from graphjit.link.llvm.ir.fallback import FallbackTable, publish_callback as publish_fallback
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.jit import forking
from graphjit.link.llvm.jit.symbols import provide
from graphjit.link.llvm.instrumentation import NO_INSTRUMENTATION, Instrumentation  # noqa: F401 (re-exported)
from graphjit.link.llvm.loops.fusion import plan_groups
from graphjit.link.llvm.ir.layouts import is_native_tensor

from graphjit.link.llvm.ir.graph_context import GraphContext

KIND_PRE, KIND_POST, KIND_PERFORM = 16, 17, 18      # callback kinds; 1..7 are a guard's findings
_CALLBACK_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                ctypes.c_void_p, ctypes.c_void_p)
_CALLBACK_TY = ir.FunctionType(I8P, [I8P, I32, I32, I8P.as_pointer(), I8P.as_pointer()])
_PUBLISHED: list = []
_LOCK = threading.Lock()
forking.register(lambda: _LOCK, forking.RANK_RUNTIME)




# ---------------------------------------------------------------- the Python side of the callback

class CallbackTable(FallbackTable):
    """The hidden table argument of an entry that calls back into Python: fallback nodes (FallbackTable), ops
    whose lowering calls their perform for its effect (Print), guard findings and unit hooks."""

    def __init__(self, fgraph: Any, order: Sequence[Apply], fallback_nodes: Sequence[Apply],
                 hooks: Any = None, guard: int = 0) -> None:
        super().__init__(order, fallback_nodes)
        self.fgraph = fgraph
        self.hooks = hooks
        self.guard = guard
        self._units: dict[int, tuple[list[Apply], list[Variable]]] | None = None

    def unit(self, index: int) -> tuple[list[Apply], list[Variable]]:
        """(nodes, input variables) of the unit anchored at index, as the entry emitted it."""
        if self._units is None:
            self._units = {}
            for group in {id(g): g for g in plan_groups(self.fgraph, self.order).values()}.values():
                nodes = group.nodes + ([group.reduce] if group.reduce is not None else [])
                self._units[self.order.index(group.anchor)] = (nodes, list(group.inputs))
        found = self._units.get(index)
        if found is not None:
            return found
        node = self.order[index]
        return [node], list(node.inputs)

    def callback(self, index: int, kind: int, ins: int, outs: int) -> int:
        """Serve one callback of the entry; 0, or id() of the exception to raise (kept in self.error)."""
        self.error = None
        nodes, in_vars = self.unit(index)
        try:
            inputs = self._values(in_vars, ins)
            if kind == KIND_PERFORM:
                node = nodes[-1]
                cells = [[None] for _ in node.outputs]
                params = (node.op.get_params(node),) if node.op.params_type is not None else ()
                node.op.perform(node, inputs, cells, *params)
            elif kind == KIND_PRE:
                self.hooks.pre(index, nodes, in_vars, inputs)
            else:
                outputs = self._values(nodes[-1].outputs, outs)
                if kind == KIND_POST:
                    self.hooks.post(index, nodes, in_vars, inputs, outputs)
                else:
                    raise unit_guard_error(nodes, in_vars, inputs, kind, self.guard)
            return 0
        except Exception as exc:            # noqa: BLE001 - handed to the native side, which raises it
            self.error = exc
            return id(exc)

    def _values(self, variables: Sequence[Variable], ptrs: int) -> list:
        if not variables:
            return []
        arr = (ctypes.c_void_p * len(variables)).from_address(ptrs)
        return [self._input(v, arr[k]) for k, v in enumerate(variables)]


def _callback(table: int, index: int, kind: int, ins: int, outs: int) -> int:
    return ctypes.cast(table, ctypes.py_object).value.callback(index, kind, ins, outs) or None


def publish_callback() -> None:
    """Publish gj_node_callback (once per process), and what the fallback path publishes (PyErr_SetObject)."""
    publish_fallback()
    if _PUBLISHED:
        return
    with _LOCK:
        if not _PUBLISHED:
            cb = _CALLBACK_FN(_callback)
            _binding.add_symbol("gj_node_callback", ctypes.cast(cb, ctypes.c_void_p).value)
            _PUBLISHED.append(cb)


provide("gj_node_callback", publish_callback)


# ---------------------------------------------------------------- the IR side

def emit_callback(gctx: GraphContext, table: ir.Value, index: int, kind: int | ir.Value,
                  in_vars: Sequence[Variable], out_vars: Sequence[Variable]) -> None:
    """Call gj_node_callback(table, index, kind, inputs, outputs); if it returns an exception, raise it."""
    b = gctx.builder
    tag = f"node{index}.cb{kind if isinstance(kind, int) else 'g'}"

    def pointers(variables: Sequence[Variable], what: str) -> ir.Value:
        arr = gctx.alloca(ir.ArrayType(I8P, max(len(variables), 1)), name=f"{tag}.{what}")
        for i, var in enumerate(variables):
            ptr = ir.Constant(I8P, None) if isinstance(var, Constant) else b.bitcast(gctx.value(var), I8P)
            b.store(ptr, b.gep(arr, [I32(0), I32(i)], inbounds=True))
        return b.gep(arr, [I32(0), I32(0)], inbounds=True)

    ins, outs = pointers(in_vars, "ins"), pointers(out_vars, "outs")
    kind = I32(kind) if isinstance(kind, int) else kind
    exc = gctx.call_external("gj_node_callback", _CALLBACK_TY, [b.load(table), I32(index), kind, ins, outs])
    with b.if_then(b.icmp_unsigned("!=", exc, ir.Constant(I8P, None)), likely=False):
        tp = b.load(b.bitcast(b.gep(exc, [I64(L.PYOBJECT_TYPE_OFFSET)]), I8P.as_pointer()))
        gctx.call_external("PyErr_SetObject", ir.FunctionType(ir.VoidType(), [I8P, I8P]), [tp, exc])
        gctx.return_error(L.GJ_ERR_PYTHON, node=index)


def emit_guard(gctx: GraphContext, table: ir.Value, index: int, mask: int, in_vars: Sequence[Variable],
               out_vars: Sequence[Variable]) -> None:
    """Scan every float output natively; on a finding, the callback raises the NanGuardError."""
    b = gctx.builder
    for var in out_vars:
        if not is_native_tensor(var) or not var.type.dtype.startswith("float"):
            continue
        check = _guard_function(gctx.module, var.type.dtype, var.type.ndim)
        found = b.call(check, [gctx.value(var), I32(mask)])
        with b.if_then(b.icmp_unsigned("!=", found, I32(0)), likely=False):
            emit_callback(gctx, table, index, found, in_vars, out_vars)


def _guard_function(module: ir.Module, dtype: str, ndim: int) -> ir.Function:
    """``i32 glue.guard.<dtype>.<nd>(struct*, i32 mask)``: the GUARD_* bits of mask some element violates."""
    sty = L.array_struct(dtype, ndim)
    fty = L.llvm_scalar_type(dtype)

    def build(fn: ir.Function) -> None:
        arr, mask = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = LowerContext(b)
        acc = ctx.alloca(I32, name="found")
        b.store(I32(0), acc)
        want_nan = b.icmp_unsigned("!=", b.and_(mask, I32(GUARD_NAN)), I32(0))
        want_inf = b.icmp_unsigned("!=", b.and_(mask, I32(GUARD_INF)), I32(0))
        want_big = b.icmp_unsigned("!=", b.and_(mask, I32(GUARD_BIG)), I32(0))
        with ctx.loop_nest(ctx.shapes(arr, ndim), name="g") as idx:
            x = b.load(ctx.element_ptr(arr, idx))
            mag = ctx.call_intrinsic("fabs", [x])
            nan = b.and_(want_nan, b.fcmp_unordered("uno", x, x))
            inf = b.and_(want_inf, b.fcmp_ordered("==", mag, ir.Constant(fty, float("inf"))))
            big = b.and_(want_big, b.and_(b.fcmp_ordered(">", mag, ir.Constant(fty, BIG_THRESHOLD)),
                                          b.fcmp_ordered("!=", mag, ir.Constant(fty, float("inf")))))
            bits = b.or_(b.or_(b.zext(nan, I32), b.shl(b.zext(inf, I32), I32(1))), b.shl(b.zext(big, I32), I32(2)))
            b.store(b.or_(b.load(acc), bits), acc)
        b.ret(b.load(acc))

    return glue_function(module, f"guard.{L.dtype_name(dtype)}.{ndim}", ir.FunctionType(I32, [sty.as_pointer(), I32]),
                         build)


def emit_now(gctx: GraphContext) -> ir.Value:
    """The monotonic clock in nanoseconds (i64), through one shared ``glue.clock_ns``."""
    def build(fn: ir.Function) -> None:
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ts = b.alloca(ir.ArrayType(I64, 2), name="ts")
        clock = ir.Function(fn.module, ir.FunctionType(I32, [I32, I8P]), "clock_gettime") \
            if "clock_gettime" not in fn.module.globals else fn.module.globals["clock_gettime"]
        b.call(clock, [I32(1), b.bitcast(ts, I8P)])        # CLOCK_MONOTONIC
        sec = b.load(b.gep(ts, [I32(0), I32(0)], inbounds=True))
        nsec = b.load(b.gep(ts, [I32(0), I32(1)], inbounds=True))
        b.ret(b.add(b.mul(sec, I64(1_000_000_000)), nsec))

    return gctx.builder.call(glue_function(gctx.module, "clock_ns", ir.FunctionType(I64, []), build), [])


def emit_accumulate(gctx: GraphContext, counters: ir.Value, slot: int, start: ir.Value) -> None:
    """counters[2 * slot] += now - start; counters[2 * slot + 1] += 1."""
    b = gctx.builder
    elapsed = b.sub(emit_now(gctx), start)
    data = gctx.data(counters)
    for k, add in ((2 * slot, elapsed), (2 * slot + 1, I64(1))):
        ptr = b.gep(data, [I64(k)], inbounds=True)
        b.store(b.add(b.load(ptr), add), ptr)


def counters_for(n_nodes: int) -> np.ndarray:
    """A zeroed counters array for an entry over n_nodes nodes (a pair per node, then the entry's pair)."""
    return np.zeros(2 * n_nodes + 2, dtype=np.int64)
