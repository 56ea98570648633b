"""PerformLinker: runs each node's Python perform in topological order (the reference backend)."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Constant, Variable
from graphjit.graph.lazy import Branch, lazy_schedule
from graphjit.link.basic import (Container, Linker, StorageCell, StorageMap, ThunkResult, destroyed_inputs,
                                 gc_plan, map_storage, streamline)
from graphjit.link.lazy import lazy_program


class PerformLinker(Linker):
    """A linker whose thunk calls ``op.make_thunk`` (by default ``perform``) node after node.

    With ``allow_gc`` the cells of intermediate results are emptied once their last reader ran.
    """

    def __init__(self, allow_gc: bool = True):
        self.allow_gc = allow_gc
        self.fgraph = None
        self.no_recycling = ()

    def make_thunk(self, input_storage: Optional[Sequence[StorageCell]] = None,
                   output_storage: Optional[Sequence[StorageCell]] = None,
                   storage_map: Optional[StorageMap] = None) -> ThunkResult:
        """Build the streamlined thunk and the input/output containers of the bound graph."""
        fgraph = self._require_fgraph()
        order = fgraph.toposort()
        input_cells, output_cells, storage_map = map_storage(fgraph, order, input_storage,
                                                             output_storage, storage_map)
        compute_map: Dict[Variable, List[bool]] = {
            var: [isinstance(var, Constant) or var.owner is None] for var in storage_map}
        thunks = []
        for node in order:
            thunk = node.op.make_thunk(node, storage_map, compute_map, self.no_recycling, impl="py")
            thunk.inputs = getattr(thunk, "inputs", [storage_map[v] for v in node.inputs])
            thunk.outputs = getattr(thunk, "outputs", [storage_map[v] for v in node.outputs])
            thunks.append(thunk)
        input_set = set(fgraph.inputs)
        no_recycling_cells = [storage_map[v] for v in self.no_recycling
                              if v in storage_map and v not in input_set
                              and not isinstance(v, Constant)]
        schedule = lazy_schedule(fgraph, order)
        if any(isinstance(item, Branch) for item in schedule):    # branching nodes: only the taken branch's region runs
            fn = lazy_program(fgraph, schedule, dict(zip(order, thunks)), storage_map, no_recycling_cells,
                              self.allow_gc)
        else:
            clear = gc_plan(fgraph, order, storage_map) if self.allow_gc else None
            fn = streamline(fgraph, thunks, order, no_recycling_cells, clear)
        destroyed = destroyed_inputs(fgraph, order)
        if destroyed:
            state = set(fgraph.update_mapping.values()) if fgraph.update_mapping else set()
            fn = _guard_destroyed(fn, input_cells, destroyed, state)
        fn.storage_map = storage_map  # type: ignore[attr-defined]
        fn.compute_map = compute_map  # type: ignore[attr-defined]
        in_containers = [Container(v, cell) for v, cell in zip(fgraph.inputs, input_cells)]
        out_containers = [Container(v, cell, readonly=True) for v, cell in zip(fgraph.outputs,
                                                                               output_cells)]
        return fn, in_containers, out_containers, thunks, order

    def __repr__(self) -> str:
        return f"PerformLinker(allow_gc={self.allow_gc})"


def _guard_destroyed(fn: Callable[[], None], cells: Sequence[StorageCell], destroyed: List[int],
                     state: set) -> Callable[[], None]:
    """fn, made to compute as if no destroyed input shared memory with another input, and to leave state
    (inputs with updates) unchanged when it fails.

    A destroyed input gets a copy for the call when its array overlaps another input's (two mutable
    arguments given one buffer: the first inplace op would change what the second reads), or when it is
    state (a shared variable updated in place: on an error its value is restored, not half-written).
    """
    def guarded() -> None:
        saved = []
        for k in destroyed:
            value = cells[k][0]
            if type(value) is not np.ndarray:
                continue
            if k in state or any(j != k and isinstance(c[0], np.ndarray) and np.may_share_memory(value, c[0])
                                 for j, c in enumerate(cells)):
                saved.append((k, value))
                cells[k][0] = value.copy()
        try:
            fn()
        except BaseException:
            for k, value in saved:
                cells[k][0] = value
            raise

    guarded.__dict__.update(fn.__dict__)
    return guarded
