"""Walking node rewriters over a graph: in-to-out, out-to-in, and to a fixed point (equilibrium).

Node rewriters are dispatched by what they track (op instances, then op classes along the MRO, then
the untracked ones), so a node is only shown to the rewriters that can match it. The equilibrium
walker repeats passes until nothing changes, within a budget (passes and changes) so that two
rewrites undoing each other cannot loop forever.
"""

from __future__ import annotations

import warnings
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple, Union

from graphjit.graph.basic import Apply
from graphjit.graph.features import Feature
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import (FromFunctionGraphRewriter, GraphRewriter, NodeRewriter,
                                            apply_node_rewrite)
from graphjit.graph.rewriting.utils import profile_of


class RewriterDispatch:
    """Which node rewriters to try on a node, by its op (cached per op)."""

    def __init__(self, rewriters: Sequence[NodeRewriter]):
        self.rewriters = list(rewriters)
        self._by_instance: Dict[Any, List[NodeRewriter]] = {}
        self._by_class: Dict[type, List[NodeRewriter]] = {}
        self._untracked: List[NodeRewriter] = []
        for r in self.rewriters:
            tracks = r.tracks()
            if tracks is None:
                self._untracked.append(r)
                continue
            for t in tracks:
                table = self._by_class if isinstance(t, type) else self._by_instance
                table.setdefault(t, []).append(r)
        self._cache: Dict[Any, List[NodeRewriter]] = {}
        # per walk (forget_instances): kept across walks it would hold every op instance ever rewritten
        self._by_id: Dict[int, Tuple[Any, List[NodeRewriter]]] = {}

    def for_op(self, op: Any) -> List[NodeRewriter]:
        """The rewriters to try on a node of op, in registration order."""
        hit = self._by_id.get(id(op))
        if hit is not None and hit[0] is op:  # ops hash their props: skip that on the hot path
            return hit[1]
        found = self._lookup(op)
        self._by_id[id(op)] = (op, found)
        return found

    def forget_instances(self) -> None:
        """Drop the per-instance shortcut (the end of a walk): the op instances of a dropped graph can go."""
        self._by_id.clear()

    def _lookup(self, op: Any) -> List[NodeRewriter]:
        try:
            return self._cache[op]
        except (KeyError, TypeError):
            pass
        chosen = set()
        for cls in type(op).__mro__:
            chosen.update(id(r) for r in self._by_class.get(cls, ()))
        try:
            chosen.update(id(r) for r in self._by_instance.get(op, ()))
        except TypeError:  # unhashable op
            pass
        found = [r for r in self.rewriters if id(r) in chosen] + self._untracked
        try:
            self._cache[op] = found
        except TypeError:
            pass
        return found


class _ImportQueue(Feature):
    """Collects the nodes imported while a walker runs (to visit them in the same pass) and the
    nodes whose inputs changed, with their clients (to revisit them in the next pass)."""

    def __init__(self) -> None:
        self.nodes: Deque[Apply] = deque()
        self.dirty: Set[Apply] = set()

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: Optional[str]) -> None:
        self.nodes.append(node)

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old: Any, new: Any,
                        reason: Optional[str]) -> None:
        if node == "output":
            return
        self.dirty.add(node)
        for out in node.outputs:
            for client, _j in fgraph.clients.get(out, ()):
                if client != "output":
                    self.dirty.add(client)


class WalkingGraphRewriter(GraphRewriter):
    """Applies node rewriters to every node once, in topological order or its reverse.

    With ignore_newtrees=False the nodes created by a rewrite are visited too (after the others).
    """

    def __init__(self, *rewriters: NodeRewriter, order: str = "in_to_out",
                 ignore_newtrees: bool = True, name: Optional[str] = None):
        if order not in ("in_to_out", "out_to_in"):
            raise ValueError(f"order must be 'in_to_out' or 'out_to_in', got {order!r}")
        self.dispatch = RewriterDispatch(rewriters)
        self.order = order
        self.ignore_newtrees = ignore_newtrees
        self.name = name

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        super().add_requirements(fgraph)
        for r in self.dispatch.rewriters:
            r.add_requirements(fgraph)

    def apply(self, fgraph: FunctionGraph) -> int:
        """Walk once; returns the number of changes."""
        nodes = fgraph.toposort()
        if self.order == "out_to_in":
            nodes.reverse()
        queue = _ImportQueue()
        if not self.ignore_newtrees:
            fgraph.attach_feature(queue)
        changes = 0
        try:
            todo: Deque[Apply] = deque(nodes)
            while todo:
                node = todo.popleft()
                changes += _rewrite_node(fgraph, self.dispatch, node)
                if not todo and queue.nodes:
                    todo.extend(queue.nodes)
                    queue.nodes.clear()
        finally:
            fgraph.remove_feature(queue)
            self.dispatch.forget_instances()
        return changes

    def __str__(self) -> str:
        return self.name or f"{self.order}({', '.join(str(r) for r in self.dispatch.rewriters)})"


