"""FunctionGraph features: change history, validation, replace-and-validate, input protection."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph, InconsistencyError


class AlreadyThere(Exception):
    """A feature of this kind is already attached."""


class Feature:
    """Base class of FunctionGraph features: every callback is optional."""

    def on_attach(self, fgraph: FunctionGraph) -> None:
        """Called when attached to fgraph."""

    def on_detach(self, fgraph: FunctionGraph) -> None:
        """Called when removed from fgraph."""

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: Optional[str]) -> None:
        """Called when node enters the graph."""

    def on_prune(self, fgraph: FunctionGraph, node: Apply, reason: Optional[str]) -> None:
        """Called when node leaves the graph."""

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old: Variable,
                        new: Variable, reason: Optional[str]) -> None:
        """Called when input i of node changes from old to new."""

    def orderings(self, fgraph: FunctionGraph) -> Dict[Apply, List[Apply]]:
        """Extra ordering constraints."""
        return {}


class History(Feature):
    """Records input changes so that fgraph.revert(checkpoint) can undo them."""

    def on_attach(self, fgraph: FunctionGraph) -> None:
        if hasattr(fgraph, "checkpoint"):
            raise AlreadyThere("History is already attached")
        self._log: List[Tuple[Any, int, Variable, Variable]] = []
        self._reverting = False
        fgraph.checkpoint = lambda: len(self._log)
        fgraph.revert = lambda checkpoint: self.revert(fgraph, checkpoint)

    def on_detach(self, fgraph: FunctionGraph) -> None:
        del fgraph.checkpoint
        del fgraph.revert

    def on_change_input(self, fgraph, node, i, old, new, reason) -> None:
        if not self._reverting:
            self._log.append((node, i, old, new))

    def revert(self, fgraph: FunctionGraph, checkpoint: int) -> None:
        """Undo every change made since checkpoint."""
        self._reverting = True
        try:
            while len(self._log) > checkpoint:
                node, i, old, _new = self._log.pop()
                fgraph.change_node_input(node, i, old, reason="revert", check=False)
        finally:
            self._reverting = False


class Validator(Feature):
    """Gives fgraph.validate() and fgraph.consistent()."""

    def on_attach(self, fgraph: FunctionGraph) -> None:
        fgraph.consistent = lambda: self._consistent(fgraph)

    def on_detach(self, fgraph: FunctionGraph) -> None:
        del fgraph.consistent

    @staticmethod
    def _consistent(fgraph: FunctionGraph) -> bool:
        try:
            fgraph.validate()
            return True
        except InconsistencyError:
            return False


class ReplaceValidate(History, Validator):
    """replace_validate / replace_all_validate: replace, validate, and revert on failure."""

    def on_attach(self, fgraph: FunctionGraph) -> None:
        History.on_attach(self, fgraph)
        Validator.on_attach(self, fgraph)
        fgraph.replace_validate = lambda var, new, reason=None: self.replace_all_validate(
            fgraph, [(var, new)], reason)
        fgraph.replace_all_validate = lambda pairs, reason=None: self.replace_all_validate(
            fgraph, pairs, reason)

    def on_detach(self, fgraph: FunctionGraph) -> None:
        History.on_detach(self, fgraph)
        Validator.on_detach(self, fgraph)
        del fgraph.replace_validate
        del fgraph.replace_all_validate

    def replace_all_validate(self, fgraph: FunctionGraph, pairs: Iterable[Tuple[Variable, Variable]],
                             reason: Optional[str] = None) -> None:
        """Apply all replacements; if the graph no longer validates, undo them and re-raise."""
        chk = fgraph.checkpoint()
        try:
            for var, new in pairs:
                fgraph.replace(var, new, reason=reason)
            fgraph.validate()
        except Exception:
            fgraph.revert(chk)
            raise


class Supervisor(Feature):
    """Refuses any change that would let an op destroy a protected variable (inputs not mutable)."""

    def __init__(self, protected: Sequence[Variable]):
        self.protected = list(protected)

    def validate(self, fgraph: FunctionGraph) -> None:
        """Raise InconsistencyError if a protected variable is destroyed."""
        destroyers = getattr(fgraph, "destroyers", None)
        if destroyers is None:
            for node in fgraph.apply_nodes:
                for _out, ins in getattr(node.op, "destroy_map", {}).items():
                    for i in ins:
                        if node.inputs[i] in self.protected:
                            raise InconsistencyError(
                                f"{node} would overwrite the protected input {node.inputs[i]}")
            return
        for var in self.protected:
            if destroyers(var):
                raise InconsistencyError(f"trying to destroy the protected variable {var}")


class PreserveTraces(Feature):
    """A variable a rewrite creates in place of another takes over its trace (Theano's copy_stack_trace).

    Otherwise a rewritten node's trace would be the line calling function(), and errors raised at run time
    would point there instead of at the user's expression.
    """

    def on_attach(self, fgraph: FunctionGraph) -> None:
        """Remember the variables the user built."""
        self.original = set(fgraph.variables)

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old: Variable,
                        new: Variable, reason: Optional[str]) -> None:
        """A new variable replacing a traced one inherits the trace (and so does its node's other outputs)."""
        trace = old.trace
        if trace is None or new in self.original or new.owner is None:
            return
        for out in new.owner.outputs:
            if out not in self.original:
                out.tag.trace = trace
