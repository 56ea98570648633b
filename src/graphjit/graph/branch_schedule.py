"""Lazy branches: ops that read only some of their inputs, and the schedule that computes only those.

An op is *branching* when it defines ``lazy_branches(node) -> [[input position, ...] per branch]`` (each list
aligned with ``node.outputs``: branch k's value of output i is ``node.inputs[lazy_branches(node)[k][i]]``),
``select_branch(node, cond_value) -> k`` (which branch a value of ``node.inputs[0]``, the condition, picks) and
``rebuild_branches(cond, branches) -> outputs`` (a new node of the same op over other branch values; rewrites use
it).  ``graphjit.ifelse.IfElse`` is one.

A node is *exclusive* to branch k of a branching node L when every path from it to the graph's outputs goes
through one of L's branch-k inputs: it needs computing only when L takes branch k.  ``lazy_schedule`` orders the
graph so that each such region runs just before L, under L's decision; both linkers follow it (the PerformLinker
runs only the taken region's thunks, the LLVM linker emits each region in its own conditional block).
Regions nest: a node belongs to the smallest region holding it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Set, Union

from graphjit.graph.basic import Apply
from graphjit.graph.destroyhandler import alias_root


def is_branching(node: Apply) -> bool:
    """Whether node's op follows the lazy-branch protocol (module docstring)."""
    return getattr(node.op, "lazy_branches", None) is not None


@dataclass
class Branch:
    """The regions of a branching node, placed just before it in a schedule: one sub-schedule per branch."""

    node: Apply
    regions: List["Schedule"]


Schedule = List[Union[Apply, Branch]]


def exclusive_regions(fgraph: Any, order: Sequence[Apply]) -> Dict[Apply, List[Set[Apply]]]:
    """For each branching node of order, the set of nodes exclusive to each of its branches.

    A node reading a buffer that another node overwrites (destroy_map: an in-place update) stays out of every
    region: the overwriting node is ordered after its readers, and a region moves its nodes later.
    """
    outputs = set(fgraph.outputs)
    destroyed: Dict[Any, Set[Apply]] = {}
    for node in order:
        for indices in node.op.destroy_map.values():
            for i in indices:
                destroyed.setdefault(alias_root(node.inputs[i]), set()).add(node)
    pinned = {node for node in order
              if any(destroyed.get(alias_root(v), {node}) - {node} for v in node.inputs)} if destroyed else set()
    found: Dict[Apply, List[Set[Apply]]] = {}
    for lazy in order:
        if not is_branching(lazy):
            continue
        regions = []
        for positions in lazy.op.lazy_branches(lazy):
            mine = set(positions)
            region: Set[Apply] = set()
            candidates = {v.owner for k, v in enumerate(lazy.inputs) if k in mine and v.owner is not None}
            for node in reversed(order):          # clients before producers
                if node not in candidates or node is lazy or node in pinned:
                    continue
                if _exclusive(fgraph, node, lazy, mine, region, outputs):
                    region.add(node)
                    candidates.update(v.owner for v in node.inputs if v.owner is not None)
            regions.append(region)
        found[lazy] = regions
    return found


def _exclusive(fgraph: Any, node: Apply, lazy: Apply, mine: Set[int], region: Set[Apply], outputs: set) -> bool:
    for var in node.outputs:
        if var in outputs:
            return False
        for client, k in fgraph.clients.get(var, ()):
            if client == "output":
                return False
            if client is lazy:
                if k not in mine:
                    return False
            elif client not in region:
                return False
    return True


def lazy_schedule(fgraph: Any, order: Sequence[Apply]) -> Schedule:
    """order as a Schedule: each branching node preceded by a Branch of its regions (see the module docstring).

    A graph without branching nodes gives order itself (a plain list of nodes).
    """
    regions = exclusive_regions(fgraph, order)
    if not regions:
        return list(order)
    owner: Dict[Apply, tuple] = {}         # node -> (branching node, branch) of the smallest region holding it
    size: Dict[Apply, int] = {}
    for lazy, branch_sets in regions.items():
        for k, region in enumerate(branch_sets):
            for node in region:
                if node not in owner or len(region) < size[node]:
                    owner[node], size[node] = (lazy, k), len(region)
    members: Dict[tuple, List[Apply]] = {}
    for node in order:
        if node in owner:
            members.setdefault(owner[node], []).append(node)

    def build(nodes: Sequence[Apply]) -> Schedule:
        out: Schedule = []
        for node in nodes:
            if node in regions:
                out.append(Branch(node, [build(members.get((node, k), []))
                                         for k in range(len(regions[node]))]))
            out.append(node)
        return out

    return build([n for n in order if n not in owner])


def flatten(schedule: Schedule) -> List[Apply]:
    """Every node of a schedule in the order it lists them (regions in branch order)."""
    out: List[Apply] = []
    for item in schedule:
        if isinstance(item, Branch):
            for region in item.regions:
                out.extend(flatten(region))
        else:
            out.append(item)
    return out
