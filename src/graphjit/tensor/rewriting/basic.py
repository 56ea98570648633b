"""The tensor rewrite database (fast_run / fast_compile and their phases), merge and constant folding.

Order of the phases (positions in ``rewrite_db``):
   0  merge1               merge identical subexpressions and equal constants (fast_run, fast_compile)
   0.5 constant_folding    fold nodes whose inputs are all constants (fast_run, fast_compile)
   1  canonicalize         equilibrium: simplify to a canonical form (fast_run)
   2  stabilize            equilibrium: numerically stable forms (fast_run, fast_compile: a
                          graph that overflows must not depend on the mode)
   3  specialize           equilibrium: cheaper forms (fast_run)
  49  merge2               (fast_run)
  75  inplace              inplace Elemwise through the DestroyHandler (fast_run, inplace)
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import (GraphRewriter, NodeRewriter, node_rewriter,
                                            replace_pairs)
from graphjit.graph.rewriting.db import EquilibriumDB, SequenceDB
from graphjit.graph.rewriting.utils import graph_version
from graphjit.graph.rewriting.walkers import WalkingGraphRewriter
from graphjit.tensor.basic import NotScalarConstantError, cast
from graphjit.tensor.elemwise import DimShuffle, Elemwise, get_scalar_constant_value
from graphjit.tensor.type import TensorType

rewrite_db = SequenceDB("fast_run")
canonicalize_db = EquilibriumDB("canonicalize")
stabilize_db = EquilibriumDB("stabilize")
specialize_db = EquilibriumDB("specialize")


def register_canonicalize(rewriter: NodeRewriter, *tags: str, name: Optional[str] = None) -> NodeRewriter:
    """Register a node rewriter in the canonicalize phase (tags fast_run, canonicalize)."""
    return canonicalize_db.register(name or str(rewriter), rewriter, "fast_run", "canonicalize", *tags)


def register_stabilize(rewriter: NodeRewriter, *tags: str, name: Optional[str] = None) -> NodeRewriter:
    """Register a node rewriter in the stabilize phase (tags fast_run, fast_compile, stabilize)."""
    return stabilize_db.register(name or str(rewriter), rewriter, "fast_run", "fast_compile", "stabilize",
                                 *tags)


def register_specialize(rewriter: NodeRewriter, *tags: str, name: Optional[str] = None) -> NodeRewriter:
    """Register a node rewriter in the specialize phase (tags fast_run, specialize)."""
    return specialize_db.register(name or str(rewriter), rewriter, "fast_run", "specialize", *tags)


# ------------------------------------------------------------------------------------------------
# Helpers shared by the tensor rewrites
# ------------------------------------------------------------------------------------------------

def scalar_value(var: Variable) -> Optional[Any]:
    """The single value of a constant (or DimShuffle of one), else None."""
    if not isinstance(var, Constant) and (var.owner is None or not isinstance(var.owner.op, DimShuffle)):
        return None
    try:
        return get_scalar_constant_value(var)
    except (NotScalarConstantError, TypeError):
        return None


def is_elemwise(var: Variable, scalar_op: Any = None) -> bool:
    """True if var is computed by a (non-inplace) Elemwise, of scalar_op if given."""
    node = var.owner
    return (node is not None and isinstance(node.op, Elemwise) and not node.op.inplace_pattern
            and (scalar_op is None or node.op.scalar_op is scalar_op or node.op.scalar_op == scalar_op))


def cannot_broadcast(kept: Variable, dropped: Variable) -> bool:
    """True if dropped (an operand beside kept) can never make the result bigger than kept."""
    # .type's attributes: a hand-built graph's outputs may be plain Variables of a TensorType
    kept_shape, dropped_shape = kept.type.shape, dropped.type.shape
    if len(dropped_shape) > len(kept_shape):
        return False
    pad = len(kept_shape) - len(dropped_shape)
    for d, s in enumerate(dropped_shape):
        if s != 1 and s != kept_shape[d + pad]:
            return False
    return True


def keep_type(new: Variable, old: Variable) -> Optional[Variable]:
    """new cast and padded to old's dtype and rank (None if its rank is too big)."""
    if not isinstance(new.type, TensorType) or not isinstance(old.type, TensorType):
        return new if new.type == old.type else None
    n_new, n_old = new.type.ndim, old.type.ndim
    if n_new > n_old:
        return None
    if new.type.dtype != old.type.dtype:
        new = cast(new, old.type.dtype)
    if n_new < n_old:
        new = DimShuffle(n_new, ("x",) * (n_old - n_new) + tuple(range(n_new)))(new)
    return new


def single_client(fgraph: FunctionGraph, var: Variable) -> bool:
    """True if var has exactly one client in fgraph and is not an output."""
    clients = fgraph.clients.get(var, ())
    return len(clients) == 1 and clients[0][0] != "output"


# ------------------------------------------------------------------------------------------------
# Merge: common-subexpression elimination
# ------------------------------------------------------------------------------------------------

