"""Hand-written softmax and logsumexp recognised as the stable Softmax / LogSumExp ops.

* ``local_softmax_from_exp`` (canonicalize and stabilize): ``exp(x) / sum(exp(x), axis, keepdims=True)``
  and the max-subtracted ``exp(x - max(x, axes, keepdims=True)) / sum(...)`` -> ``Softmax(axis)(x)``,
  for one axis or all of them (the forms the Softmax op has; a sum over all axes may also be the 0-d
  sum without keepdims). The shift may be a max over more axes than the sum (it is still constant
  along the softmax axis). One difference: an empty softmax axis, where the plain form gives an empty
  array and Softmax raises ValueError like scipy (the max-subtracted form raised already).
* ``local_log_sum_exp_keepdims`` (stabilize): ``log(sum(exp(x), axis, keepdims=True))`` ->
  ``LogSumExp(axis, keepdims=True)(x)`` (the reduction seen through its keepdims DimShuffle; the form
  without keepdims is math.py's ``local_log_sum_exp``).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from graphjit.graph.basic import Apply, Variable, equal_computations
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.scalar import math as ps
from graphjit.tensor import math as tm
from graphjit.tensor.elemwise import CAReduce, DimShuffle, normalize_axis
from graphjit.tensor.rewriting.basic import is_elemwise, register_canonicalize, register_stabilize
from graphjit.tensor.special import LogSumExp, Softmax


def reduced_axes(node: Apply) -> Tuple[int, ...]:
    """The axes a CAReduce node reduces (all of them for axis=None), sorted."""
    return tuple(sorted(normalize_axis(node.op.axis, node.inputs[0].type.ndim)))


def _keepdims_order(ndim: int, axes: Tuple[int, ...]) -> Tuple[object, ...]:
    order, j = [], 0
    for d in range(ndim):
        if d in axes:
            order.append("x")
        else:
            order.append(j)
            j += 1
    return tuple(order)


def kept_reduction(v: Variable, scalar_op: object, bare_ok: bool = True) -> Optional[Apply]:
    """The CAReduce{scalar_op} node of v = reduce(t, axes, keepdims=True) (its restoring DimShuffle),
    or of a 0-d v = reduce over every axis when bare_ok (it broadcasts the same way)."""
    node = v.owner
    if node is None:
        return None
    if isinstance(node.op, DimShuffle):
        red = node.inputs[0].owner
        if red is None or not isinstance(red.op, CAReduce) or red.op.scalar_op != scalar_op:
            return None
        ndim = red.inputs[0].type.ndim
        return red if node.op.new_order == _keepdims_order(ndim, reduced_axes(red)) else None
    if bare_ok and isinstance(node.op, CAReduce) and node.op.scalar_op == scalar_op and v.type.ndim == 0:
        return node
    return None


def _plain_sum(red: Apply) -> bool:
    return red.op.dtype is None and red.op.acc_dtype is None


def _softmax_input(z: Variable, axes: Tuple[int, ...]) -> Variable:
    """x if z = x - max(x, axes' >= axes, keepdims) (a shift constant along the softmax axes), else z."""
    if not is_elemwise(z, ps.sub):
        return z
    x, m = z.owner.inputs
    red = kept_reduction(m, ps.maximum)
    if red is None or red.inputs[0] is not x or not set(axes) <= set(reduced_axes(red)):
        return z
    return x if x.type == z.type else z


@node_rewriter([tm.true_div])
def local_softmax_from_exp(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """exp(x) / sum(exp(x), axis, keepdims=True) (x optionally max-subtracted) -> softmax(x, axis)."""
    num, den = node.inputs
    out = node.outputs[0]
    if not is_elemwise(num, ps.exp) or num.type.ndim == 0:
        return None
    red = kept_reduction(den, ps.add)
    if red is None or not _plain_sum(red) or not equal_computations([red.inputs[0]], [num]):
        return None
    ndim = num.type.ndim
    axes = reduced_axes(red)
    if len(axes) != 1 and len(axes) != ndim:
        return None
    x = _softmax_input(num.owner.inputs[0], axes)
    new = Softmax(axes[0] if len(axes) == 1 else None)(x)
    return [new] if out.type.is_super(new.type) else None


@node_rewriter([tm.log])
def local_log_sum_exp_keepdims(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """log(sum(exp(x), axis, keepdims=True)) -> logsumexp(x, axis, keepdims=True) (stable for large x)."""
    (s,) = node.inputs
    red = kept_reduction(s, ps.add, bare_ok=False)
    if red is None or not _plain_sum(red) or not is_elemwise(red.inputs[0], ps.exp):
        return None
    x = red.inputs[0].owner.inputs[0]
    axes = reduced_axes(red)
    new = LogSumExp(None if len(axes) == x.type.ndim else axes, keepdims=True)(x)
    return [new] if node.outputs[0].type.is_super(new.type) else None


register_canonicalize(local_softmax_from_exp, "softmax")
register_stabilize(local_softmax_from_exp, "softmax")
register_stabilize(local_log_sum_exp_keepdims)
