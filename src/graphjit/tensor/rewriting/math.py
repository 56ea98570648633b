"""Rewrites of elementwise math and reductions: canonical forms, stable forms, cheaper forms.

Every rewrite here keeps the value for all finite inputs; the stabilizations also keep it for
large ones where the original overflows. Identities only drop an operand that cannot broadcast the
other (Elemwise broadcasts at run time, so a dropped operand must never be the bigger one).
"""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.graph.rewriting.pattern import PatternNodeRewriter
from graphjit.scalar import math as ps
from graphjit.tensor import math as tm
from graphjit.tensor.alloc import Alloc, zeros_like
from graphjit.tensor.basic import constant
from graphjit.tensor.blas import dot
from graphjit.tensor.elemwise import CAReduce, Elemwise
from graphjit.tensor.rewriting.basic import (cannot_broadcast, is_elemwise, keep_type,
                                             register_canonicalize, register_specialize,
                                             register_stabilize, scalar_value, single_client)
from graphjit.tensor.shape import shape_prod
from graphjit.tensor.special import LogSoftmax, LogSumExp, Softmax, TakeLabels

# ------------------------------------------------------------------------------------------------
# canonicalize
# ------------------------------------------------------------------------------------------------

@node_rewriter([Elemwise])
def local_useless_identity(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """x*1, 1*x, x+0, 0+x, x-0, x/1, x**1, x|0 -> x: the scalar op's declared identity (or right_identity)."""
    op = node.op.scalar_op
    if len(node.inputs) != 2 or getattr(op, "right_identity", None) is None or node.op.inplace_pattern:
        return None
    ident, both_sides = op.right_identity, op.identity is not None
    out = node.outputs[0]
    x, y = node.inputs
    for kept, dropped in ((x, y), (y, x)) if both_sides else ((x, y),):
        value = scalar_value(dropped)
        if value is not None and value == ident and cannot_broadcast(kept, dropped):
            new = keep_type(kept, out)
            if new is not None:
                return [new]
    return None


@node_rewriter([tm.sub])
def local_sub_self(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """x - x -> zeros of x's shape (for inf/nan x this gives 0, not nan, as in Theano)."""
    x, y = node.inputs
    if x is not y:
        return None
    return [keep_type(zeros_like(x, dtype=node.outputs[0].dtype), node.outputs[0])]


@node_rewriter([tm.neg])
def local_double_neg(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """-(-x) -> x."""
    (x,) = node.inputs
    if is_elemwise(x, ps.neg):
        return [keep_type(x.owner.inputs[0], node.outputs[0])]
    return None


@node_rewriter([tm.add, tm.mul])
def local_collect_constants(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """(x op c1) op c2 -> x op (c1 op c2) for op add/mul (in either operand order)."""
    scalar_op = node.op.scalar_op
    out = node.outputs[0]
    inner, c2 = _split_constant(node)
    if inner is None or not is_elemwise(inner, scalar_op) or not single_client(fgraph, inner):
        return None
    x, c1 = _split_constant(inner.owner)
    if x is None or inner.dtype != out.dtype:
        return None
    with np.errstate(all="ignore"):
        value = scalar_op.numpy(np.asarray(c1.data), np.asarray(c2.data))
    c = constant(np.asarray(value).astype(out.dtype))
    new = Elemwise(scalar_op)(x, c)
    return [new] if out.type.is_super(new.type) else None


def _split_constant(node: Apply):
    """(the variable operand, the constant operand) of a binary node, or (None, None)."""
    a, b = node.inputs
    if isinstance(b, Constant) and not isinstance(a, Constant):
        return a, b
    if isinstance(a, Constant) and not isinstance(b, Constant):
        return b, a
    return None, None


@node_rewriter([tm.true_div])
def local_div_by_power_of_two(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """x / c -> x * (1/c) when c is a power of two (the reciprocal is exact) and x is a float."""
    x, c = node.inputs
    out = node.outputs[0]
    value = scalar_value(c)
    if value is None or out.type.numpy_dtype.kind != "f" or x.dtype != out.dtype:
        return None
    value = float(value)
    if value == 0 or not np.isfinite(value):
        return None
    mantissa, _ = np.frexp(abs(value))
    if mantissa != 0.5 or not np.isfinite(1.0 / value):
        return None
    data = np.full(c.type.shape if all(s is not None for s in c.type.shape) else (1,) * c.ndim,
                   1.0 / value, dtype=out.dtype)
    new = tm.mul(x, constant(data))
    return [new] if out.type.is_super(new.type) else None


@node_rewriter([Elemwise])
def local_useless_cast(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """cast(x, dtype) -> x when x already has that dtype."""
    if isinstance(node.op.scalar_op, ps.Cast) and node.inputs[0].type == node.outputs[0].type:
        return [node.inputs[0]]
    return None


for _rw in (local_useless_identity, local_sub_self, local_double_neg, local_collect_constants,
            local_div_by_power_of_two, local_useless_cast):
    register_canonicalize(_rw)

# ------------------------------------------------------------------------------------------------
# stabilize
# ------------------------------------------------------------------------------------------------

_STABLE_PATTERNS = [
    ("log1p", (tm.log, (tm.add, 1, "x")), (tm.log1p, "x")),
    ("log1p_r", (tm.log, (tm.add, "x", 1)), (tm.log1p, "x")),
    ("expm1", (tm.sub, (tm.exp, "x"), 1), (tm.expm1, "x")),
    ("softplus", (tm.log1p, (tm.exp, "x")), (tm.softplus, "x")),
]   # log(sigmoid(x)) and friends: sigmoid.py

for _name, _in, _out in _STABLE_PATTERNS:
    register_stabilize(PatternNodeRewriter(_in, _out, allow_multiple_clients=True, name=_name))


@node_rewriter([tm.log])
def local_log_sum_exp(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """log(sum(exp(x), axis)) -> logsumexp(x, axis) (stable for large x)."""
    (s,) = node.inputs
    red = s.owner
    if red is None or not isinstance(red.op, CAReduce) or red.op.scalar_op != ps.add:
        return None
    if red.op.dtype is not None or red.op.acc_dtype is not None:
        return None
    e = red.inputs[0]
    if not is_elemwise(e, ps.exp):
        return None
    new = LogSumExp(red.op.axis, keepdims=False)(e.owner.inputs[0])
    return [new] if node.outputs[0].type.is_super(new.type) else None


@node_rewriter([tm.log])
def local_log_softmax(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """log(softmax(x)) -> log_softmax(x); log(take_labels(softmax(x), y)) -> take_labels(log_softmax(x), y)."""
    (s,) = node.inputs
    if s.owner is None:
        return None
    take = None
    if isinstance(s.owner.op, TakeLabels):
        take, s = s.owner, s.owner.inputs[0]
    if s.owner is None or not isinstance(s.owner.op, Softmax):
        return None
    new = LogSoftmax(s.owner.op.axis)(s.owner.inputs[0])
    if take is not None:
        new = take.op(new, take.inputs[1])
    return [new] if node.outputs[0].type.is_super(new.type) else None


register_stabilize(local_log_sum_exp)
register_stabilize(local_log_softmax)

# ------------------------------------------------------------------------------------------------
# specialize
# ------------------------------------------------------------------------------------------------

def _pow_form(x: Variable, exponent: float) -> Optional[Variable]:
    if exponent == 2:
        return tm.sqr(x)
    if exponent == 0.5:
        return tm.sqrt(x)
    if exponent == -1:
        return tm.reciprocal(x)
    if exponent in (1.5, -1.5):     # a lam's gradient (StudentT, Normal); pow is a libm call, sqrt exact to 0.5 ulp
        cube = tm.mul(x, tm.sqrt(x))
        value = cube if exponent > 0 else tm.reciprocal(cube)
        return tm.switch(tm.eq(x, -np.inf), np.inf if exponent > 0 else 0.0, value)    # numpy's pow(-inf, y)
    if exponent == 3:
        return tm.mul(tm.sqr(x), x)
    if exponent == 4:
        return tm.sqr(tm.sqr(x))
    if exponent == -2:
        return tm.reciprocal(tm.sqr(x))
    return None


@node_rewriter([tm.pow])
def local_pow_specialize(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """x**2 -> sqr, x**0.5 -> sqrt, x**-1 -> reciprocal, x**3, x**4, x**-2 by squaring, x**1.5, x**-1.5 by sqrt."""
    x, e = node.inputs
    out = node.outputs[0]
    value = scalar_value(e)
    if value is None or not cannot_broadcast(x, e):
        return None
    if out.type.numpy_dtype.kind == "c":     # numpy's complex power has its own products (ir/complex_pow.py)
        return None
    if out.type.numpy_dtype.kind != "f" and value < 0:
        return None
    if x.dtype != out.dtype:  # the exponent upcasts x: compute in the output dtype
        x = keep_type(x, out)
    new = _pow_form(x, float(value))
    if new is None:
        return None
    new = keep_type(new, out)
    return [new] if new is not None and out.type.is_super(new.type) else None


@node_rewriter([tm.mul])
def local_mul_to_sqr(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """x * x -> sqr(x)."""
    x, y = node.inputs
    if x is not y:
        return None
    new = tm.sqr(x)
    return [new] if node.outputs[0].type.is_super(new.type) else None


@node_rewriter([CAReduce])
def local_sum_of_squares(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """sum(sqr(v)) of a float vector v -> dot(v, v) (one BLAS call)."""
    op = node.op
    (s,) = node.inputs
    if op.scalar_op != ps.add or s.ndim != 1 or op.dtype is not None or op.acc_dtype is not None:
        return None
    if not is_elemwise(s, ps.sqr) or s.dtype not in ("float32", "float64"):
        return None
    v = s.owner.inputs[0]
    if v.dtype != s.dtype:
        return None
    new = dot(v, v)
    return [new] if node.outputs[0].type.is_super(new.type) else None


@node_rewriter([CAReduce])
def local_sum_of_alloc(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """sum(alloc(c, *shape)) over every axis, c 0-d -> c * prod(shape)."""
    op = node.op
    (a,) = node.inputs
    if op.scalar_op != ps.add or a.owner is None or not isinstance(a.owner.op, Alloc):
        return None
    value, *lengths = a.owner.inputs
    out = node.outputs[0]
    if value.ndim != 0 or (op.axis is not None and len(op.axis) != a.ndim):
        return None
    n = keep_type(shape_prod(lengths), out)
    new = tm.mul(keep_type(value, out), n)
    new = keep_type(new, out)
    return [new] if new is not None and out.type.is_super(new.type) else None


@node_rewriter([tm.switch])
def local_switch_of_one_unary(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """switch(c, f(x), f(y)) -> f(switch(c, x, y)) for one unary elementwise f whose two results only the switch
    reads: f runs once per element instead of twice (the selected value is the same)."""
    c, a, b = node.inputs
    if a is b or not (is_elemwise(a) and is_elemwise(b)):
        return None
    fa, fb = a.owner, b.owner
    if len(fa.inputs) != 1 or len(fb.inputs) != 1 or fa.op.scalar_op != fb.op.scalar_op:
        return None
    x, y = fa.inputs[0], fb.inputs[0]
    if x.type.dtype != y.type.dtype or not (single_client(fgraph, a) and single_client(fgraph, b)):
        return None
    out = node.outputs[0]
    new = keep_type(fa.op(tm.switch(c, x, y)), out)
    return [new] if new is not None and out.type.is_super(new.type) else None


for _rw in (local_pow_specialize, local_mul_to_sqr, local_sum_of_squares, local_sum_of_alloc,
            local_switch_of_one_unary):
    register_specialize(_rw)
