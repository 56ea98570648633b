"""The inplace phase: Elemwise and IncSubtensor nodes overwrite an input's buffer where it is safe.

An input may be overwritten when: it is not a constant, not a view (view_map) of something, not a
protected graph input (Supervisor: inputs not declared mutable), its only client is the node, it
has the output's dtype and static shape, and it cannot be smaller than the output at run time
(Elemwise broadcasts at run time, so every other operand must be statically 1 in a dimension, or
provably of the same length). All candidates are switched in one batch and validated once by the
DestroyHandler; if that fails they are retried one by one, each validated.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.destroyhandler import attach_destroy_handler, view_source
from graphjit.graph.features import Supervisor
from graphjit.graph.fg import FunctionGraph, InconsistencyError
from graphjit.graph.rewriting.basic import GraphRewriter, replace_pairs
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.rewriting.basic import rewrite_db
from graphjit.tensor.advanced_subtensor import AdvancedIncSubtensor, AdvancedIncSubtensor1
from graphjit.tensor.subtensor import IncSubtensor


def protected_inputs(fgraph: FunctionGraph) -> Set[Variable]:
    """The graph inputs a Supervisor protects from being overwritten."""
    found: Set[Variable] = set()
    for feature in fgraph.features:
        if isinstance(feature, Supervisor):
            found.update(feature.protected)
    return found


def may_overwrite(fgraph: FunctionGraph, node: Apply, var: Variable, protected: Set[Variable]) -> bool:
    """True if node may overwrite var's buffer (see the module docstring)."""
    if isinstance(var, Constant) or var in protected or view_source(var) is not None:
        return False
    clients = fgraph.clients.get(var, ())
    return len(clients) == 1 and clients[0][0] is node


def _same_length(fgraph: FunctionGraph, a: Variable, b: Variable, d: int) -> bool:
    feature = getattr(fgraph, "shape_feature", None)
    return feature is not None and feature.same_shape(a, b, d, d)


def elemwise_target(fgraph: FunctionGraph, node: Apply, i: int) -> bool:
    """True if input i of an Elemwise node is always exactly the output's shape and dtype."""
    inp, out = node.inputs[i], node.outputs[0]
    if inp.type != out.type:
        return False
    for d, s in enumerate(inp.type.shape):
        if s is not None:
            continue
        for j, other in enumerate(node.inputs):
            if j != i and other.type.shape[d] != 1 and not _same_length(fgraph, inp, other, d):
                return False
    return True


_INPLACE_OPS: Dict[Tuple[Any, int], Elemwise] = {}
InplaceHook = Callable[[FunctionGraph, Apply, Set[Variable]], Optional[Variable]]
_HOOKS: List[InplaceHook] = []


def register_inplace_hook(hook: InplaceHook) -> InplaceHook:
    """Let another module offer inplace versions: hook(fgraph, node, protected) -> new output or None."""
    _HOOKS.append(hook)
    return hook


def inplace_elemwise_op(op: Elemwise, i: int) -> Elemwise:
    """The (shared) Elemwise overwriting input i with op's result."""
    key = (op.scalar_op, i)
    found = _INPLACE_OPS.get(key)
    if found is None:
        found = _INPLACE_OPS[key] = Elemwise(op.scalar_op, {0: i})
    return found


def inplace_version(fgraph: FunctionGraph, node: Apply, protected: Set[Variable]) -> Optional[Variable]:
    """The output of an inplace version of node, or None if it has none or it is unsafe."""
    op = node.op
    if isinstance(op, Elemwise) and not op.inplace_pattern and len(node.outputs) == 1 and not op.given_name:
        for i, inp in enumerate(node.inputs):
            if may_overwrite(fgraph, node, inp, protected) and elemwise_target(fgraph, node, i):
                # the types were checked: build the node directly, without make_node
                out = node.outputs[0]
                return Apply(inplace_elemwise_op(op, i), list(node.inputs), [out.type()]).outputs[0]
    if isinstance(op, IncSubtensor) and not op.inplace:
        if may_overwrite(fgraph, node, node.inputs[0], protected):
            return IncSubtensor(op.idx_list, op.set_instead_of_inc, True)(*node.inputs)
    if isinstance(op, (AdvancedIncSubtensor, AdvancedIncSubtensor1)) and not op.inplace:
        if may_overwrite(fgraph, node, node.inputs[0], protected):
            return op.inplace_version()(*node.inputs)
    for hook in _HOOKS:
        new = hook(fgraph, node, protected)
        if new is not None:
            return new
    return None


class InplaceRewriter(GraphRewriter):
    """Replaces nodes by their inplace versions where safe (the 'inplace' tag)."""

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        super().add_requirements(fgraph)
        attach_destroy_handler(fgraph)

    def apply(self, fgraph: FunctionGraph) -> int:
        """Batch, validate once; on failure revert and go node by node."""
        protected = protected_inputs(fgraph)
        checkpoint = fgraph.checkpoint()
        done = self._walk(fgraph, protected, lambda pairs: _replace_unchecked(fgraph, pairs))
        try:
            fgraph.validate()
            return done
        except InconsistencyError:
            fgraph.revert(checkpoint)
        return self._walk(fgraph, protected, lambda pairs: replace_pairs(fgraph, pairs, "inplace"))

    @staticmethod
    def _walk(fgraph: FunctionGraph, protected: Set[Variable],
              replace: Callable[[List[Tuple[Variable, Variable]]], bool]) -> int:
        done = 0
        for node in fgraph.toposort():
            if node not in fgraph.apply_nodes:
                continue
            new = inplace_version(fgraph, node, protected)
            if new is not None and new.type == node.outputs[0].type:
                done += replace([(node.outputs[0], new)])
        return done


def _replace_unchecked(fgraph: FunctionGraph, pairs: List[Tuple[Variable, Variable]]) -> bool:
    feature = getattr(fgraph, "shape_feature", None)
    for old, new in pairs:
        if feature is not None:
            _share_shape(feature, old, new)
        fgraph.replace(old, new, reason="inplace")
    return True


def _share_shape(feature: Any, old: Variable, new: Variable) -> None:
    """new (the in-place version's output: same inputs, one output) takes old's shape before it is imported, so
    the ShapeFeature does not infer it again (broadcast shape graphs rebuilt per node: a third of the phase)."""
    node, was = new.owner, old.owner
    if (node is None or was is None or len(node.outputs) != 1 or new in feature.shape_of
            or old not in feature.shape_of or len(node.inputs) != len(was.inputs)
            or any(a is not b for a, b in zip(node.inputs, was.inputs))):
        return
    feature.copy_shape(old, new)


inplace_rewriter = InplaceRewriter()
inplace_rewriter.name = "inplace"
rewrite_db.register("inplace", inplace_rewriter, "fast_run", "inplace", position=75)
