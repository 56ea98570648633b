"""Shape rewrites: lengths computed from the inputs' lengths (ShapeFeature), useless shape ops removed.

``(exp(x) + y).shape[0]`` becomes ``Shape_i{0}(x)``-style arithmetic: the intermediate is never
computed. The ShapeFeature is attached only when a graph asks for the shape of a computed value.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable, ancestors, equal_computations
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor.alloc import Alloc
from graphjit.tensor.basic import constant
from graphjit.tensor.join import MakeVector, make_vector
from graphjit.tensor.rewriting.basic import keep_type, register_canonicalize
from graphjit.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape, shape_i
from graphjit.tensor.shape_feature import ShapeFeature
from graphjit.tensor.subtensor import Subtensor


def shape_feature_of(fgraph: FunctionGraph) -> ShapeFeature:
    """fgraph's ShapeFeature, attached on first use."""
    feature = getattr(fgraph, "shape_feature", None)
    if feature is None:
        feature = ShapeFeature()
        fgraph.attach_feature(feature)
    return feature


def _is_shape_i_of(length: Variable, x: Variable, d: int) -> bool:
    node = length.owner
    return node is not None and isinstance(node.op, Shape_i) and node.op.i == d and node.inputs[0] is x


def _length_without(fgraph: FunctionGraph, x: Variable, d: int) -> Optional[Variable]:
    """Length d of x computed without x's value (a constant when static), or None."""
    static = x.type.shape[d]
    if static is not None:
        return constant(static, dtype="int64")
    if x.owner is None:
        return None
    length = shape_feature_of(fgraph).get_shape(x, d)
    if x in ancestors([length]):
        return None
    return length


@node_rewriter([Shape_i])
def local_shape_i_from_inputs(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """Shape_i{d}(f(...)) -> the length inferred from f's inputs (the ShapeFeature's)."""
    new = _length_without(fgraph, node.inputs[0], node.op.i)
    return None if new is None else [keep_type(new, node.outputs[0])]


@node_rewriter([Shape])
def local_shape_from_inputs(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """Shape(x) -> a constant (static shape) or a vector of lengths inferred without x's value."""
    x = node.inputs[0]
    if all(s is not None for s in x.type.shape):
        return [constant(np.array(x.type.shape, dtype="int64"))]
    lengths = [_length_without(fgraph, x, d) for d in range(x.ndim)]
    if x.owner is None or any(n is None for n in lengths):
        return None
    return [make_vector(lengths, dtype="int64")]


@node_rewriter([Subtensor])
def local_subtensor_of_shape(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """Shape(x)[k] -> Shape_i{k}(x); MakeVector(a, b, ...)[k] -> the k-th input."""
    v = node.inputs[0]
    idx = node.op.idx_list
    if len(idx) != 1 or not isinstance(idx[0], (int, np.integer)) or v.owner is None:
        return None
    k = int(idx[0])
    out = node.outputs[0]
    if isinstance(v.owner.op, Shape):
        x = v.owner.inputs[0]
        if not -x.ndim <= k < x.ndim:
            return None
        return [keep_type(shape_i(x, k % x.ndim), out)]
    if isinstance(v.owner.op, MakeVector) and -len(v.owner.inputs) <= k < len(v.owner.inputs):
        return [keep_type(v.owner.inputs[k], out)]
    return None


@node_rewriter([SpecifyShape])
def local_useless_specify_shape(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """SpecifyShape(x) -> x when x's static shape already says as much."""
    x = node.inputs[0]
    return [x] if x.type == node.outputs[0].type else None


def _same_lengths(fgraph: FunctionGraph, x: Variable, lengths: List[Variable]) -> bool:
    """True if lengths are provably x's lengths, dimension by dimension."""
    if len(lengths) != x.ndim:
        return False
    feature = getattr(fgraph, "shape_feature", None)
    for d, length in enumerate(lengths):
        static = x.type.shape[d]
        if isinstance(length, Constant) and static is not None and int(np.asarray(length.data)) == static:
            continue
        if _is_shape_i_of(length, x, d):
            continue
        if feature is None or not equal_computations([length], [feature.get_shape(x, d)]):
            return False
    return True


@node_rewriter([Reshape])
def local_useless_reshape(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """reshape(x, x.shape) -> x (also with the shape written as Shape_i lengths or static ints)."""
    x, shp = node.inputs
    out = node.outputs[0]
    if x.type != out.type:
        return None
    if shp.owner is not None and isinstance(shp.owner.op, Shape) and shp.owner.inputs[0] is x:
        return [x]
    if shp.owner is not None and isinstance(shp.owner.op, MakeVector) and _same_lengths(fgraph, x, shp.owner.inputs):
        return [x]
    if all(s is not None for s in x.type.shape):
        return [x]
    return None


@node_rewriter([Alloc])
def local_useless_alloc(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """alloc(v, *v's own lengths) -> v (a copy is not needed: outputs are copied when they alias)."""
    v, *lengths = node.inputs
    out = node.outputs[0]
    if v.type == out.type and _same_lengths(fgraph, v, list(lengths)):
        return [v]
    return None


for _rw in (local_shape_i_from_inputs, local_shape_from_inputs, local_subtensor_of_shape,
            local_useless_specify_shape, local_useless_reshape, local_useless_alloc):
    register_canonicalize(_rw, "shape")
