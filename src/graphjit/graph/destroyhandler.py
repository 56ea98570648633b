"""DestroyHandler: keeps a graph with inplace ops (destroy_map) and views (view_map) consistent.

Rules checked by validate():
  - a variable's storage (its alias root, found through view_map) has at most one destroyer;
  - constants are never destroyed (protected inputs are the Supervisor's job, through destroyers());
  - a destroyer does not also read another alias of what it destroys;
  - nothing still in use after the destroy may alias the destroyed storage: every other reader of
    the root or of its views runs before the destroyer (orderings() tells toposort so), which is
    impossible, and refused, when such a reader depends on the destroyer (a cycle) or is an output.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.features import AlreadyThere, Feature
from graphjit.graph.fg import FunctionGraph, InconsistencyError


def view_source(var: Variable) -> Optional[Variable]:
    """The input var is a view of (view_map), or None.

    The output of a destroyer is a new value in the destroyed buffer: it starts a new alias root,
    so a chain of inplace ops (each the only reader of the previous result) is allowed.
    """
    node = var.owner
    if node is None:
        return None
    sources = node.op.view_map.get(var.index)
    return node.inputs[sources[0]] if sources else None


def alias_root(var: Variable) -> Variable:
    """The variable whose storage var shares (var itself if it owns its storage)."""
    src = view_source(var)
    while src is not None:
        var, src = src, view_source(src)
    return var


def storage_root(var: Variable) -> Variable:
    """The variable whose buffer var lives in, following both view_map and destroy_map (unlike alias_root)."""
    while True:
        step = storage_root_step(var)
        if step is var:
            return var
        var = step


def storage_root_step(var: Variable) -> Variable:
    """The variable whose buffer var is a view of or overwrites (var itself if none)."""
    if var.owner is None:
        return var
    op = var.owner.op
    sources = op.view_map.get(var.index) or op.destroy_map.get(var.index)
    return var.owner.inputs[sources[0]] if sources else var


class DestroyHandler(Feature):
    """Tracks destroyers; gives fgraph.destroyers(var) and refuses unsafe inplace graphs."""

    def __init__(self) -> None:
        self.fgraph: Optional[FunctionGraph] = None
        self.destroying_nodes: Set[Apply] = set()
        self._droot: Optional[Dict[Variable, List[Apply]]] = None

    def on_attach(self, fgraph: FunctionGraph) -> None:
        if getattr(fgraph, "destroy_handler", None) is not None:
            raise AlreadyThere("a DestroyHandler is already attached")
        self.fgraph = fgraph
        fgraph.destroy_handler = self
        fgraph.destroyers = self.destroyers
        self.destroying_nodes = {n for n in fgraph.apply_nodes if n.op.destroy_map}
        self._droot = None

    def on_detach(self, fgraph: FunctionGraph) -> None:
        del fgraph.destroy_handler
        del fgraph.destroyers
        self.fgraph = None

    def on_import(self, fgraph, node, reason) -> None:
        if node.op.destroy_map:
            self.destroying_nodes.add(node)
        self._droot = None

    def on_prune(self, fgraph, node, reason) -> None:
        self.destroying_nodes.discard(node)
        self._droot = None

    def on_change_input(self, fgraph, node, i, old, new, reason) -> None:
        self._droot = None

    # --- queries ------------------------------------------------------------------------------
    def destroyed_roots(self) -> Dict[Variable, List[Apply]]:
        """alias root -> the nodes destroying it."""
        if self._droot is None:
            droot: Dict[Variable, List[Apply]] = {}
            for node in self.destroying_nodes:
                for ins in node.op.destroy_map.values():
                    for i in ins:
                        droot.setdefault(alias_root(node.inputs[i]), []).append(node)
            self._droot = droot
        return self._droot

    def destroyers(self, var: Variable) -> List[Apply]:
        """The nodes that overwrite var's storage."""
        return list(self.destroyed_roots().get(alias_root(var), ()))

    def aliases(self, root: Variable, stop: Optional[Apply] = None) -> List[Variable]:
        """root and every view of it, not following the outputs of stop."""
        clients = self.fgraph.clients
        found, todo = [], [root]
        while todo:
            v = todo.pop()
            found.append(v)
            for node, _i in clients.get(v, ()):
                if node == "output" or node is stop:
                    continue
                for out in node.outputs:
                    if view_source(out) is v:
                        todo.append(out)
        return found

    def readers(self, destroyer: Apply, root: Variable) -> List[Apply]:
        """The other nodes that read root or a view of it (they must run before destroyer)."""
        result = []
        for v in self.aliases(root, stop=destroyer):
            for node, _i in self.fgraph.clients.get(v, ()):
                if node != "output" and node is not destroyer and node not in result:
                    result.append(node)
        return result

    def orderings(self, fgraph: FunctionGraph) -> Dict[Apply, List[Apply]]:
        """destroyer -> the readers of what it destroys."""
        result: Dict[Apply, List[Apply]] = {}
        for root, nodes in self.destroyed_roots().items():
            for d in nodes:
                prereqs = [r for r in self.readers(d, root) if r is not d]
                if prereqs:
                    result.setdefault(d, []).extend(prereqs)
        return result

    # --- validation -----------------------------------------------------------------------------
    def validate(self, fgraph: FunctionGraph) -> bool:
        """Raise InconsistencyError if the destroyers make the graph unsafe."""
        if not self.destroying_nodes:
            return True
        for root, nodes in self.destroyed_roots().items():
            if len(nodes) > 1:
                raise InconsistencyError(f"{root} is destroyed by several nodes: {nodes}")
            if isinstance(root, Constant):
                raise InconsistencyError(f"{nodes[0]} would overwrite the constant {root}")
            self._check_one(nodes[0], root)
        try:
            # the graph's own toposort (with these orderings): cached there, so the linker's order is this one
            fgraph.toposort()
        except ValueError:
            raise InconsistencyError("inplace operations make the graph cyclic: a value would "
                                     "be read after it is overwritten") from None
        return True

    def _check_one(self, destroyer: Apply, root: Variable) -> None:
        aliases = self.aliases(root, stop=destroyer)
        destroyed = {destroyer.inputs[i] for ins in destroyer.op.destroy_map.values() for i in ins}
        alias_set = set(aliases)
        for i, inp in enumerate(destroyer.inputs):
            if inp in alias_set and inp not in destroyed:
                raise InconsistencyError(f"{destroyer} overwrites {root} while also reading "
                                         f"an alias of it (input {i})")
        for v in aliases:
            if any(node == "output" for node, _i in self.fgraph.clients.get(v, ())):
                raise InconsistencyError(f"{destroyer} overwrites {v}, which is an output")

    def clone(self) -> "DestroyHandler":
        """A fresh DestroyHandler for a cloned graph."""
        return DestroyHandler()


def attach_destroy_handler(fgraph: FunctionGraph) -> DestroyHandler:
    """fgraph's DestroyHandler, attached if missing."""
    dh = getattr(fgraph, "destroy_handler", None)
    if dh is None:
        dh = DestroyHandler()
        fgraph.attach_feature(dh)
    return dh
