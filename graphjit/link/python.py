"""PerformLinker: runs each node's Python perform in topological order (the reference backend)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from graphjit.graph.basic import Constant, Variable
from graphjit.link.basic import (Container, Linker, StorageCell, StorageMap, ThunkResult, gc_plan,
                                 map_storage, streamline)


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
        clear = gc_plan(fgraph, order, storage_map) if self.allow_gc else None
        fn = streamline(fgraph, thunks, order, no_recycling_cells, clear)
        fn.storage_map = storage_map  # type: ignore[attr-defined]
        fn.compute_map = compute_map  # type: ignore[attr-defined]
        in_containers = [Container(v, cell) for v, cell in zip(fgraph.inputs, input_cells)]
        out_containers = [Container(v, cell, readonly=True) for v, cell in zip(fgraph.outputs,
                                                                               output_cells)]
        return fn, in_containers, out_containers, thunks, order

    def __repr__(self) -> str:
        return f"PerformLinker(allow_gc={self.allow_gc})"
