"""DebugMode's per-unit checks (hooks for the linkers, link/node_hooks.py): every compiled result against its ops'
performs, in-place writes against destroy_map, perform's aliasing against view_map/destroy_map."""

from __future__ import annotations

import copy
import threading
from typing import Any, List, Sequence, Set

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.link.node_hooks import DebugModeError


def _snapshot(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else copy.deepcopy(value)


def _same(a: Any, b: Any) -> bool:
    """Whether two values are identical (arrays: same shape and elements, NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    try:
        return bool(a == b)
    except Exception:       # noqa: BLE001 - values that do not compare are taken as unchanged
        return True


def _where(node: Apply) -> str:
    trace = node.outputs[0].trace if node.outputs else None
    return f"\nApply node: {node}" + (f"\nCreated at: {trace}" if trace else "")


def destroyed_positions(nodes: Sequence[Apply], in_vars: Sequence[Variable]) -> Set[int]:
    """Positions in in_vars of the variables some node of the unit declares it overwrites (destroy_map)."""
    destroyed = {node.inputs[i] for node in nodes for idx in node.op.destroy_map.values() for i in idx}
    return {k for k, v in enumerate(in_vars) if v in destroyed}


class DebugHooks:
    """pre: snapshot the unit's inputs; post: check undeclared in-place writes, rerun every node's perform on the
    snapshot (checking perform's own writes and aliases) and compare the unit's outputs with perform's."""

    def __init__(self, check_py_code: bool = True) -> None:
        self.check_py_code = check_py_code
        self._local = threading.local()

    def pre(self, index: int, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any]) -> None:
        """Keep copies of the inputs as they are before the unit runs."""
        self._local.before = [_snapshot(x) for x in inputs]

    def post(self, index: int, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any],
             outputs: Sequence[Any]) -> None:
        """Run the checks; raise DebugModeError naming the node and its line at the first failure."""
        before = self._local.before
        destroyed = destroyed_positions(nodes, in_vars)
        for k, (var, old, new) in enumerate(zip(in_vars, before, inputs)):
            if k not in destroyed and not isinstance(var, Constant) and not _same(old, new):
                culprit = next((n for n in nodes if var in n.inputs), nodes[-1])
                raise DebugModeError(f"DebugMode: {culprit.op} overwrote its input {var} when the compiled function "
                                     f"ran it (its compiled code, or its perform called back), and the op does "
                                     f"not declare it in destroy_map{_where(culprit)}")
        if not self.check_py_code:
            return
        env = dict(zip(in_vars, before))
        for node in nodes:
            _check_perform(node, env)
        last = nodes[-1]
        for j, (var, got) in enumerate(zip(last.outputs, outputs)):
            want = env[var]
            if not var.type.values_eq_approx(got, want):
                raise DebugModeError(f"DebugMode: output {j} of {last.op} differs between the compiled code and "
                                     f"its perform:\ncompiled: {got!r}\nperform:  {want!r}{_where(last)}")


def _check_perform(node: Apply, env: dict) -> None:
    """Run node's perform on copies of its inputs (values from env); check it writes and aliases only what the
    op declares; put its outputs into env."""
    values = [_snapshot(v.data if isinstance(v, Constant) else env[v]) for v in node.inputs]
    originals = [_snapshot(x) for x in values]
    cells: List[List[Any]] = [[None] for _ in node.outputs]
    params = (node.op.get_params(node),) if node.op.params_type is not None else ()
    node.op.perform(node, values, cells, *params)
    op = node.op
    allowed_writes = {i for idx in op.destroy_map.values() for i in idx}
    for i, (now, was) in enumerate(zip(values, originals)):
        if i not in allowed_writes and not _same(now, was):
            raise DebugModeError(f"DebugMode: perform of {op} overwrote its input {i} ({node.inputs[i]}), which the "
                                 f"op does not declare in destroy_map{_where(node)}")
    for j, cell in enumerate(cells):
        out = cell[0]
        if not isinstance(out, np.ndarray):
            continue
        declared = set(op.view_map.get(j, [])) | set(op.destroy_map.get(j, []))
        for i, x in enumerate(values):
            if i not in declared and isinstance(x, np.ndarray) and np.may_share_memory(out, x):
                raise DebugModeError(f"DebugMode: output {j} of perform of {op} shares memory with its input {i} "
                                     f"({node.inputs[i]}), which the op does not declare in view_map or "
                                     f"destroy_map{_where(node)}")
    for var, cell in zip(node.outputs, cells):
        env[var] = cell[0]