class MergeRewriter(GraphRewriter):
    """Replaces equal constants (same signature) and identical nodes (same op, same inputs) by one."""

    def apply(self, fgraph: FunctionGraph) -> int:
        """One pass (inputs are merged before their clients); returns the number of merges.

        Nothing to do, and nothing done, if the graph has not changed since the last merge.
        """
        if getattr(fgraph, "merged_at_version", None) == graph_version(fgraph):
            return 0
        merged = self._merge_constants(fgraph) + self._merge_nodes(fgraph)
        fgraph.merged_at_version = graph_version(fgraph)
        return merged

    def _merge_constants(self, fgraph: FunctionGraph) -> int:
        seen: Dict[Any, Constant] = {}
        pairs: List[Tuple[Variable, Variable]] = []
        for var in fgraph.variables:
            if not isinstance(var, Constant):
                continue
            try:
                key = var.signature()
                first = seen.setdefault(key, var)
            except TypeError:
                continue
            if first is not var:
                pairs.append((var, first))
        if pairs and not replace_pairs(fgraph, pairs, "merge"):
            return 0
        return len(pairs)

    def _merge_nodes(self, fgraph: FunctionGraph) -> int:
        # an op instance -> the first equal op met: a node's key is (that op's id, its inputs), so each op
        # instance is hashed (from its props) once per pass, not once per node (many nodes share an instance)
        canonical: Dict[int, Any] = {}
        equal_ops: Dict[Any, Any] = {}

        def key(node: Apply) -> Any:
            op = node.op
            rep = canonical.get(id(op))
            if rep is None:
                rep = canonical[id(op)] = equal_ops.setdefault(op, op)
            return (id(rep), tuple(node.inputs))

        if not self._has_duplicates(fgraph, key):
            return 0            # no two equal nodes: none to merge, and no merge to make others equal
        seen: Dict[Any, Apply] = {}
        merged = 0
        for node in fgraph.toposort():
            if node not in fgraph.apply_nodes or node.op.destroy_map:
                continue
            try:
                first = seen.setdefault(key(node), node)
            except TypeError:
                continue
            if first is node or first not in fgraph.apply_nodes:
                continue
            pairs = [(o, n) for o, n in zip(node.outputs, first.outputs) if o.type == n.type]
            if len(pairs) == len(node.outputs) and replace_pairs(fgraph, pairs, "merge"):
                merged += 1
        return merged


    @staticmethod
    def _has_duplicates(fgraph: FunctionGraph, key: Any) -> bool:
        """Whether two nodes of fgraph (in any order: no sort needed) have equal keys."""
        seen: Set[Any] = set()
        for node in fgraph.apply_nodes:
            if node.op.destroy_map:
                continue
            try:
                k = key(node)
            except TypeError:
                continue
            if k in seen:
                return True
            seen.add(k)
        return False


merge_rewriter = MergeRewriter()
merge_rewriter.name = "merge"


# ------------------------------------------------------------------------------------------------
# Constant folding
# ------------------------------------------------------------------------------------------------

def fold_value_to_constant(value: Any, out: Variable) -> Optional[Constant]:
    """A Constant of value, typed like out (with its now known static shape)."""
    typ = out.type
    if isinstance(typ, TensorType):
        value = np.asarray(value)
        if value.dtype != typ.numpy_dtype or value.ndim != typ.ndim:
            return None
        typ = TensorType(typ.dtype, value.shape)
    try:
        return typ.make_constant(value)
    except (TypeError, ValueError):
        return None


@node_rewriter(None)
def constant_folding(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """A node whose inputs are all constants becomes constants (if op.do_constant_folding allows)."""
    if not node.inputs or not all(isinstance(i, Constant) for i in node.inputs):
        return None
    op = node.op
    if op.destroy_map or not op.do_constant_folding(fgraph, node):
        return None
    storage: List[List[Any]] = [[None] for _ in node.outputs]
    try:
        extra = (op.get_params(node),) if op.params_type is not None else ()
        with np.errstate(all="ignore"):
            op.perform(node, [i.data for i in node.inputs], storage, *extra)
    except Exception:  # leave the error to run time, where it is reported with context
        return None
    result = [fold_value_to_constant(cell[0], out) for cell, out in zip(storage, node.outputs)]
    if any(r is None for r in result):
        return None
    return result


for _db in (canonicalize_db, stabilize_db, specialize_db):
    _db.register("constant_folding", constant_folding, "fast_run", "constant_folding")
    # stabilize's rewrites compare factors by identity: merge runs in it for fast_compile too
    _db.register("merge", merge_rewriter, "fast_run", "merge",
                 *(("fast_compile",) if _db is stabilize_db else ()))

rewrite_db.register("merge1", merge_rewriter, "fast_run", "fast_compile", "merge", position=0)
rewrite_db.register("constant_folding", WalkingGraphRewriter(constant_folding, name="constant_folding"),
                    "fast_run", "fast_compile", position=0.5)
rewrite_db.register("canonicalize", canonicalize_db, "fast_run", position=1)
rewrite_db.register("stabilize", stabilize_db, "fast_run", "fast_compile", position=2)
rewrite_db.register("specialize", specialize_db, "fast_run", position=3)
rewrite_db.register("merge2", merge_rewriter, "fast_run", "merge", position=49)
