"""PerformLinker: runs each node's Python perform in topological order (the reference backend)."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Constant, Variable
from graphjit.graph.branch_schedule import Branch, lazy_schedule
from graphjit.link.basic import (Container, Linker, StorageCell, StorageMap, ThunkResult, destroyed_inputs,
                                 gc_plan, map_storage, streamline)
from graphjit.link.branch_program import lazy_program
from graphjit.link.node_hooks import HookChain, NanGuardHooks


class PerformLinker(Linker):
    """A linker whose thunk calls ``op.make_thunk`` (by default ``perform``) node after node.

    With ``allow_gc`` the cells of intermediate results are emptied once their last reader ran.
    """

    def __init__(self, allow_gc: bool = True, guard: int = 0, hooks: Any = None, profile: bool = False):
        self.allow_gc = allow_gc
        self.guard = guard
        self.hooks = hooks
        self.profile = profile
        self.fgraph = None
        self.no_recycling = ()

    def instrumented(self, guard: Optional[int] = None, hooks: Any = None,
                     profile: Optional[bool] = None) -> "PerformLinker":
        """A PerformLinker checking outputs (guard: node_hooks.GUARD_* bits), calling hooks (pre/post around
        each node) and/or timing each node (profile: Python timers, this linker being Python anyway)."""
        chained = HookChain(self.hooks, hooks) if self.hooks is not None and hooks is not None else \
            (hooks if hooks is not None else self.hooks)
        return PerformLinker(self.allow_gc, self.guard if guard is None else guard, chained,
                             self.profile if profile is None else profile)

    def profiled(self) -> "PerformLinker":
        """This linker timing every node (function(profile=True))."""
        return self.instrumented(profile=True)

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
        hooks = HookChain(NanGuardHooks(self.guard), self.hooks) if self.guard else self.hooks
        times = np.zeros(2 * len(order) + 2, dtype=np.int64) if self.profile else None
        if hooks is not None or times is not None:
            thunks = _instrument_thunks(order, thunks, hooks, times)
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
        if times is not None:
            fn = _timed(fn, times)
            fn.profile_counters = times  # type: ignore[attr-defined]
            fn.profile_units = [(k, [node]) for k, node in enumerate(order)]  # type: ignore[attr-defined]
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


def _instrument_thunks(order: Sequence, thunks: list, hooks: Any, times: Optional[np.ndarray]) -> list:
    """The node thunks wrapped in the hooks' pre/post calls and/or timers (PerformLinker.instrumented)."""
    wrapped = []
    for k, (node, thunk) in enumerate(zip(order, thunks)):
        def run(k: int = k, node: Any = node, thunk: Any = thunk) -> None:
            if hooks is not None:
                hooks.pre(k, [node], node.inputs, [c[0] for c in thunk.inputs])
            if times is not None:
                t0 = time.perf_counter_ns()
                thunk()
                times[2 * k] += time.perf_counter_ns() - t0
                times[2 * k + 1] += 1
            else:
                thunk()
            if hooks is not None:
                hooks.post(k, [node], node.inputs, [c[0] for c in thunk.inputs], [c[0] for c in thunk.outputs])
        run.inputs, run.outputs = thunk.inputs, thunk.outputs  # type: ignore[attr-defined]
        wrapped.append(run)
    return wrapped


def _timed(fn: Callable[[], None], times: np.ndarray) -> Callable[[], None]:
    """fn, adding its duration and one call to the last pair of times (the whole call)."""
    def timed() -> None:
        t0 = time.perf_counter_ns()
        fn()
        times[-2] += time.perf_counter_ns() - t0
        times[-1] += 1
    timed.__dict__.update(fn.__dict__)
    return timed
