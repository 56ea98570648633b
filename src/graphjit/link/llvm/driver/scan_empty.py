"""The native loop's zero-step ``outputs_info=None`` outputs: (0, *the shape one step would produce).

As in the Python ``perform`` (scan_module/empty.py): a static step shape is used as is; otherwise the step graph's
shape graph (a graph of the inner inputs' shapes and values) is planned once and emitted inline, only in the branch
where no step ran, over the inner inputs as they would be at step 0; a shape that depends on what the step
computes raises the same ValueError as PY.  A shape graph that cannot be emitted inline, or that reads a sequence
element's values (there is no row to read when the loop runs no step), makes the Scan fall back to its perform.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from graphjit.graph.fg import FunctionGraph
from graphjit.scan_module.empty import shape_graph
from graphjit.tensor.shape import Shape, Shape_i

from graphjit.link.llvm.driver.inner_graph import InnerPlan, emit_inner, plan_inner
from graphjit.link.llvm.ir.layouts import I64

STATIC, UNKNOWN = "static", "unknown"
_NO_PLAN = "no plan"
_CACHE = "_native_empty_plans"          # on the op; Scan.__getstate__ leaves it out


def empty_shape_plan(op: Any, j: int) -> InnerPlan | str | None:
    """STATIC, UNKNOWN (depends on computed values), the shape graph's plan, or None (cannot be emitted)."""
    cache = op.__dict__.setdefault(_CACHE, {})
    if j not in cache:
        cache[j] = _plan(op, j)
    plan = cache[j]
    return None if plan is _NO_PLAN else plan


def _plan(op: Any, j: int) -> InnerPlan | str:
    if all(s is not None for s in op.inner_outputs[j].type.shape):
        return STATIC
    vec = shape_graph(op, j)
    if vec is None:
        return UNKNOWN
    if vec.type.dtype != "int64":
        return _NO_PLAN
    fg = FunctionGraph(op.inner_inputs, [vec], clone=True)
    seq_elements = fg.inputs[:len(op.info.outer_seqs())]
    for var in seq_elements:
        for client, _ in fg.clients.get(var, []):
            if client == "output" or not isinstance(client.op, (Shape, Shape_i)):
                return _NO_PLAN
    plan = plan_inner(fg)
    return _NO_PLAN if plan is None else plan


def can_lower_empty(node: Any) -> bool:
    """Whether every outputs_info=None output's zero-step shape can be emitted natively."""
    info = node.op.info
    return all(empty_shape_plan(node.op, j) is not None for j in range(info.n_rec, info.n_outs))


def emit_empty_shape(scan: Any, j: int) -> list:
    """The i64 row shape of nit-sot output j when no step ran (scan: the _ScanLowering); call where n == 0."""
    ctx, b, op = scan.ctx, scan.b, scan.op
    static = op.inner_outputs[j].type.shape
    plan = empty_shape_plan(op, j)
    if plan is STATIC:
        return [I64(s) for s in static]
    if plan is UNKNOWN:
        scan.fail_if(ir.Constant(ir.IntType(1), 1),
                     f"scan: the loop ran no step and the shape of output {j} depends on values its step computes: "
                     "it cannot be known (give its step a shape that depends only on its inputs)")
        return [I64(0) for _ in static]
    saved = scan.t, scan.w
    scan.t = scan.w = I64(0)            # the inner inputs as at step 0 (no sequence row is read: see _plan)
    try:
        inputs = scan._inner_inputs()
    finally:
        scan.t, scan.w = saved
    vec = emit_inner(ctx, scan.node, plan, inputs, None, scope=f"empty{j}").values[0]
    data = b.bitcast(ctx.data(vec), ir.IntType(8).as_pointer())
    i64p = I64.as_pointer()
    dims = []
    for i, s in enumerate(static):
        if s is not None:
            dims.append(I64(s))
            continue
        ptr = b.bitcast(b.gep(data, [b.mul(I64(i), ctx.stride(vec, 0))]), i64p)
        dim = b.load(ptr, name=scan.name(f"out{j}.empty.dim{i}"))
        scan.fail_if(b.icmp_signed("<", dim, I64(0)),
                     "scan: the loop ran no step and the shape of output %lld has a negative length (%lld)",
                     [I64(j), dim])
        dims.append(dim)
    return dims
