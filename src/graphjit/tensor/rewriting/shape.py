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
from graphjit.scalar import math as ps
from graphjit.tensor.alloc import Alloc, second_as_alloc
from graphjit.tensor.basic import constant
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.elemwise_grad import SumToShape
from graphjit.tensor.join import MakeVector, make_vector
from graphjit.tensor.rewriting.basic import keep_type, register_canonicalize
from graphjit.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape, shape_i, static_int
from graphjit.tensor.shape_base import MatchShape
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
        if feature is None:
            return False
        known = feature.get_shape(x, d)
        if (length_form(length, feature) != length_form(known, feature)
                and not equal_computations([length], [known])):
            return False
    return True


def length_form(v: Variable, feature: Optional[ShapeFeature] = None, depth: int = 8) -> object:
    """A comparable form of a length graph: ``shape[k]`` and ``Shape_i{k}`` of a variable are one form, a
    MakeVector's k-th entry is that entry's form, ``switch(eq(a, 1), b, c)`` with b and c of one form is that
    form (a broadcast of a length with itself), a constant is its value; anything else is itself. With a
    ShapeFeature, the length of a computed variable is the form of the length it infers (so a gradient's
    ``shape(log_softmax(z))[0]`` and ``Shape_i{0}(softmax(z))`` are both z's)."""
    value = static_int(v)
    if value is not None:
        return ("const", value)
    node = v.owner
    if node is None or depth == 0:
        return v
    op = node.op
    if isinstance(op, Shape_i):
        return _shape_form(node.inputs[0], op.i, feature, depth)
    if isinstance(op, Subtensor) and len(op.idx_list) == 1 and isinstance(op.idx_list[0], (int, np.integer)):
        k, source = int(op.idx_list[0]), node.inputs[0]
        if source.owner is not None and isinstance(source.owner.op, Shape):
            var = source.owner.inputs[0]
            if -var.ndim <= k < var.ndim:
                return _shape_form(var, k % var.ndim, feature, depth)
            return v
        if source.owner is not None and isinstance(source.owner.op, MakeVector) and \
                -len(source.owner.inputs) <= k < len(source.owner.inputs):
            return length_form(source.owner.inputs[k], feature, depth - 1)
        return v
    if getattr(getattr(op, "scalar_op", None), "name", None) == "switch" and len(node.inputs) == 3:
        chosen = length_form(node.inputs[1], feature, depth - 1)
        other = length_form(node.inputs[2], feature, depth - 1)
        if chosen == other:
            return chosen
    return v


def _shape_form(var: Variable, k: int, feature: Optional[ShapeFeature], depth: int) -> object:
    """The form of var's length k: through the ShapeFeature's inferred length when var is computed."""
    if feature is not None and var.owner is not None and var in feature.shape_of:
        inferred = feature.shape_of[var]
        if inferred is not None:
            entry = inferred[k]
            own = entry.owner is not None and isinstance(entry.owner.op, Shape_i) and entry.owner.inputs[0] is var
            if not own:
                return length_form(entry, feature, depth - 1)
    return ("shape", var, k)



@node_rewriter([Reshape])
def local_useless_reshape(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """reshape(x, x.shape) -> x (also with the shape written as Shape_i lengths or static ints)."""
    x, shp = node.inputs
    out = node.outputs[0]
    if x.type != out.type:
        return None
    if _is_own_shape(fgraph, x, shp) or all(s is not None for s in x.type.shape):
        return [x]
    return None


def _is_own_shape(fgraph: FunctionGraph, x: Variable, shp: Variable) -> bool:
    """True if the shape vector shp provably holds x's lengths: x.shape, the shape of a variable of the same
    lengths, or a MakeVector of them."""
    node = shp.owner
    if node is None:
        return False
    if isinstance(node.op, MakeVector):
        return _same_lengths(fgraph, x, node.inputs)
    if isinstance(node.op, Shape):
        source = node.inputs[0]
        if source is x:
            return True
        feature = shape_feature_of(fgraph)
        return source.ndim == x.ndim and _same_lengths(fgraph, x, [feature.get_shape(source, d)
                                                                   for d in range(source.ndim)])
    return False


@node_rewriter([Alloc])
def local_useless_alloc(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """alloc(v, *v's own lengths) -> v (a copy is not needed: outputs are copied when they alias)."""
    v, *lengths = node.inputs
    out = node.outputs[0]
    if v.type == out.type and _same_lengths(fgraph, v, list(lengths)):
        return [v]
    return None


@node_rewriter([Elemwise])
def local_second_to_alloc(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """second(model, value) -> alloc(value, the broadcast lengths) (Theano's fill to alloc).

    Gradients keep their variable's shape with second; as an Alloc, the shape rewrites and
    local_useless_alloc remove it when the value provably has that shape already (a 0-d model, a
    static shape, the same length variables).
    """
    if node.op.scalar_op is not ps.second or node.op.inplace_pattern:
        return None
    new = keep_type(second_as_alloc(*node.inputs), node.outputs[0])
    return None if new is None else [new]


@node_rewriter([SumToShape])
def local_useless_sum_to_shape(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """SumToShape(g, g's own lengths) -> g; SumToShape(SumToShape(g, s), s) -> SumToShape(g, s).

    Gradients of broadcasts reduce to the input's run-time shape; when the gradient provably has that shape
    already (the same length variables: ``x * y`` where both are x-shaped), there is nothing to sum.
    """
    g, shp = node.inputs
    out = node.outputs[0]
    if g.type != out.type:
        return None
    if g.owner is not None and isinstance(g.owner.op, SumToShape) and g.owner.inputs[1] is shp:
        return [g]
    return [g] if _is_own_shape(fgraph, g, shp) else None


@node_rewriter([MatchShape])
def local_useless_match_shape(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """MatchShape(x, shp) -> x when shp provably holds x's lengths (Rop(f, x, v) with v computed from x...)."""
    x, shp = node.inputs
    return [x] if _is_own_shape(fgraph, x, shp) else None


for _rw in (local_shape_i_from_inputs, local_shape_from_inputs, local_subtensor_of_shape,
            local_useless_specify_shape, local_useless_reshape, local_second_to_alloc, local_useless_alloc,
            local_useless_sum_to_shape, local_useless_match_shape):
    register_canonicalize(_rw, "shape")
