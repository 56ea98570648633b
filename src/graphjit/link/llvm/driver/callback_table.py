"""The Python side of an entry that calls back into Python: its callback table (fallback nodes, Print's perform,
guard findings and unit hooks: ir/callbacks.py emits the calls), the published callback, the profile counters."""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.link.node_hooks import GUARD_INPUT, unit_guard_error

from graphjit.link.llvm.ir.callbacks import KIND_PERFORM, KIND_POST, KIND_PRE
from graphjit.link.llvm.ir.fallback import FallbackTable, publish_callback as publish_fallback
from graphjit.link.llvm.jit.symbols import CallbackSymbol
from graphjit.link.llvm.loops.fusion import plan_groups


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
            planned = plan_groups(self.fgraph, self.order, bool(self.guard))
            for group in {id(g): g for g in planned.values()}.values():
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
            elif kind == KIND_POST:
                self.hooks.post(index, nodes, in_vars, inputs, self._values(nodes[-1].outputs, outs))
            else:       # a guard's finding (ir/callbacks.py): the bits found, | GUARD_INPUT before the unit
                err = unit_guard_error(nodes, in_vars, inputs, kind & ~GUARD_INPUT, self.guard)
                if err is not None:
                    raise err
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


_NODE_CALLBACK = CallbackSymbol("gj_node_callback",
                                ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                                 ctypes.c_void_p, ctypes.c_void_p), _callback)


def publish_callback() -> None:
    """Publish gj_node_callback (once per process), and what the fallback path publishes (PyErr_SetObject)."""
    publish_fallback()
    _NODE_CALLBACK.publish()


def counters_for(n_nodes: int) -> np.ndarray:
    """A zeroed counters array for an entry over n_nodes nodes (a pair per node, then the entry's pair)."""
    return np.zeros(2 * n_nodes + 2, dtype=np.int64)
