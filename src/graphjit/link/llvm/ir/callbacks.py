"""Debugging instrumentation of a native entry: NaN/Inf/big checks, Python hooks per unit, profiling counters.

A *unit* is what the entry emits at one place of the toposort: a fused loop group, a lowered node or a fallback
node (link/node_hooks.py).  With an Instrumentation the driver (driver/native_entry.py) wraps every unit:

* ``profile``: two reads of the monotonic clock (``clock_gettime``, one call into the vDSO, ~20 ns) around the
  unit, the difference added to ``counters[2 * index]`` and 1 to ``counters[2 * index + 1]``, index being the
  unit's anchor position; the last pair counts the whole entry.  ``counters`` is an int64 array, a hidden
  argument the Function owns (so no Python runs on this path, and threads calling one Function add into the
  same counters: profile one thread at a time).
* ``guard`` (a bit set of node_hooks.GUARD_*): before the unit, its *unchecked* float inputs (no node computed
  them: graph inputs, shared variables, constants) are scanned by ``glue.guard.<dtype>.<nd>`` (a constant at
  compile time), unless a fused loop checks them element by element; after the unit, its float outputs are
  scanned.  Inside a fused loop every intermediate (and every unchecked input) is checked per element by a
  vector compare (element_bad), the failures OR-ed into one flag per element which replaces the loop's root
  by a value the output scan looks for (poison_value).  A finding takes the cold path into Python
  (``gj_node_callback``, kind: the bits found, | GUARD_INPUT for an input scan) with the unit's inputs, which
  words the NanGuardError: the unchecked input holding the value, else the node of the fused loop that
  produced it (by rerunning the loop's nodes' performs on its inputs), its inputs' shapes and the user's line.
* ``hooks``: a call into Python before and after every unit with its inputs and outputs (DebugMode's per-node
  check, MonitorMode).

The instrumentation is part of the graph's structural signature: an instrumented Function is its own compiled
variant, and a plain one carries none of this code.
"""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Constant, Variable
from graphjit.link.node_hooks import BIG_THRESHOLD, GUARD_BIG, GUARD_INF, GUARD_INPUT, GUARD_NAN, bad_values

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_PYTHON
from graphjit.link.llvm.ir.context import LowerContext, glue_function
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I8P, I32, I64, is_native_tensor

KIND_PRE, KIND_POST, KIND_PERFORM = 16, 17, 18      # callback kinds; 1..7 are a guard's findings
_CALLBACK_TY = ir.FunctionType(I8P, [I8P, I32, I32, I8P.as_pointer(), I8P.as_pointer()])


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
        gctx.return_error(GJ_ERR_PYTHON, node=index)


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


def emit_input_guard(gctx: GraphContext, table: ir.Value, index: int, mask: int, check: Sequence[Variable],
                     in_vars: Sequence[Variable]) -> None:
    """Scan the unit's unchecked inputs check (a constant: now, at compile time); on a finding the callback
    (kind GUARD_INPUT | the bits found) raises the NanGuardError naming the input."""
    b = gctx.builder
    for var in check:
        if isinstance(var, Constant):
            found = bad_values(var.data, mask)
            if found:
                emit_callback(gctx, table, index, GUARD_INPUT | found, in_vars, [])
            continue
        fn = _guard_function(gctx.module, var.type.dtype, var.type.ndim)
        found = b.call(fn, [gctx.value(var), I32(mask)])
        with b.if_then(b.icmp_unsigned("!=", found, I32(0)), likely=False):
            emit_callback(gctx, table, index, b.or_(found, I32(GUARD_INPUT)), in_vars, [])


def element_bad(b: ir.IRBuilder, x: ir.Value, mask: int) -> ir.Value:
    """i1 (per lane, for a vector x): whether the float value x fails a check of mask."""
    ty = x.type.element if isinstance(x.type, ir.VectorType) else x.type
    inf, big = ir.Constant(ty, float("inf")), ir.Constant(ty, BIG_THRESHOLD)
    ninf, nbig = ir.Constant(ty, float("-inf")), ir.Constant(ty, -BIG_THRESHOLD)
    if (mask & 7) == 7:     # the default: one unordered compare per side (NaN, +-inf and big all fail it)
        return b.or_(b.fcmp_unordered(">", x, big), b.fcmp_unordered("<", x, nbig))
    parts = []
    if mask & GUARD_NAN:
        parts.append(b.fcmp_unordered("uno", x, x))
    if mask & GUARD_INF:
        parts.append(b.or_(b.fcmp_ordered("==", x, inf), b.fcmp_ordered("==", x, ninf)))
    if mask & GUARD_BIG:
        parts.append(b.or_(b.and_(b.fcmp_ordered(">", x, big), b.fcmp_ordered("!=", x, inf)),
                           b.and_(b.fcmp_ordered("<", x, nbig), b.fcmp_ordered("!=", x, ninf))))
    bad = parts[0]
    for p in parts[1:]:
        bad = b.or_(bad, p)
    return bad


def poison_value(ty: ir.Type, mask: int) -> ir.Constant:
    """What a fused loop stores for an element whose intermediate failed a check: a value mask's scan finds
    (NaN, else an infinity, else a big finite value)."""
    ty = ty.element if isinstance(ty, ir.VectorType) else ty
    value = float("nan") if mask & GUARD_NAN else float("inf") if mask & GUARD_INF else 1e30
    return ir.Constant(ty, value)


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
