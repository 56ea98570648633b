"""DimShuffle rewrites: a DimShuffle of a DimShuffle becomes one; an identity DimShuffle disappears."""

from __future__ import annotations

from typing import List, Optional

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor.elemwise import DimShuffle
from graphjit.tensor.rewriting.basic import register_canonicalize


def compose_dimshuffles(inner: DimShuffle, outer: DimShuffle) -> DimShuffle:
    """The one DimShuffle doing inner then outer."""
    order = tuple("x" if d == "x" else inner.new_order[d] for d in outer.new_order)
    return DimShuffle(inner.input_ndim, order)


@node_rewriter([DimShuffle])
def local_dimshuffle_merge(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """DimShuffle(DimShuffle(x)) -> one DimShuffle of x (or x itself if the result is the identity)."""
    (y,) = node.inputs
    if y.owner is None or not isinstance(y.owner.op, DimShuffle):
        return None
    op = compose_dimshuffles(y.owner.op, node.op)
    x = y.owner.inputs[0]
    if op.new_order == tuple(range(x.ndim)) and x.type == node.outputs[0].type:
        return [x]
    return [op(x)]


@node_rewriter([DimShuffle])
def local_useless_dimshuffle(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """DimShuffle{0,1,...,n-1}(x) -> x."""
    x = node.inputs[0]
    if node.op.new_order == tuple(range(node.op.input_ndim)) and x.type == node.outputs[0].type:
        return [x]
    return None


register_canonicalize(local_dimshuffle_merge)
register_canonicalize(local_useless_dimshuffle)
