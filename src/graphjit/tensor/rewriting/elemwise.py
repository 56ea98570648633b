"""DimShuffle rewrites: a DimShuffle of a DimShuffle becomes one; an identity DimShuffle disappears; an
elementwise op of transposed operands becomes the transpose of the op on the untransposed ones."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor.basic import constant
from graphjit.tensor.elemwise import DimShuffle, Elemwise
from graphjit.tensor.rewriting.basic import register_canonicalize, register_specialize


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


def _permutation(var: Variable) -> Optional[tuple]:
    """The axes of a DimShuffle that only permutes (no new, no dropped axis, not the identity), else None."""
    node = var.owner
    if node is None or not isinstance(node.op, DimShuffle):
        return None
    op = node.op
    if op.augment or op.drop or op.new_order == tuple(range(op.input_ndim)):
        return None
    return op.new_order


@node_rewriter([Elemwise])
def local_elemwise_of_transposed(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """f(x.T, y.T, c) -> f(x, y, c.T).T: every operand transposed the same way (constants and operands of
    length 1 everywhere aside) -- the loop then reads C-ordered memory instead of copying or gathering
    transposed operands, and a transposing consumer (a triangular solve of PyTensor's Cholesky gradient)
    cancels the transpose left on top (local_dimshuffle_merge)."""
    op, out = node.op, node.outputs[0]
    if op.inplace_pattern or len(node.outputs) != 1 or out.type.ndim < 2:
        return None
    perms = {_permutation(v) for v in node.inputs if _permutation(v) is not None}
    if len(perms) != 1:
        return None
    (perm,) = perms
    inverse = tuple(int(i) for i in np.argsort(perm))
    inputs = []
    for v in node.inputs:
        if v.type.ndim != out.type.ndim:
            return None
        if _permutation(v) is not None:
            inputs.append(v.owner.inputs[0])
        elif isinstance(v, Constant):
            inputs.append(constant(np.ascontiguousarray(np.transpose(v.data, inverse)), dtype=v.type.dtype))
        elif all(s == 1 for s in v.type.shape):
            inputs.append(v)
        else:
            return None
    new = DimShuffle(out.type.ndim, perm)(op(*inputs))
    return [new] if new.type == out.type else None


register_canonicalize(local_dimshuffle_merge)
register_canonicalize(local_useless_dimshuffle)
register_specialize(local_elemwise_of_transposed)
# the transposes local_elemwise_of_transposed moves meet their consumers' after canonicalize has run
register_specialize(local_dimshuffle_merge, name="local_dimshuffle_merge_after_lift")
