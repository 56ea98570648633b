"""Graph -> IR: the driver emitting one native entry per FunctionGraph (the GraphContext ops lower through is
ir/graph_context.py, re-exported here).

Values: a native tensor is a pointer to numba's array struct; anything else (complex tensors, Generic, user
Types like the seeds' double) is an ``i8**`` pointing at a ``PyObject*`` slot.  Every IR name derives from the
position of a node in the toposort, so the IR text (and the cache key) is a function of the graph alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.branch_schedule import Branch, Schedule, flatten, lazy_schedule
from graphjit.link.basic import destroyed_inputs
from graphjit.link.llvm.ir.casts import compute_type
from graphjit.scalar import math as smath
from graphjit.tensor.elemwise import normalize_axis

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_INDEX, GJ_ERR_LINALG, GJ_ERR_MEMORY, GJ_ERR_OVERFLOW, GJ_ERR_RUNTIME, GJ_ERR_VALUE, GJ_ERR_ZERO_DIVISION, GJ_OK
from graphjit.link.llvm.ir.graph_context import GraphContext, Value
from graphjit.link.llvm.cpython.boxing import type_layout
from graphjit.link.llvm.ir.buffers import emit_drop_function, give_back, py_slots
from graphjit.link.llvm.ir.context import LowerContext, define_native_entry
from graphjit.link.llvm.loops.drivers import driven_shape, emit_driven, emit_driven_temporary
from graphjit.link.llvm import limits    # read at call time (tests change them)
from graphjit.link.llvm.cpython.wrapper import build_python_wrapper
from graphjit.link.llvm.cpython.argspec import ArgSpec
from graphjit.link.llvm.cpython.fncall import PYTHON_SCALAR_DTYPES, build_function_call
from graphjit.link.llvm.ir.fallback import emit_fallback_call
from graphjit.link.llvm.ir.callbacks import (KIND_POST, KIND_PRE, element_bad, emit_accumulate, emit_callback,
                                             emit_guard, emit_input_guard, emit_now, poison_value)
from graphjit.link.llvm.driver.guard_plan import checked_in_loop, post_mask, pre_scanned
from graphjit.link.llvm.instrument_options import NO_INSTRUMENTATION, Instrumentation
from graphjit.link.llvm.loops.fusion import LoopGroup, is_scalar_constant, plan_groups
from graphjit.link.llvm.ir.layouts import I32, I64, I8P, is_native_tensor
from graphjit.link.llvm.loops.lengths import Lengths
from graphjit.link.llvm.driver.inplace_outputs import allocate_update, emit_gemm_in_place, plan_inplace_outputs
from graphjit.link.llvm.ir.stack_temps import small_static_graph
from graphjit.link.llvm.ops.blas_gemm import check_product, check_target
from graphjit.link.llvm.loops.nest import Reduce, copy_array, emit_elementwise, load_value
from graphjit.link.llvm.loops.loop_shape import Operand, broadcast_shape
from graphjit.link.llvm.ir.modules import GLUE, GLUE_HOT, GLUE_SMALL, LibraryModules, library_modules
from graphjit.link.llvm.loops.reduce import emit_reduction
from graphjit.link.llvm.scalar.lower import lower_scalar, must_run_serially
from graphjit.link.llvm.registry import branch_lowerings, lowerings

_EXC_CODES = {"ValueError": GJ_ERR_VALUE, "IndexError": GJ_ERR_INDEX,
              "ZeroDivisionError": GJ_ERR_ZERO_DIVISION, "MemoryError": GJ_ERR_MEMORY,
              "RuntimeError": GJ_ERR_RUNTIME, "LinAlgError": GJ_ERR_LINALG,
              "OverflowError": GJ_ERR_OVERFLOW}
GIL_RELEASE_MIN_ITEMS = 1 << 14      # smaller kernels keep the GIL (releasing costs ~0.1 us)
# entries this large get the light glue pipeline (ir/modules.py GLUE).  Measured (one core): a 4-group
# graph of 483 entry instructions, LLVM time 348 -> 67 ms for +4.5% per call on tiny arrays; smaller ones (W2's
# `x + y`: 109, W1: 84), whose call overhead is the point, get the small glue's passes (jit/pipelines.py)
LIGHT_GLUE_MIN_INSTRUCTIONS = 300
# a scan body's glue this large compiles apart from its kernels with the O1 pipeline (O3's time grows faster than
# the function: jit/pipelines.py HOT_GLUE_LEVEL)
HOT_GLUE_APART_MIN_INSTRUCTIONS = 8000


def arg_spec(var: Variable) -> ArgSpec:
    """How a graph input/output crosses the native entry (its Type's layout): an array struct, or a PyObject*.

    TypeError for a layout asking for another kind (a native scalar): the wrapper, the fallback callback and
    the output slots know only these two, and guessing would read a double as a pointer.
    """
    layout = type_layout(var.type)
    spec = layout.arg_spec()
    if spec.kind not in ("array", "object"):
        raise TypeError(f"{type(layout).__name__}, the layout of {var.type!r} ({var}), crosses the native entry as "
                        f"{spec.kind!r}: only 'array' (TensorType's struct) and 'object' (a PyObject*) are supported")
    return spec




def _operand(gctx: GraphContext, var: Variable) -> Operand:
    dtype = var.type.dtype
    if is_scalar_constant(var):
        return Operand(dtype, var.type.shape, scalar=_immediate(dtype, np.asarray(var.data).reshape(())))
    ptr = gctx.value(var)
    if var.type.ndim and all(s == 1 for s in var.type.shape) or var.type.ndim == 0:
        return Operand(dtype, var.type.shape, scalar=load_value(gctx.builder, gctx.data(ptr), dtype))
    proofs = gctx.lengths
    return Operand(dtype, var.type.shape, struct=ptr, lengths=proofs.of(var) if proofs is not None else None)


def _immediate(dtype: str, value: np.ndarray) -> ir.Constant:
    ty = compute_type(dtype)
    if np.dtype(dtype).kind == "c":
        c = complex(value)
        return ir.Constant(ty, [ir.Constant(ty.elements[0], c.real), ir.Constant(ty.elements[0], c.imag)])
    if np.dtype(dtype).kind == "f":
        return ir.Constant(ty, float(value))
    v = int(value)
    return ir.Constant(ty, v - (1 << ty.width) if v >= (1 << (ty.width - 1)) and ty.width > 1 else v)


def _compute_fn(gctx: GraphContext, group: LoopGroup):
    """The fused scalar body: emits every member's scalar op (scalar_math.lower_scalar) on the operands' values.

    Its ``key`` describes the body (scalar ops, dtypes, wiring) so identical groups share kernels.  Under
    NanGuardMode (gctx.guard) the body checks its intermediates per element (driver/guard_plan.py).
    """
    checked = set(checked_in_loop(group, gctx.guard))

    def compute(ctx: LowerContext, values: list) -> ir.Value:
        env = dict(zip(group.inputs, values))
        bad = [element_bad(ctx.builder, env[v], gctx.guard) for v in group.inputs if v in checked]
        for node in group.nodes:
            ctx.current_node = node
            args = [env[v] for v in node.inputs]
            dts = [v.type.dtype for v in node.inputs]
            out = env[node.outputs[0]] = lower_scalar(node.op.scalar_op, ctx, args, dts, node.outputs[0].type.dtype)
            if node.outputs[0] in checked:
                bad.append(element_bad(ctx.builder, out, gctx.guard))
        root = env[group.root]
        if bad:
            flag = functools.reduce(ctx.builder.or_, bad)
            root = ctx.builder.select(flag, poison_value(root.type, gctx.guard), root)
        return root

    where = {v: k for k, v in enumerate(group.inputs)}
    body = []
    for node in group.nodes:
        body.append((node.op.scalar_op, tuple(where[v] for v in node.inputs),
                     tuple(v.type.dtype for v in node.inputs), node.outputs[0].type.dtype))
        where[node.outputs[0]] = len(where)
    compute.key = (tuple(body), where[group.root])  # type: ignore[attr-defined]
    if checked:
        compute.key += (gctx.guard, tuple(sorted(where[v] for v in checked)))  # type: ignore[attr-defined]
    return compute


def lower_group(gctx: GraphContext, group: LoopGroup, update: tuple | None = None) -> None:
    """Emit one loop nest for the group and record its output value.

    update: (output index, graph input, later reads) when the group may write into that input's buffer
    (inplace_outputs.plan_inplace_outputs).
    """
    anchor = group.anchor
    gctx.current_node = anchor
    operands = [_operand(gctx, v) for v in group.inputs]
    ndim = group.root.type.ndim
    driven = gctx.compact and group.reduce is None and ndim >= 1 and any(o.is_array for o in operands)
    compute = _compute_fn(gctx, group)
    name = gctx.name(anchor, "loop")
    parallel = gctx.parallel and not any(must_run_serially(n.op.scalar_op) for n in group.nodes)
    temp = gctx.temporary(anchor, 0) if driven and update is None else None
    if temp is not None:
        emit_driven_temporary(gctx, name, operands, compute, temp, group.root.type.dtype, ndim, anchor, parallel)
        gctx.settle(temp[0])
        gctx.values[group.output] = Value(temp[0], owns_parent=True)
        return
    if driven:
        structs, shape = driven_shape(gctx, operands, ndim, anchor)
    else:
        shape = broadcast_shape(gctx, operands, ndim, anchor)
    if group.reduce is None:
        if update is not None:
            out = allocate_update(gctx, update[0], update[1], operands, group.inputs, shape, update[2])
        else:
            out = gctx.allocate(anchor, 0, shape)
        dtype = group.root.type.dtype
        gctx.know_shape(out, shape)
        if driven:
            emit_driven(gctx, name, operands, compute, out, dtype, structs, ndim, anchor, parallel)
        else:
            emit_elementwise(gctx, name, operands, compute, out, dtype, shape, anchor, parallel)
    else:
        red = _reduce_spec(group)
        out = gctx.allocate(anchor, 0, [s for d, s in enumerate(shape) if d not in red.axes])
        gctx.know_shape(out, [s for d, s in enumerate(shape) if d not in red.axes])
        emit_reduction(gctx, name, operands, compute, red, out, shape, anchor)
    gctx.values[group.output] = Value(out, owns_parent=True)


def _reduce_spec(group: LoopGroup) -> Reduce:
    node = group.reduce
    op, x, out = node.op, node.inputs[0], node.outputs[0]
    out_dtype = out.type.dtype
    # sums and products accumulate in a wider dtype (CAReduce's acc_dtype); the others in the input's
    widens = op.scalar_op is smath.add or op.scalar_op is smath.mul
    acc = (op.acc_dtype or out_dtype) if widens else x.type.dtype
    return Reduce(op.scalar_op, normalize_axis(op.axis, x.type.ndim), x.type.dtype, acc, out_dtype, node)


# ---------------------------------------------------------------- graph outputs

def finish_outputs(gctx: GraphContext) -> None:
    """Put every graph output into its wrapper slot: allocated in place, returned by reference, or copied."""
    b = gctx.builder
    slots = b.load(b.gep(gctx.rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
    incref = gctx.declare("Py_IncRef", ir.FunctionType(ir.VoidType(), [I8P]))
    for j, var in enumerate(gctx.fgraph.outputs):
        if j in gctx.in_slot:
            continue
        value = gctx.values.get(var) or Value(gctx.value(var))
        if not is_native_tensor(var):
            obj = b.load(value.ptr)
            _incref_with_gil(gctx, incref, obj)
            b.store(obj, b.gep(slots, [I32(j)], inbounds=True))
        elif value.owns_parent and var in gctx.scalar_inputs:
            _output_scalar_input(gctx, j, value.ptr, var.type.dtype)
        elif value.owns_parent:
            with b.if_else(py_slots(gctx), likely=True) as (py, nrt):
                with py:
                    obj = gctx.field(value.ptr, "parent")
                    b.call(incref, [obj])
                    b.store(obj, b.gep(slots, [I32(j)], inbounds=True))
                with nrt:       # numba's caller (graphjit/numba): no parent ndarray to hand over, a copy
                    _copy_to_output(gctx, j, var, value.ptr)
        else:
            _copy_to_output(gctx, j, var, value.ptr)


def _incref_with_gil(gctx: GraphContext, incref: ir.Function, obj: ir.Value) -> None:
    """Py_IncRef(obj), taking the GIL back first when the entry runs without it (another thread may hold a
    reference to the same object: a generator a native draw advanced)."""
    b = gctx.builder
    flags = b.load(b.gep(gctx.rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
    released = b.icmp_unsigned("!=", b.and_(flags, I64(L.RT_FLAG_GIL_RELEASED)), I64(0))
    with b.if_else(released) as (nogil, gil):
        with nogil:
            state = gctx.call_external("PyGILState_Ensure", ir.FunctionType(I32, []), [])
            b.call(incref, [obj])
            gctx.call_external("PyGILState_Release", ir.FunctionType(ir.VoidType(), [I32]), [state])
        with gil:
            b.call(incref, [obj])


def _copy_to_output(gctx: GraphContext, j: int, var: Variable, struct: ir.Value) -> None:
    shape = gctx.shapes(struct, var.type.ndim)
    gctx.allocate_array(j, gctx.out_args[j], var.type.dtype, shape)
    copy_array(gctx, struct, gctx.out_args[j], var.type.dtype, shape)


def _output_scalar_input(gctx: GraphContext, j: int, struct: ir.Value, dtype: str) -> None:
    """Output j is a 0-d graph input: its ndarray, or a new 0-d array when it came as a Python scalar."""
    b = gctx.builder
    slots = b.load(b.gep(gctx.rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
    parent = gctx.field(struct, "parent")
    with b.if_else(b.icmp_unsigned("==", parent, ir.Constant(I8P, None))) as (fresh, own):
        with fresh:
            gctx.allocate_array(j, gctx.out_args[j], dtype, [])
            copy_array(gctx, struct, gctx.out_args[j], dtype, [])
        with own:
            gctx.call_external("Py_IncRef", ir.FunctionType(ir.VoidType(), [I8P]), [parent])
            b.store(parent, b.gep(slots, [I32(j)], inbounds=True))


def python_scalar_inputs(fgraph: Any, order: Sequence[Apply], specs: Sequence[ArgSpec], fallbacks: bool) -> list[int]:
    """The 0-d inputs the function-call wrapper may take as Python scalars: none with a Python fallback node
    (perform could keep a view of the stack buffer), nor any the graph overwrites."""
    if fallbacks:
        return []
    destroyed = set(destroyed_inputs(fgraph, order))
    return [k for k in range(len(fgraph.inputs)) if specs[k].kind == "array" and specs[k].ndim == 0
            and specs[k].dtype in PYTHON_SCALAR_DTYPES and k not in destroyed]


# ---------------------------------------------------------------- the driver

@dataclass
class EntryPlan:
    """What the driver produced: the library's modules and what the Python side needs to call it."""

    modules: LibraryModules
    in_specs: list[ArgSpec]
    out_specs: list[ArgSpec]
    messages: list[str]
    message_nodes: list[int]
    fallback_nodes: list[Apply]
    n_temp: int
    uses_blas: bool = False
    groups: list[LoopGroup] = field(default_factory=list)
    calls_python: bool = False          # the entry takes the callback table (fallbacks, Print, hooks, guards)


def _instrumented(gctx: GraphContext, inst: Instrumentation, table: ir.Value | None, counters: ir.Value | None,
                  node: Apply, in_vars: Sequence[Variable], out_vars: Sequence[Variable], emit: Any,
                  group: LoopGroup | None = None) -> None:
    """emit() the unit anchored at node (group: its fused loop group), wrapped in the hooks, clock reads and
    guards inst asks for."""
    if not inst.active:
        emit()
        return
    k = gctx.node_index(node)
    if inst.hooks:
        emit_callback(gctx, table, k, KIND_PRE, in_vars, [])
    if inst.guard:
        folded = checked_in_loop(group, inst.guard) if group is not None else []
        emit_input_guard(gctx, table, k, inst.guard, pre_scanned(in_vars, folded), in_vars)
    start = emit_now(gctx) if counters is not None else None
    emit()
    if counters is not None:
        emit_accumulate(gctx, counters, k, start)
    if inst.guard:
        emit_guard(gctx, table, k, post_mask(group, inst.guard), in_vars, out_vars)
    if inst.hooks:
        emit_callback(gctx, table, k, KIND_POST, in_vars, out_vars)


def lower_node(gctx: GraphContext, node: Apply) -> None:
    """Lower a node through its registered lowering (else its op's ``lower`` hook); record its outputs."""
    gctx.current_node = node
    inputs = [gctx.value(v) for v in node.inputs]
    entry = lowerings.lookup(type(node.op))
    outs = entry.impl(gctx, node, inputs) if entry is not None else node.op.lower(gctx, node, inputs)
    for var, ptr in zip(node.outputs, outs):
        gctx.values[var] = ptr if isinstance(ptr, Value) else Value(ptr)


def _lower_writer(gctx: GraphContext, node: Apply, groups: dict, write: tuple) -> None:
    """A writer into a graph input's buffer (inplace_outputs): its group, or its in-place Gemm."""
    group = groups.get(node)
    if group is not None:
        lower_group(gctx, group, write)
        return
    gctx.current_node = node
    out = emit_gemm_in_place(gctx, node, *write)
    gctx.values[node.outputs[0]] = Value(out, owns_parent=True)


def _distinct_arguments(fgraph: Any, order: Sequence[Apply], specs: Sequence[ArgSpec]) -> list[tuple[int, int]]:
    """(i, j): array argument i is overwritten in place (an In(mutable=True)) and j is another array argument,
    which the caller may have given the same memory (then the wrapper's slow path computes on copies).

    Updated shared variables are left out: their in-place writes check overlaps themselves (inplace_outputs).
    """
    updated = set(fgraph.update_mapping.values()) if fgraph.update_mapping else set()
    arrays = [k for k in range(len(fgraph.inputs)) if specs[k].kind == "array"]
    return [(i, j) for i in destroyed_inputs(fgraph, order) if i not in updated and i in arrays
            for j in arrays if j != i]


def _precheck_writer(gctx: GraphContext, node: Apply, groups: dict) -> None:
    """Emit the checks of a writer into an input's buffer (its lowering emits them again, to no effect)."""
    gctx.current_node = node
    group = groups.get(node)
    if group is not None:
        operands = [_operand(gctx, v) for v in group.inputs]
        broadcast_shape(gctx, operands, group.root.type.ndim, group.anchor)
        return
    inputs = [gctx.value(v) for v in node.inputs]
    a, b_ = check_product(gctx, node, inputs)
    check_target(gctx, node, inputs[0], a.rows, b_.cols)


def node_is_lowered(node: Apply, groups: dict) -> bool:
    """Whether node is compiled (fused, by its class's registered lowering, or by its op's ``lower`` hook)
    rather than called back into."""
    if node in groups:
        return True
    entry = lowerings.lookup(type(node.op))
    if entry is not None:
        applies = entry.applies
    elif getattr(node.op, "lower", None) is not None:
        applies = getattr(node.op, "can_lower", None)
    else:
        return False
    if applies is not None and not applies(node):
        return False
    # other values (PyObject* slots) only where the lowering says it reads them (``objects=True``: the draws)
    objects = entry is not None and bool(entry.options.get("objects"))
    if not all(is_native_tensor(v) or objects for v in node.inputs + node.outputs):
        return False
    # complex tensors only where the lowering says it handles them (``complex=True``: views, copies, loops)
    return entry is not None and bool(entry.options.get("complex")) or not any(
        getattr(v.type, "dtype", "").startswith("complex") for v in node.inputs + node.outputs)


def callback_nodes(order: Sequence[Apply]) -> list[Apply]:
    """The nodes whose registered lowering calls back into Python (``callback=True``: Print)."""
    found = []
    for node in order:
        entry = lowerings.lookup(type(node.op))
        if entry is not None and entry.options.get("callback") and node_is_lowered(node, {}):
            found.append(node)
    return found


@dataclass
class _Emission:
    """What emitting the nodes of one entry needs besides the graph context."""

    inst: Instrumentation
    groups: dict
    fallbacks: set
    writers: dict
    counters: ir.Value | None


def _emit_node(gctx: GraphContext, em: _Emission, node: Apply) -> None:
    """Emit one node (a fused group at its anchor; in-place writers come last), wrapped as em.inst asks."""
    table, inst, counters = gctx.table, em.inst, em.counters
    group = em.groups.get(node)
    if group is not None:
        if node is group.anchor and node not in em.writers:
            _instrumented(gctx, inst, table, counters, node, group.inputs, [group.output],
                          lambda: lower_group(gctx, group), group)
    elif node in em.fallbacks:
        _instrumented(gctx, inst, table, counters, node, node.inputs, node.outputs,
                      lambda: emit_fallback_call(gctx, node, table))
    elif node not in em.writers:
        _instrumented(gctx, inst, table, counters, node, node.inputs, node.outputs,
                      lambda: lower_node(gctx, node))
    for var in node.outputs:        # this block dominates every later node of its region (or of the entry)
        if var in gctx.values:
            gctx.finalize(gctx.values[var].ptr)


def _emit_schedule(gctx: GraphContext, em: _Emission, schedule: Schedule) -> None:
    """Emit the nodes of a schedule (graph/branch_schedule.py) in order; a branching node with a branch lowering emits
    its regions in its own conditional blocks, any other computes them first (eagerly)."""
    branched: set = set()
    for item in schedule:
        if isinstance(item, Branch):
            node = item.node
            entry = branch_lowerings.lookup(type(node.op))
            if entry is None or node in em.fallbacks:
                for region in item.regions:
                    _emit_schedule(gctx, em, region)
                continue
            # constants are materialised (a struct filled in place) where they are first used: here, before the
            # branch, so that every block sees them filled
            for sub in [n for r in item.regions for n in flatten(r)] + [node]:
                for var in sub.inputs:
                    if isinstance(var, Constant):
                        gctx.value(var)
            emitters = [functools.partial(_emit_schedule, gctx, em, region) for region in item.regions]
            gctx.current_node = node
            outs = entry.impl(gctx, node, emitters)
            for var, ptr in zip(node.outputs, outs):
                gctx.values[var] = ptr if isinstance(ptr, Value) else Value(ptr)
                gctx.finalize(gctx.values[var].ptr)
            branched.add(node)
        elif item not in branched:
            _emit_node(gctx, em, item)


def _emit_writers(gctx: GraphContext, em: _Emission) -> None:
    """The in-place writers, after every other reader of the inputs they overwrite."""
    pending = [n for n in gctx.order if n in em.writers]
    for node in pending[1:]:            # checked before the first write: a failure leaves every input intact
        _precheck_writer(gctx, node, em.groups)
    for node in pending:
        group = em.groups.get(node)
        ins, outs = (group.inputs, [group.output]) if group is not None else (node.inputs, node.outputs)
        _instrumented(gctx, em.inst, gctx.table, em.counters, node, ins, outs,
                      lambda: _lower_writer(gctx, node, em.groups, em.writers[node]), group)


def _choose_glue_pipeline(modules: LibraryModules, gctx: GraphContext, fn: ir.Function, fgraph: Any,
                          order: Sequence[Apply]) -> None:
    """The glue is compiled apart from the kernels (light passes when large, the small glue's when not), except a
    scan body's (it runs per iteration) and a small static graph's: one O3 module with the kernels; a scan body's
    glue of HOT_GLUE_APART_MIN_INSTRUCTIONS or more goes apart with the O1 pipeline (jit/pipelines.py)."""
    size = sum(len(block.instructions) for block in fn.blocks)
    if gctx.hot_glue:
        if size >= HOT_GLUE_APART_MIN_INSTRUCTIONS:
            modules.glue_kind = GLUE_HOT
        return
    if small_static_graph(fgraph, order, gctx.stack):
        return
    large = size >= LIGHT_GLUE_MIN_INSTRUCTIONS
    modules.glue_kind = GLUE if large else GLUE_SMALL


def build_entry(fgraph: Any, order: Sequence[Apply], parallel: bool, prefix: str,
                inst: Instrumentation = NO_INSTRUMENTATION) -> EntryPlan:
    """Lower fgraph into a glue module holding <prefix>entry (native) and <prefix>pywrap (CPython wrapper),
    and the kernels module they call (ir/modules.py); inst: the debugging instrumentation (ir/callbacks.py)."""
    groups = plan_groups(fgraph, order, bool(inst.guard))
    fallbacks = [n for n in order if not node_is_lowered(n, groups)]
    callbacks = callback_nodes(order)
    calls_python = bool(fallbacks or callbacks or inst.needs_table)
    hidden = ([ArgSpec.array("int64", 1, writeable=True)] if inst.profile else []) + \
        ([ArgSpec.object()] if calls_python else [])
    in_specs = [arg_spec(v) for v in fgraph.inputs] + hidden
    out_specs = [arg_spec(v) for v in fgraph.outputs]
    modules = library_modules(prefix)
    module = modules.glue
    fn, base = define_native_entry(module, "entry", [s.layout() for s in in_specs],
                                   [s.layout() for s in out_specs])
    args = fn.args[1:]
    gctx = GraphContext(base.builder, fn.args[0], fgraph, order, args[len(in_specs):], parallel)
    unique = list({id(g): g for g in groups.values()}.values())
    gctx.stack.enabled = not fallbacks
    gctx.guard = inst.guard
    if limits.PROVE_LENGTHS:
        gctx.lengths = Lengths(fgraph, order, untrusted=fallbacks)
    # shared drivers save code in large graphs; a graph of small static arrays is faster inline
    gctx.compact = len(unique) >= limits.COMPACT_MIN_GROUPS and not all(gctx.stack.fits(g.output) for g in unique)
    gctx.n_groups = len(unique)             # loops/nest.py: large graphs get kernels emitted already vectorised
    for var, ptr in zip(fgraph.inputs, args):
        gctx.values[var] = Value(ptr, owns_parent=is_native_tensor(var))
        gctx.finalize(ptr)
        if is_native_tensor(var):
            gctx.know_static_shape(ptr, var.type.shape)
    gctx.table = args[len(in_specs) - 1] if calls_python else None
    counters = args[len(fgraph.inputs)] if inst.profile else None
    start = emit_now(gctx) if inst.profile else None
    scalars = python_scalar_inputs(fgraph, order, in_specs, calls_python)
    gctx.scalar_inputs = {fgraph.inputs[k] for k in scalars}
    # guarded entries write no input in place (a NaN found after the write would be in the shared variable already)
    writers = plan_inplace_outputs(fgraph, order, groups, bool(fallbacks or callbacks or inst.guard))
    em = _Emission(inst, groups, set(fallbacks), writers, counters)
    _emit_schedule(gctx, em, lazy_schedule(fgraph, order))
    _emit_writers(gctx, em)
    finish_outputs(gctx)
    if counters is not None:
        emit_accumulate(gctx, counters, len(order), start)
    give_back(gctx, gctx.buffer_slots)
    gctx.builder.ret(I32(GJ_OK))
    _choose_glue_pipeline(modules, gctx, fn, fgraph, order)
    distinct = _distinct_arguments(fgraph, order, in_specs)
    gil_min = 0 if gctx.releases_gil else GIL_RELEASE_MIN_ITEMS
    build_python_wrapper(module, fn, in_specs, out_specs, release_gil=not calls_python,
                         n_temp_slots=gctx.n_temp, gil_min_items=gil_min, distinct=distinct)
    if not inst.active:     # instrumented entries take hidden arguments the call plan does not know: Python path
        build_function_call(module, fn, in_specs, out_specs, len(fgraph.inputs), release_gil=not calls_python,
                            n_temp_slots=gctx.n_temp, gil_min_items=gil_min, distinct=distinct,
                            scalar_inputs=scalars, share_exit=modules.glue_kind is GLUE)
    emit_drop_function(module, gctx.buffer_slots)
    uniq = list({id(g): g for g in groups.values()}.values())
    return EntryPlan(modules, in_specs, out_specs, gctx.messages, gctx.message_nodes, fallbacks, gctx.n_temp,
                     gctx.uses_blas, uniq, calls_python)