def _rewrite_node(fgraph: FunctionGraph, dispatch: RewriterDispatch, node: Apply) -> int:
    """Try the rewriters of node until one changes it; 1 if one did."""
    if node not in fgraph.apply_nodes:
        return 0
    for r in dispatch.for_op(node.op):
        if apply_node_rewrite(fgraph, r, node):
            return 1
    return 0


def in2out(*rewriters: NodeRewriter, ignore_newtrees: bool = True, name: Optional[str] = None
           ) -> WalkingGraphRewriter:
    """A walker applying rewriters from the inputs towards the outputs."""
    return WalkingGraphRewriter(*rewriters, order="in_to_out", ignore_newtrees=ignore_newtrees,
                                name=name)


def out2in(*rewriters: NodeRewriter, ignore_newtrees: bool = True, name: Optional[str] = None
           ) -> WalkingGraphRewriter:
    """A walker applying rewriters from the outputs towards the inputs."""
    return WalkingGraphRewriter(*rewriters, order="out_to_in", ignore_newtrees=ignore_newtrees,
                                name=name)


class EquilibriumGraphRewriter(GraphRewriter):
    """Applies node rewriters (and graph rewriters, once per pass) until nothing changes.

    Budget: at most max_passes passes and max_use_ratio * (initial node count + 10) changes;
    when exceeded it stops with a warning (recorded in the profile) instead of looping forever.
    """

    def __init__(self, rewriters: Sequence[NodeRewriter],
                 graph_rewriters: Sequence[GraphRewriter] = (), max_passes: int = 20,
                 max_use_ratio: float = 8.0, name: Optional[str] = None):
        self.dispatch = RewriterDispatch(rewriters)
        self.graph_rewriters = list(graph_rewriters)
        self.max_passes = max_passes
        self.max_use_ratio = max_use_ratio
        self.name = name

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        super().add_requirements(fgraph)
        for r in self.dispatch.rewriters:
            r.add_requirements(fgraph)
        for g in self.graph_rewriters:
            g.add_requirements(fgraph)

    def apply(self, fgraph: FunctionGraph) -> int:
        """Rewrite to a fixed point; returns the number of node changes."""
        budget = int(self.max_use_ratio * (len(fgraph.apply_nodes) + 10))
        total = 0
        queue = _ImportQueue()
        fgraph.attach_feature(queue)
        try:
            for n_pass in range(self.max_passes):
                for g in self.graph_rewriters:
                    g.rewrite(fgraph)
                changes = self._one_pass(fgraph, queue, budget - total, first=n_pass == 0)
                total += changes
                if total >= budget:
                    self._over_budget(fgraph, f"{self}: {total} changes (budget {budget})")
                    break
                if not changes:
                    break
            else:
                self._over_budget(fgraph, f"{self}: still changing after {self.max_passes} passes")
        finally:
            fgraph.remove_feature(queue)
            self.dispatch.forget_instances()
        return total

    def _one_pass(self, fgraph: FunctionGraph, queue: _ImportQueue, budget: int, first: bool) -> int:
        """Visit every node (first pass) or those whose inputs changed since the last pass."""
        if not self.dispatch.rewriters:
            return 0
        queue.nodes.clear()
        nodes = fgraph.toposort()
        if not first:
            nodes = [n for n in nodes if n in queue.dirty]
        queue.dirty.clear()
        todo: Deque[Apply] = deque(nodes)
        changes = 0
        while todo and changes < budget:
            changes += _rewrite_node(fgraph, self.dispatch, todo.popleft())
            if not todo and queue.nodes:
                todo.extend(queue.nodes)
                queue.nodes.clear()
        return changes

    def _over_budget(self, fgraph: FunctionGraph, msg: str) -> None:
        profile = profile_of(fgraph)
        if profile is not None:
            profile.budget_exceeded.append(msg)
        warnings.warn(f"rewriting stopped early: {msg}", RuntimeWarning, stacklevel=4)

    def __str__(self) -> str:
        return self.name or "Equilibrium"


def as_graph_rewriter(rewriter: Union[GraphRewriter, NodeRewriter, Callable[..., Any]]) -> GraphRewriter:
    """A GraphRewriter from a graph rewriter, a node rewriter (walked in to out) or fn(fgraph)."""
    if isinstance(rewriter, GraphRewriter):
        return rewriter
    if isinstance(rewriter, NodeRewriter):
        return WalkingGraphRewriter(rewriter)
    if callable(rewriter):
        return FromFunctionGraphRewriter(rewriter)
    raise TypeError(f"not a rewriter: {rewriter!r}")
