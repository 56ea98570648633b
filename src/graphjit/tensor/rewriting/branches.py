"""Rewrites of branching ops (the lazy-branch protocol of graph/branch_schedule.py, e.g. ``graphjit.ifelse.IfElse``).

- ``lazy_constant_condition``: a constant condition picks its branch at compile time.
- ``lazy_equal_branches``: when every branch gives the same values, they are the outputs.
- ``lazy_lift_elemwise``: ``f(ifelse(c, a, b), x...) -> ifelse(c, f(a, x...), f(b, x...))`` for an elementwise
  ``f``, when the branching node has one output and ``f`` is its only reader.  The rule keeps laziness: ``f``
  and ``x`` were computed anyway, ``f`` now runs on the taken branch only, and ``a`` and ``b`` keep being read by
  one branch each (had the ifelse another reader, it would stay, and ``a`` would be read by two nodes: eager).
  Inside a branch ``f`` fuses with the branch's own elementwise work, and a constant branch folds
  (``ifelse(c, 0, b) * x`` gives ``ifelse(c, 0, b * x)``).

They match ops by the protocol (``lazy_branches``/``rebuild_branches``), not by class: this layer knows no
IfElse.
"""

from __future__ import annotations

from typing import List, Optional

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.branch_schedule import is_branching
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.rewriting.basic import keep_type, register_canonicalize, scalar_value


@node_rewriter(None)
def lazy_constant_condition(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """A branching node whose condition is a constant: the chosen branch's values."""
    if not is_branching(node):
        return None
    value = scalar_value(node.inputs[0])
    if value is None:
        return None
    positions = node.op.lazy_branches(node)[node.op.select_branch(node, value)]
    return _typed([node.inputs[p] for p in positions], node.outputs)


@node_rewriter(None)
def lazy_equal_branches(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """A branching node whose branches give the same variables: those variables."""
    if not is_branching(node):
        return None
    branches = [[node.inputs[p] for p in positions] for positions in node.op.lazy_branches(node)]
    if any(b != branches[0] for b in branches[1:]):
        return None
    return _typed(branches[0], node.outputs)


@node_rewriter([Elemwise])
def lazy_lift_elemwise(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """f(ifelse(c, a, b), x...) -> ifelse(c, f(a, x...), f(b, x...)) (the module docstring gives the rule)."""
    if node.op.destroy_map or len(node.outputs) != 1:
        return None
    for var in node.inputs:
        lazy = var.owner
        if lazy is None or not is_branching(lazy) or len(lazy.outputs) != 1:
            continue
        clients = fgraph.clients.get(var, ())
        if not clients or any(c is not node for c, _ in clients):
            continue
        branches = [[lazy.inputs[p] for p in positions] for positions in lazy.op.lazy_branches(lazy)]
        lifted = []
        for (value,) in branches:
            out = node.op(*[value if v is var else v for v in node.inputs])
            lifted.append([out])
        new = lazy.op.rebuild_branches(lazy.inputs[0], lifted)
        return _typed(new, node.outputs)
    return None


def _typed(new: List[Variable], old: List[Variable]) -> Optional[List[Variable]]:
    out = [keep_type(n, o) for n, o in zip(new, old)]
    return None if any(v is None for v in out) else out


register_canonicalize(lazy_constant_condition, "ifelse", name="lazy_constant_condition")
register_canonicalize(lazy_equal_branches, "ifelse", name="lazy_equal_branches")
register_canonicalize(lazy_lift_elemwise, "ifelse", "ifelse_lift", name="lazy_lift_elemwise")
