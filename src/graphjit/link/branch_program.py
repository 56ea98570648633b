"""The PerformLinker's program for graphs with lazy branches (graph/branch_schedule.py): only the taken region runs."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Set

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.branch_schedule import Branch, Schedule, flatten
from graphjit.link.basic import StorageCell, StorageMap, raise_with_op

Step = tuple  # (node or None, callable, cells to clear after it)


def lazy_program(fgraph: Any, schedule: Schedule, thunks: Dict[Apply, Callable[[], None]],
                 storage_map: StorageMap, no_recycling_cells: Sequence[StorageCell], allow_gc: bool
                 ) -> Callable[[], None]:
    """One thunk running schedule: a Branch evaluates its node's condition and runs that region only.

    With allow_gc a value is freed after the last item of its own level that reads it (the readers of a value
    computed in a region are all inside that region or its branching node, so one level decides).
    """
    keep = set(fgraph.inputs) | set(fgraph.outputs)

    def compile_level(items: Schedule, read_after: frozenset = frozenset()) -> List[Step]:
        clears = _level_clears(items, storage_map, keep | read_after) if allow_gc else {}
        steps: List[Step] = []
        branches = {b.node: b for b in items if isinstance(b, Branch)} if allow_gc else {}
        for item in items:
            if isinstance(item, Branch):
                after = frozenset(item.node.inputs)     # the branching node reads its region's results
                regions = [compile_level(r, after) for r in item.regions]
                steps.append((None, _branch_step(item, regions, storage_map), ()))
            else:
                clear = list(clears.get(item, ()))
                branch = branches.get(item)
                if branch is not None:       # its regions' results, kept for it, are freed after it
                    inner = {v for region in branch.regions for n in flatten(region) for v in n.outputs}
                    clear += [storage_map[v] for v in item.inputs if v in inner and v not in keep]
                steps.append((item, thunks[item], clear))
        return steps

    top = compile_level(schedule)

    def program() -> None:
        for cell in no_recycling_cells:
            cell[0] = None
        _run(top)

    program.nodes = [s for s in thunks]  # type: ignore[attr-defined]
    program.thunks = list(thunks.values())  # type: ignore[attr-defined]
    return program


def _run(steps: List[Step]) -> None:
    for node, fn, clear in steps:
        if node is None:
            fn()
            continue
        try:
            fn()
        except Exception as e:
            raise_with_op(node, e, [c[0] for c in getattr(fn, "inputs", [])])
        for cell in clear:
            cell[0] = None


def _branch_step(item: Branch, regions: List[List[Step]], storage_map: StorageMap) -> Callable[[], None]:
    node = item.node
    cond_cell = storage_map[node.inputs[0]]
    select = node.op.select_branch

    def branch() -> None:
        _run(regions[select(node, cond_cell[0])])

    return branch


def _reads(item: Any, lazy: Dict[Apply, Branch]) -> Set[Variable]:
    """The variables a level item reads, itself and (for a branching node) through its regions."""
    found = set(item.inputs)
    branch = lazy.get(item)
    if branch is not None:
        for region in branch.regions:
            for sub in region:
                if not isinstance(sub, Branch):
                    found |= _reads(sub, {b.node: b for b in region if isinstance(b, Branch)})
    return found


def _level_clears(items: Schedule, storage_map: StorageMap, keep: set) -> Dict[Apply, List[StorageCell]]:
    """For each node of the level, the cells of this level's values read for the last time by it."""
    lazy = {b.node: b for b in items if isinstance(b, Branch)}
    nodes = [i for i in items if not isinstance(i, Branch)]
    produced = {v for n in nodes for v in n.outputs}
    last: Dict[Variable, Apply] = {}
    for node in nodes:
        for v in _reads(node, lazy):
            if v in produced and v not in keep:
                last[v] = node
    out: Dict[Apply, List[StorageCell]] = {}
    for v, node in last.items():
        out.setdefault(node, []).append(storage_map[v])
    return out
