"""The inplace phase for draws: a RandomVariable advances its generator in place where that is safe.

A draw copies its generator input unless ``inplace``; the copy is a Python object, so a native draw needs the
inplace version.  It is safe when the generator may be overwritten (a shared generator with an update, used by
nothing else: ``may_overwrite``); the DestroyHandler validates each switch.
"""

from __future__ import annotations

from graphjit.graph.basic import Apply
from graphjit.graph.destroyhandler import attach_destroy_handler
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import GraphRewriter, replace_pairs
from graphjit.tensor.random import RandomVariable
from graphjit.tensor.rewriting.basic import rewrite_db
from graphjit.tensor.rewriting.inplace import may_overwrite, protected_inputs


def inplace_draw(node: Apply) -> Apply:
    """The inplace version of a draw node (same inputs, outputs of the same types)."""
    op = node.op
    new_op = type(op)(**{name: getattr(op, name) for name in op.__props__} | {"inplace": True})
    return Apply(new_op, list(node.inputs), [out.type() for out in node.outputs])


class RandomInplace(GraphRewriter):
    """Replaces draws by their inplace versions where the generator may be overwritten."""

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        super().add_requirements(fgraph)
        attach_destroy_handler(fgraph)

    def apply(self, fgraph: FunctionGraph) -> int:
        """Switch each eligible draw (validated one by one)."""
        protected = protected_inputs(fgraph)
        done = 0
        for node in fgraph.toposort():
            op = node.op
            if (isinstance(op, RandomVariable) and not op.inplace and node in fgraph.apply_nodes
                    and may_overwrite(fgraph, node, node.inputs[0], protected)):
                new = inplace_draw(node)
                done += replace_pairs(fgraph, list(zip(node.outputs, new.outputs)), "random_inplace")
        return done


random_inplace = RandomInplace()
random_inplace.name = "random_inplace"
rewrite_db.register("random_inplace", random_inplace, "fast_run", "inplace", position=75.2)
